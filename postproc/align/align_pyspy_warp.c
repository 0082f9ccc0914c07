/* align_pyspy_warp.c - speedscope's "+warp": local corrections of the
 * nominal times, samples assigned in order to the phase timeline by
 * dynamic programming (align_pyspy.h). */
#include "align/align_pyspy_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- speedscope warp ----------------------------------------------- */

#define WARP_BAND 24
#define WARP_PASSES 3
#define WARP_NEAR_S 0.5
#define WARP_MAX_CELLS 20000000ULL /* 12 bytes each */

/* fn[f]: a function id per frame, the same for every line of one
 * (name, file).  0 or -ENOMEM. */
static int function_ids(const struct pyspy_profile *p, uint32_t **fn_out, size_t *nfn)
{
	uint32_t *fn = malloc((p->frames.n ? p->frames.n : 1) * sizeof *fn), n = 0;
	if (!fn || pyspy_function_ids(p, fn, NULL, &n)) {
		free(fn);
		return -ENOMEM;
	}
	*fn_out = fn;
	*nfn = n;
	return 0;
}

/* sig_masks' inputs and working tables, shared by its stages. */
struct sm_work {
	const struct pyspy_profile *p;
	const struct thr_rows *r;
	size_t nf, np;		  /* nf: functions (function_ids) */
	uint32_t *fn;		  /* frame -> function */
	uint32_t *fr, cap;	  /* one stack's frames */
	double *in, *out;	  /* [q * nf + g]: stacks holding g inside / outside phase q */
	size_t cnt[64];		  /* rows inside each phase */
	int sig[64];		  /* per phase: its typical function, -1 for none */
};

/* Tallies, rows timed y (those in use), how many stacks inside and
 * outside each phase hold each function, once per stack.  -ENOMEM. */
static int sm_count(struct sm_work *w, const struct phase_thread *th, uint64_t base_ns, const double *y,
		    const uint8_t *use, uint8_t *mark)
{
	const struct pyspy_profile *p = w->p;
	size_t nf = w->nf, np = w->np;

	for (size_t j = 0; j < w->r->n; j++) {
		const struct pyspy_sample *s = &p->samples[w->r->idx[j]];
		int ph = phase_at(th, base_ns, y[j]);
		uint32_t d = p->stacks.v[s->stack].depth;
		if (use && !use[j])
			continue;
		if (frames_room(&w->fr, &w->cap, d))
			return -ENOMEM;
		pyspy_stack_frames(&p->stacks, s->stack, w->fr, w->cap);
		if (ph >= 0 && (size_t)ph < np)
			w->cnt[ph]++;
		for (uint32_t k = 0; k < d; k++) {
			uint32_t g = w->fn[w->fr[k]];
			if (mark[g])
				continue; /* once per stack */
			mark[g] = 1;
			for (size_t q = 0; q < np; q++) {
				if (ph == (int)q)
					w->in[q * nf + g] += 1;
				else
					w->out[q * nf + g] += 1;
			}
		}
		for (uint32_t k = 0; k < d; k++)
			mark[w->fn[w->fr[k]]] = 0;
	}
	return 0;
}

/* Per phase, the function with the best recall x precision^2 above 0.05;
 * none for a phase with no rows or all of them (tot: rows in use). */
static void sm_signatures(struct sm_work *w, size_t tot)
{
	size_t nf = w->nf;

	for (size_t q = 0; q < w->np; q++) {
		double best = 0.05; /* weaker evidence is no signature */
		w->sig[q] = -1;
		if (!w->cnt[q] || w->cnt[q] == tot)
			continue;
		for (size_t f = 0; f < nf; f++) {
			/* recall x precision^2: a frame on every stack (main,
			 * <module>) has full recall but poor precision, and while
			 * the alignment is still rough the function that runs
			 * the phase has neither at 1 (measured: with recall x
			 * precision, main beat hot_spin for "hot") */
			double both = w->in[q * nf + f] + w->out[q * nf + f];
			double prec = both > 0 ? w->in[q * nf + f] / both : 0;
			double v = w->in[q * nf + f] / (double)w->cnt[q] * prec * prec;
			if (v > best) {
				best = v;
				w->sig[q] = (int)f;
			}
		}
	}
}

/* mask[j]: bit q when row j's stack holds phase q's function (every row,
 * in use or not).  -ENOMEM. */
