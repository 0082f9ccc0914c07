/*
 * attrib_split.c - attrib_split: each window's measured energy, split
 * among the phases active in it in proportion to time share x fitted power.
 *
 * Why: integration assumes constant power inside a window, so every phase
 * edge misplaces energy between neighbours (a 6-period phase between
 * lower-power neighbours came out -1.3 % on real perun data); regression
 * alone spreads the fit's error over all of a phase's time.  Splitting
 * keeps the measurement (a window inside one phase gives it all its
 * energy, exactly) and uses the NNLS powers only to divide the windows
 * that hold several phases.  The rows add up to the total by
 * construction.  Intervals: the same split for every bootstrap replicate
 * of the fitted powers (percentiles), widened by the larger of: the change
 * a shift of every phase edge by the timing error makes, and the
 * quadrature sum over edges of |power step| x timing error; and on one
 * side by what the glue between phases may have drawn (widen_by_gaps:
 * short unattributed gaps at any power their window shows).  The edge
 * terms assume the caller's intervals are in time order (adjacent ones
 * touching), as a thread's exclusive timeline is.  Needs window energies, so instant
 * (NVML) reads fall back to attrib_auto.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attrib/attrib_internal.h"

/* Timing error assumed at every phase edge: perun reads its sensors some
 * ms after it stamps a round (measured here: long phases were off by up to
 * 0.6 % with +-1 ms, covered with 3 ms; bench/accuracy.py). */
#define SPLIT_TIMING_S 0.003

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Energy per column (k = n_phase + 1) for powers p. */
static void split(const struct attrib_win *w, const double *share, size_t k, const double *p, double *e)
{
	memset(e, 0, k * sizeof *e);
	for (size_t j = 0; j < w->n; j++) {
		const double *sh = &share[j * k];
		double ej = w->y_w[j] * (w->b_s[j] - w->a_s[j]), den = 0, tot = 0;
		for (size_t c = 0; c < k; c++) {
			den += sh[c] * p[c];
			tot += sh[c];
		}
		for (size_t c = 0; c < k; c++) {
			/* All active powers fitted at 0: split by time. */
			double f = den > 0 ? sh[c] * p[c] / den : (tot > 0 ? sh[c] / tot : 0);
			e[c] += ej * f;
		}
	}
}

/* Bootstrap: the same split for every replicate of the fitted powers;
 * rep[p * n_boot + b] is phase p's energy in replicate b. */
static int split_replicates(const struct attrib_win *w, const double *share, size_t k,
			    const struct attrib_fit *f, double *rep)
{
	for (unsigned b = 0; b < f->n_boot; b++) {
		double eb[64], *dst = eb;
		if (k > 64 && !(dst = malloc(k * sizeof *dst)))
			return -ENOMEM;
		split(w, share, k, &f->boot_p_w[(size_t)b * k], dst);
		for (size_t p = 0; p < k; p++)
			rep[(size_t)p * f->n_boot + b] = dst[p];
		if (dst != eb)
			free(dst);
	}
	return 0;
}

/* Timing: perun stamps a round before it reads the sensors, and the
 * counters themselves tick: refit and resplit with the phases moved by
 * +-sigma_s and widen every interval by the larger change.  share and es
 * are scratch (share is left holding the last shifted shares). */
static int widen_by_shift(const struct attrib_win *w, const struct attrib_interval *iv, size_t n_iv,
			  const struct attrib_union *u, size_t n_phase, double sigma_s, double *share,
			  const double *e, double *es, double *widen_j)
{
	size_t k = n_phase + 1;
	int rc;

	for (int sgn = -1; sigma_s > 0 && sgn <= 1; sgn += 2) {
		struct attrib_fit g;
		attrib_shares(w, iv, n_iv, u, n_phase, sgn * sigma_s, share);
		if ((rc = attrib_fit_rows(share, w->y_w, w->n, k, 0, 0, 0, &g)))
			return rc;
		split(w, share, k, g.p_w, es);
		for (size_t p = 0; p < k; p++)
			if (fabs(es[p] - e[p]) > widen_j[p])
				widen_j[p] = fabs(es[p] - e[p]);
		attrib_fit_free(&g);
	}
	return 0;
}

/* Per edge: a timing error tau moves |p_a - p_b| * tau joules across
 * it.  Independent from edge to edge, so they add in quadrature (a
 * systematic lag is what widen_by_shift covers).  Edges are found between
 * touching neighbours in iv, so iv must be in time order. */
