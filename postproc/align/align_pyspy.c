/* align_pyspy.c - py-spy samples on the ring's timeline: the steps of a
 * fit, and the public calls (see align_pyspy.h; one method per
 * align_pyspy_*.c, chosen in align_pyspy_choose.c). */
#include "align/align_pyspy_internal.h"
#include "align/align_torch.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double align_pyspy_time(const struct align_pyspy *a, uint32_t k, double t_rel_s)
{
	const double *kx = a->knot_x, *ky = a->knot_y;
	size_t n = a->nknots, lo = 0, hi;
	double x;
	if (n < 2)
		return a->thr[k].offset_s + a->scale * t_rel_s;
	x = t_rel_s + a->thr[k].x_shift_s;
	if (x <= kx[0])
		return ky[0] + a->scale * (x - kx[0]);
	if (x >= kx[n - 1])
		return ky[n - 1] + a->scale * (x - kx[n - 1]);
	hi = n - 1;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (kx[mid] <= x)
			lo = mid;
		else
			hi = mid;
	}
	return ky[lo] + (ky[hi] - ky[lo]) * (x - kx[lo]) / (kx[hi] - kx[lo]);
}

/* ---- main entry ---------------------------------------------------- */

/* speedscope: how much longer the thread's process lived than the nominal
 * length of its profile (0 when not). */
double apy_shortfall_s(const struct pyspy_profile *p, const struct thr_rows *r, const struct ring_thr *rt,
			  double scale)
{
	double life = rt->end_s - rt->start_s;
	double nominal = (p->samples[r->idx[r->n - 1]].t_rel_s - p->samples[r->idx[0]].t_rel_s) * scale;
	return isfinite(life) && life > nominal ? life - nominal : 0;
}

/* Nominal sampling period: speedscope's constant weights give the rate;
 * chrometrace intervals merge unchanged samples, so the file has none. */
static double period_estimate(const struct pyspy_profile *p)
{
	if (p->meta.format != PYSPY_FMT_CHROMETRACE && p->meta.rate_hz > 0)
		return 1.0 / p->meta.rate_hz;
	return NAN;
}

/* ---- align_pyspy_fit, step by step ------------------------------------ */

/* The ring's phase timeline of the reference thread, or -1. */
long apy_ref_timeline(const struct fit_ctx *c)
{
	long th = -1;
	for (size_t i = 0; i < c->ph->nthr; i++)
		if (c->ph->thr[i].pid == c->rt[c->ref].pid && c->ph->thr[i].tid == c->rt[c->ref].tid)
			th = (long)i;
	return th;
}

/* Tables, thread mapping, SITE labels, the sample period. */
static int fit_setup(struct fit_ctx *c)
{
	memset(c->a, 0, sizeof *c->a);
	c->a->scale = 1.0;
	c->a->prior_offset_s = NAN;
	c->a->phase_score = NAN;
	if (!c->p->meta.times_known) {
		apy_seterr(c->e, "the profile has no sample times (raw format): record with --format "
				    "chrometrace or speedscope");
		return -1;
	}
	c->a->nthr = c->p->nthreads;
	c->a->thr = calloc(c->p->nthreads ? c->p->nthreads : 1, sizeof *c->a->thr);
	c->rt = calloc(c->p->nthreads ? c->p->nthreads : 1, sizeof *c->rt);
	c->tr = calloc(c->p->nthreads ? c->p->nthreads : 1, sizeof *c->tr);
	c->b_off = calloc(c->p->nthreads ? c->p->nthreads : 1, sizeof *c->b_off);
	c->b_n = calloc(c->p->nthreads ? c->p->nthreads : 1, sizeof *c->b_n);
	c->bursts = malloc((c->ph->nocc ? c->ph->nocc : 1) * sizeof *c->bursts);
	if (!c->a->thr || !c->rt || !c->tr || !c->b_off || !c->b_n || !c->bursts || apy_rows_by_thread(c->p, c->tr) || apy_node_busy_flags(c->p, &c->busy)) {
		apy_seterr(c->e, "out of memory");
		return -1;
	}
	apy_map_threads(c->rl, c->base_ns, c->p, c->a, c->rt);
	if (pyspy_sites_label(&c->rl->rf, c->ph, c->p, &c->sites)) {
		apy_seterr(c->e, "out of memory");
		return -1;
	}
	c->a->label_sites = c->sites.nsites;
	if (!c->a->nmapped) {
		apy_seterr(c->e, "none of the profile's %u thread(s) is a thread of the ring (a profile of "
				    "another run or process?)",
		       c->p->nthreads);
		return -1;
	}
	c->a->sample_period_s = period_estimate(c->p);
	return 0;
}