static int sm_masks(struct sm_work *w, uint64_t *mask)
{
	const struct pyspy_profile *p = w->p;

	for (size_t j = 0; j < w->r->n; j++) {
		const struct pyspy_sample *s = &p->samples[w->r->idx[j]];
		uint32_t d = p->stacks.v[s->stack].depth;
		if (frames_room(&w->fr, &w->cap, d))
			return -ENOMEM;
		pyspy_stack_frames(&p->stacks, s->stack, w->fr, w->cap);
		mask[j] = 0;
		for (size_t q = 0; q < w->np; q++)
			for (uint32_t k = 0; k < d && w->sig[q] >= 0; k++)
				if (w->fn[w->fr[k]] == (uint32_t)w->sig[q])
					mask[j] |= 1ULL << q;
	}
	return 0;
}

/* Per row: bit q set when the stack holds phase q's typical function,
 * the one whose presence is most over-represented inside q (rows timed
 * y).  Functions, not frames: a frame is one line, and the line of main
 * that calls sync_pulse also covers the gaps between its bursts. */
static int sig_masks(const struct pyspy_profile *p, const struct thr_rows *r, const struct phase_thread *th,
		     uint64_t base_ns, size_t nphase, const double *y, const uint8_t *use, uint64_t *mask)
{
	struct sm_work w = { .p = p, .r = r, .np = nphase < 64 ? nphase : 64 };
	size_t n = r->n, tot = n;
	uint8_t *mark = NULL;
	int rc = -ENOMEM;
	if (function_ids(p, &w.fn, &w.nf))
		goto done;
	w.in = calloc(w.nf * w.np + 1, sizeof *w.in);
	w.out = calloc(w.nf * w.np + 1, sizeof *w.out);
	mark = calloc(w.nf + 1, 1);
	if (!w.in || !w.out || !mark)
		goto done;
	if (use) {
		tot = 0;
		for (size_t j = 0; j < n; j++)
			tot += use[j];
	}
	if (sm_count(&w, th, base_ns, y, use, mark))
		goto done;
	sm_signatures(&w, tot);
	if (sm_masks(&w, mask))
		goto done;
	rc = 0;
done:
	free(w.fn);
	free(w.in);
	free(w.out);
	free(w.fr);
	free(mark);
	return rc;
}

/* Piecewise-linear knots for the reference thread's rows (timed y by the
 * linear fit so far): an order-preserving assignment of samples to the
 * thread's exclusive timeline (phase segments and the gaps between them)
 * that maximises agreement (+1 a sample holding its interval's typical
 * frame, -1 one holding another phase's, 0 one holding none), by dynamic
 * programming in a band of +-WARP_BAND intervals around the linear
 * prediction.  Then each interval's first and last agreeing sample are
 * pinned half a sample period inside its ends. */
/* Keep the pulses' knots (hard evidence) and, between two of them, only
 * the warp's knots that lie inside both their x and y range. */
static int merge_pulse_knots(struct align_pyspy *a, const double *px, const double *py, size_t pn)
{
	size_t n = a->nknots, m = 0, i = 0, w = 0;
	double *kx = malloc((n + pn) * sizeof *kx), *ky = malloc((n + pn) * sizeof *ky);
	if (!kx || !ky) {
		free(kx);
		free(ky);
		return -ENOMEM;
	}
	while (i < pn || w < n) {
		if (w >= n || (i < pn && px[i] <= a->knot_x[w])) {
			while (m && (kx[m - 1] >= px[i] || ky[m - 1] >= py[i]))
				m--; /* a warp knot the pulse contradicts */
			kx[m] = px[i];
			ky[m++] = py[i++];
			continue;
		}
		double x = a->knot_x[w], y = a->knot_y[w++];
		if (m && (x <= kx[m - 1] || y <= ky[m - 1]))
			continue;
		if (i < pn && y >= py[i])
			continue;
		kx[m] = x;
		ky[m++] = y;
	}
	free(a->knot_x);
	free(a->knot_y);
	a->knot_x = kx;
	a->knot_y = ky;
	a->nknots = m;
	return 0;
}

/* The band must reach as far as the nominal times may have drifted from
 * the mapping (intervals of the typical length), within the cell cap. */
