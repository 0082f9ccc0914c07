/*
 * attrib_offset.c - locate an unknown clock offset between the sensor and
 * the phase timeline (perun run outside libanchor).
 *
 * Convention: sensor time = phase time + delta.
 *
 * attrib_fit_offset profiles the NNLS residual over delta: at the true
 * offset the window shares explain the window powers; away from it they
 * are out of step and the residual grows.  Near the minimum every share
 * moves linearly with delta, so RSS(delta) is close to a parabola and the
 * usual nonlinear least-squares error applies:
 *   var(delta) = sigma^2 / sum (dr/ddelta)^2 = 2 sigma^2 / RSS''(delta).
 * Far from it RSS is flat and bumpy, which is why a full coarse grid comes
 * first: golden section alone would stop in a side minimum.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attrib/attrib_internal.h"

struct ctx {
	struct attrib_curve c;
	struct attrib_win w;
	struct attrib_union u;
	double *share;
};

static void ctx_fini(struct ctx *x)
{
	free(x->share);
	attrib_union_free(&x->u);
	attrib_win_free(&x->w);
	attrib_curve_fini(&x->c);
}

static int ctx_init(struct ctx *x, const struct attrib_series *s, const struct attrib_interval *iv,
		    size_t n_iv, size_t n_phase, double range_s)
{
	*x = (struct ctx){0};
	if (!(range_s >= 0) || !isfinite(range_s))
		return -EINVAL;
	int rc = attrib_check_intervals(iv, n_iv, n_phase);
	if (rc)
		return rc;
	rc = attrib_curve_init(s, NULL, 0, &x->c);
	if (rc)
		return rc;
	rc = attrib_win_build(&x->c, &x->w);
	if (!rc)
		rc = attrib_union_build(iv, n_iv, &x->u);
	if (!rc && x->w.n < n_phase + 2)
		rc = -ENODATA;
	if (!rc) {
		x->share = malloc(x->w.n * (n_phase + 1) * sizeof *x->share);
		if (!x->share)
			rc = -ENOMEM;
	}
	if (rc)
		ctx_fini(x);
	return rc;
}

/* Grid step: a fifth of a period resolves the residual's valley (it is
 * about a phase length wide); at most ~4000 candidates. */
static double grid_step(double period_s, double range_s)
{
	double step = period_s / 5;
	if (2 * range_s / step > 4000)
		step = 2 * range_s / 4000;
	return step;
}

int attrib_fit_offset(const struct attrib_series *s, const struct attrib_interval *iv, size_t n_iv,
		      size_t n_phase, double range_s, double *delta_s, double *sigma_s)
{
	struct ctx x;
	if (!delta_s || !sigma_s)
		return -EINVAL;
	int rc = ctx_init(&x, s, iv, n_iv, n_phase, range_s);
	if (rc)
		return rc;
	double step = grid_step(x.c.period_s, range_s), best = 0, best_rss = INFINITY, r;
	long m = (long)ceil(range_s / step);
	for (long i = -m; i <= m; i++) {
		double d = i * step;
		if ((rc = attrib_rss_at(&x.w, iv, n_iv, &x.u, n_phase, d, x.share, &r)))
			goto out;
		if (r < best_rss) {
			best_rss = r;
			best = d;
		}
	}
	/* Golden section inside the best grid cell and its neighbours. */
	const double gr = 0.6180339887498949;
	double a = best - step, b = best + step;
	double c1 = b - gr * (b - a), c2 = a + gr * (b - a), f1, f2;
	if ((rc = attrib_rss_at(&x.w, iv, n_iv, &x.u, n_phase, c1, x.share, &f1)) ||
	    (rc = attrib_rss_at(&x.w, iv, n_iv, &x.u, n_phase, c2, x.share, &f2)))
		goto out;
	while (b - a > 1e-5) {
		if (f1 < f2) {
			b = c2;
			c2 = c1;
			f2 = f1;
			c1 = b - gr * (b - a);
			rc = attrib_rss_at(&x.w, iv, n_iv, &x.u, n_phase, c1, x.share, &f1);
		} else {
			a = c1;
			c1 = c2;
			f1 = f2;
			c2 = a + gr * (b - a);
			rc = attrib_rss_at(&x.w, iv, n_iv, &x.u, n_phase, c2, x.share, &f2);
		}
		if (rc)
			goto out;
	}
	double d0 = f1 < f2 ? c1 : c2, r0 = f1 < f2 ? f1 : f2;
	if (best_rss < r0) { /* the grid point itself was better */
		d0 = best;
		r0 = best_rss;
	}
	/* Curvature over a twentieth of a period: wide enough to average the
	 * kinks where single edges cross window boundaries, narrow enough to
	 * stay inside the valley. */
	double h = x.c.period_s / 20, rm, rp;
	if ((rc = attrib_rss_at(&x.w, iv, n_iv, &x.u, n_phase, d0 - h, x.share, &rm)) ||
	    (rc = attrib_rss_at(&x.w, iv, n_iv, &x.u, n_phase, d0 + h, x.share, &rp)))
		goto out;
	double curv = (rm - 2 * r0 + rp) / (h * h);
	double dof = (double)x.w.n - (double)(n_phase + 2);
	double sigma2 = dof > 0 ? r0 / dof : 0;
	*delta_s = d0;
	*sigma_s = curv > 0 ? sqrt(2 * sigma2 / curv) : INFINITY;
out:
	ctx_fini(&x);
	return rc;
}

