/*
 * attrib_glitch.c - impossible readings of a power sensor, found and
 * repaired (see attrib.h, "Impossible readings").
 *
 * What perun 1.0.0 does with a counter that steps back (perun/processing.py
 * processEnergyData): d = np.diff(counter) on uint64 wraps to about 2^64,
 * which is >= the counter's max, so it adds max - 2^64 + 1: a step back by
 * delta becomes max - delta + 1 µJ, the full range, in one window.  The
 * stored counter (alt_values) keeps the truth of every read; only the one
 * window's energy is lost when the base itself changed (a reset), and is
 * not lost when a single read was wrong (the next read puts the counter
 * back).  Telling the two apart needs only the readings around the run.
 */
#include <errno.h>
#include <math.h>
#include <string.h>

#include "attrib/attrib.h"

/* A window's energy as the counter says, one wrap added back when it went
 * down and the range is known (what perun does for a real wrap). */
static double counter_step(double c0, double c1, double range_j)
{
	double d = c1 - c0;
	return d < 0 && range_j > 0 ? d + range_j : d;
}

static int possible(double e_j, double dt_s, double ceiling_w)
{
	return isfinite(e_j) && e_j >= 0 && dt_s > 0 && e_j <= ceiling_w * dt_s;
}

static void note_bad(struct attrib_glitch *g, double t_end_s, double w)
{
	if (!g->nbad++)
		g->first_t_s = t_end_s;
	if (!isfinite(w) || w > g->max_w)
		g->max_w = isfinite(w) ? w : INFINITY;
}

/* Mean power of up to ATTRIB_GLITCH_NEIGHBOURS possible windows before a
 * and after b (indices of windows; e/ok per window), time-weighted; 0 when
 * there is none. */
static double neighbour_power(const double *t_s, const double *e, const unsigned char *ok, size_t n, size_t a,
			      size_t b)
{
	double ej = 0, dt = 0;
	unsigned took = 0;
	for (size_t i = a; i-- > 1 && took < ATTRIB_GLITCH_NEIGHBOURS;)
		if (ok[i]) {
			ej += e[i];
			dt += t_s[i] - t_s[i - 1];
			took++;
		}
	took = 0;
	for (size_t i = b + 1; i < n && took < ATTRIB_GLITCH_NEIGHBOURS; i++)
		if (ok[i]) {
			ej += e[i];
			dt += t_s[i] - t_s[i - 1];
			took++;
		}
	return dt > 0 ? ej / dt : 0;
}

/* Energy span_j over windows a..b, in proportion to their length. */
static void spread(const double *t_s, double *e, size_t a, size_t b, double span_j)
{
	for (size_t i = a; i <= b; i++)
		e[i] = span_j * (t_s[i] - t_s[i - 1]) / (t_s[b] - t_s[a - 1]);
}

/*
 * A run a..b that the readings around it do not explain may still be one
 * bad read whose other window looks possible: a read of 0 (what perun's
 * RAPL callback returns on an error) on a counter near 0 leaves the next
 * window at a possible power; a read a little too high leaves the window
 * before it possible.  The hypotheses: a reset (the run's energy lost,
 * the neighbours as read), the read at b bad (windows a..b+1 together
 * exact), the read at a-1 bad (a-1..b together exact).  The one whose
 * windows come closest to the power around them (ATTRIB_GLITCH_NEIGHBOURS
 * windows outside a-1..b+1) wins; a reset on a tie, since it invents no
 * energy.  1 and the run widened into *lo..*hi for a bad read.
 */