static size_t warp_band(const struct phase_thread *th, uint64_t base_ns, size_t n, double drift_s)
{
	size_t band = WARP_BAND;
	if (drift_s > 0 && th->nseg > 1) {
		double len = (tl(base_ns, th->seg[th->nseg - 1].t1_ns) - tl(base_ns, th->seg[0].t0_ns)) /
			     (double)(2 * th->nseg);
		if (len > 0 && drift_s / len + WARP_BAND > band)
			band = (size_t)(drift_s / len) + WARP_BAND;
		while (band > WARP_BAND && (double)n * (double)(2 * band + 1) > (double)WARP_MAX_CELLS)
			band /= 2;
		if (band < WARP_BAND)
			band = WARP_BAND;
	}
	return band;
}

/* Rows whose label is a set of phases: the set cut to the phases whose
 * typical function (sig_masks, rows timed y) the stack holds, where that
 * leaves any.  0 or -ENOMEM. */
static int narrow_sets(const struct pyspy_profile *p, const struct thr_rows *r, const struct phase_thread *th,
		       uint64_t base_ns, size_t nphase, const double *y, uint64_t *mask)
{
	uint64_t *sig = malloc((r->n ? r->n : 1) * sizeof *sig);
	if (!sig)
		return -ENOMEM;
	int rc = sig_masks(p, r, th, base_ns, nphase, y, NULL, sig);
	for (size_t j = 0; !rc && j < r->n; j++)
		if ((mask[j] & (mask[j] - 1)) && (mask[j] & sig[j]))
			mask[j] &= sig[j];
	free(sig);
	return rc;
}

/* Per row, the phases it may hold: with SITE labels (pyspy_sites.h) the
 * labelled phase, hard[j] = 1 where a labelled row may not land in
 * another interval (0 for a mark's label, only preferred), *labelled =
 * 1; else the typical-frame masks of sig_masks, hard all 0.  0 or
 * -ENOMEM. */
static int warp_masks(const struct pyspy_profile *p, const struct thr_rows *r, const struct phase_thread *th,
		      uint64_t base_ns, size_t nphase, const double *y, const struct burst *pulses, size_t npulses,
		      int first, const struct pyspy_sites *sites, uint64_t *mask, uint8_t *hard, int *labelled)
{
	size_t n = r->n, nl = 0;
	memset(hard, 0, n ? n : 1);
	*labelled = 0;
	for (size_t j = 0; j < n && sites && sites->nsites; j++) {
		uint32_t st = p->samples[r->idx[j]].stack;
		mask[j] = pyspy_sites_set(sites, st);
		hard[j] = mask[j] && !pyspy_sites_soft(sites, st);
		nl += mask[j] != 0;
	}
	if (nl) {
		*labelled = 1;
		/* A label with several phases (one generic site for all of
		 * them) only says "in one of these": the function typical of
		 * each phase under the current mapping narrows it where it
		 * agrees (issue 21: the generic helper placed 29 % right on
		 * the set alone). */
		if (sites->nset_sites)
			return narrow_sets(p, r, th, base_ns, nphase, y, mask);
		return 0;
	}
	/* First pass (no knots yet): the line is right only near the
	 * pulses that fixed it, so typical frames come from the samples
	 * within WARP_NEAR_S of a pulse (measured: from all samples, a line
	 * 300 ms off in the middle made main and <module> typical). */
	uint8_t *use = NULL;
	if (first && npulses) {
		use = calloc(n ? n : 1, 1);
		if (!use)
			return -ENOMEM;
		for (size_t j = 0; j < n; j++)
			for (size_t b = 0; b < npulses && !use[j]; b++)
				use[j] = fabs(y[j] - pulses[b].t0) < WARP_NEAR_S;
	}
	int rc = sig_masks(p, r, th, base_ns, nphase, y, use, mask);
	free(use);
	return rc;
}

/* Intervals: segments and the gaps between them, timeline seconds. */
static size_t warp_intervals(const struct phase_thread *th, uint64_t base_ns, double *it0, double *it1, int *iph)
{
	size_t ni = 0;
	for (size_t k = 0; k < th->nseg; k++) {
		double s0 = tl(base_ns, th->seg[k].t0_ns), s1 = tl(base_ns, th->seg[k].t1_ns);
		if (ni && s0 > it1[ni - 1]) {
			it0[ni] = it1[ni - 1];
			it1[ni] = s0;
			iph[ni++] = -1;
		}
		it0[ni] = s0;
		it1[ni] = s1;
		iph[ni++] = th->seg[k].phase;
	}
	return ni;
}

