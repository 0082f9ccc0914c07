/*
 * timebase.h - the one mapping from a run's timeline to UTC that every
 * output with times uses (samples.csv, perun.csv, timeline.csv).
 *
 * Timeline seconds t_s are seconds of the ring's CLOCK_MONOTONIC since
 * base_ns (the ring's first record, energy_model.h).  unix_s is
 * ring_clock_unix_ns(base_ns + round(t_s * 1e9)) / 1e9: the ring's SYNC
 * records, interpolated.  Written with 9 decimals, so two files that hold
 * the same instant agree to the nanosecond, not only to the microsecond.
 */
#ifndef ANCHORPOST_TIMEBASE_H
#define ANCHORPOST_TIMEBASE_H

#include <stddef.h>
#include <stdint.h>

#include "anchors/ring_clock.h"
#include "output/csv.h"

/* "1764600000.123456789" into buf (>= 32); "" when t_s is NaN, before
 * the monotonic epoch, or the ring has no SYNC record.  Length returned. */
size_t timebase_unix_text(const struct ring_clock *clk, uint64_t base_ns, double t_s, char *buf, size_t cap);

/* The same as a CSV field (empty when unknown). */
void timebase_unix_field(struct csv *c, const struct ring_clock *clk, uint64_t base_ns, double t_s);

#endif
