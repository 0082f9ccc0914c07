/*
 * counter_results.h - the ring's ms energy counters (ANCHOR_SENSORS;
 * input/ring_sensors.h) per phase of the run's primary thread, and the
 * cross-check against perun over its span: the numbers counter_table.h
 * formats as phases.csv's scope "counters".
 *
 * Every phase gets the exact integral of each counter over its exclusive
 * intervals (attrib_counters on a cumulative-energy series at the
 * sampler's ~1 ms period: edges inside a tick split in proportion to the
 * neighbouring ticks' power).  Gauges (GPU power readings) are no energy
 * counter: they describe the sensor (anchorpost sensors) and give none.
 */
#ifndef ANCHORPOST_COUNTER_RESULTS_H
#define ANCHORPOST_COUNTER_RESULTS_H

#include <stddef.h>
#include <stdint.h>

#include "model/energy_model.h"

/* Agreement asked of counters and perun over perun's span (issue 14). */
#define COUNTER_CROSSCHECK_REL 0.01

struct counter_group {
	char name[16];
	/* per phase, nnames + 1 (the last: unattributed); joules with a GPU's
	 * gain floor (sensor_model.h), share of the raw total (gain-free) */
	double *e_j, *lo_j, *hi_j, *time_s, *share;
	double total_raw_j;                 /* over the counters' span */
	double total_j, total_lo_j, total_hi_j; /* the same with the gain floor */
	double span_j;                      /* over perun's span */
	double perun_j;                     /* perun's sensors of this group over its span */
	int has_perun;
	int perun_readings;                 /* perun integrates power readings (NVML): an estimate */
	double diff;                        /* (span_j - perun_j) / perun_j; NAN: nothing to compare */
	int agree;                          /* |diff| <= COUNTER_CROSSCHECK_REL */
};

struct counter_results {
	size_t n_counters, n_gauges;        /* 0 counters: the ring has none */
	uint32_t pid;                       /* the sampler's */
	size_t ticks;
	double period_ms, max_gap_ms;
	int emulated;
	unsigned tid;                       /* the primary thread the phases are on, 0 none */
	int has_thread;                     /* it has segments: per-phase rows */
	struct counter_group *g;
	size_t ng;
	int disagree;                       /* groups (counters, not estimates) off by more than 1 % */
};

/* The counters of m's ring against its primary thread.  0 (n_counters 0
 * without SENSOR records), or a negative errno with *e filled. */
int counter_results_build(struct counter_results *cr, const struct energy_model *m, struct em_error *e);

void counter_results_free(struct counter_results *cr);

#endif