/* lo[j]: the first interval of row j's band (non-decreasing). */
static void warp_band_starts(const double *y, size_t n, const double *it1, size_t ni, size_t band, long *lo)
{
	for (size_t j = 0; j < n; j++) {
		size_t l = 0, h = ni;
		while (l < h) { /* first interval ending after y */
			size_t mid = (l + h) / 2;
			if (it1[mid] <= y[j])
				l = mid + 1;
			else
				h = mid;
		}
		long kp = (long)(l < ni ? l : ni - 1);
		lo[j] = kp - (long)band;
		if (j && lo[j] < lo[j - 1])
			lo[j] = lo[j - 1];
	}
}

/* Score of row j (mask m) in interval k: +1 its phase, -1 another phase's
 * typical frame, 0 none; hard labels make another interval all but
 * impossible (not -inf: a row with no interval of its phase in the band
 * must not make the whole assignment infeasible). */
static double warp_score(uint64_t m, int ph, uint8_t hard, long dk)
{
	double sc = (ph >= 0 && ph < 64 && (m >> ph & 1)) ? 1.0 : m ? (hard ? -1e6 : -1.0) : 0.0;
	return sc - 1e-4 * (double)labs(dk); /* ties: stay near the line */
}

/* pmax[q], parg[q]: the best of row[0..q] and where (the last of equal
 * bests; -1 while all are -inf), so each cell of the next row finds its
 * best predecessor at once instead of scanning the band. */
static void prefix_best(const double *row, size_t W, double *pmax, int32_t *parg)
{
	double m = -INFINITY;
	int32_t at = -1;
	for (size_t q = 0; q < W; q++) {
		if (row[q] > -INFINITY && row[q] >= m) {
			m = row[q];
			at = (int32_t)q;
		}
		pmax[q] = m;
		parg[q] = at;
	}
}

/* The order-preserving assignment kas[j] of rows to intervals with the
 * best total score, by dynamic programming in the band.  1 found, 0 none,
 * -ENOMEM. */
static int warp_dp(size_t n, size_t band, const long *lo, const uint64_t *mask, const uint8_t *hard, const int *iph,
		   size_t ni, long *kas)
{
	size_t W = 2 * band + 1;
	double *best = malloc(n * W * sizeof *best), *pmax = malloc(W * sizeof *pmax);
	int32_t *from = malloc(n * W * sizeof *from), *parg = malloc(W * sizeof *parg);
	if (!best || !from || !pmax || !parg) {
		free(best);
		free(from);
		free(pmax);
		free(parg);
		return -ENOMEM;
	}
	for (size_t j = 0; j < n; j++) {
		if (j)
			prefix_best(best + (j - 1) * W, W, pmax, parg);
		for (size_t w = 0; w < W; w++) {
			long k = lo[j] + (long)w;
			double sc = -INFINITY;
			int32_t fr = -1;
			if (k >= 0 && k < (long)ni) {
				sc = warp_score(mask[j], iph[k], hard[j], k - lo[j] - (long)band);
				if (j) {
					/* best over k' <= k in the previous row's band */
					long kk = k - lo[j - 1];
					if (kk >= (long)W)
						kk = (long)W - 1;
					fr = kk >= 0 ? parg[kk] : -1;
					sc = fr >= 0 ? sc + pmax[kk] : -INFINITY;
				}
			}
			best[j * W + w] = sc;
			from[j * W + w] = fr;
		}
	}
	size_t bw = 0;
	for (size_t w = 1; w < W; w++)
		if (best[(n - 1) * W + w] > best[(n - 1) * W + bw])
			bw = w;
	int found = isfinite(best[(n - 1) * W + bw]);
	for (size_t j = n; found && j-- > 0;) {
		kas[j] = lo[j] + (long)bw;
		if (j)
			bw = (size_t)from[j * W + bw];
	}
	free(best);
	free(from);
	free(pmax);
	free(parg);
	return found;
}

/* One knot, kept only where it continues both axes upwards. */
static void warp_add_knot(struct align_pyspy *a, double x, double y)
{
	if (a->nknots && (x <= a->knot_x[a->nknots - 1] || y <= a->knot_y[a->nknots - 1]))
		return;
	double lin = a->offset_s + a->scale * x;
	if (fabs(y - lin) * 1e3 > a->warp_max_ms)
		a->warp_max_ms = fabs(y - lin) * 1e3;
	a->knot_x[a->nknots] = x;
	a->knot_y[a->nknots++] = y;
}

