/* align_pyspy_structure.c - methods from SITE labels (pyspy_sites.h):
 * "site-labels" (chrometrace offset), "+snap", and the check of how many
 * labelled samples land in their phase (align_pyspy.h). */
#include "align/align_pyspy_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- chrometrace: snap labelled samples ------------------------------ */

/* Where a sample starting at t must start to lie in a segment of phase q
 * on th, moving it as little as possible but at most max_s; NAN when no
 * such segment is that near.  Pinned a little inside (a quarter of the
 * segment, at most inset_s) so the start is in the phase, not on its edge. */
static double snap_target(const struct phase_thread *th, uint64_t base_ns, int q, double t, double max_s,
			  double inset_s)
{
	size_t l = 0, h = th->nseg;
	double best = NAN;
	while (l < h) { /* first segment ending after t - max_s */
		size_t mid = (l + h) / 2;
		if (tl(base_ns, th->seg[mid].t1_ns) <= t - max_s)
			l = mid + 1;
		else
			h = mid;
	}
	for (size_t k = l; k < th->nseg && tl(base_ns, th->seg[k].t0_ns) < t + max_s; k++) {
		if (th->seg[k].phase != q)
			continue;
		double s0 = tl(base_ns, th->seg[k].t0_ns), s1 = tl(base_ns, th->seg[k].t1_ns);
		double in = (s1 - s0) / 4 < inset_s ? (s1 - s0) / 4 : inset_s;
		double y = t < s0 + in ? s0 + in : t > s1 - in ? s1 - in : t;
		if (fabs(y - t) <= max_s && (isnan(best) || fabs(y - t) < fabs(best - t)))
			best = y;
	}
	return best;
}

/* chrometrace times are real up to the offset, and the stated uncertainty
 * says how far a stamp may be from the moment its stack held.  Each
 * labelled sample (not by a mark) of the reference thread becomes a knot at the nearest
 * place inside a range of its phase within that distance (its own time
 * when already inside); unlabelled samples are interpolated between.  A
 * knot that would reverse the order of time is left out. */
static int snap_knots(struct align_pyspy *a, const struct pyspy_profile *p, uint32_t ref, const struct thr_rows *r,
		      const struct phase_thread *th, uint64_t base_ns, const struct pyspy_sites *sites)
{
	double max_s = a->uncert_ms / 1e3, inset = isfinite(a->sample_period_s) ? a->sample_period_s / 4 : 0.0005;
	double *kx = malloc((r->n + 1) * sizeof *kx), *ky = malloc((r->n + 1) * sizeof *ky);
	size_t m = 0;
	if (!kx || !ky) {
		free(kx);
		free(ky);
		return -ENOMEM;
	}
	a->warp_max_ms = 0;
	for (size_t j = 0; j < r->n; j++) {
		const struct pyspy_sample *s = &p->samples[r->idx[j]];
		int32_t q = pyspy_sites_of(sites, s->stack);
		if (q < 0 || pyspy_sites_soft(sites, s->stack))
			continue; /* a mark's label is a guess: not moved for it */
		double t = align_pyspy_time(a, ref, s->t_rel_s), y = snap_target(th, base_ns, q, t, max_s, inset);
		if (isnan(y) || (m && (s->t_rel_s <= kx[m - 1] || y <= ky[m - 1])))
			continue;
		if (fabs(y - t) * 1e3 > a->warp_max_ms)
			a->warp_max_ms = fabs(y - t) * 1e3;
		kx[m] = s->t_rel_s + a->thr[ref].x_shift_s;
		ky[m++] = y;
	}
	free(a->knot_x);
	free(a->knot_y);
	a->knot_x = kx;
	a->knot_y = ky;
	a->nknots = m >= 2 ? m : 0;
	if (a->nknots)
		strncat(a->method, "+snap", sizeof a->method - strlen(a->method) - 1);
	return 0;
}

/* ---- structural labels: how many land in their phase ----------------- */

/* a->labelled / a->labelled_in: the share of SITE-labelled samples that
 * the final mapping puts inside a range of their phase (speedscope: the
 * sample's instant; chrometrace: its interval). */
void apy_label_check(struct align_pyspy *a, const struct pyspy_profile *p, const struct phase_set *ph,
			uint64_t base_ns, const struct pyspy_sites *sites)
{
	int chrome = p->meta.format == PYSPY_FMT_CHROMETRACE;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct pyspy_sample *s = &p->samples[i];
		uint64_t q = pyspy_sites_set(sites, s->stack);
		const struct align_pyspy_thread *t = &a->thr[s->thread];
		if (!q || !t->ring_tid)
			continue;
		const struct phase_thread *th = NULL;
		for (size_t k = 0; k < ph->nthr && !th; k++)
			if (ph->thr[k].pid == t->ring_pid && ph->thr[k].tid == t->ring_tid)
				th = &ph->thr[k];
		if (!th)
			continue;
		double t0 = align_pyspy_time(a, s->thread, s->t_rel_s), t1 = t0;
		if (chrome && s->duration_s > 0)
			t1 = t0 + s->duration_s * a->scale;
		a->labelled++;
		a->labelled_in += in_phase_set(th, base_ns, q, t0, t1);
	}
}