/* The best residual must be at most this share of the median residual
 * over the range for the fit to decide the offset (attrib_fit_offset_set). */
#define DECISIVE_RSS_RATIO 0.25

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int attrib_fit_offset_set(const struct attrib_series *s, const struct attrib_interval *iv, size_t n_iv,
			  size_t n_phase, double range_s, double level, double *best_s, double *set_lo_s,
			  double *set_hi_s)
{
	struct ctx x;
	int rc = ctx_init(&x, s, iv, n_iv, n_phase, range_s);
	if (rc)
		return rc;
	double step = grid_step(x.c.period_s, range_s) / 2, r0 = INFINITY;
	long m = (long)ceil(range_s / step);
	double *rss = malloc((size_t)(2 * m + 1) * sizeof *rss);
	if (!rss) {
		ctx_fini(&x);
		return -ENOMEM;
	}
	for (long i = -m; i <= m; i++) {
		if ((rc = attrib_rss_at(&x.w, iv, n_iv, &x.u, n_phase, (double)i * step, x.share, &rss[i + m])))
			goto out;
		if (rss[i + m] < r0) {
			r0 = rss[i + m];
			*best_s = (double)i * step;
		}
	}
	/* Every offset whose residual is within `level` of the best (relative
	 * to the best's variance per degree of freedom): a likelihood-ratio
	 * set, as wide as the data leave it, with every separate valley in. */
	double dof = (double)x.w.n - (double)(n_phase + 2);
	double cut = r0 * (1 + level / (dof > 1 ? dof : 1));
	/* A landscape of isolated spikes (power that follows CPU time barely
	 * differs between phases: measured, the lowest residual 0.6 of the
	 * median, 1.1 s from the truth) decides nothing: unless the best is
	 * far below the typical residual, every offset stays in the set. */
	{
		double *srt = malloc((size_t)(2 * m + 1) * sizeof *srt);
		if (!srt) {
			rc = -ENOMEM;
			goto out;
		}
		memcpy(srt, rss, (size_t)(2 * m + 1) * sizeof *srt);
		qsort(srt, (size_t)(2 * m + 1), sizeof *srt, cmp_dbl);
		double med = srt[m];
		free(srt);
		if (!(r0 <= DECISIVE_RSS_RATIO * med))
			cut = INFINITY;
	}
	*set_lo_s = INFINITY;
	*set_hi_s = -INFINITY;
	for (long i = -m; i <= m; i++)
		if (rss[i + m] <= cut) {
			*set_lo_s = fmin(*set_lo_s, (double)(i - 1) * step);
			*set_hi_s = fmax(*set_hi_s, (double)(i + 1) * step);
		}
	if (getenv("ANCHOR_DEBUG_FIT"))
		for (long i = -m; i <= m; i += (m / 40 > 0 ? m / 40 : 1))
			fprintf(stderr, "fit %+.4f rss %.6g %s\n", (double)i * step, rss[i + m], rss[i + m] <= cut ? "*" : "");
out:
	free(rss);
	ctx_fini(&x);
	return rc;
}

/* Pearson correlation of window power with the predicted activity. */
static double corr_at(struct ctx *x, const struct attrib_interval *iv, size_t n_iv, size_t n_phase,
		      const double *weight, double d)
{
	size_t k = n_phase + 1, n = x->w.n;
	attrib_shares(&x->w, iv, n_iv, &x->u, n_phase, d, x->share);
	double sa = 0, sy = 0, saa = 0, syy = 0, say = 0;
	for (size_t j = 0; j < n; j++) {
		double act = 0, y = x->w.y_w[j];
		for (size_t p = 0; p < n_phase; p++)
			act += (weight ? weight[p] : 1) * x->share[j * k + p];
		sa += act;
		sy += y;
		saa += act * act;
		syy += y * y;
		say += act * y;
	}
	double cov = say - sa * sy / n, va = saa - sa * sa / n, vy = syy - sy * sy / n;
	return va > 0 && vy > 0 ? cov / sqrt(va * vy) : 0;
}