static int widen_by_edges(const struct attrib_interval *iv, size_t n_iv, size_t n_phase,
			  const double *p_w, double sigma_s, double *widen_j)
{
	size_t k = n_phase + 1;
	double *q = calloc(k, sizeof *q);

	if (!q)
		return -ENOMEM;
	for (size_t i = 0; i < n_iv; i++) {
		int a = iv[i].phase;
		int prev = (int)n_phase, next = (int)n_phase;
		if (i > 0 && iv[i - 1].t1_s == iv[i].t0_s)
			prev = iv[i - 1].phase;
		if (i + 1 < n_iv && iv[i + 1].t0_s == iv[i].t1_s)
			next = iv[i + 1].phase;
		double d0 = fabs(p_w[a] - p_w[prev]) * sigma_s;
		double d1 = fabs(p_w[a] - p_w[next]) * sigma_s;
		q[a] += d0 * d0 + d1 * d1;
		if (prev == (int)n_phase)
			q[n_phase] += d0 * d0;
		if (next == (int)n_phase)
			q[n_phase] += d1 * d1;
	}
	for (size_t p = 0; p < k; p++)
		if (sqrt(q[p]) > widen_j[p])
			widen_j[p] = sqrt(q[p]);
	free(q);
	return 0;
}

/* Gaps: unattributed time between two phases, shorter than a window (the
 * Python between two `with` blocks, a preemption there), is split at the
 * unattributed row's one fitted power, which the long stretches outside
 * every phase (lead-in, lead-out, idle) set.  Glue code draws like the
 * work around it, not like idle: on the torch victim beside stress-ng the
 * gaps held 1.4 J that the split gave to the phases, while the
 * unattributed row said [0, 0.58] J.  A gap's own power is not
 * identifiable (0.3 % of a window), so it is bounded: between the lowest
 * and the highest fitted power present in its window (the unattributed
 * one included).  Each window is split again with its gap time at either
 * end, and every row's bound moves by the change, summed over windows
 * (linear, not in quadrature: the same glue runs every step). */
static int widen_by_gaps(const struct attrib_win *w, const struct attrib_union *u, double period_s,
			 const double *share, size_t k, const double *p_w, double *lo_j, double *hi_j)
{
	size_t un = k - 1;
	double *gap = malloc(w->n * sizeof *gap), *wt = malloc(k * sizeof *wt);

	if (!gap || !wt) {
		free(gap);
		free(wt);
		return -ENOMEM;
	}
	attrib_gap_shares(w, u, period_s, gap);
	for (size_t j = 0; j < w->n; j++) {
		const double *sh = &share[j * k];
		double g = gap[j] < sh[un] ? gap[j] : sh[un], ej = w->y_w[j] * (w->b_s[j] - w->a_s[j]);
		double den = 0, pmin = p_w[un], pmax = p_w[un];
		if (!(g > 0))
			continue;
		for (size_t c = 0; c < k; c++) {
			wt[c] = sh[c] * p_w[c];
			den += wt[c];
			if (c < un && sh[c] > 0) {
				pmin = p_w[c] < pmin ? p_w[c] : pmin;
				pmax = p_w[c] > pmax ? p_w[c] : pmax;
			}
		}
		for (int end = 0; end < 2 && den > 0; end++) {
			double alt = end ? pmax : pmin;
			double wu = (sh[un] - g) * p_w[un] + g * alt, den2 = den - wt[un] + wu;
			if (alt == p_w[un] || !(den2 > 0))
				continue;
			for (size_t c = 0; c < k; c++) {
				double d = ej * ((c == un ? wu : wt[c]) / den2 - wt[c] / den);
				if (d < 0)
					lo_j[c] -= d;
				else
					hi_j[c] += d;
			}
		}
	}
	free(gap);
	free(wt);
	return 0;
}

/* The result rows: energy e, the bootstrap percentiles of rep (sorted in
 * place) widened by widen_j on both sides and by gap_lo/gap_hi on one, and
 * the flags. */