/* The reference thread: the mapped thread with the most samples. */
static int fit_reference(struct fit_ctx *c)
{
	/* Prefer a thread with phases: with --subprocesses the parent that
	 * only waits for the training (sampled with --idle as often) has
	 * none to place against (issue 21: 33 % placed when it was chosen). */
	int best_ph = -1;
	for (uint32_t k = 0; k < c->p->nthreads; k++) {
		if (!c->a->thr[k].ring_tid || !c->tr[k].n)
			continue;
		int has = 0;
		for (size_t i = 0; i < c->ph->nthr && !has; i++)
			has = c->ph->thr[i].pid == c->rt[k].pid && c->ph->thr[i].tid == c->rt[k].tid && c->ph->thr[i].nseg;
		if (c->ref < 0 || has > best_ph || (has == best_ph && c->tr[k].n > c->tr[c->ref].n)) {
			c->ref = k;
			best_ph = has;
		}
	}
	if (c->ref < 0) {
		apy_seterr(c->e, "no sample of the profile is on a thread of the ring");
		return -1;
	}
	c->a->ref_pid = c->rt[c->ref].pid;
	return 0;
}

/* The offsets the lifetimes allow: [lo, hi]. */
static int fit_bounds(struct fit_ctx *c)
{
	/* Bounds: every sample of a mapped thread lies within its ring
	 * thread's life.  For speedscope only the reference thread counts:
	 * other threads start at 0 with their own offset. */
	double hi_lag = c->hi;
	for (uint32_t k = 0; k < c->p->nthreads; k++) {
		if (!c->a->thr[k].ring_tid || !c->tr[k].n || (!c->chrome && (long)k != c->ref))
			continue;
		double x0 = c->p->samples[c->tr[k].idx[0]].t_rel_s;
		const struct pyspy_sample *l = &c->p->samples[c->tr[k].idx[c->tr[k].n - 1]];
		/* speedscope's nominal time drifts: allow it to run up to
		 * twice as fast as real time before calling it no overlap */
		double x1 = c->chrome ? l->t_rel_s : l->t_rel_s * (1 - MAX_DRIFT);
		double l0 = c->rt[k].start_s - x0 - LIFETIME_SLACK_S, h0 = c->rt[k].end_s - x1 + LIFETIME_SLACK_S;
		if (l0 > c->lo)
			c->lo = l0;
		if (h0 < c->hi)
			c->hi = h0;
		if (h0 + (c->chrome ? STAMP_LAG_S : 0) < hi_lag)
			hi_lag = h0 + (c->chrome ? STAMP_LAG_S : 0);
	}
	/* chrometrace stamps a sample when py-spy dequeues it, late under
	 * load (STAMP_LAG_S): a last stamp after its thread's exit is such
	 * lag, not another run's file.  Only then is the end bound relaxed. */
	if (!(c->lo <= c->hi) && c->lo <= hi_lag)
		c->hi = hi_lag;
	if (!(c->lo <= c->hi)) {
		apy_seterr(c->e, "no time overlap: the profile's samples do not fit within the lifetime of "
				    "the ring's processes %u.. (files from different runs?)",
		       c->a->thr[c->ref].ring_pid);
		return -1;
	}
	return 0;
}

/* speedscope with a warp: the line through its knots (least squares)
 * is the time base py-spy kept on average, the scale reported (py-spy
 * falling behind: > 1) and used beyond the first and last knot.  The
 * knots themselves still map every sample in between. */