/* Each interval's first and last agreeing row pinned half a sample
 * period inside its ends.  One agreeing sample in a phase shorter than
 * about a period (fwd of a small model: 5 ms at 100 Hz): it is still
 * inside, so it is pinned to the middle (measured: without these knots
 * 1-20 % of fwd's samples landed in fwd, 10-70 ms off). */
static void warp_knots(struct align_pyspy *a, const struct pyspy_profile *p, const struct thr_rows *r,
		       const long *kas, const uint64_t *mask, const double *it0, const double *it1, const int *iph)
{
	size_t n = r->n;
	for (size_t j = 0; j < n;) {
		long k = kas[j];
		size_t j1 = j, jf = SIZE_MAX, jl = SIZE_MAX;
		for (; j1 < n && kas[j1] == k; j1++)
			if (iph[k] >= 0 && iph[k] < 64 && (mask[j1] >> iph[k] & 1)) {
				if (jf == SIZE_MAX)
					jf = j1;
				jl = j1;
			}
		if (jf != SIZE_MAX) {
			double in = a->sample_period_s / 2, len = it1[k] - it0[k];
			if (!(in < len / 4))
				in = len / 4;
			double xf = p->samples[r->idx[jf]].t_rel_s, xl = p->samples[r->idx[jl]].t_rel_s;
			if (jl == jf) {
				warp_add_knot(a, xf, (it0[k] + it1[k]) / 2);
			} else {
				warp_add_knot(a, xf, it0[k] + in);
				warp_add_knot(a, xl, it1[k] - in);
			}
		}
		j = j1;
	}
}

/* Piecewise-linear knots for the reference thread's rows (timed by the
 * mapping so far): an order-preserving assignment of samples to the
 * thread's exclusive timeline (phase segments and the gaps between them)
 * that maximises agreement (warp_score), in a band of intervals around
 * the prediction; then warp_knots.  With SITE labels each labelled sample
 * lands in an interval of its own phase (unless none is within the band)
 * and the unlabelled ones are interpolated between. */
static int fit_warp(struct align_pyspy *a, const struct pyspy_profile *p, uint32_t ref, const struct thr_rows *r,
		    const struct phase_thread *th, uint64_t base_ns, size_t nphase, const struct burst *pulses,
		    size_t npulses, const double *px, const double *py, size_t pn, double drift_s,
		    const struct pyspy_sites *sites, double y_shift_s, size_t band_fix)
{
	/* Labelled samples may sit anywhere the stated uncertainty allows
	 * (no --idle: seconds), and the labels are what finds them there. */
	if (sites && sites->nsites && a->uncert_ms / 1e3 > drift_s)
		drift_s = a->uncert_ms / 1e3;
	size_t n = r->n, band = band_fix ? band_fix : warp_band(th, base_ns, n, drift_s), ni;
	double *y = malloc((n ? n : 1) * sizeof *y);
	uint64_t *mask = malloc((n ? n : 1) * sizeof *mask);
	double *it0 = malloc((2 * th->nseg + 1) * sizeof *it0), *it1 = malloc((2 * th->nseg + 1) * sizeof *it1);
	int *iph = malloc((2 * th->nseg + 1) * sizeof *iph), labelled = 0, rc = -ENOMEM;
	long *lo = malloc((n ? n : 1) * sizeof *lo), *kas = malloc((n ? n : 1) * sizeof *kas);
	uint8_t *hard = malloc(n ? n : 1);
	if (!y || !mask || !it0 || !it1 || !iph || !lo || !kas || !hard)
		goto done;
	rc = 0; /* nothing to warp, or too big: keep the line */
	if (!n || !th->nseg || n * (2 * band + 1) > WARP_MAX_CELLS)
		goto done;
	rc = -ENOMEM;
	/* Times by the current mapping: the line, or a previous warp. */
	for (size_t j = 0; j < n; j++)
		y[j] = align_pyspy_time(a, ref, p->samples[r->idx[j]].t_rel_s) + y_shift_s;
	if (warp_masks(p, r, th, base_ns, nphase, y, pulses, npulses, !a->nknots, sites, mask, hard, &labelled))
		goto done;
	free(a->knot_x);
	free(a->knot_y);
	a->knot_x = a->knot_y = NULL;
	a->nknots = 0;
	a->warp_max_ms = 0;
	ni = warp_intervals(th, base_ns, it0, it1, iph);
	warp_band_starts(y, n, it1, ni, band, lo);
	rc = warp_dp(n, band, lo, mask, hard, iph, ni, kas);
	if (rc <= 0)
		goto done;
	rc = -ENOMEM;
	a->knot_x = malloc((2 * ni + 2) * sizeof *a->knot_x);
	a->knot_y = malloc((2 * ni + 2) * sizeof *a->knot_y);
	if (!a->knot_x || !a->knot_y)
		goto done;
	warp_knots(a, p, r, kas, mask, it0, it1, iph);
	/* With labels the pulse samples are labelled too (pyspy_sites.h), so
	 * the assignment already holds them in their bursts; the pulses'
	 * knots, matched by steps in time, can be the worse of the two
	 * (measured: 22.7 ms RMS pulse miss with them, 1.45 ms without) */
	if (pn >= 2 && !labelled && merge_pulse_knots(a, px, py, pn))
		goto done;
	if (a->nknots < 2)
		a->nknots = 0;
	rc = 0;
done:
	free(y);
	free(mask);
	free(it0);
	free(it1);
	free(iph);
	free(lo);
	free(kas);
	free(hard);
	return rc;
}