int attrib_fit_offset_corr(const struct attrib_series *s, const struct attrib_interval *iv,
			   size_t n_iv, size_t n_phase, const double *weight, double range_s,
			   double step_s, double *delta_s, double *resolution_s)
{
	struct ctx x;
	if (!delta_s || !resolution_s || !(step_s > 0))
		return -EINVAL;
	int rc = ctx_init(&x, s, iv, n_iv, n_phase, range_s);
	if (rc)
		return rc;
	long m = (long)ceil(range_s / step_s), bi = 0;
	double best = -INFINITY;
	for (long i = -m; i <= m; i++) {
		double r = corr_at(&x, iv, n_iv, n_phase, weight, i * step_s);
		if (r > best) {
			best = r;
			bi = i;
		}
	}
	double d = bi * step_s;
	if (bi > -m && bi < m) {
		/* Vertex of the parabola through the peak and its neighbours. */
		double l = corr_at(&x, iv, n_iv, n_phase, weight, d - step_s);
		double r = corr_at(&x, iv, n_iv, n_phase, weight, d + step_s);
		double den = l - 2 * best + r;
		if (den < 0)
			d += 0.5 * step_s * (l - r) / den;
	}
	*delta_s = d;
	*resolution_s = step_s / 2;
	ctx_fini(&x);
	return 0;
}

/* One lag tried: its residual, and the grid step it was tried at (the
 * set's extent around it). */
struct lag_try {
	double d, rss, step;
};

static int try_lag(struct ctx *x, const struct attrib_interval *iv, size_t n_iv, size_t n_phase, double d,
		   double step, struct lag_try *t, size_t *n)
{
	t[*n].d = d;
	t[*n].step = step;
	return attrib_rss_at(&x->w, iv, n_iv, &x->u, n_phase, d, x->share, &t[(*n)++].rss);
}

/* The likelihood-ratio cut over what was tried: every lag whose residual
 * the best beats by no more than level per degree of freedom. */
static double lag_cut(const struct lag_try *t, size_t n, double dof, double level, size_t *best)
{
	*best = 0;
	for (size_t i = 1; i < n; i++)
		if (t[i].rss < t[*best].rss)
			*best = i;
	return t[*best].rss * (1 + level / (dof > 1 ? dof : 1));
}

/* Fine steps over at most this span, s: a set wider than it is
 * described at the coarse step (it is far from deciding the lag). */
#define LAG_FINE_SPAN_S 0.002

int attrib_fit_lag(const struct attrib_series *s, const struct attrib_interval *iv, size_t n_iv, size_t n_phase,
		   double range_s, double coarse_s, double fine_s, double level, struct attrib_lag *out)
{
	struct ctx x;
	if (!out || !(coarse_s > 0) || !(fine_s > 0) || fine_s > coarse_s || !(level > 0))
		return -EINVAL;
	int rc = ctx_init(&x, s, iv, n_iv, n_phase, range_s);
	if (rc)
		return rc;
	long m = (long)ceil(range_s / coarse_s);
	size_t nfine = (size_t)ceil(LAG_FINE_SPAN_S / fine_s) + 1, n = 0, best;
	struct lag_try *t = malloc((size_t)(2 * m + 1) * sizeof *t + nfine * sizeof *t);
	double dof = (double)x.w.n - (double)(n_phase + 2), cut, lo = INFINITY, hi = -INFINITY;
	if (!t) {
		ctx_fini(&x);
		return -ENOMEM;
	}
	/* The whole range coarsely (a valley as deep elsewhere must show),
	 * then finely over the coarse cells the set holds: the valley at the
	 * true lag is a few tenths of a ms wide, and the set's edges are
	 * wanted to well under that. */
	for (long i = -m; i <= m && !rc; i++)
		rc = try_lag(&x, iv, n_iv, n_phase, (double)i * coarse_s, coarse_s, t, &n);
	if (rc)
		goto out;
	cut = lag_cut(t, n, dof, level, &best);
	for (size_t i = 0; i < n; i++)
		if (t[i].rss <= cut) {
			lo = fmin(lo, t[i].d - coarse_s);
			hi = fmax(hi, t[i].d + coarse_s);
		}
	if (hi - lo <= LAG_FINE_SPAN_S) {
		size_t ncoarse = n;
		for (double d = lo + fine_s; d < hi - fine_s / 2 && !rc; d += fine_s)
			if (fabs(remainder(d, coarse_s)) > fine_s / 2) /* not a coarse lag again */
				rc = try_lag(&x, iv, n_iv, n_phase, d, fine_s, t, &n);
		/* A coarse lag inside the refined span has fine neighbours now. */
		for (size_t i = 0; i < ncoarse; i++)
			if (t[i].d > lo && t[i].d < hi)
				t[i].step = fine_s;
	}
	if (rc)
		goto out;
	/* Every lag in the set stands for its grid cell: the set's edge lies
	 * between it and the next lag tried, out of the set. */
	cut = lag_cut(t, n, dof, level, &best);
	out->best_s = t[best].d;
	out->lo_s = INFINITY;
	out->hi_s = -INFINITY;
	for (size_t i = 0; i < n; i++)
		if (t[i].rss <= cut) {
			out->lo_s = fmin(out->lo_s, t[i].d - t[i].step);
			out->hi_s = fmax(out->hi_s, t[i].d + t[i].step);
		}
	out->n_tried = n;
	out->n_windows = x.w.n;
out:
	free(t);
	ctx_fini(&x);
	return rc;
}