static int bad_read_beside(const double *t_s, const double *c_j, const double *e, const unsigned char *ok,
			   size_t n, double range_j, double ceiling_w, size_t *lo, size_t *hi)
{
	size_t a = *lo, b = *hi;
	double p = neighbour_power(t_s, e, ok, n, a > 1 ? a - 1 : a, b + 1 < n ? b + 1 : b);
	double dev_before = 0, dev_after = 0, best, dev;
	int pick = 0;
	if (a > 1)
		dev_before = fabs(e[a - 1] - p * (t_s[a - 1] - t_s[a - 2]));
	if (b + 1 < n)
		dev_after = fabs(e[b + 1] - p * (t_s[b + 1] - t_s[b]));
	best = dev_before + dev_after; /* the reset */
	if (b + 1 < n && ok[b + 1]) {
		double span = counter_step(c_j[a - 1], c_j[b + 1], range_j), T = t_s[b + 1] - t_s[a - 1];
		dev = fabs(span - p * T) + dev_before;
		if (possible(span, T, ceiling_w) && dev < best) {
			best = dev;
			pick = 1;
		}
	}
	if (a > 1 && ok[a - 1]) {
		double span = counter_step(c_j[a - 2], c_j[b], range_j), T = t_s[b] - t_s[a - 2];
		dev = fabs(span - p * T) + dev_after;
		if (possible(span, T, ceiling_w) && dev < best)
			pick = 2;
	}
	if (pick == 1)
		*hi = b + 1;
	else if (pick == 2)
		*lo = a - 1;
	return pick != 0;
}

static int check_times(const double *t_s, size_t n, double ceiling_w)
{
	if (!t_s || n < 2 || !(ceiling_w > 0))
		return -EINVAL;
	for (size_t i = 1; i < n; i++)
		if (!(t_s[i] > t_s[i - 1]))
			return -EINVAL;
	return 0;
}

int attrib_glitch_counter(const double *t_s, const double *c_j, size_t n, double range_j, double ceiling_w,
			  double *out_c, unsigned char *bad, struct attrib_glitch *g)
{
	/* e and ok live in out_c and bad until the counter is rebuilt */
	double *e = out_c;
	unsigned char *ok = bad;
	int rc = check_times(t_s, n, ceiling_w);

	memset(g, 0, sizeof *g);
	if (rc)
		return rc;
	for (size_t i = 1; i < n; i++) {
		e[i] = counter_step(c_j[i - 1], c_j[i], range_j);
		ok[i] = (unsigned char)possible(e[i], t_s[i] - t_s[i - 1], ceiling_w);
	}
	ok[0] = 1;
	for (size_t a = 1; a < n;) {
		size_t b = a;
		double span_j, p;
		if (ok[a]) {
			a++;
			continue;
		}
		while (b + 1 < n && !ok[b + 1])
			b++;
		g->nruns++;
		for (size_t i = a; i <= b; i++) {
			note_bad(g, t_s[i], e[i] / (t_s[i] - t_s[i - 1]));
			g->raw_j += isfinite(e[i]) ? e[i] : 0;
		}
		span_j = counter_step(c_j[a - 1], c_j[b], range_j);
		if (possible(span_j, t_s[b] - t_s[a - 1], ceiling_w)) {
			/* one bad read or a few: the run's total is exact */
			g->nexact++;
			spread(t_s, e, a, b, span_j);
		} else {
			/* a reset, or a bad read next to a window it left possible */
			size_t lo = a, hi = b;
			if (bad_read_beside(t_s, c_j, e, ok, n, range_j, ceiling_w, &lo, &hi)) {
				g->nexact++;
				for (size_t i = lo; i <= hi; i++)
					if (i < a || i > b) { /* the neighbour the bad read spoiled */
						note_bad(g, t_s[i], e[i] / (t_s[i] - t_s[i - 1]));
						g->raw_j += e[i];
						ok[i] = 0;
					}
				spread(t_s, e, lo, hi, counter_step(c_j[lo - 1], c_j[hi], range_j));
				a = lo;
				b = hi;
			} else {
				p = neighbour_power(t_s, e, ok, n, a, b);
				for (size_t i = a; i <= b; i++)
					e[i] = p * (t_s[i] - t_s[i - 1]);
			}
		}
		for (size_t i = a; i <= b; i++)
			g->used_j += e[i];
		a = b + 1;
	}
	/* ok -> bad, e -> the counter (in place, front to back) */
	for (size_t i = 0; i < n; i++)
		bad[i] = !ok[i];
	out_c[0] = c_j[0];
	for (size_t i = 1; i < n; i++)
		out_c[i] = out_c[i - 1] + e[i];
	return 0;
}

