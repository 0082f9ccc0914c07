/*
 * attrib_share.c - how much of each sensor window each phase occupies.
 *
 * Windows have non-decreasing starts and ends (contiguous for window
 * sensors, possibly overlapping for instant reads with an averaging time),
 * so one binary search per interval finds its first window and a forward
 * walk covers the rest: O(intervals * log windows + overlaps), which keeps
 * the offset fit (one share matrix per candidate offset) cheap.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attrib/attrib_internal.h"

int attrib_check_intervals(const struct attrib_interval *iv, size_t n_iv, size_t n_phase)
{
	if (n_phase == 0 || (n_iv > 0 && !iv))
		return -EINVAL;
	for (size_t i = 0; i < n_iv; i++) {
		if (!isfinite(iv[i].t0_s) || !isfinite(iv[i].t1_s) || iv[i].t1_s < iv[i].t0_s)
			return -EINVAL;
		if (iv[i].phase < 0 || (size_t)iv[i].phase >= n_phase)
			return -EINVAL;
	}
	return 0;
}

static int cmp_t0(const void *a, const void *b)
{
	const struct attrib_interval *x = a, *y = b;
	return (x->t0_s > y->t0_s) - (x->t0_s < y->t0_s);
}

int attrib_union_build(const struct attrib_interval *iv, size_t n_iv, struct attrib_union *u)
{
	u->n = 0;
	u->t0_s = u->t1_s = NULL;
	if (n_iv == 0)
		return 0;
	struct attrib_interval *tmp = malloc(n_iv * sizeof *tmp);
	u->t0_s = malloc(n_iv * sizeof(double));
	u->t1_s = malloc(n_iv * sizeof(double));
	if (!tmp || !u->t0_s || !u->t1_s) {
		free(tmp);
		attrib_union_free(u);
		return -ENOMEM;
	}
	memcpy(tmp, iv, n_iv * sizeof *tmp);
	qsort(tmp, n_iv, sizeof *tmp, cmp_t0);
	for (size_t i = 0; i < n_iv; i++) {
		if (u->n > 0 && tmp[i].t0_s <= u->t1_s[u->n - 1]) {
			if (tmp[i].t1_s > u->t1_s[u->n - 1])
				u->t1_s[u->n - 1] = tmp[i].t1_s;
			continue;
		}
		u->t0_s[u->n] = tmp[i].t0_s;
		u->t1_s[u->n] = tmp[i].t1_s;
		u->n++;
	}
	free(tmp);
	return 0;
}

void attrib_union_free(struct attrib_union *u)
{
	free(u->t0_s);
	free(u->t1_s);
	u->t0_s = u->t1_s = NULL;
	u->n = 0;
}

/* First window whose end is >= x (point rows) or > x (windows). */
static size_t first_window(const struct attrib_win *w, double x)
{
	size_t lo = 0, hi = w->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int before = w->point ? w->b_s[mid] < x : w->b_s[mid] <= x;
		if (before)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Add the part of [x0, x1) in every window to column col of out. */
static void spread(const struct attrib_win *w, double x0, double x1, size_t stride, size_t col,
		   double *out)
{
	for (size_t j = first_window(w, x0); j < w->n && w->a_s[j] < x1; j++) {
		if (w->point) {
			if (w->b_s[j] < x1) /* half-open: a read at x1 is the next phase */
				out[j * stride + col] += 1;
			continue;
		}
		double lo = w->a_s[j] > x0 ? w->a_s[j] : x0;
		double hi = w->b_s[j] < x1 ? w->b_s[j] : x1;
		if (hi > lo)
			out[j * stride + col] += (hi - lo) / (w->b_s[j] - w->a_s[j]);
	}
}

void attrib_shares(const struct attrib_win *w, const struct attrib_interval *iv, size_t n_iv,
		   const struct attrib_union *u, size_t n_phase, double shift_s, double *share)
{
	size_t k = n_phase + 1;
	memset(share, 0, w->n * k * sizeof *share);
	for (size_t i = 0; i < n_iv; i++)
		spread(w, iv[i].t0_s + shift_s, iv[i].t1_s + shift_s, k, (size_t)iv[i].phase, share);
	/* Accumulate the covered part in the unattributed column, then flip
	 * it: the union never double-counts overlapping phases. */
	for (size_t i = 0; i < u->n; i++)
		spread(w, u->t0_s[i] + shift_s, u->t1_s[i] + shift_s, k, n_phase, share);
	for (size_t j = 0; j < w->n; j++) {
		double *c = &share[j * k + n_phase];
		*c = 1 - *c;
		if (*c < 1e-12) /* rounding of the summed pieces */
			*c = 0;
	}
}

void attrib_gap_shares(const struct attrib_win *w, const struct attrib_union *u, double max_gap_s, double *gap)
{
	memset(gap, 0, w->n * sizeof *gap);
	if (w->point)
		return;
	for (size_t i = 1; i < u->n; i++)
		if (u->t0_s[i] - u->t1_s[i - 1] < max_gap_s)
			spread(w, u->t1_s[i - 1], u->t0_s[i], 1, 0, gap);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double median_of(double *v, size_t n)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int attrib_phase_times(const struct attrib_interval *iv, size_t n_iv, size_t n_phase, double t0_s,
		       double t1_s, double *time_s, double *typical_s)
{
	struct attrib_union u;
	double *len = malloc((n_iv + 1) * sizeof *len);
	size_t *cnt = calloc(n_phase + 1, sizeof *cnt);
	size_t *pos = calloc(n_phase + 1, sizeof *pos);
	int rc = attrib_union_build(iv, n_iv, &u);
	if (!len || !cnt || !pos || rc) {
		free(len);
		free(cnt);
		free(pos);
		attrib_union_free(&u);
		return rc ? rc : -ENOMEM;
	}
	/* Clipped lengths grouped by phase (a counting sort) for medians. */
	for (size_t i = 0; i < n_iv; i++)
		cnt[iv[i].phase]++;
	for (size_t p = 1; p < n_phase; p++)
		pos[p] = pos[p - 1] + cnt[p - 1];
	for (size_t p = 0; p < n_phase; p++) {
		time_s[p] = 0;
		cnt[p] = 0;
	}
	for (size_t i = 0; i < n_iv; i++) {
		double a = iv[i].t0_s > t0_s ? iv[i].t0_s : t0_s;
		double b = iv[i].t1_s < t1_s ? iv[i].t1_s : t1_s;
		if (b <= a)
			continue;
		size_t p = (size_t)iv[i].phase;
		time_s[p] += b - a;
		len[pos[p] + cnt[p]++] = b - a;
	}
	for (size_t p = 0; p < n_phase; p++)
		typical_s[p] = median_of(len + pos[p], cnt[p]);
	/* Unattributed: the gaps of the union inside the span. */
	double covered = 0, prev = t0_s;
	size_t ng = 0;
	for (size_t i = 0; i < u.n; i++) {
		double a = u.t0_s[i] > t0_s ? u.t0_s[i] : t0_s;
		double b = u.t1_s[i] < t1_s ? u.t1_s[i] : t1_s;
		if (b <= a)
			continue;
		covered += b - a;
		if (a > prev)
			len[ng++] = a - prev;
		prev = b;
	}
	if (t1_s > prev)
		len[ng++] = t1_s - prev;
	time_s[n_phase] = (t1_s - t0_s) - covered;
	if (time_s[n_phase] < 0)
		time_s[n_phase] = 0;
	typical_s[n_phase] = median_of(len, ng);
	free(len);
	free(cnt);
	free(pos);
	attrib_union_free(&u);
	return 0;
}
