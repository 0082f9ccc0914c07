/*
 * ring_clock.h - map a ring's CLOCK_MONOTONIC timestamps to UTC.
 *
 * Built from SYNC records (pairs of monotonic and realtime reads taken in
 * a narrow bracket).  Between two SYNCs the offset realtime - monotonic is
 * interpolated linearly (NTP slews both clocks alike, so it only moves
 * when realtime is stepped); outside them the nearest SYNC holds.  A jump
 * of the offset larger than the slew NTP can do is reported as a step.
 */
#ifndef ANCHOR_RING_CLOCK_H
#define ANCHOR_RING_CLOCK_H

#include <stddef.h>
#include <stdint.h>

#include "ring_reader.h"

struct ring_clock_point {
	uint64_t mono_ns;
	int64_t offset_ns;    /* realtime - monotonic */
	uint32_t bracket_ns;
};

struct ring_clock {
	struct ring_clock_point *pt; /* sorted by mono_ns */
	size_t n;
	unsigned steps;              /* realtime steps detected */
	double max_step_ms;          /* largest step seen */
	double max_bracket_us;       /* widest bracket used */
	int from_creation;           /* no SYNC left: the header's creation pair */
};

/* Collect the SYNC records of events [0, n) (one host) into c.  0 or -errno. */
int ring_clock_build(const struct ring_event *ev, size_t n, struct ring_clock *c);

/* When no SYNC record survived (a ring that wrapped faster than the
 * writers re-sync), fall back on the creation pair in the header
 * (create_monotonic_ns, create_realtime_ns): unbracketed, but a real
 * pairing, not 1970.  Sets from_creation.  No-op when c has points. */
void ring_clock_use_creation(struct ring_clock *c, const struct anchor_ring_hdr *h);

/* Unix time in ns for a monotonic timestamp; 0 when there is no SYNC. */
int64_t ring_clock_unix_ns(const struct ring_clock *c, uint64_t mono_ns);

/* Monotonic ns for a unix time (inverse of ring_clock_unix_ns). */
uint64_t ring_clock_mono_ns(const struct ring_clock *c, int64_t unix_ns);

/* Free the points. */
void ring_clock_free(struct ring_clock *c);

/* Format unix ns as "2026-11-29T21:42:41.123456789Z" into buf (>= 32). */
void ring_clock_iso(int64_t unix_ns, char *buf, size_t cap);

#endif
