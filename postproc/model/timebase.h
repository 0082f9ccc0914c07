/*
 * timebase.h - the one mapping from a run's timeline to UTC that every
 * output with times uses (samples.csv, perun.csv, timeline.csv, the
 * stragglers' and trace.json's wall-clock stamps).
 *
 * Timeline seconds t_s are seconds of the ring's CLOCK_MONOTONIC since
 * base_ns (the ring's first record, energy_model.h).  unix_s is
 * ring_clock_unix_ns(base_ns + round(t_s * 1e9)) / 1e9: the ring's SYNC
 * records, interpolated.  Written with 9 decimals, so two files that hold
 * the same instant agree to the nanosecond, not only to the microsecond.
 */
#ifndef ANCHORPOST_MODEL_TIMEBASE_H
#define ANCHORPOST_MODEL_TIMEBASE_H

#include <stddef.h>
#include <stdint.h>

#include "anchors/ring_clock.h"

/* "1764600000.123456789" into buf (>= 32); "" when t_s is NaN, before
 * the monotonic epoch, or the ring has no SYNC record.  Length returned. */
size_t timebase_unix_text(const struct ring_clock *clk, uint64_t base_ns, double t_s, char *buf, size_t cap);

/* A ring CLOCK_MONOTONIC instant in unix ns through the SYNC records
 * (0: the ring has none). */
int64_t timebase_unix_ns(const struct ring_clock *clk, uint64_t mono_ns);

/* unix ns as "2026-11-29T21:42:41.123456789Z" into buf (>= 32). */
void timebase_iso(int64_t unix_ns, char *buf, size_t cap);

#endif
