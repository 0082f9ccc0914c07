/* align_pyspy_confidence.c - how well the final mapping places samples,
 * measured on the data themselves (issue 21), and the verdict when they
 * cannot decide (align_pyspy.h: confidence).
 *
 * A stated uncertainty from the fit's own moves (the warp's largest
 * correction) or from what the profile does not cover (no --idle) was
 * either far too wide (+-10 s for a 99 %-right structural placement) or,
 * when the offset itself was wrong, far too narrow (+-0.7 s, 13 s off).
 * Here it comes from two measurements:
 *   - dead reckoning: each SITE-labelled sample predicted from the
 *     previous labelled one by its nominal time step alone; the distance
 *     from the prediction to a segment of its phases is the error an
 *     unlabelled sample between two labels may have (p95).
 *   - ambiguity: the whole mapping shifted by d; if a shift far from 0
 *     keeps (nearly) as many labelled samples inside their phases, the
 *     data cannot tell those offsets apart, and the uncertainty reaches
 *     out to the farthest such shift.
 * (chrometrace: its times are real, so only the ambiguity and the
 * verdict apply.)  With no pulse, labels that the mapping cannot put in their phases (or
 * no label and a weak phase-frames score) make the verdict CANNOT PLACE:
 * every sample is marked unplaced, and the line says so in words. */
#include "align/align_pyspy_internal.h"

#include <stdio.h>
#include <string.h>

/* Distance from y to the nearest segment of a phase in set on th
 * (0 inside), searched out to max_s (INFINITY beyond). */
static double dist_to_set(const struct phase_thread *th, uint64_t base_ns, uint64_t set, double y, double max_s)
{
	size_t l = 0, h = th->nseg;
	double best = INFINITY;
	while (l < h) { /* first segment ending after y - max_s */
		size_t mid = (l + h) / 2;
		if (tl(base_ns, th->seg[mid].t1_ns) <= y - max_s)
			l = mid + 1;
		else
			h = mid;
	}
	for (size_t k = l; k < th->nseg; k++) {
		double s0 = tl(base_ns, th->seg[k].t0_ns), s1 = tl(base_ns, th->seg[k].t1_ns);
		if (s0 > y + (best < max_s ? best : max_s))
			break;
		if (th->seg[k].phase < 0 || th->seg[k].phase >= 64 || !(set >> th->seg[k].phase & 1))
			continue;
		double d = y < s0 ? s0 - y : y > s1 ? y - s1 : 0;
		if (d < best)
			best = d;
	}
	return best;
}

struct lab {
	double x, y; /* profile time, placed time */
	uint64_t set;
};

/* Labelled rows of the reference thread, in time order. */
static size_t ref_labels(const struct fit_ctx *c, struct lab *v)
{
	const struct thr_rows *r = &c->tr[c->ref];
	size_t n = 0;
	for (size_t j = 0; j < r->n; j++) {
		const struct pyspy_sample *s = &c->p->samples[r->idx[j]];
		uint64_t set = pyspy_sites_set(&c->sites, s->stack);
		if (set && !pyspy_sites_soft(&c->sites, s->stack))
			v[n++] = (struct lab){s->t_rel_s, align_pyspy_time(c->a, (uint32_t)c->ref, s->t_rel_s), set};
	}
	return n;
}

/* p95 of the dead-reckoning misses (see the file's comment), seconds. */
static double reckon_p95(const struct fit_ctx *c, const struct phase_thread *th, const struct lab *v, size_t n)
{
	double *e = malloc((n ? n : 1) * sizeof *e), r;
	size_t m = 0;
	if (!e)
		return NAN;
	for (size_t j = 1; j < n; j++) {
		double pred = v[j - 1].y + (v[j].x - v[j - 1].x) * c->a->scale;
		double d = dist_to_set(th, c->base_ns, v[j].set, pred, 10.0);
		e[m++] = isfinite(d) ? d : 10.0;
	}
	if (!m) {
		free(e);
		return NAN;
	}
	qsort(e, m, sizeof *e, cmp_double_asc);
	r = e[(size_t)(0.95 * (double)(m - 1))];
	free(e);
	return r;
}