static int read_ok(double w, double ceiling_w)
{
	return isfinite(w) && w >= 0 && w <= ceiling_w;
}

/* Window means: the counter's rule on e[i] = p[i] * dt, without the exact
 * case (a mean has no neighbours' readings to recover it from). */
static void repair_windows(const double *t_s, const double *p_w, size_t n, double ceiling_w, double *out_w,
			   unsigned char *bad, struct attrib_glitch *g)
{
	unsigned char *ok = bad; /* until the end */
	ok[0] = 1;
	for (size_t i = 1; i < n; i++) {
		out_w[i] = p_w[i] * (t_s[i] - t_s[i - 1]); /* energies meanwhile */
		ok[i] = (unsigned char)possible(out_w[i], t_s[i] - t_s[i - 1], ceiling_w);
	}
	for (size_t a = 1; a < n;) {
		size_t b = a;
		double p;
		if (ok[a]) {
			a++;
			continue;
		}
		while (b + 1 < n && !ok[b + 1])
			b++;
		g->nruns++;
		p = neighbour_power(t_s, out_w, ok, n, a, b);
		for (size_t i = a; i <= b; i++) {
			note_bad(g, t_s[i], p_w[i]);
			g->raw_j += isfinite(out_w[i]) ? out_w[i] : 0;
			out_w[i] = p * (t_s[i] - t_s[i - 1]);
			g->used_j += out_w[i];
		}
		a = b + 1;
	}
	for (size_t i = 0; i < n; i++)
		bad[i] = !ok[i];
	for (size_t i = 1; i < n; i++)
		out_w[i] /= t_s[i] - t_s[i - 1];
	out_w[0] = out_w[1]; /* perun's copy of the first window */
}

/* Reads: a bad read becomes the mean of the nearest possible read on each
 * side; the windows on both sides of it are touched. */
static void repair_reads(const double *t_s, const double *p_w, size_t n, double ceiling_w, double *out_w,
			 unsigned char *bad, struct attrib_glitch *g)
{
	memset(bad, 0, n);
	for (size_t i = 0; i < n; i++) {
		double sum = 0;
		int k = 0;
		if (read_ok(p_w[i], ceiling_w)) {
			out_w[i] = p_w[i];
			continue;
		}
		if (i == 0 || read_ok(p_w[i - 1], ceiling_w))
			g->nruns++;
		for (size_t lo = i; lo-- > 0;)
			if (read_ok(p_w[lo], ceiling_w)) {
				sum += p_w[lo];
				k++;
				break;
			}
		for (size_t hi = i + 1; hi < n; hi++)
			if (read_ok(p_w[hi], ceiling_w)) {
				sum += p_w[hi];
				k++;
				break;
			}
		out_w[i] = k ? sum / k : 0;
		for (size_t w = i ? i : 1; w <= i + 1 && w < n; w++)
			if (!bad[w]) {
				bad[w] = 1;
				note_bad(g, t_s[w], p_w[i]);
			}
	}
	/* the touched windows' energy, trapezoids as perun sums them */
	for (size_t i = 1; i < n; i++)
		if (bad[i]) {
			double dt = t_s[i] - t_s[i - 1], r = 0.5 * (p_w[i] + p_w[i - 1]) * dt;
			g->raw_j += isfinite(r) ? r : 0;
			g->used_j += 0.5 * (out_w[i] + out_w[i - 1]) * dt;
		}
}

int attrib_glitch_power(const double *t_s, const double *p_w, size_t n, enum attrib_kind kind,
			double ceiling_w, double *out_w, unsigned char *bad, struct attrib_glitch *g)
{
	int rc = check_times(t_s, n, ceiling_w);

	memset(g, 0, sizeof *g);
	if (rc)
		return rc;
	if (kind == ATTRIB_WINDOW_AVG_W)
		repair_windows(t_s, p_w, n, ceiling_w, out_w, bad, g);
	else
		repair_reads(t_s, p_w, n, ceiling_w, out_w, bad, g);
	return 0;
}
