/* phase_stats.c - one phase's occurrence statistics (see phase_stats.h). */
#include "phase/phase_stats.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

double phase_stats_quantile(const double *v, size_t n, double q)
{
	double pos;
	size_t i;
	if (!n)
		return NAN;
	pos = q * (double)(n - 1);
	i = (size_t)pos;
	if (i + 1 >= n)
		return v[n - 1];
	return v[i] + (v[i + 1] - v[i]) * (pos - (double)i);
}

int phase_stats_of(const struct phase_set *ph, int phase, uint32_t pid, enum phase_stats_where where,
		   struct phase_stats *st)
{
	double *d = malloc((ph->nocc ? ph->nocc : 1) * sizeof *d);
	size_t n = 0;
	memset(st, 0, sizeof *st);
	if (!d)
		return -ENOMEM;
	for (size_t i = 0; i < ph->nocc; i++) {
		const struct phase_occ *o = &ph->occ[i];
		int device = o->tid == PHASE_DEVICE_TID;
		if (o->phase != phase || (pid && o->pid != pid) || (where == PHASE_STATS_HOST && device) ||
		    (where == PHASE_STATS_DEVICE && !device))
			continue;
		d[n++] = (double)(o->t1_ns - o->t0_ns) / 1e9;
		st->total_s += d[n - 1];
	}
	qsort(d, n, sizeof *d, cmp_double);
	st->count = n;
	st->mean_ms = n ? st->total_s / (double)n * 1e3 : NAN;
	st->p50_ms = phase_stats_quantile(d, n, 0.5) * 1e3;
	st->p95_ms = phase_stats_quantile(d, n, 0.95) * 1e3;
	free(d);
	return 0;
}
