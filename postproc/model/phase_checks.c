/* phase_checks.c - plausibility checks of phase rows (see phase_checks.h). */
#include "model/phase_checks.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* Seconds of window (a, b] that the primary thread's segments of phase k
 * cover (k < 0: of any phase). */
static double covered_s(const struct phase_thread *th, int k, double a, double b, const struct energy_model *m)
{
	double c = 0;
	for (size_t i = 0; i < th->nseg; i++) {
		double s0, s1;
		if (k >= 0 && th->seg[i].phase != k)
			continue;
		s0 = fmax(a, energy_model_tl(m, th->seg[i].t0_ns));
		s1 = fmin(b, energy_model_tl(m, th->seg[i].t1_ns));
		if (s1 > s0)
			c += s1 - s0;
	}
	return c;
}

/* 1 when a window of group g whose reading was repaired overlaps row k's
 * time: phase k's segments on th, or (k >= np) the time of no phase. */
static int touches_glitch(const struct energy_model *m, const struct phase_thread *th, size_t k, size_t g)
{
	size_t np = m->ph.nnames;
	for (size_t s = 0; s < m->nsen; s++) {
		const struct em_sensor *es = &m->sen[s];
		if (!es->fix.bad || energy_model_group_of(m, es) != g)
			continue;
		for (size_t i = 1; i < es->ser.n; i++) {
			double a = es->t_tl[i - 1], b = es->t_tl[i];
			if (!es->fix.bad[i])
				continue;
			if (!th)
				return 1;
			if (k < np ? covered_s(th, (int)k, a, b, m) > 0 : covered_s(th, -1, a, b, m) < (b - a) * (1 - 1e-9))
				return 1;
		}
	}
	return 0;
}

int phase_flags_group_glitched(const struct energy_model *m, size_t g)
{
	for (size_t s = 0; s < m->nsen; s++)
		if (m->sen[s].fix.bad && energy_model_group_of(m, &m->sen[s]) == g)
			return 1;
	return 0;
}

unsigned phase_flags_check(const struct energy_model *m, const struct phase_scope *sr, size_t k, size_t g,
			   double self_s, double mean_s, double *maxw_out)
{
	size_t np = m->ph.nnames, ng = m->ngroups;
	const struct phase_group_row *r = &sr->row[k * ng + g];
	const struct phase_thread *th = sr->thr >= 0 ? &m->ph.thr[sr->thr] : NULL;
	double maxw = 0, minw = 0, period = INFINITY;
	int seen = 0;
	unsigned f = 0;

	*maxw_out = NAN;
	if (k < np && phase_set_is_tool(&m->ph, (int)k))
		f |= PHASE_FLAG_TOOL;
	if (isfinite(r->lo_j) && isfinite(r->hi_j) && sr->total_j[g] > 0 && r->hi_j - r->lo_j > sr->total_j[g])
		f |= PHASE_FLAG_WIDE;
	if (touches_glitch(m, th, k, g))
		f |= PHASE_FLAG_GLITCH;
	if (k >= np || !th || !(self_s > 0) || !isfinite(r->energy_j))
		return f;
	for (size_t s = 0; s < m->nsen; s++) {
		const struct em_sensor *es = &m->sen[s];
		double hi = -INFINITY, lo = INFINITY;
		if (energy_model_group_of(m, es) != g)
			continue;
		if (es->ser.n > 1)
			period = fmin(period, (es->t_tl[es->ser.n - 1] - es->t_tl[0]) / (double)(es->ser.n - 1));
		for (size_t i = 0; i < th->nseg; i++)
			if (th->seg[i].phase == (int)k)
				energy_model_window_range(es, energy_model_tl(m, th->seg[i].t0_ns),
							  energy_model_tl(m, th->seg[i].t1_ns), &hi, &lo);
		if (hi > -INFINITY) {
			/* Sensors of a group add up (two packages): the
			 * group's power in any window lies between the sums
			 * of its sensors' lowest and highest windows. */
			maxw += hi;
			minw += lo;
			seen = 1;
		}
	}
	if (!seen)
		return f;
	*maxw_out = maxw;
	struct phase_flag_facts x = {
		.energy_j = r->energy_j, .lo_j = r->lo_j, .hi_j = r->hi_j, .self_s = self_s, .mean_s = mean_s,
		.maxw_w = maxw, .minw_w = minw, .period_s = period,
	};
	return f | phase_flags_judge(&x);
}

unsigned phase_flags_judge(const struct phase_flag_facts *x)
{
	unsigned f = 0;
	if (!(x->self_s > 0) || !isfinite(x->energy_j) || !isfinite(x->maxw_w))
		return 0;
	/* Only a phase that lasts a window or more has a window inside it,
	 * whose mean power its own must not exceed; a shorter burst may draw
	 * more than any window's mean (measured: 70 W bwd of 95 ms under
	 * 0.1 s windows that peak at 60 W, exact).  A little slack: perun
	 * stores float32 and window edges are +-1 sample. */
	if (x->mean_s >= x->period_s) {
		if (x->lo_j / x->self_s > x->maxw_w * 1.01 + 1e-9)
			f |= PHASE_FLAG_ABOVE_MAX;
		else if (x->energy_j / x->self_s > x->maxw_w * 1.01 + 1e-9)
			f |= PHASE_FLAG_POINT_ABOVE_MAX;
	}
	/* Zero (or less) where every window around shows power, and the
	 * interval does not even reach half the group's lowest over the
	 * phase's time: a microsecond mark fitted at 0 J with an interval
	 * up to a joule is not that. */
	if (x->energy_j <= 0 && x->minw_w > 0 && x->hi_j < 0.5 * x->minw_w * x->self_s)
		f |= PHASE_FLAG_ZERO_UNDER_LOAD;
	return f;
}

