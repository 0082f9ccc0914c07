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

#include "attrib/attrib_internal.h"

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

/*
 * Edge-aware model.  Plain interpolation assumes constant power inside a
 * window, so a window that holds a phase edge hands the phase on each side
 * the window's mean: a phase at 180 W between phases at 40 W and 95 W, six
 * windows long, comes out 3.5 % low (f(1-f) L |dP| per edge, 1/6 L |dP| on
 * average; measured in tests/unit/test_attrib.c).  When a window holds
 * exactly one edge and its neighbours hold none, the neighbours' powers Pb
 * (before) and Pa (after) are the best estimate of the two sides, so the
 * window's measured energy is split in proportion Pb f : Pa (1-f).  The
 * window total stays the measured one, so the rows still add up.  Instant
 * reads: across a segment with one edge the power steps at the edge from
 * the read before to the read after (not a ramp).
 */
static void find_edges(const struct attrib_series *s, const struct attrib_interval *iv, size_t n_iv,
		       double *tmp, unsigned char *n_edge, double *edge_t)
{
	size_t m = 0, n = s->n;
	for (size_t i = 0; i < n_iv; i++) {
		if (iv[i].t0_s > s->t_s[0] && iv[i].t0_s < s->t_s[n - 1])
			tmp[m++] = iv[i].t0_s;
		if (iv[i].t1_s > s->t_s[0] && iv[i].t1_s < s->t_s[n - 1])
			tmp[m++] = iv[i].t1_s;
	}
	qsort(tmp, m, sizeof *tmp, cmp_double);
	size_t seg = 0;
	for (size_t i = 0; i < m; i++) {
		if (i > 0 && tmp[i] == tmp[i - 1]) /* one phase ends as the next begins */
			continue;
		while (seg + 1 < n - 1 && tmp[i] >= s->t_s[seg + 1])
			seg++;
		if (tmp[i] <= s->t_s[seg]) /* on a knot: no split needed */
			continue;
		if (n_edge[seg] < 2)
			n_edge[seg]++;
		edge_t[seg] = tmp[i];
	}
}

int attrib_series_cum_j(const struct attrib_series *s, const unsigned char *n_edge, const double *edge_t_s,
			double *cum_j)
{
	if (!s->n)
		return 0;
	cum_j[0] = 0;
	for (size_t i = 1; i < s->n; i++) {
		double d = s->t_s[i] - s->t_s[i - 1];
		switch (s->kind) {
		case ATTRIB_WINDOW_AVG_W:
			cum_j[i] = cum_j[i - 1] + s->value[i] * d;
			break;
		case ATTRIB_COUNTER_J:
			if (s->value[i] < s->value[i - 1])
				return -EINVAL;
			/* the counter itself: no rounding accumulates */
			cum_j[i] = s->value[i] - s->value[0];
			break;
		default:
			if (n_edge && n_edge[i - 1] == 1) {
				/* the read before the edge holds until it */
				double a = edge_t_s[i - 1] - s->t_s[i - 1];
				cum_j[i] = cum_j[i - 1] + s->value[i - 1] * a + s->value[i] * (d - a);
			} else {
				cum_j[i] = cum_j[i - 1] + 0.5 * (s->value[i] + s->value[i - 1]) * d;
			}
			break;
		}
	}
	return 0;
}

