/*
 * attrib_blur.c - the bias a slowly answering sensor leaves at phase
 * edges (attrib.h attrib_widen_blur).
 *
 * Why a term of its own: a sensor that averages its input over W (the
 * emulated CPU-activity model's 50 ms window of CPU time) turns each step
 * into a ramp W long.  Moving its windows by the mean delay W/2
 * (sensor_lag.c) puts every step back in place on average, but a window
 * whose boundary lies within W of an edge loses (or gains) up to
 * |dP| W / 8 of that edge's energy to its neighbour; edges fall anywhere
 * within a window of length T, so a fraction W / T of them do, at
 * |dP| W / 24 on average.  Always towards the lower side of the step: a
 * phase of lower power than its neighbours gains at both its edges, so
 * the bias adds up over a phase's edges instead of averaging out as the
 * random timing error does (widen_by_edges' quadrature in
 * attrib_split.c).  Measured on the simulated 50 ms average
 * (tests/unit/test_attrib.c test_slow_response): the 0.12 s phase
 * between 20 W neighbours came out +4 % with an interval of +-3.6 %.  Per
 * edge, |dP| min(W / 8, W^2 / (8 T)) is allowed: three times the mean
 * bias where edges fall at random, W / 8 (the worst position) where
 * windows are shorter than the ramp.
 */
#include <math.h>
#include <stdlib.h>

#include "attrib/attrib.h"

void attrib_widen_blur(const struct attrib_interval *iv, size_t n_iv, double blur_s, struct attrib_result *r)
{
	size_t gap = r->n_phase;
	double per_w;
	if (!(blur_s > 0) || !(r->period_s > 0))
		return;
	per_w = fmin(blur_s / 8, blur_s * blur_s / (8 * r->period_s));
	double *add = calloc(r->n_phase + 1, sizeof *add);
	if (!add)
		return; /* then the intervals stay as the method left them: no worse than before */
	for (size_t i = 0; i < n_iv; i++) {
		size_t a = (size_t)iv[i].phase, prev = gap, next = gap;
		if (i > 0 && iv[i - 1].t1_s == iv[i].t0_s)
			prev = (size_t)iv[i - 1].phase;
		if (i + 1 < n_iv && iv[i + 1].t0_s == iv[i].t1_s)
			next = (size_t)iv[i + 1].phase;
		double d0 = fabs(r->row[a].power_w - r->row[prev].power_w) * per_w;
		double d1 = fabs(r->row[a].power_w - r->row[next].power_w) * per_w;
		add[a] += d0 + d1;
		if (prev == gap)
			add[gap] += d0;
		if (next == gap)
			add[gap] += d1;
	}
	for (size_t k = 0; k <= r->n_phase; k++) {
		struct attrib_row *w = &r->row[k];
		if (w->flags & (ATTRIB_FLAG_NO_TIME | ATTRIB_FLAG_UNIDENTIFIABLE))
			continue;
		w->ci_low_j = fmax(0, w->ci_low_j - add[k]);
		w->ci_high_j += add[k];
	}
	free(add);
}