static void fit_knot_scale(struct fit_ctx *c)
{
	struct align_pyspy *a = c->a;
	size_t n = a->nknots;
	double mx = 0, my = 0, sxx = 0, sxy = 0;
	if (n < 2 || a->pulse_knots)
		return;
	for (size_t i = 0; i < n; i++) {
		mx += a->knot_x[i];
		my += a->knot_y[i];
	}
	mx /= (double)n;
	my /= (double)n;
	for (size_t i = 0; i < n; i++) {
		sxx += (a->knot_x[i] - mx) * (a->knot_x[i] - mx);
		sxy += (a->knot_x[i] - mx) * (a->knot_y[i] - my);
	}
	double sc = sxx > 0 ? sxy / sxx : NAN;
	if (!(sc >= 1.0 / (1 + MAX_SCALE_DEV) && sc <= 1 + 2 * MAX_SCALE_DEV))
		return;
	a->scale = sc;
	/* the offset of the reference thread's profile time 0 */
	a->offset_s = my - sc * (mx - a->thr[c->ref].x_shift_s);
}

/* Method "proc-start": the prior alone, within what the lifetimes allow. */
void apy_fit_proc_start(struct fit_ctx *c)
{
	c->a->offset_s = c->a->prior_offset_s;
	c->a->uncert_ms = (c->hi - c->lo) / 2 * 1e3;
	c->a->resid_ms = NAN;
	snprintf(c->a->method, sizeof c->a->method, "proc-start");
}

/* The prior offset; an open upper bound closed. */
static void fit_prior(struct fit_ctx *c)
{
	/* Prior: py-spy's own start when it ran under libanchor, else the
	 * earliest offset the lifetimes allow (py-spy spawned the program or
	 * attached at once, as `anchorpost record` does). */
	for (size_t i = 0; i < c->rl->procs.n; i++) {
		const struct ring_proc *pr = &c->rl->procs.p[i];
		if (pr->start_ns && (strstr(pr->exe, "py-spy") || strstr(pr->argv, "py-spy"))) {
			double s = tl(c->base_ns, pr->start_ns);
			if (s >= c->lo - 1 && s <= c->hi) {
				c->a->prior_offset_s = s;
				snprintf(c->a->prior, sizeof c->a->prior, "py-spy PROC_START (pid %u)", pr->pid);
				break;
			}
		}
	}
	if (isnan(c->a->prior_offset_s)) {
		c->a->prior_offset_s = c->lo + LIFETIME_SLACK_S;
		snprintf(c->a->prior, sizeof c->a->prior, "start of profiled pid %u", c->a->thr[c->ref].ring_pid);
	}
	if (!isfinite(c->hi))
		c->hi = c->lo + ALIGN_PYSPY_OPEN_SPAN_S;
}

/* Idle guess and per-thread offsets. */
static void fit_thread_offsets(struct fit_ctx *c)
{
	/* pyspy.h's guess; sample_energy refines it (a profile with --idle
	 * holds samples of waiting threads; one without has none).  The
	 * fitted scale cannot tell: py-spy falling behind on a busy machine
	 * stretches real time 1.7x with --idle too (measured). */
	if (!c->chrome)
		c->a->idle_dropped = c->p->meta.idle == PYSPY_IDLE_UNLIKELY;

	/* Per-thread offsets. */
	for (uint32_t k = 0; k < c->p->nthreads; k++) {
		double o = c->a->offset_s;
		if (!c->chrome && (long)k != c->ref && c->a->thr[k].ring_tid && c->rt[k].start_s > o)
			o = c->rt[k].start_s; /* the thread's profile starts at its first sample */
		c->a->thr[k].offset_s = o;
		c->a->thr[k].x_shift_s = (o - c->a->offset_s) / c->a->scale;
	}
}

