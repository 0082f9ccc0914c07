/*
 * attrib_occurrence.c - one occurrence's own energy with honest bounds
 * (attrib.h attrib_occurrence).
 *
 * Why not attrib_integrate with the occurrence as its own phase: where a
 * short phase sits next to it, a window holds two edges, the edge-aware
 * split is not possible there, and the plain model's bound (built from the
 * neighbouring windows' powers, which the short phase mixes) came out too
 * narrow: 2-4 % low with intervals that missed the exact truth of every
 * 0.7 s occurrence between 60 ms and 250 ms phases (tools/groundtruth
 * scenario, tests/report/t_occurrences_truth_slow.py).  An occurrence lasting
 * several windows has its own power measured inside; that power, not its
 * neighbours', is the one to extend over its partial windows, and the
 * spread of its whole windows says how far the edges can be off.
 */
#include <errno.h>
#include <math.h>

#include "attrib/attrib.h"

/* Mean power of window i, (t[i-1], t[i]]. */
static double win_w(const double *t, const double *c, size_t i)
{
	return (c[i] - c[i - 1]) / (t[i] - t[i - 1]);
}

/* First i >= 1 with t[i-1] >= x (the first window starting at or after x). */
static size_t first_from(const double *t, size_t n, double x)
{
	size_t lo = 1, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t[mid - 1] >= x)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

/* Last i >= 1 with t[i] <= x, or 0. */
static size_t last_to(const double *t, size_t n, double x)
{
	size_t lo = 0, hi = n - 1;
	if (t[1] > x)
		return 0;
	while (lo < hi) {
		size_t mid = lo + (hi - lo + 1) / 2;
		if (t[mid] <= x)
			lo = mid;
		else
			hi = mid - 1;
	}
	return lo;
}

/* The power just outside the interval at one edge: from the partial window
 * (mean = f P_in + (1 - f) P_out, f the share inside) when most of it is
 * outside, else the whole window beyond it; -1 when neither exists. */
static double outside_w(const double *t, const double *c, size_t n, size_t part, double inside_s, double p_in,
			size_t beyond)
{
	double len = t[part] - t[part - 1], f = inside_s / len;
	if (f <= 0.8)
		return fmax(0, (win_w(t, c, part) - f * p_in) / (1 - f));
	if (beyond >= 1 && beyond < n)
		return win_w(t, c, beyond);
	return -1;
}

/* One edge's piece of length s_in inside partial window `part`: its
 * estimate and bounds (clipped to the window's energy), and its timing
 * term. */
static void edge(const double *t, const double *c, size_t n, size_t part, size_t beyond, double s_in, double p_near,
		 double p_lo, double p_hi, double timing_s, struct attrib_occ *o)
{
	double e_part, p_out, step;
	if (!(s_in > 0))
		return;
	e_part = c[part] - c[part - 1];
	o->energy_j += fmin(s_in * p_near, e_part);
	o->lo_j += fmin(s_in * p_lo, e_part);
	o->hi_j += fmin(s_in * p_hi, e_part);
	p_out = outside_w(t, c, n, part, s_in, p_near, beyond);
	/* An edge off by timing_s moves |P_in - P_out| x timing_s across it;
	 * without a view of the outside, the largest power step possible. */
	step = p_out >= 0 ? fabs(p_near - p_out) : fmax(p_hi, win_w(t, c, part));
	o->lo_j -= step * timing_s;
	o->hi_j += step * timing_s;
}

int attrib_occurrence(const double *t_s, const double *cum_j, size_t n, double a_s, double b_s, double timing_s,
		      struct attrib_occ *out)
{
	size_t i0, i1;
	double p_lo = INFINITY, p_hi = -INFINITY;
	*out = (struct attrib_occ){0};
	if (!t_s || !cum_j || n < 2 || !(b_s >= a_s) || !(timing_s >= 0))
		return -EINVAL;
	if (a_s < t_s[0] || b_s > t_s[n - 1])
		return -ERANGE;
	i0 = first_from(t_s, n, a_s);
	i1 = last_to(t_s, n, b_s);
	if (i0 >= n || !i1 || i1 < i0)
		return -ENODATA;
	for (size_t i = i0; i <= i1; i++) {
		double p = win_w(t_s, cum_j, i);
		p_lo = fmin(p_lo, p);
		p_hi = fmax(p_hi, p);
	}
	out->n_inside = i1 - i0 + 1;
	out->energy_j = out->lo_j = out->hi_j = cum_j[i1] - cum_j[i0 - 1];
	/* The start's partial window is i0 - 1 (when a is not on a knot), the
	 * end's i1 + 1; beyond them, i0 - 2 and i1 + 2. */
	if (i0 >= 2)
		edge(t_s, cum_j, n, i0 - 1, i0 - 2, t_s[i0 - 1] - a_s, win_w(t_s, cum_j, i0), p_lo, p_hi, timing_s, out);
	if (i1 + 1 < n)
		edge(t_s, cum_j, n, i1 + 1, i1 + 2, b_s - t_s[i1], win_w(t_s, cum_j, i1), p_lo, p_hi, timing_s, out);
	if (out->lo_j < 0)
		out->lo_j = 0;
	return 0;
}