/* The warp judged by the pulses: kept (method +warp, uncertainty from
 * its moves) or undone back to the pulses' knots px/py (or the line). */
static void warp_judge(struct fit_ctx *c, double *px, double *py, size_t pn, const double *y_line, double ss_line,
		       double line_uncert_ms)
{
	/* The pulses judge the warp: their RMS miss (pulse samples
	 * in, neighbours out) under it must not be clearly worse
	 * than under the line, or the line stays. */
	double half = isnan(c->a->sample_period_s) ? 0 : c->a->sample_period_s / 2;
	double ss_warp = 0;
	for (size_t i = 0; i < c->npts; i++) {
		double d = apy_pt_cost(&c->pts[i], align_pyspy_time(c->a, (uint32_t)c->ref, c->pts[i].x));
		ss_warp += d * d;
	}
	/* the line (or the pulse knots) fit the pulses by
	 * construction, so the warp gets one sample period of
	 * slack there */
	double tol = isnan(c->a->sample_period_s) ? 0 : c->a->sample_period_s;
	if (c->a->nknots && (!c->npts || sqrt(ss_warp / (double)c->npts) <= sqrt(ss_line / (double)c->npts) + tol)) {
		strncat(c->a->method, "+warp", sizeof c->a->method - strlen(c->a->method) - 1);
		/* How far the warp moved samples off the pulses' mapping
		 * (95th percentile): if the frames misled it, it is off
		 * by that much plus the drift the pulses left open
		 * (measured: pulses every 5 steps, drift 65 ms, misses
		 * 102 ms p95). */
		double *cd = malloc((c->tr[c->ref].n ? c->tr[c->ref].n : 1) * sizeof *cd);
		if (cd && c->tr[c->ref].n) {
			for (size_t j = 0; j < c->tr[c->ref].n; j++)
				cd[j] = fabs(align_pyspy_time(c->a, (uint32_t)c->ref,
							      c->p->samples[c->tr[c->ref].idx[j]].t_rel_s) - y_line[j]);
			qsort(cd, c->tr[c->ref].n, sizeof *cd, cmp_double_asc);
			c->warp_corr95_s = cd[(size_t)(0.95 * (double)(c->tr[c->ref].n - 1))];
		}
		free(cd);
		c->a->resid_ms = c->npts ? sqrt(ss_warp / (double)c->npts) * 1e3 : NAN;
		if (c->npts) {
			/* plus half a sample period: where in it a sample fell */
			c->a->uncert_ms = sqrt(c->a->resid_ms * c->a->resid_ms + half * half * 1e6);
		} else {
			/* No pulse checks the warp: it placed samples by the
			 * very frames it is judged on, so its own agreement
			 * says nothing.  What is known: the line's
			 * uncertainty, how far the warp moved samples off
			 * it (RMS), and half a sample period. */
			double ss = 0;
			for (size_t j = 0; j < c->tr[c->ref].n; j++) {
				double d = align_pyspy_time(c->a, (uint32_t)c->ref,
							    c->p->samples[c->tr[c->ref].idx[j]].t_rel_s) - y_line[j];
				ss += d * d;
			}
			double rms_ms = c->tr[c->ref].n ? sqrt(ss / (double)c->tr[c->ref].n) * 1e3 : 0;
			c->a->uncert_ms = sqrt(line_uncert_ms * line_uncert_ms + rms_ms * rms_ms +
					    half * half * 1e6);
		}
		free(px);
		free(py);
	} else {
		/* back to the pulses' knots (or the line) */
		c->a->warp_rejected = c->a->nknots > 0;
		free(c->a->knot_x);
		free(c->a->knot_y);
		c->a->knot_x = px;
		c->a->knot_y = py;
		c->a->nknots = pn;
	}
}