static void fill_rows(const struct attrib_win *w, const struct attrib_fit *f, const double *e, double *rep,
		      const double *widen_j, const double *gap_lo, const double *gap_hi, double vif_max, size_t k,
		      struct attrib_result *out)
{
	out->n_windows = w->n;
	out->rms_resid_w = sqrt(f->rss / (double)w->n);
	out->cond = f->cond;
	out->n_boot = f->n_boot;
	out->block_len = f->block_len;
	for (size_t p = 0; p < k; p++) {
		struct attrib_row *r = &out->row[p];
		double *v = &rep[(size_t)p * f->n_boot];
		r->method = ATTRIB_SPLIT;
		r->vif = f->vif[p];
		r->energy_j = e[p];
		qsort(v, f->n_boot, sizeof *v, cmp_double);
		r->ci_low_j = v[(size_t)(0.025 * (f->n_boot - 1))];
		r->ci_high_j = v[(size_t)ceil(0.975 * (f->n_boot - 1))];
		/* The replicates scatter around the split of the fitted powers,
		 * not necessarily around this estimate: keep it inside. */
		if (r->ci_low_j > r->energy_j)
			r->ci_low_j = r->energy_j;
		if (r->ci_high_j < r->energy_j)
			r->ci_high_j = r->energy_j;
		r->ci_low_j -= widen_j[p] + gap_lo[p];
		r->ci_high_j += widen_j[p] + gap_hi[p];
		if (r->ci_low_j < 0 && r->energy_j >= 0)
			r->ci_low_j = 0;
		if (r->flags & ATTRIB_FLAG_NO_TIME) {
			r->vif = 0;
		} else if (!(f->vif[p] <= vif_max)) {
			r->flags |= ATTRIB_FLAG_UNIDENTIFIABLE;
			r->ci_low_j = 0;
			r->ci_high_j = out->total_j;
		}
		if (f->p_w[p] == 0 && !(r->flags & ATTRIB_FLAG_NO_TIME))
			r->flags |= ATTRIB_FLAG_AT_ZERO;
		r->power_w = r->time_s > 0 ? r->energy_j / r->time_s : 0;
	}
	double sum = 0;
	for (size_t p = 0; p < k; p++)
		sum += e[p];
	out->closure_j = sum - out->total_j;
}

int attrib_split(const struct attrib_series *s, const struct attrib_interval *iv, size_t n_iv,
		 size_t n_phase, const struct attrib_opts *o, struct attrib_result *out)
{
	struct attrib_curve c;
	struct attrib_win w = {0};
	struct attrib_union u = {0};
	struct attrib_fit f = {0};
	size_t k = n_phase + 1;
	double *share = NULL, *e = NULL, *rep = NULL, *es = NULL, *widen_j = NULL, *gap_lo = NULL, *gap_hi = NULL;
	double sigma_s = o && o->offset_sigma_s != 0 ? o->offset_sigma_s : SPLIT_TIMING_S;
	unsigned n_boot = o && o->n_boot ? o->n_boot : 200;
	uint64_t seed = o && o->seed ? o->seed : 0x616e63686f72ull;
	double vif_max = o && o->vif_max > 0 ? o->vif_max : 1e4;
	int rc;

	if (!s || !out)
		return -EINVAL;
	if (s->kind == ATTRIB_INSTANT_W)
		return attrib_auto(s, iv, n_iv, n_phase, o, out);
	*out = (struct attrib_result){0};
	if ((rc = attrib_check_intervals(iv, n_iv, n_phase)))
		return rc;
	if ((rc = attrib_curve_init(s, iv, n_iv, &c)))
		return rc;
	if ((rc = attrib_result_setup(&c, iv, n_iv, n_phase, out)))
		goto done;
	if ((rc = attrib_win_build(&c, &w)) || (rc = attrib_union_build(iv, n_iv, &u)))
		goto done;
	rc = -ENODATA;
	if (w.n < k + 1)
		goto done;
	rc = -ENOMEM;
	share = malloc(w.n * k * sizeof *share);
	e = malloc(k * sizeof *e);
	rep = malloc((size_t)n_boot * k * sizeof *rep);
	es = malloc(k * sizeof *es);
	widen_j = calloc(k, sizeof *widen_j);
	gap_lo = calloc(k, sizeof *gap_lo);
	gap_hi = calloc(k, sizeof *gap_hi);
	if (!share || !e || !rep || !es || !widen_j || !gap_lo || !gap_hi)
		goto done;
	attrib_shares(&w, iv, n_iv, &u, n_phase, 0, share);
	if ((rc = attrib_fit_rows(share, w.y_w, w.n, k, n_boot, seed, o ? o->block_len : 0, &f)))
		goto done;
	split(&w, share, k, f.p_w, e);
	/* widen_by_gaps before widen_by_shift, which leaves share shifted */
	if ((rc = split_replicates(&w, share, k, &f, rep)) ||
	    (rc = widen_by_gaps(&w, &u, c.period_s, share, k, f.p_w, gap_lo, gap_hi)) ||
	    (rc = widen_by_shift(&w, iv, n_iv, &u, n_phase, sigma_s, share, e, es, widen_j)) ||
	    (rc = widen_by_edges(iv, n_iv, n_phase, f.p_w, sigma_s, widen_j)))
		goto done;
	fill_rows(&w, &f, e, rep, widen_j, gap_lo, gap_hi, vif_max, k, out);
	rc = 0;
done:
	if (rc)
		attrib_result_free(out);
	free(share);
	free(e);
	free(rep);
	free(es);
	free(widen_j);
	free(gap_lo);
	free(gap_hi);
	attrib_fit_free(&f);
	attrib_union_free(&u);
	attrib_win_free(&w);
	attrib_curve_fini(&c);
	return rc;
}