int attrib_curve_init(const struct attrib_series *s, const struct attrib_interval *iv, size_t n_iv,
		      struct attrib_curve *c)
{
	*c = (struct attrib_curve){.s = s};
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
	size_t tn = 2 * n_iv > s->n ? 2 * n_iv : s->n;
	double *cum = malloc(s->n * sizeof *cum);
	double *tmp = malloc(tn * sizeof *tmp);
	c->n_edge = calloc(s->n, 1);
	c->edge_t_s = calloc(s->n, sizeof *c->edge_t_s);
	if (!cum || !tmp || !c->n_edge || !c->edge_t_s) {
		free(cum);
		free(tmp);
		attrib_curve_fini(c);
		return -ENOMEM;
	}
	if (iv)
		find_edges(s, iv, n_iv, tmp, c->n_edge, c->edge_t_s);
	for (size_t i = 1; i < s->n; i++)
		tmp[i - 1] = s->t_s[i] - s->t_s[i - 1];
	if (attrib_series_cum_j(s, c->n_edge, c->edge_t_s, cum) < 0) {
		/* Unwrapping needs the counter's range, which only the reader
		 * knows; a decrease here is a caller bug. */
		free(cum);
		free(tmp);
		attrib_curve_fini(c);
		return -EINVAL;
	}
	/* The median, not the mean: one stalled sampling round (perun warns
	 * about slow reads) must not change the auto choice. */
	qsort(tmp, s->n - 1, sizeof *tmp, cmp_double);
	c->period_s = tmp[(s->n - 1) / 2];
	free(tmp);
	c->cum_j = cum;
	return 0;
}

void attrib_curve_fini(struct attrib_curve *c)
{
	free(c->cum_j);
	free(c->n_edge);
	free(c->edge_t_s);
	c->cum_j = NULL;
	c->n_edge = NULL;
	c->edge_t_s = NULL;
}

/* Mean power of segment i (between t[i] and t[i+1]). */
static double seg_power(const struct attrib_curve *c, size_t i)
{
	return (c->cum_j[i + 1] - c->cum_j[i]) / (c->s->t_s[i + 1] - c->s->t_s[i]);
}

/* Segment i is split at its edge with side powers *pb, *pa.  With only one
 * clean neighbour (span ends, or edges next door) the other side's power
 * follows from the segment's own mean: mean = Pb f + Pa (1 - f). */
static int split_powers(const struct attrib_curve *c, size_t i, double *pb, double *pa)
{
	size_t nseg = c->s->n - 1;
	if (c->n_edge[i] != 1)
		return 0;
	if (c->s->kind == ATTRIB_INSTANT_W) {
		*pb = c->s->value[i];
		*pa = c->s->value[i + 1];
		return 1;
	}
	int left = i >= 1 && !c->n_edge[i - 1], right = i + 1 < nseg && !c->n_edge[i + 1];
	double f = (c->edge_t_s[i] - c->s->t_s[i]) / (c->s->t_s[i + 1] - c->s->t_s[i]);
	double mean = seg_power(c, i);
	if (left && right) {
		*pb = seg_power(c, i - 1);
		*pa = seg_power(c, i + 1);
	} else if (left) {
		*pb = seg_power(c, i - 1);
		*pa = (mean - *pb * f) / (1 - f);
	} else if (right) {
		*pa = seg_power(c, i + 1);
		*pb = (mean - *pa * (1 - f)) / f;
	} else {
		return 0;
	}
	/* Negative or zero side powers (noise around idle): no basis for a
	 * split; fall back to the plain model. */
	return *pb > 0 && *pa > 0;
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
	double seg = c->cum_j[i + 1] - c->cum_j[i], pb, pa;
	if (split_powers(c, i, &pb, &pa)) {
		double a = c->edge_t_s[i] - t[i];
		/* Scale so the pieces add up to the measured segment (the
		 * identity for instant reads, whose cum used this model). */
		double lam = s->kind == ATTRIB_INSTANT_W ? 1 : seg / (pb * a + pa * (d - a));
		if (u <= a)
			return c->cum_j[i] + lam * pb * u;
		return c->cum_j[i] + lam * (pb * a + pa * (u - a));
	}
	if (s->kind != ATTRIB_INSTANT_W)
		return c->cum_j[i] + seg * (u / d); /* constant power inside a window */
	/* Piecewise-linear power: trapezoid from t[i] to x. */
	double px = v[i] + (v[i + 1] - v[i]) * (u / d);
	return c->cum_j[i] + 0.5 * (v[i] + px) * u;
}

