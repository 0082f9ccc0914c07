/*
 * attrib_series.c - a sensor series as a cumulative energy curve and as
 * regression windows.
 *
 * What perun 1.0.0 stores (read from its source, perun/processing.py
 * processEnergyData and perun/monitoring/subprocess.py _monitoringLoop):
 *  - One timestamp per sampling round, time.perf_counter_ns() (that is
 *    CLOCK_MONOTONIC on Linux, not time_ns() as 0.9.1 did) taken *before*
 *    the round reads its sensors; stored relative to the first round as
 *    float32 seconds.
 *  - RAPL: the raw uint64 energy_uj counter (kept in alt_values) is diffed,
 *    wraps corrected with max_energy_range_uj, divided by diff(t):
 *    value[i] = E(t[i-1], t[i]) / (t[i] - t[i-1]), then
 *    np.insert(power, 0, power[0]) makes value[0] a copy of value[1].  So
 *    value[i] * dt_i is the exact counter difference: a window average.
 *  - NVML: nvmlDeviceGetPowerUsage (mW) read at t[i]: an instantaneous
 *    reading (the driver itself may average; avg_window_s models that).
 *  - perun's own ENERGY metric is np.trapezoid of the power series for both
 *    kinds; for window averages that is not the counter difference (it
 *    mixes neighbouring windows), so we do not use it.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "attrib_internal.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Index i with t[i] <= x < t[i+1], clamped to [0, n-2]. */