/* How far labelled samples are searched from where the line (or the
 * pulses' knots) put them: the drift the pulses measured, at least the
 * life the profile does not cover (no --idle); with no pulse, nothing
 * bounds py-spy's lag but the process's life. */
static double label_band_s(const struct fit_ctx *c)
{
	double b = c->drift_s, u = apy_shortfall_s(c->p, &c->tr[c->ref], &c->rt[c->ref], c->a->scale);
	double life = c->rt[c->ref].end_s - c->rt[c->ref].start_s;
	if (u > b)
		b = u;
	if (!c->nbusy && isfinite(life) && life > b)
		b = life;
	return b;
}

/* speedscope: local corrections from phases vs frames (or SITE labels). */
int apy_fit_local_warp(struct fit_ctx *c, long th)
{
	double *px = NULL, *py = NULL;
	size_t pn = c->a->nknots;
	if (pn) {
		px = malloc(pn * sizeof *px);
		py = malloc(pn * sizeof *py);
		if (!px || !py) {
			free(px);
			free(py);
			apy_seterr(c->e, "out of memory");
			return -1;
		}
		memcpy(px, c->a->knot_x, pn * sizeof *px);
		memcpy(py, c->a->knot_y, pn * sizeof *py);
	}
	/* Where the line (or pulse knots) put every sample of the
	 * reference thread: the warp's corrections are measured
	 * against it. */
	double *y_line = malloc((c->tr[c->ref].n ? c->tr[c->ref].n : 1) * sizeof *y_line);
	double line_uncert_ms = c->a->uncert_ms;
	if (!y_line) {
		free(px);
		free(py);
		apy_seterr(c->e, "out of memory");
		return -1;
	}
	for (size_t j = 0; j < c->tr[c->ref].n; j++)
		y_line[j] = align_pyspy_time(c->a, (uint32_t)c->ref, c->p->samples[c->tr[c->ref].idx[j]].t_rel_s);
	double ss_line = 0;
	for (size_t i = 0; i < c->npts; i++) {
		double l = apy_pt_cost(&c->pts[i], align_pyspy_time(c->a, (uint32_t)c->ref, c->pts[i].x));
		ss_line += l * l;
	}
	/* Again and again: typical frames found on warped times are
	 * sharper than those found on the line. */
	/* Labelled samples are searched for as far as the
	 * profile may be off: without --idle, the life it does
	 * not cover. */
	double band_s = c->sites.nsites ? label_band_s(c) : c->drift_s;
	for (int pass = 0; pass < WARP_PASSES; pass++)
		if (fit_warp(c->a, c->p, (uint32_t)c->ref, &c->tr[c->ref], &c->ph->thr[th], c->base_ns, c->ph->nnames,
			     c->bursts + c->b_off[c->ref], c->b_n[c->ref], px, py, c->a->pulse_knots ? pn : 0, band_s,
			     &c->sites, 0, 0)) {
			free(y_line);
			free(px);
			free(py);
			apy_seterr(c->e, "out of memory");
			return -1;
		}
	warp_judge(c, px, py, pn, y_line, ss_line, line_uncert_ms);
	free(y_line);
	return 0;
}

/* One warp pass from the mapping as it stands moved by y_shift_s, in a
 * band of band_fix intervals around it (0: the usual band), no pulses
 * (the step-slip check's candidates, align_pyspy_slip.c).  0 or -1. */
int apy_warp_rerun(struct fit_ctx *c, long th, double y_shift_s, size_t band_fix)
{
	return fit_warp(c->a, c->p, (uint32_t)c->ref, &c->tr[c->ref], &c->ph->thr[th], c->base_ns, c->ph->nnames,
			c->bursts + c->b_off[c->ref], c->b_n[c->ref], NULL, NULL, 0, label_band_s(c), &c->sites,
			y_shift_s, band_fix) < 0 ? -1 : 0;
}
