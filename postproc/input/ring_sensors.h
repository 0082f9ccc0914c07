/*
 * ring_sensors.h - the ms energy counters libanchor's sampler wrote into a
 * ring (ANCHOR_SENSORS, preload/sensors.c; records SENSOR_DESC/SENSOR in
 * ring_format.h), as cumulative joules per counter on the ring's clock.
 *
 * Counters are machine-wide: when several processes sampled (it should be
 * one per run), the one with the most ticks is used.  Wrap-around is undone
 * with each counter's max (RAPL's max_energy_range_uj: value max+1 is 0);
 * a counter that goes backwards without a known max is counted as a reset
 * and contributes nothing for that tick.
 * Gauges (group "gpu_power", ring_format.h) are kept as readings in W.
 */
#ifndef ANCHORPOST_RING_SENSORS_H
#define ANCHORPOST_RING_SENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "anchors/ring_reader.h"

struct ring_counter {
	char group[16];      /* "cpu", "ram", "gpu" (perun's device groups) */
	char name[40];       /* "package-0", "dram", "gpu0", ... */
	double j_per_count;  /* 1e-6 for RAPL µJ, 1e-3 for NVML mJ */
	uint64_t max;        /* raw value the counter wraps after (0: never) */
	size_t n;            /* samples */
	uint64_t *ts_ns;     /* n: CLOCK_MONOTONIC of each read (strictly increasing) */
	double *cum_j;       /* n: energy since the first sample, unwrapped (a gauge:
			      * the integral of its readings, each held until the next) */
	int gauge;           /* group "gpu_power": a power reading, not a counter */
	double *value_w;     /* n: a gauge's readings in W (NULL for a counter) */
	unsigned wraps, resets;
};

struct ring_counters {
	struct ring_counter *c;
	size_t n;            /* counters (0: the ring has none) */
	uint32_t pid;        /* the sampling process used */
	size_t ticks;        /* SENSOR records used */
	double period_ms;    /* median tick interval */
	double max_gap_ms;   /* longest tick interval (sampler descheduled) */
	size_t samplers;     /* processes that wrote SENSOR records */
	int emulated;        /* the sampler read anchor_emul's tree or NVML stub */
};

/* Collect from events sorted by time.  0 (rc->n == 0 when there are no
 * usable sensor records), or -ENOMEM. */
int ring_counters_build(const struct ring_event *ev, size_t nev, struct ring_counters *rc);

/* Cumulative energy of counter c at ts_ns, interpolated linearly between
 * samples and clamped to its span. */
double ring_counter_at(const struct ring_counter *c, uint64_t ts_ns);

void ring_counters_free(struct ring_counters *rc);

#endif