/* Counting check of the time error inside phases (speedscope), seconds:
 * dead reckoning and the labels see a miss only outside a phase (0 for
 * any sample inside it), yet the victim's clock (bench/placement_suite.py
 * --clock: 2 ms slots of known instants) measured a true p95 time error
 * of 13-17 ms at 100 Hz and 7.6-9.8 ms at 500 Hz against +-10.5 / +-2 ms
 * stated.  What the data do show: the samples the mapping puts inside one
 * occurrence of a phase, n of them at the mapping's real period p, span
 * n * p against the ring's exact length D of that occurrence; the gap
 * |n p - D| is the time error at the occurrence's two ends combined (and
 * one period of counting), so its p95 over the occurrences, over sqrt(2),
 * bounds one sample's error (measured 11-25 ms there: covers, and within
 * 3x the true p95 + one period).  Single-phase labels only; NAN when
 * fewer than ALIGN_PYSPY_MIN_LABELS occurrences hold one. */
static double count_p95_s(const struct fit_ctx *c, const struct phase_thread *th, const struct lab *v, size_t n)
{
	const struct thr_rows *r = &c->tr[c->ref];
	double *dev, p, res;
	size_t m = 0;
	if (r->n < 2 || !n)
		return NAN;
	p = (align_pyspy_time(c->a, (uint32_t)c->ref, c->p->samples[r->idx[r->n - 1]].t_rel_s) -
	     align_pyspy_time(c->a, (uint32_t)c->ref, c->p->samples[r->idx[0]].t_rel_s)) / (double)(r->n - 1);
	if (!(p > 0) || !(dev = malloc(n * sizeof *dev)))
		return NAN;
	for (size_t j = 0; j < n;) {
		size_t k = 0, cnt = 0;
		double yn = v[j].y * 1e9 + (double)c->base_ns;
		/* the segment holding v[j] */
		size_t l = 0, h = th->nseg;
		while (l < h) {
			size_t mid = (l + h) / 2;
			if ((double)th->seg[mid].t1_ns <= yn)
				l = mid + 1;
			else
				h = mid;
		}
		k = l;
		if (k >= th->nseg || (double)th->seg[k].t0_ns > yn || (v[j].set & (v[j].set - 1)) ||
		    th->seg[k].phase < 0 || th->seg[k].phase >= 64 || !(v[j].set >> th->seg[k].phase & 1)) {
			j++;
			continue;
		}
		double s0 = tl(c->base_ns, th->seg[k].t0_ns), s1 = tl(c->base_ns, th->seg[k].t1_ns);
		while (j < n && v[j].y >= s0 && v[j].y <= s1) {
			cnt += v[j].set >> th->seg[k].phase & 1;
			j++;
		}
		dev[m++] = fabs((double)cnt * p - (s1 - s0));
	}
	if (m < ALIGN_PYSPY_MIN_LABELS) {
		free(dev);
		return NAN;
	}
	qsort(dev, m, sizeof *dev, cmp_double_asc);
	res = dev[(size_t)(0.95 * (double)(m - 1))] / sqrt(2.0);
	free(dev);
	return res;
}

/* py-spy's rate per phase: single-phase labelled samples over the
 * phase's exact time on th, inside the span the profile's reference
 * thread covers.  On a loaded machine py-spy falls behind while the host
 * computes and catches up, back to back, while it sleeps (one recording
 * at 500 Hz: 992 samples/s in a phase that sleeps half its time, 153-206
 * in the busy ones), so counting samples against a phase's length
 * (count_p95_s) reads that as time error.  Sets a->rate_* where the
 * highest and lowest rates, each two Poisson sigmas towards the other,
 * still differ by more than ALIGN_PYSPY_RATE_RATIO. */