/* chrometrace: half the typical sample interval joins the uncertainty. */
static int fit_chrome_period(struct fit_ctx *c)
{
	/* the typical sample interval: the median of the reference
	 * thread's durations (py-spy's --rate period when idle is kept) */
	double per = c->a->sample_period_s;
	if (!isfinite(per) && c->tr[c->ref].n) {
		double *dd = malloc(c->tr[c->ref].n * sizeof *dd);
		if (!dd) {
			apy_seterr(c->e, "out of memory");
			return -1;
		}
		for (size_t j = 0; j < c->tr[c->ref].n; j++)
			dd[j] = c->p->samples[c->tr[c->ref].idx[j]].duration_s;
		qsort(dd, c->tr[c->ref].n, sizeof *dd, cmp_double_asc);
		per = dd[c->tr[c->ref].n / 2];
		free(dd);
	}
	if (!isfinite(per) || per <= 0)
		per = 0;
	double h = per / 2 * 1e3;
	/* A chrometrace sample's stamp is when py-spy processed it, and the
	 * stack held somewhere in the period before: measured misses of a
	 * phase-only function up to 2.6 ms (p95) where the pulses alone
	 * claimed 0.18 ms. */
	c->a->uncert_ms = sqrt(c->a->uncert_ms * c->a->uncert_ms + h * h);
	return 0;
}

/* speedscope: what the nominal times leave open joins the uncertainty. */
static void fit_speedscope_uncert(struct fit_ctx *c)
{
	/* speedscope times are nominal (i/rate): between pulses nothing
	 * checks them, and the warp's largest correction shows how far
	 * they strayed from the line; the truth is no nearer than that
	 * can be proven. */
	/* (With pulses in between, 3 groups or more, they check it.) */
	if (c->a->nknots && c->a->pulse_groups < 3 && c->a->warp_max_ms > c->a->uncert_ms)
		c->a->uncert_ms = c->a->warp_max_ms;
	/* Without --idle, py-spy drops idle samples with no gap: the
	 * process lived this much longer than the profile's nominal
	 * length, and any sample may be off by up to that much. */
	double life = c->rt[c->ref].end_s - c->rt[c->ref].start_s;
	c->a->unsampled_s = apy_shortfall_s(c->p, &c->tr[c->ref], &c->rt[c->ref], c->a->scale);
	/* No pulse pins the profile and its nominal length falls short
	 * of the process's life: which stretch has no sample cannot be
	 * known (no --idle, or py-spy fell behind), so neither can any
	 * sample's time to better than the missing length. */
	if (!c->a->pulse_samples && c->a->unsampled_s > 0.05 * life)
		c->a->time_unknown = 1;
	if ((c->a->idle_dropped || c->a->time_unknown) && c->a->unsampled_s * 1e3 > c->a->uncert_ms)
		c->a->uncert_ms = c->a->unsampled_s * 1e3;
	/* After the last pulse the line runs on to the process's exit:
	 * the time between the last sample's place and the exit that no
	 * sample covers is drift of the same kind (py-spy with --idle
	 * samples until the process exits). */
	if (c->a->pulse_samples && !c->a->idle_dropped && isfinite(c->rt[c->ref].end_s)) {
		double yl = align_pyspy_time(c->a, (uint32_t)c->ref, c->p->samples[c->tr[c->ref].idx[c->tr[c->ref].n - 1]].t_rel_s);
		double tail = c->rt[c->ref].end_s - yl - (isnan(c->a->sample_period_s) ? 0 : c->a->sample_period_s);
		if (tail > c->drift_s)
			c->drift_s = tail;
	}
	c->a->drift_ms = c->drift_s * 1e3;
	if (c->a->drift_ms > c->a->uncert_ms)
		c->a->uncert_ms = c->a->drift_ms;
	if (c->a->pulse_samples && c->warp_corr95_s > 0 && (c->drift_s + c->warp_corr95_s) * 1e3 > c->a->uncert_ms)
		c->a->uncert_ms = (c->drift_s + c->warp_corr95_s) * 1e3;
}

/* Pulse misses under the final mapping; the overlap check. */
static int fit_finish(struct fit_ctx *c)
{
	/* The pulses' misses under the final mapping, for the report. */
	if (c->npts && c->a->pulse_samples) {
		double ss = 0, mx = 0;
		for (size_t i = 0; i < c->npts; i++) {
			double d = apy_pt_cost(&c->pts[i], align_pyspy_time(c->a, (uint32_t)c->ref, c->pts[i].x));
			ss += d * d;
			if (d > mx)
				mx = d;
		}
		c->a->resid_ms = sqrt(ss / (double)c->npts) * 1e3;
		c->a->resid_max_ms = mx * 1e3;
	}
	/* Overlap check on the reference thread after the fit. */
	{
		double s0 = align_pyspy_time(c->a, (uint32_t)c->ref, c->p->samples[c->tr[c->ref].idx[0]].t_rel_s);
		double s1 = align_pyspy_time(c->a, (uint32_t)c->ref, c->p->samples[c->tr[c->ref].idx[c->tr[c->ref].n - 1]].t_rel_s);
		if (s1 < c->rt[c->ref].start_s - 1 || s0 > c->rt[c->ref].end_s + 1) {
			apy_seterr(c->e, "no time overlap between the profile and the ring (files from "
					    "different runs?)");
			return -1;
		}
	}
	return 0;
}