/* No pulse sampled: phases against frames, else the prior alone. */
/* Labelled rows of the reference thread: profile time, duration, phase. */
struct lab_row {
	double x, d;
	uint64_t q; /* the phases it may be in */
};

/* How many labelled rows lie in their phase at offset o (scale 1). */
static size_t site_score(const struct phase_thread *th, uint64_t base_ns, const struct lab_row *v, size_t n, double o)
{
	size_t in = 0;
	for (size_t j = 0; j < n; j++)
		in += in_phase_set(th, base_ns, v[j].q, o + v[j].x, o + v[j].x + v[j].d);
	return in;
}

/* chrometrace, no pulse, SITE labels: the offset in [lo, hi + stamp lag]
 * that puts the most labelled samples inside their phase, scanned at
 * SITE_SCAN_STEP_S: the middle of the first run of best scores.
 * Shifting by whole steps of a regular loop scores nearly alike, but the
 * labelled samples of the first and last steps then leave the run's
 * phases, so the true offset wins by those.  half: out to the last offset
 * that scores as well (a tie far away widens it: honest, not tight).
 * 0, -ENODATA (no labelled row), -ENOMEM. */
#define SITE_SCAN_STEP_S 0.001
#define SITE_SCAN_MAX_WORK 300000000.0
int apy_site_offset_fit(struct fit_ctx *c, const struct phase_thread *th, double *o, double *half)
{
	const struct thr_rows *r = &c->tr[c->ref];
	struct lab_row *v = malloc((r->n ? r->n : 1) * sizeof *v);
	size_t n = 0, best = 0;
	if (!v)
		return -ENOMEM;
	for (size_t j = 0; j < r->n; j++) {
		const struct pyspy_sample *s = &c->p->samples[r->idx[j]];
		uint64_t q = pyspy_sites_set(&c->sites, s->stack);
		if (q)
			v[n++] = (struct lab_row){s->t_rel_s, s->duration_s > 0 ? s->duration_s : 0, q};
	}
	double lo = c->lo, hi = c->hi + STAMP_LAG_S, step = SITE_SCAN_STEP_S;
	while (n && (hi - lo) / step * (double)n > SITE_SCAN_MAX_WORK)
		step *= 2;
	/* run0..run1: the first run of best scores; last: the last best */
	double run0 = NAN, run1 = NAN, last = NAN;
	int in_run = 0;
	for (double x = lo; n && x <= hi; x += step) {
		size_t sc = site_score(th, c->base_ns, v, n, x);
		if (sc > best) {
			best = sc;
			run0 = run1 = last = x;
			in_run = 1;
		} else if (sc == best && best) {
			if (in_run)
				run1 = x;
			last = x;
		} else {
			in_run = 0;
		}
	}
	free(v);
	if (!best)
		return -ENODATA;
	*o = (run0 + run1) / 2;
	*half = (last - *o) + step / 2;
	return 0;
}

/* chrometrace with SITE labels: labelled samples snapped into their phase. */
int apy_fit_chrome_snap(struct fit_ctx *c)
{
	long th = c->sites.nsites ? apy_ref_timeline(c) : -1;
	if (th >= 0 && snap_knots(c->a, c->p, (uint32_t)c->ref, &c->tr[c->ref], &c->ph->thr[th], c->base_ns, &c->sites)) {
		apy_seterr(c->e, "out of memory");
		return -1;
	}
	return 0;
}

/* Method "site-labels": chrometrace, no pulse, SITE labels on the
 * reference thread's stacks. */
int apy_fit_site_labels(struct fit_ctx *c)
{
	long th = apy_ref_timeline(c);
	double o, half;
	if (!c->sites.nsites || th < 0)
		return 1;
	int sf = apy_site_offset_fit(c, &c->ph->thr[th], &o, &half);
	if (sf == -ENOMEM) {
		apy_seterr(c->e, "out of memory");
		return -1;
	}
	if (sf)
		return 1;
	c->a->offset_s = o;
	c->a->uncert_ms = half * 1e3;
	c->a->resid_ms = NAN;
	snprintf(c->a->method, sizeof c->a->method, "site-labels");
	return 0;
}