static void phase_rates(const struct fit_ctx *c, const struct phase_thread *th, const struct lab *v, size_t n,
			struct align_pyspy *a)
{
	const struct thr_rows *r = &c->tr[c->ref];
	double sec[64] = {0}, cnt[64] = {0}, lo_s, hi_s;
	int hi = -1, lo = -1;
	if (r->n < 2)
		return;
	lo_s = align_pyspy_time(c->a, (uint32_t)c->ref, c->p->samples[r->idx[0]].t_rel_s);
	hi_s = align_pyspy_time(c->a, (uint32_t)c->ref, c->p->samples[r->idx[r->n - 1]].t_rel_s);
	for (size_t k = 0; k < th->nseg; k++) {
		double s0 = fmax(tl(c->base_ns, th->seg[k].t0_ns), lo_s), s1 = fmin(tl(c->base_ns, th->seg[k].t1_ns), hi_s);
		if (th->seg[k].phase >= 0 && th->seg[k].phase < 64 && s1 > s0)
			sec[th->seg[k].phase] += s1 - s0;
	}
	for (size_t j = 0; j < n; j++)
		if (v[j].set && !(v[j].set & (v[j].set - 1)))
			cnt[__builtin_ctzll(v[j].set)] += 1;
	for (int q = 0; q < 64; q++) {
		if (!(sec[q] > 0) || !cnt[q])
			continue;
		if (hi < 0 || cnt[q] / sec[q] > cnt[hi] / sec[hi])
			hi = q;
		if (lo < 0 || cnt[q] / sec[q] < cnt[lo] / sec[lo])
			lo = q;
	}
	if (hi < 0 || hi == lo || (size_t)hi >= c->ph->nnames || (size_t)lo >= c->ph->nnames)
		return;
	double up = (cnt[hi] - 2 * sqrt(cnt[hi])) / sec[hi], down = (cnt[lo] + 2 * sqrt(cnt[lo])) / sec[lo];
	if (!(up > ALIGN_PYSPY_RATE_RATIO * down))
		return;
	a->rate_hi_ps = cnt[hi] / sec[hi];
	a->rate_lo_ps = cnt[lo] / sec[lo];
	snprintf(a->rate_hi_phase, sizeof a->rate_hi_phase, "%s", c->ph->names[hi]);
	snprintf(a->rate_lo_phase, sizeof a->rate_lo_phase, "%s", c->ph->names[lo]);
}

/* Labelled samples inside their phases with the mapping shifted by d. */
static size_t shifted_in(const struct fit_ctx *c, const struct phase_thread *th, const struct lab *v, size_t n, double d)
{
	size_t in = 0;
	for (size_t j = 0; j < n; j++)
		in += in_phase_set(th, c->base_ns, v[j].set, v[j].y + d, v[j].y + d);
	return in;
}

/* The farthest shift (within the process's life, at most
 * ALIGN_PYSPY_AMBIG_SPAN_S) that keeps within tol of the unshifted
 * count; 0 when only shifts within one sample period do. */
static double ambiguity_s(const struct fit_ctx *c, const struct phase_thread *th, const struct lab *v, size_t n,
			  size_t *in0)
{
	double per = isfinite(c->a->sample_period_s) && c->a->sample_period_s > 0 ? c->a->sample_period_s : 0.01;
	double span = ALIGN_PYSPY_AMBIG_SPAN_S, step = per / 2, far = 0;
	*in0 = shifted_in(c, th, v, n, 0);
	size_t tol = (size_t)(ALIGN_PYSPY_AMBIG_TOL * (double)n) + 1;
	while (span / step * (double)n > ALIGN_PYSPY_AMBIG_MAX_WORK)
		step *= 2;
	for (double d = step; d <= span; d += step)
		for (int sgn = -1; sgn <= 1; sgn += 2)
			if (shifted_in(c, th, v, n, sgn * d) + tol >= *in0 && d > per && d > far)
				far = d;
	return far;
}

/* The median length of th's phase segments: an ambiguity longer than
 * that leaves a sample's phase open. */
static double median_seg_s(const struct phase_thread *th, uint64_t base_ns)
{
	double *d = malloc((th->nseg ? th->nseg : 1) * sizeof *d), m;
	if (!d || !th->nseg) {
		free(d);
		return INFINITY;
	}
	for (size_t k = 0; k < th->nseg; k++)
		d[k] = tl(base_ns, th->seg[k].t1_ns) - tl(base_ns, th->seg[k].t0_ns);
	qsort(d, th->nseg, sizeof *d, cmp_double_asc);
	m = d[th->nseg / 2];
	free(d);
	return m;
}

/* Samples outside their process's life (a contradiction: reported, and
 * marked unplaced). */
static size_t life_check(struct fit_ctx *c)
{
	size_t ref_out = 0;
	for (size_t i = 0; i < c->p->nsamples; i++) {
		const struct pyspy_sample *s = &c->p->samples[i];
		const struct align_pyspy_thread *t = &c->a->thr[s->thread];
		double y = align_pyspy_time(c->a, s->thread, s->t_rel_s);
		if (!t->ring_pid)
			continue;
		if (y < t->ring_start_s - LIFETIME_SLACK_S || y > t->ring_end_s + LIFETIME_SLACK_S) {
			c->a->outside_life++;
			c->a->unplaced[i] = 1;
			ref_out += (long)s->thread == c->ref;
		}
	}
	return ref_out;
}

