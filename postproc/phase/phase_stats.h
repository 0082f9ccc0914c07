/*
 * phase_stats.h - count, total and quantiles of one phase's occurrences:
 * the numbers `phases` prints for one ring and mring for each rank, from
 * one function so that the two cannot drift.
 */
#ifndef ANCHORPOST_PHASE_STATS_H
#define ANCHORPOST_PHASE_STATS_H

#include <stddef.h>
#include <stdint.h>

#include "phase/phase_set.h"

struct phase_stats {
	size_t count;
	double total_s, mean_ms, p50_ms, p95_ms; /* mean/quantiles NAN when count is 0 */
};

/* Which occurrences: host threads, device timelines (GPU), or both. */
enum phase_stats_where { PHASE_STATS_HOST, PHASE_STATS_DEVICE, PHASE_STATS_ALL };

/* Occurrences of phase (of pid; 0: every process) on `where`.  Returns 0
 * or -ENOMEM. */
int phase_stats_of(const struct phase_set *ph, int phase, uint32_t pid, enum phase_stats_where where,
		   struct phase_stats *st);

/* The q-quantile (0..1) of n sorted values, linearly interpolated; NAN
 * when n is 0. */
double phase_stats_quantile(const double *v, size_t n, double q);

#endif