/* Never a NaN: with nothing better, the prior's bound (or, with no bound
 * either, the profile's whole length) is what is known. */
static void fit_never_nan(struct fit_ctx *c)
{
	if (!isfinite(c->a->uncert_ms)) {
		double w = isfinite(c->hi - c->lo) ? (c->hi - c->lo) / 2 : c->p->samples[c->tr[c->ref].idx[c->tr[c->ref].n - 1]].t_rel_s;
		c->a->uncert_ms = w * 1e3;
	}
}

static int fit_steps(struct fit_ctx *c)
{
	if (fit_setup(c) || fit_reference(c) || fit_bounds(c))
		return -1;
	fit_prior(c);
	if (apy_fit_pulse_points(c) || apy_fit_choose(c))
		return -1;
	fit_thread_offsets(c);
	long th = !c->chrome && c->ph->nnames ? apy_ref_timeline(c) : -1;
	if (th >= 0 && (apy_fit_local_warp(c, th) || apy_fit_slip(c, th)))
		return -1;
	if (!c->chrome)
		fit_knot_scale(c);
	if (c->chrome && fit_chrome_period(c))
		return -1;
	if (!c->chrome)
		fit_speedscope_uncert(c);
	fit_never_nan(c);
	if (c->chrome && apy_fit_chrome_snap(c))
		return -1;
	if (fit_finish(c))
		return -1;
	if (c->sites.nsites)
		apy_label_check(c->a, c->p, c->ph, c->base_ns, &c->sites);
	return apy_confidence(c);
}

int align_pyspy_fit(const struct ringload *rl, const struct phase_set *ph, uint64_t base_ns,
		    const struct pyspy_profile *p, struct align_pyspy *a, struct em_error *e)
{
	struct fit_ctx c = {
		.rl = rl, .ph = ph, .base_ns = base_ns, .p = p, .a = a, .e = e,
		.lo = -INFINITY, .hi = INFINITY, .chrome = p->meta.format == PYSPY_FMT_CHROMETRACE, .ref = -1,
	};
	int rc = fit_steps(&c);
	pyspy_sites_free(&c.sites);
	for (uint32_t k = 0; c.tr && k < p->nthreads; k++)
		free(c.tr[k].idx);
	free(c.tr);
	free(c.rt);
	free(c.b_off);
	free(c.b_n);
	free(c.bursts);
	free(c.busy);
	free(c.pts);
	if (rc)
		align_pyspy_free(a);
	return rc;
}

void align_pyspy_free(struct align_pyspy *a)
{
	free(a->thr);
	free(a->knot_x);
	free(a->knot_y);
	free(a->unplaced);
	a->unplaced = NULL;
	a->thr = NULL;
	a->knot_x = a->knot_y = NULL;
	a->nthr = a->nknots = 0;
}

