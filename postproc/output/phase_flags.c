/* phase_flags.c - plausibility flags of phase rows (see phase_flags.h). */
#include "output/phase_flags.h"

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

void phase_flags_text(unsigned f, char *buf, size_t cap)
{
	static const struct {
		unsigned bit;
		const char *name;
	} names[] = {
		{PHASE_FLAG_TOOL, "tool"},
		{PHASE_FLAG_ABOVE_MAX, "power-above-window-max"},
		{PHASE_FLAG_POINT_ABOVE_MAX, "point-above-window-max"},
		{PHASE_FLAG_ZERO_UNDER_LOAD, "zero-power-under-load"},
		{PHASE_FLAG_WIDE, "interval-wider-than-total"},
		{PHASE_FLAG_GLITCH, "sensor-glitch"},
	};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
		if (!(f & names[i].bit))
			continue;
		size_t l = strlen(buf);
		snprintf(buf + l, cap - l, "%s%s", l ? ";" : "", names[i].name);
	}
}

void phase_flags_attrib_text(unsigned f, char *buf, size_t cap)
{
	buf[0] = '\0';
	if (f & ATTRIB_FLAG_UNIDENTIFIABLE)
		strncat(buf, "unidentifiable;", cap - strlen(buf) - 1);
	if (f & ATTRIB_FLAG_AT_ZERO)
		strncat(buf, "at-zero;", cap - strlen(buf) - 1);
	if (f & ATTRIB_FLAG_NO_TIME)
		strncat(buf, "no-time-in-span;", cap - strlen(buf) - 1);
	if (f & ATTRIB_FLAG_REMAINDER)
		strncat(buf, "remainder;", cap - strlen(buf) - 1);
	if (buf[0])
		buf[strlen(buf) - 1] = '\0';
}

/* Every name the flags column holds, its code and what it means.  The
 * first four are attrib's (attrib.h ATTRIB_FLAG_*, phase_flags_attrib_text),
 * the others this file's.  A new flag without a line here still gets a
 * mark ('?'), never none. */
static const struct {
	const char *name;
	char code;
	const char *legend;
} flag_codes[] = {
	{"unidentifiable", 'U', "its power cannot be told apart from another phase's (they recur in lock-step with "
				"perun's windows): the interval is [0, total]"},
	{"at-zero", 'Z', "the fit held its power at 0 W"},
	{"no-time-in-span", 'T', "none of its time is on the attributed timeline inside perun's span: no joules"},
	{"remainder", 'R', "perun's total minus the phases, not a fit of its own"},
	{"power-above-window-max", 'A', "even its interval's low end exceeds every perun window around it"},
	{"point-above-window-max", 'a', "its estimate exceeds every perun window around it"},
	{"zero-power-under-load", 'L', "0 J while every window around it shows power"},
	{"interval-wider-than-total", 'W', "its 95% interval is wider than the group's total: it says nothing"},
	{"sensor-glitch", 'G', "a sensor reading in its time was impossible and repaired: part of its joules is the "
			       "repair's"},
};
#define N_FLAG_CODES (sizeof flag_codes / sizeof flag_codes[0])
/* Bit of used for a name without a code. */
#define FLAG_CODE_UNKNOWN (1u << N_FLAG_CODES)

void phase_flags_codes(const char *flags, char *buf, size_t cap, unsigned *used)
{
	size_t n = 0;
	const char *s = flags;
	buf[0] = '\0';
	while (s && *s) {
		const char *e = strchr(s, ';');
		size_t len = e ? (size_t)(e - s) : strlen(s);
		char code = '?';
		unsigned bit = FLAG_CODE_UNKNOWN;
		if (len == 4 && !strncmp(s, "tool", 4)) {
			s = e ? e + 1 : NULL;
			continue; /* hidden rows: the table's "hidden:" line says it */
		}
		for (size_t i = 0; i < N_FLAG_CODES; i++)
			if (strlen(flag_codes[i].name) == len && !strncmp(s, flag_codes[i].name, len)) {
				code = flag_codes[i].code;
				bit = 1u << i;
			}
		*used |= bit;
		if (n + 1 < cap && !memchr(buf, code, n)) {
			buf[n++] = code;
			buf[n] = '\0';
		}
		s = e ? e + 1 : NULL;
	}
}

void phase_flags_legend(FILE *tty, unsigned used)
{
	const char *sep = "";
	if (!used)
		return;
	fprintf(tty, "flags (column flags of phases.csv): ");
	for (size_t i = 0; i < N_FLAG_CODES; i++)
		if (used & (1u << i)) {
			fprintf(tty, "%s%c %s = %s", sep, flag_codes[i].code, flag_codes[i].name, flag_codes[i].legend);
			sep = "; ";
		}
	if (used & FLAG_CODE_UNKNOWN)
		fprintf(tty, "%s? = a flag this table has no letter for: see phases.csv", sep);
	fprintf(tty, "\n");
}

void phase_flags_legend_short(unsigned used, char *buf, size_t cap)
{
	size_t n = 0;
	buf[0] = '\0';
	for (size_t i = 0; i <= N_FLAG_CODES && n < cap; i++) {
		int w;
		if (!(used & (1u << i)))
			continue;
		if (i == N_FLAG_CODES)
			w = snprintf(buf + n, cap - n, "%s? other (see phases.csv)", n ? ", " : "");
		else
			w = snprintf(buf + n, cap - n, "%s%c %s", n ? ", " : "", flag_codes[i].code, flag_codes[i].name);
		n += w > 0 ? (size_t)w : 0;
	}
}