static size_t seg_index(const double *t, size_t n, double x)
{
	size_t lo = 0, hi = n - 1;
	if (x <= t[0])
		return 0;
	if (x >= t[n - 1])
		return n - 2;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (t[mid] <= x)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

int attrib_curve_init(const struct attrib_series *s, struct attrib_curve *c)
{
	c->s = s;
	c->cum_j = NULL;
	if (!s || !s->t_s || !s->value || s->n < 2)
		return -EINVAL;
	if (s->kind != ATTRIB_WINDOW_AVG_W && s->kind != ATTRIB_COUNTER_J && s->kind != ATTRIB_INSTANT_W)
		return -EINVAL;
	if (!(s->avg_window_s >= 0) || !isfinite(s->avg_window_s))
		return -EINVAL;
	for (size_t i = 0; i < s->n; i++) {
		if (!isfinite(s->t_s[i]) || !isfinite(s->value[i]))
			return -EINVAL;
		if (i > 0 && !(s->t_s[i] > s->t_s[i - 1]))
			return -EINVAL;
	}
	double *cum = malloc(s->n * sizeof *cum);
	double *dt = malloc((s->n - 1) * sizeof *dt);
	if (!cum || !dt) {
		free(cum);
		free(dt);
		return -ENOMEM;
	}
	cum[0] = 0;
	for (size_t i = 1; i < s->n; i++) {
		double d = s->t_s[i] - s->t_s[i - 1], e;
		dt[i - 1] = d;
		switch (s->kind) {
		case ATTRIB_WINDOW_AVG_W:
			e = s->value[i] * d;
			break;
		case ATTRIB_COUNTER_J:
			e = s->value[i] - s->value[i - 1];
			/* Unwrapping needs the counter's range, which only the
			 * reader knows; a decrease here is a caller bug. */
			if (e < 0) {
				free(cum);
				free(dt);
				return -EINVAL;
			}
			break;
		default:
			e = 0.5 * (s->value[i] + s->value[i - 1]) * d;
			break;
		}
		cum[i] = cum[i - 1] + e;
	}
	/* The median, not the mean: one stalled sampling round (perun warns
	 * about slow reads) must not change the auto choice. */
	qsort(dt, s->n - 1, sizeof *dt, cmp_double);
	c->period_s = dt[(s->n - 1) / 2];
	free(dt);
	c->cum_j = cum;
	return 0;
}

void attrib_curve_fini(struct attrib_curve *c)
{
	free(c->cum_j);
	c->cum_j = NULL;
}

double attrib_curve_energy_at(const struct attrib_curve *c, double x)
{
	const struct attrib_series *s = c->s;
	const double *t = s->t_s, *v = s->value;
	size_t n = s->n;
	if (x <= t[0])
		return 0;
	if (x >= t[n - 1])
		return c->cum_j[n - 1];
	size_t i = seg_index(t, n, x);
	double d = t[i + 1] - t[i], u = x - t[i];
	double seg = c->cum_j[i + 1] - c->cum_j[i];
	if (s->kind != ATTRIB_INSTANT_W)
		return c->cum_j[i] + seg * (u / d); /* constant power inside a window */
	/* Piecewise-linear power: trapezoid from t[i] to x. */
	double px = v[i] + (v[i + 1] - v[i]) * (u / d);
	return c->cum_j[i] + 0.5 * (v[i] + px) * u;
}

/* Mean power of segment i (between t[i] and t[i+1]), clamped index. */
static double seg_power(const struct attrib_curve *c, long i)
{
	long last = (long)c->s->n - 2;
	if (i < 0)
		i = 0;
	if (i > last)
		i = last;
	return (c->cum_j[i + 1] - c->cum_j[i]) / (c->s->t_s[i + 1] - c->s->t_s[i]);
}

/*
 * If the power steps from P1 to P2 at an edge a fraction f into a segment of
 * length L, the estimate for the piece on the phase's side is off by
 *   window average:   f (1 - f) L |P2 - P1|   (either side)
 *   piecewise linear: (1 - f)^2 L |P2 - P1| / 2 after the edge,
 *                     f^2 L |P2 - P1| / 2 before it.
 * P1, P2 are taken from the neighbouring segments (window sensors) or the
 * two reads (instant).  It is a bound for one step, not a 95 % interval.
 */
double attrib_curve_edge_bound(const struct attrib_curve *c, double x, int start)
{
	const double *t = c->s->t_s;
	size_t n = c->s->n;
	if (x <= t[0] || x >= t[n - 1])
		return 0;
	size_t i = seg_index(t, n, x);
	double len = t[i + 1] - t[i], f = (x - t[i]) / len;
	if (c->s->kind == ATTRIB_INSTANT_W) {
		double dp = fabs(c->s->value[i + 1] - c->s->value[i]);
		double g = start ? 1 - f : f;
		return 0.5 * g * g * len * dp;
	}
	double dp = fabs(seg_power(c, (long)i + 1) - seg_power(c, (long)i - 1));
	return f * (1 - f) * len * dp;
}

int attrib_win_build(const struct attrib_curve *c, struct attrib_win *w)
{
	const struct attrib_series *s = c->s;
	size_t n = s->n;
	w->point = 0;
	w->n = 0;
	w->a_s = malloc(n * sizeof(double));
	w->b_s = malloc(n * sizeof(double));
	w->y_w = malloc(n * sizeof(double));
	if (!w->a_s || !w->b_s || !w->y_w) {
		attrib_win_free(w);
		return -ENOMEM;
	}
	if (s->kind != ATTRIB_INSTANT_W) {
		for (size_t i = 1; i < n; i++) {
			w->a_s[i - 1] = s->t_s[i - 1];
			w->b_s[i - 1] = s->t_s[i];
			w->y_w[i - 1] = (c->cum_j[i] - c->cum_j[i - 1]) / (s->t_s[i] - s->t_s[i - 1]);
		}
		w->n = n - 1;
		return 0;
	}
	/* Instant reads: each read is a row.  With an averaging window the
	 * row covers [t - avg, t], kept only when inside the span so every
	 * row's shares are complete. */
	w->point = s->avg_window_s == 0;
	for (size_t i = 0; i < n; i++) {
		double a = s->t_s[i] - s->avg_window_s;
		if (a < s->t_s[0])
			continue;
		w->a_s[w->n] = a;
		w->b_s[w->n] = s->t_s[i];
		w->y_w[w->n] = s->value[i];
		w->n++;
	}
	return 0;
}

void attrib_win_free(struct attrib_win *w)
{
	free(w->a_s);
	free(w->b_s);
	free(w->y_w);
	w->a_s = w->b_s = w->y_w = NULL;
	w->n = 0;
}