void align_pyspy_slice(const struct align_pyspy *a, const struct pyspy_profile *p, size_t i, double *t0_s,
		       double *t1_s)
{
	const struct pyspy_sample *s = &p->samples[i];
	double t = align_pyspy_time(a, s->thread, s->t_rel_s), d = s->duration_s * a->scale;
	if (p->meta.format == PYSPY_FMT_CHROMETRACE) {
		*t0_s = t;
		*t1_s = t + d;
	} else {
		/* Halfway to the thread's neighbouring samples: where the warp
		 * stretches time (py-spy fell behind, or stalled: 0.4 s seen)
		 * the thread was alive on both sides and its samples cover the
		 * gap.  Readers deliver a thread's samples contiguously, in
		 * order; its first and last reach half a period out. */
		double h0 = d / 2, h1 = d / 2;
		if (i > 0 && p->samples[i - 1].thread == s->thread)
			h0 = (t - align_pyspy_time(a, s->thread, p->samples[i - 1].t_rel_s)) / 2;
		if (i + 1 < p->nsamples && p->samples[i + 1].thread == s->thread)
			h1 = (align_pyspy_time(a, s->thread, p->samples[i + 1].t_rel_s) - t) / 2;
		if (!(h0 >= 0))
			h0 = d / 2;
		if (!(h1 >= 0))
			h1 = d / 2;
		*t0_s = t - h0;
		*t1_s = t + h1;
	}
	if (*t1_s > a->thr[s->thread].ring_end_s)
		*t1_s = a->thr[s->thread].ring_end_s;
	/* nor before it began (a line extrapolated from the first pulse
	 * knot can reach back past the start by a few ms) */
	if (*t0_s < a->thr[s->thread].ring_start_s)
		*t0_s = a->thr[s->thread].ring_start_s;
	if (*t1_s < *t0_s)
		*t1_s = *t0_s;
	if (*t0_s > *t1_s)
		*t0_s = *t1_s;
}