/*
 * Plain model: if the power steps from P1 to P2 at an edge a fraction f
 * into a segment of length L, the piece on the phase's side is off by
 *   window average:   f (1 - f) L |P2 - P1|   (either side)
 *   piecewise linear: (1 - f)^2 L |P2 - P1| / 2 after the edge,
 *                     f^2 L |P2 - P1| / 2 before it,
 * with P1, P2 from the neighbouring segments or the two reads: a bound.
 * Edge-aware split: the error comes from the side powers being estimates;
 * their scatter is gauged by how much each differs from the segment beyond
 * it, giving a variance f (1 - f) L^2 (dPb^2 + dPa^2) / 2 per edge (random
 * sign, so they add in quadrature).
 */
void attrib_curve_edge_err(const struct attrib_curve *c, double x, int start, double *bound_j,
			   double *var_j2)
{
	const double *t = c->s->t_s;
	size_t n = c->s->n, nseg = n - 1;
	*bound_j = *var_j2 = 0;
	if (x <= t[0] || x >= t[n - 1])
		return;
	size_t i = seg_index(t, n, x);
	double len = t[i + 1] - t[i], f = (x - t[i]) / len, pb, pa;
	if (split_powers(c, i, &pb, &pa)) {
		double db = i >= 2 ? seg_power(c, i - 1) - seg_power(c, i - 2) : 0;
		double da = i + 2 < nseg ? seg_power(c, i + 1) - seg_power(c, i + 2) : 0;
		if (c->s->kind == ATTRIB_INSTANT_W) {
			db = c->s->value[i] - (i >= 1 ? c->s->value[i - 1] : c->s->value[i]);
			da = c->s->value[i + 1] - (i + 2 < n ? c->s->value[i + 2] : c->s->value[i + 1]);
		}
		double w = f * (1 - f) * len;
		*var_j2 = 0.5 * w * w * (db * db + da * da);
		return;
	}
	if (c->s->kind == ATTRIB_INSTANT_W) {
		double dp = fabs(c->s->value[i + 1] - c->s->value[i]);
		double g = start ? 1 - f : f;
		*bound_j = 0.5 * g * g * len * dp;
		return;
	}
	/* Without a neighbour on one side, the step follows from the
	 * segment's mean: |P2 - P1| = |mean - P1| / (1 - f) (or / f). */
	double mean = seg_power(c, i);
	if (i + 1 < nseg && i > 0)
		*bound_j = f * (1 - f) * len * fabs(seg_power(c, i + 1) - seg_power(c, i - 1));
	else if (i > 0)
		*bound_j = f * len * fabs(mean - seg_power(c, i - 1));
	else if (i + 1 < nseg)
		*bound_j = (1 - f) * len * fabs(seg_power(c, i + 1) - mean);
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

/*
 * Sensor noise, W: two neighbouring windows (or reads) with no phase edge
 * in or between them see the same phase, so their difference is mostly
 * measurement noise (plus real drift, which makes this conservative).
 * Median of the squared differences / (2 * 0.4549), 0.4549 being the
 * median of chi-square with one degree of freedom: robust to the odd pair
 * that straddles an unlisted change.  0 when fewer than 8 pairs exist.
 */
double attrib_curve_noise_w(const struct attrib_curve *c)
{
	size_t n = c->s->n, m = 0;
	double *d2 = malloc(n * sizeof *d2);
	if (!d2)
		return 0;
	for (size_t i = 0; i + 2 < n; i++) {
		double d;
		if (c->n_edge[i] || c->n_edge[i + 1])
			continue;
		if (c->s->kind == ATTRIB_INSTANT_W)
			d = c->s->value[i + 1] - c->s->value[i];
		else
			d = seg_power(c, i + 1) - seg_power(c, i);
		d2[m++] = d * d;
	}
	double sigma = 0;
	if (m >= 8) {
		qsort(d2, m, sizeof *d2, cmp_double);
		sigma = sqrt(d2[m / 2] / (2 * 0.4549));
	}
	free(d2);
	return sigma;
}
