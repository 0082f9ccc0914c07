/*
 * gpu_sensors.h - what a run's own data say about each GPU's sensors
 * (libanchor's NVML sampler: the energy counter and the power reading,
 * ANCHOR_SENSORS=nvml) and the GPU energy of each phase on the host's and
 * the device's timeline.
 *
 *   - the power reading's update period, averaging window and window delay
 *     (attrib/sensor_ident.h), when the ring has the gpu_power gauge, and
 *     the same for the instant power field (gpu<i>.instant) when it has that;
 *   - the energy counter's update interval (the ticks where it changes,
 *     fitted to a grid like the reading's updates);
 *   - the counter against the integrated readings over the same span
 *     (whole counter updates at both ends, so the counter is exact there):
 *     equal only when the reading sees all of the time (window = period);
 *   - per phase: host-side and device-side time and the counter's energy
 *     over each.  The counter is read at its update points only (a
 *     staircase read between its steps is off by a whole step) and each
 *     window between two updates is split among the phases in it by time
 *     share x fitted power (attrib_split, as `phases` does for perun's
 *     counters): exact while each phase's power is steady.
 * Gain: every joule here carries the board's gain error (about ±5 %,
 * arXiv 2312.02741); ratios between phases on one GPU do not.
 */
#ifndef ANCHORPOST_GPU_SENSORS_H
#define ANCHORPOST_GPU_SENSORS_H

#include <stddef.h>

#include "attrib/sensor_ident.h"
#include "input/ring_sensors.h"
#include "phase/phase_set.h"

struct gpu_phase_row {
	int phase;              /* index into the phase set's names */
	size_t count;           /* occurrences on the timeline used */
	double host_s, dev_s;   /* total time (device: 0 without device edges) */
	double host_j, dev_j;   /* counter energy over each */
	double host_lo, host_hi, dev_lo, dev_hi; /* the split's intervals (no gain floor) */
	/* the same joules with the board's gain floor (or the --gpu-gain
	 * calibration, sensor_model.h): what the CSV shows */
	double host_gj, host_glo, host_ghi, dev_gj, dev_glo, dev_ghi;
};

struct gpu_sensor {
	char name[40];                 /* "gpu0" */
	int has_power;                 /* the ring has its power reading */
	struct sensor_ident id;        /* the reading's period and window */
	int has_instant;               /* ... and its instant power (gpu<i>.instant) */
	struct sensor_ident inst;      /* the instant power's period and window */
	struct sensor_grid counter;    /* the counter's update interval */
	const char *counter_why;       /* when counter.step_s is 0 */
	double cmp_span_s, cmp_counter_j, cmp_power_j; /* counter vs integrated readings */
	double cmp_instant_j;          /* ... and vs the integrated instant power */
	struct gpu_phase_row *rows;
	size_t nrows;
};

struct gpu_sensors {
	struct gpu_sensor *g;
	size_t n;
	int emulated;                  /* the sampler read a stand-in */
	int device_timeline;           /* phases came from device-side edges */
	double tick_ms;                /* the sampler's median tick */
	int gain_calibrated;           /* joules calibrated by --gpu-gain, not the +-5 % floor */
};

/* From the ring's events and its phases.  0 (out->n == 0: no GPU counter
 * in the ring), or -ENOMEM. */
int gpu_sensors_build(const struct ring_event *ev, size_t nev, const struct phase_set *ph, struct gpu_sensors *out);

void gpu_sensors_free(struct gpu_sensors *gs);

#endif