int apy_confidence(struct fit_ctx *c)
{
	struct align_pyspy *a = c->a;
	long th = apy_ref_timeline(c);
	double per = isfinite(a->sample_period_s) ? a->sample_period_s : 0;
	a->unplaced = calloc(c->p->nsamples ? c->p->nsamples : 1, 1);
	if (!a->unplaced) {
		apy_seterr(c->e, "out of memory");
		return -1;
	}
	a->reckon_ms = a->ambiguity_ms = a->count_ms = NAN;
	a->rate_hi_ps = a->rate_lo_ps = 0;
	int decided = 0; /* by structure: labels that the mapping keeps in their phases */
	if (!c->nbusy && th >= 0 && c->ph->nnames) {
		struct lab *v = malloc((c->tr[c->ref].n ? c->tr[c->ref].n : 1) * sizeof *v);
		if (!v) {
			apy_seterr(c->e, "out of memory");
			return -1;
		}
		size_t n = ref_labels(c, v), in0 = 0, single = 0;
		const struct phase_thread *pt = &c->ph->thr[th];
		double share = 0;
		for (size_t j = 0; j < n; j++)
			single += !(v[j].set & (v[j].set - 1));
		if (n >= ALIGN_PYSPY_MIN_LABELS && 2 * single < n) {
			/* most labels are sets (one site opened every phase, called
			 * from one line): they say "in a phase", not which one, and
			 * shifting the mapping keeps them in some phase anyway */
			a->cannot_place = 1;
			snprintf(a->verdict, sizeof a->verdict,
				 "%zu of the %zu samples at a phase site are at a site that opens several phases (a "
				 "generic helper called from one line): the stacks do not say which phase",
				 n - single, n);
		} else if (n >= ALIGN_PYSPY_MIN_LABELS) {
			double rk = reckon_p95(c, pt, v, n), amb = ambiguity_s(c, pt, v, n, &in0);
			share = (double)in0 / (double)n;
			a->reckon_ms = rk * 1e3;
			a->ambiguity_ms = amb * 1e3;
			if (share >= ALIGN_PYSPY_MIN_PLACED && isfinite(rk)) {
				/* decided: the measured error, a period for where
				 * the sample's instant lies between its neighbours
				 * (the knots sit half a period inside a phase's
				 * ends, and py-spy's real intervals vary: half a
				 * period missed the true p95 of 6 ms at 100 Hz on
				 * synthetic truth, t_unit_pyspy_place), the
				 * ambiguity */
				double u = sqrt(rk * rk + per * per);
				double cnt = c->chrome ? NAN : count_p95_s(c, pt, v, n);
				a->count_ms = cnt * 1e3;
				if (!c->chrome && isfinite(cnt))
					phase_rates(c, pt, v, n, a);
				if (cnt > u)
					u = cnt;
				/* chrometrace's times are real: its own uncertainty
				 * (the stamp's lag within a period) stays, widened by
				 * the ambiguity */
				a->uncert_ms = c->chrome ? fmax(a->uncert_ms, amb * 1e3) : fmax(u, amb) * 1e3;
				/* the profile falls short of the process's life by
				 * more than a step (py-spy started late or fell
				 * behind): then the warp has held a stretch of the
				 * profile a step off with every site still in its
				 * phase, which the whole-mapping check above cannot
				 * see.  Of 62 loaded 100 Hz recordings of
				 * t_pyspy_clock_slow, 18 fell short by 1.3-3.5
				 * steps and 3 of those slipped (two at +-25-33 ms
				 * stated for a true p95 of 147 / 153 ms); none of
				 * the 44 others slipped that way.  Where the
				 * shortfall lies (before the first sample or
				 * inside) did not tell the slipped ones apart
				 * (BENCHMARKS.md 22), so the step stays open */
				if (!c->chrome && a->slip_open_ms <= 0 && a->time_unknown && a->slip_step_ms > 0 &&
				    a->unsampled_s * 1e3 >= a->slip_step_ms) {
					a->slip_lag_open = 1;
					a->slip_open_ms = a->slip_step_ms;
				}
				/* a step of the repeating pattern the labels do not
				 * exclude (align_pyspy_slip.c): the phases hold, a
				 * sample may sit that far off plus its error
				 * within the step */
				if (!c->chrome && a->slip_open_ms > 0)
					a->uncert_ms += a->slip_open_ms;
				decided = 1;
				if (!c->chrome)
					strncat(a->method, "+structure", sizeof a->method - strlen(a->method) - 1);
			} else {
				a->cannot_place = 1;
				snprintf(a->verdict, sizeof a->verdict,
					 "only %.0f%% of the %zu samples at a phase site fit inside their phases",
					 100 * share, n);
			}
			if (!a->cannot_place && amb > 0 && (amb * 1e3 > ALIGN_PYSPY_AMBIG_MAX_MS || amb > median_seg_s(pt, c->base_ns))) {
				a->cannot_place = 1;
				snprintf(a->verdict, sizeof a->verdict,
					 "the mapping shifted by %.3g s fits the phase sites as well (longer than a "
					 "typical phase): the offset is ambiguous", amb);
			}
		} else if (!(a->phase_score >= ALIGN_PYSPY_MIN_PLACED)) {
			a->cannot_place = 1;
			snprintf(a->verdict, sizeof a->verdict,
				 "no phase site in the profile's stacks (phases opened from callbacks?) and only "
				 "%.0f%% of in-phase samples hold their phase's typical frame",
				 isfinite(a->phase_score) ? 100 * a->phase_score : 0.0);
		} else if (!c->chrome && !a->idle_dropped && isfinite(a->prior_offset_s) &&
			   fabs(a->offset_s - a->prior_offset_s) > ALIGN_PYSPY_PRIOR_SLACK_S) {
			/* phases against frames score their own choice (the
			 * typical frames are found at the offset tried), so a
			 * repeating loop fits at many offsets; with --idle the
			 * profile starts with the process, and nothing but that
			 * score moved it this far (issue 21: 5 s off, 0 % right) */
			a->cannot_place = 1;
			snprintf(a->verdict, sizeof a->verdict,
				 "no phase site in the profile's stacks (phases opened from callbacks?) and the "
				 "phases-vs-frames offset is %.3g s from the prior (%s), which nothing else confirms",
				 a->offset_s - a->prior_offset_s, a->prior);
		} else if (a->uncert_ms / 1e3 > median_seg_s(pt, c->base_ns)) {
			/* no label names a sample's phase, and the time is
			 * known less well than a typical phase lasts */
			a->cannot_place = 1;
			snprintf(a->verdict, sizeof a->verdict,
				 "no phase site in the profile's stacks (phases opened from callbacks?) and the "
				 "sample times are known to +-%.3g ms, longer than a typical phase (%.3g ms)",
				 a->uncert_ms, 1e3 * median_seg_s(pt, c->base_ns));
		}
		free(v);
	} else if (c->nbusy && !c->chrome && th >= 0 && c->ph->nnames && !a->pulse_knots &&
		   a->uncert_ms / 1e3 > median_seg_s(&c->ph->thr[th], c->base_ns)) {
		/* pulses at the start and end pin the line, but between them
		 * the nominal times drift further than a typical phase lasts
		 * (ANCHOR_AUTO=torch: 56 % right at +-50 ms, 16 ms phases) */
		a->cannot_place = 1;
		snprintf(a->verdict, sizeof a->verdict,
			 "between the sync pulses the sample times are known to +-%.3g ms, longer than a typical "
			 "phase (%.3g ms); call anchor.sync_pulse() more often or record chrometrace",
			 a->uncert_ms, 1e3 * median_seg_s(&c->ph->thr[th], c->base_ns));
	}
	/* Reference-thread samples the mapping puts outside their process's
	 * life: the mapping is wrong, not the samples (a few at the end are
	 * py-spy's lag on a loaded machine, or its last stack held open;
	 * other threads follow the reference thread's mapping from their own
	 * start, less exactly: they are marked, not judged by) */
	size_t ref_out = life_check(c), nref = c->tr[c->ref].n;
	if (!a->cannot_place && !c->nbusy && !decided && (double)ref_out > ALIGN_PYSPY_LIFE_TOL * (double)nref + 5) {
		a->cannot_place = 1;
		snprintf(a->verdict, sizeof a->verdict,
			 "%zu of the main thread's %zu samples would fall outside its process's life: the offset is "
			 "wrong",
			 ref_out, nref);
	}
	if (a->cannot_place) {
		memset(a->unplaced, 1, c->p->nsamples);
		/* the offset may be anywhere in [lo, hi]: as far from the
		 * one chosen as the farther bound (half the range missed
		 * by 4 ms: 3307 stated, 3311 true, HF Trainer, BENCHMARKS
		 * 15b row 37) */
		double w = isfinite(c->hi - c->lo) ? fmax(a->offset_s - c->lo, c->hi - a->offset_s) * 1e3 : a->uncert_ms;
		if (w > a->uncert_ms)
			a->uncert_ms = w;
	}
	return 0;
}