void align_pyspy_describe(const struct align_pyspy *a, const struct pyspy_profile *p, char *buf, size_t cap)
{
	char extra[2048] = "";
	if (p->meta.torch) {
		align_torch_describe(a, p, buf, cap);
		return;
	}
	if (!strncmp(a->method, "pulse", 5))
		snprintf(extra, sizeof extra, "; %zu busy-pulse sample(s) in %zu pulse group(s), rms miss %.3g ms, "
			 "worst %.3g ms", a->pulse_samples, a->pulse_groups, a->resid_ms, a->resid_max_ms);
	else if (!strcmp(a->method, "phase-frames"))
		snprintf(extra, sizeof extra, "; %.1f%% of in-phase samples hold their phase's typical frame",
			 100 * a->phase_score);
	if (a->nknots)
		snprintf(extra + strlen(extra), sizeof extra - strlen(extra), "; warp: %zu knots, largest correction %.3g ms",
			 a->nknots, a->warp_max_ms);
	if (a->label_sites)
		snprintf(extra + strlen(extra), sizeof extra - strlen(extra),
			 "; structure: %zu phase site(s), %zu sample(s) at one, %.1f%% of those inside their phase",
			 a->label_sites, a->labelled, a->labelled ? 100.0 * (double)a->labelled_in / (double)a->labelled : 0.0);
	if (a->drift_ms > 0)
		snprintf(extra + strlen(extra), sizeof extra - strlen(extra),
			 "; nominal sample times drift up to %.3g ms between time anchors", a->drift_ms);
	if (a->warp_rejected)
		snprintf(extra + strlen(extra), sizeof extra - strlen(extra),
			 "; phase/frame warp rejected (missed the pulses by more than the line + 1 period)");
	if (a->cannot_place)
		snprintf(extra + strlen(extra), sizeof extra - strlen(extra),
			 "; CANNOT PLACE: %s; every sample is marked unplaced (samples.csv) and its energy is "
			 "counted in no phase; record with --format chrometrace or call anchor.sync_pulse()",
			 a->verdict);
	else if (isfinite(a->reckon_ms))
		snprintf(extra + strlen(extra), sizeof extra - strlen(extra),
			 "; placed by structure: labelled samples predicted from the previous one miss their phases "
			 "by %.3g ms (p95); %s",
			 a->reckon_ms, a->ambiguity_ms > 0 ? "other offsets fit nearly as well out to" : "no other offset fits as well");
	if (!a->cannot_place && a->ambiguity_ms > 0)
		snprintf(extra + strlen(extra), sizeof extra - strlen(extra), " %.3g ms", a->ambiguity_ms);
	if (!a->cannot_place && isfinite(a->count_ms))
		snprintf(extra + strlen(extra), sizeof extra - strlen(extra),
			 "; inside phases: the samples per phase occurrence span its exact length to within %.3g ms "
			 "(p95 over sqrt 2: one sample's time error)",
			 a->count_ms);
	if (!a->cannot_place && isfinite(a->count_ms) && a->rate_hi_ps > 0)
		snprintf(extra + strlen(extra), sizeof extra - strlen(extra),
			 "; PY-SPY'S RATE VARIED: %.0f samples/s in %s against %.0f in %s (%s), which the counts above "
			 "read as time error: the figure may be wider than the true error",
			 a->rate_hi_ps, a->rate_hi_phase, a->rate_lo_ps, a->rate_lo_phase,
			 a->idle_dropped ? "recorded without --idle, py-spy keeps no sample while the process waits"
					 : "py-spy falls behind while the process computes and catches up while it waits");
	if (!a->cannot_place && a->slip_lag_open)
		snprintf(extra + strlen(extra), sizeof extra - strlen(extra),
			 "; STEP OPEN: the phases repeat every %.3g ms and a mapping %.3g ms away (another step) may hold "
			 "a stretch of the profile as well: the profile falls %.3g s short of the process's life (py-spy "
			 "started late or fell behind), more than a step, and then the phase sites do not pin the step "
			 "(the figure above includes it; each sample's phase holds on both); call anchor.sync_pulse() "
			 "or record chrometrace to pin the step",
			 a->slip_step_ms, a->slip_open_ms, a->unsampled_s);
	else if (!a->cannot_place && a->slip_step_ms > 0 && a->slip_open_ms > 0)
		snprintf(extra + strlen(extra), sizeof extra - strlen(extra),
			 "; STEP OPEN: the phases repeat every %.3g ms and a mapping %.3g ms away (another step) holds "
			 "the phase sites as well, so any sample may be that much further off (the figure above "
			 "includes it; each sample's phase holds on both); call anchor.sync_pulse() or record "
			 "chrometrace to pin the step",
			 a->slip_step_ms, a->slip_open_ms);
	else if (!a->cannot_place && a->slip_step_ms > 0)
		snprintf(extra + strlen(extra), sizeof extra - strlen(extra),
			 "; steps: the phases repeat every %.3g ms and no other step holds the phase sites as well "
			 "(%zu tried)",
			 a->slip_step_ms, a->slip_tried);
	if (a->outside_life)
		snprintf(extra + strlen(extra), sizeof extra - strlen(extra),
			 "; %zu sample(s) fall outside their process's life (a contradiction: marked unplaced)",
			 a->outside_life);
	char per[64] = "", unsampled[400];
	snprintf(unsampled, sizeof unsampled,
		 "; %s: %.3g s of the process's life have no sample and nothing says where, so any sample may be "
		 "off by that much; re-record with py-spy --idle (and anchor.sync_pulse())",
		 a->idle_dropped ? "RECORDED WITHOUT --idle (idle samples dropped with no gap)"
				 : "SAMPLE TIMES UNKNOWN (no --idle, or py-spy fell behind)",
		 a->unsampled_s);
	if (!isnan(a->sample_period_s))
		snprintf(per, sizeof per, " (sample period %.3g ms)", a->sample_period_s * 1e3);
	char fell[300];
	snprintf(fell, sizeof fell,
		 "; SAMPLE TIMES UNKNOWN (no --idle, or py-spy fell behind: %.3g s of the process's life have no "
		 "sample): placed by its phase sites (the figure above); samples outside them have no exact time "
		 "(re-record with py-spy --idle)",
		 a->unsampled_s);
	snprintf(buf, cap, "py-spy %s: %s, offset %.6f s, scale %.6f, uncertainty +-%.3g ms%s%s; "
			   "prior %s at %.6f s%s",
		 pyspy_format_name(p->meta.format), a->method, a->offset_s, a->scale, a->uncert_ms, per, extra, a->prior, a->prior_offset_s,
		 (a->idle_dropped || a->time_unknown) && !isfinite(a->reckon_ms) ? unsampled
		 /* placed by its sites, the figure holds; the user still learns
		  * why the samples between sites have no time of their own */
		 : a->idle_dropped ? "; RECORDED WITHOUT --idle: placed by its phase sites (the figure above); "
				     "samples outside them have no exact time (re-record with py-spy --idle)"
		 : a->time_unknown ? fell
				   : "");
}
