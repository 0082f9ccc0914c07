/* energy_model.c - ring + perun on one timeline (see energy_model.h). */
#include "energy_model.h"

#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>


double energy_model_tl(const struct energy_model *m, uint64_t ts_ns)
{
	return ((double)ts_ns - (double)m->base_ns) / 1e9;
}

static const struct perun_host *pick_host(const struct perun_round *r, const char *want)
{
	const struct perun_host *first_power = NULL;
	for (size_t i = 0; i < r->nhosts; i++) {
		const struct perun_host *h = &r->hosts[i];
		int power = 0;
		for (size_t g = 0; g < h->ngroups; g++)
			for (size_t s = 0; s < h->groups[g].nsensors; s++)
				power |= perun_sensor_is_power(&h->groups[g].sensors[s]);
		if (want && !strcmp(h->name, want))
			return h;
		if (power && !first_power)
			first_power = h;
	}
	return first_power ? first_power : (r->nhosts ? &r->hosts[0] : NULL);
}

/* Cumulative energy at each sample, and the series attrib reads. */
static int build_sensor(struct em_sensor *s)
{
	const struct perun_sensor *p = s->ps;
	size_t n = p->n;
	s->cum_j = calloc(n ? n : 1, sizeof *s->cum_j);
	s->t_tl = calloc(n ? n : 1, sizeof *s->t_tl);
	if (!s->cum_j || !s->t_tl)
		return -ENOMEM;
	s->ser.t_s = p->timesteps_s;
	s->ser.n = n;
	s->ser.value = p->values;
	if (!strcmp(s->group, "gpu"))
		s->ser.kind = ATTRIB_INSTANT_W; /* NVML: instantaneous reads */
	else
		s->ser.kind = ATTRIB_WINDOW_AVG_W; /* RAPL power: the mean over the window before */
	if (p->alt_values && p->alt_unit && !strcmp(p->alt_unit, "J")) {
		int monotone = 1;
		for (size_t i = 1; i < n; i++)
			monotone &= p->alt_values[i] >= p->alt_values[i - 1];
		if (monotone) {
			/* RAPL: the counter itself is the most exact energy. */
			s->ser.kind = ATTRIB_COUNTER_J;
			s->ser.value = p->alt_values;
		}
	}
	/* One rule for the curve with attrib (attrib_series_cum_j); no phase
	 * edges here: the slices are cut anywhere. */
	return attrib_series_cum_j(&s->ser, NULL, NULL, s->cum_j);
}

/* Cumulative energy at timeline t (inside the span), interpolated. */
static double cum_at(const struct em_sensor *s, double t_s)
{
	const double *t = s->t_tl, *c = s->cum_j;
	size_t lo = 0, hi = s->ser.n - 1;
	while (hi - lo > 1) {
		size_t mid = (lo + hi) / 2;
		if (t[mid] <= t_s)
			lo = mid;
		else
			hi = mid;
	}
	return c[lo] + (c[hi] - c[lo]) * (t_s - t[lo]) / (t[hi] - t[lo]);
}

double energy_model_slice_j(const struct em_sensor *s, double a, double b)
{
	size_t n = s->ser.n;
	double ca, cb;
	if (n < 2 || b <= a)
		return 0;
	if (a < s->t_tl[0])
		a = s->t_tl[0];
	if (b > s->t_tl[n - 1])
		b = s->t_tl[n - 1];
	if (b <= a)
		return 0;
	/* Linear interpolation of the cumulative curve: constant power within
	 * a window (RAPL), piecewise linear power is close enough (NVML). */
	ca = cum_at(s, a);
	cb = cum_at(s, b);
	return cb - ca;
}

size_t energy_model_group_of(const struct energy_model *m, const struct em_sensor *s)
{
	for (size_t g = 0; g < m->ngroups; g++)
		if (!strcmp(m->groups[g], s->group))
			return g;
	return 0;
}

const char *energy_model_sensor_note(const struct energy_model *m)
{
	return m->emulated ? "emulated sensor, not a measurement" : "";
}

/* 1 when dir(path)/name exists, 0 when not, -ENOMEM. */
static int file_exists_beside(const char *path, const char *name)
{
	char *dup = strdup(path), buf[4096];
	int found;
	if (!dup)
		return -ENOMEM;
	snprintf(buf, sizeof buf, "%s/%s", dirname(dup), name);
	found = access(buf, F_OK) == 0;
	free(dup);
	return found;
}

/* Intervals of the primary thread's exclusive timeline, timeline seconds. */
static struct attrib_interval *primary_intervals(const struct energy_model *m, size_t *n)
{
	const struct phase_thread *th;
	struct attrib_interval *iv;
	*n = 0;
	if (!m->ph.nthr)
		return NULL;
	th = &m->ph.thr[m->ph.primary];
	iv = malloc((th->nseg ? th->nseg : 1) * sizeof *iv);
	if (!iv)
		return NULL;
	for (size_t i = 0; i < th->nseg; i++) {
		iv[i].t0_s = energy_model_tl(m, th->seg[i].t0_ns);
		iv[i].t1_s = energy_model_tl(m, th->seg[i].t1_ns);
		iv[i].phase = th->seg[i].phase;
	}
	*n = th->nseg;
	return iv;
}

/* `perun monitor script.py` runs the script inside its own process and
 * samples from before the script starts until after it ends, so when the
 * primary thread's process is that perun process, perun's span contains
 * every phase of it.  execution_dt is taken before perun's set-up, which
 * on a loaded machine runs for seconds (cpuinfo subprocesses: measured
 * ~2.7 s), beyond the fit's reach and with the fit preferring windows with
 * no phase in them.  So: centre the prior in the offsets that keep the
 * phases inside the span and search just those. */
static void contain_prior(struct energy_model *m, double *range_s)
{
	const struct phase_thread *th;
	const struct ring_proc *pr;
	const struct perun_sensor *any = NULL;
	if (!m->ph.nthr || !m->nsen)
		return;
	th = &m->ph.thr[m->ph.primary];
	pr = ring_procs_find(&m->rl.procs, th->pid);
	if (!pr || !strstr(pr->argv, "perun") || !strstr(pr->argv, " monitor ") || !th->nseg)
		return;
	any = m->sen[0].ps;
	double p0 = energy_model_tl(m, th->seg[0].t0_ns), p1 = energy_model_tl(m, th->seg[th->nseg - 1].t1_ns);
	double d0 = any->timesteps_s[0], d1 = any->timesteps_s[any->n - 1];
	/* timeline = t + offset: need offset + d0 <= p0 and offset + d1 >= p1 */
	double lo = p1 - d1, hi = p0 - d0;
	if (!(lo <= hi))
		return;
	double c = (lo + hi) / 2, r = (hi - lo) / 2 + 0.1;
	if (fabs(m->align.offset_s - c) <= r && *range_s >= r)
		return; /* the prior's search already covers it */
	m->align.offset_s = c;
	m->align.uncert_ms = r * 1e3;
	*range_s = r;
	{
		size_t l = strlen(m->align.method);
		snprintf(m->align.method + l, sizeof m->align.method - l, "+contain");
	}
}

int em_opts_take(struct em_opts *o, const char *opt, const char *val)
{
	if (!strcmp(opt, "--no-fit")) {
		o->no_fit = 1;
		return 1;
	}
	if (!val)
		return 0;
	if (!strcmp(opt, "--ring"))
		o->ring = val;
	else if (!strcmp(opt, "--perun"))
		o->perun = val;
	else if (!strcmp(opt, "--run"))
		o->run = val;
	else if (!strcmp(opt, "--round"))
		o->round = atol(val);
	else if (!strcmp(opt, "--host"))
		o->host = val;
	else if (!strcmp(opt, "--tz"))
		o->tz = val;
	else if (!strcmp(opt, "--fit-range"))
		o->fit_range_s = atof(val);
	else
		return 0;
	return 2;
}

/* Fill *e, undo what was loaded, and return the code for the caller's
 * return (energy_model_open's failure paths). */
static int __attribute__((format(printf, 5, 6)))
em_fail(struct energy_model *m, struct em_error *e, int code, const char *file, const char *fmt, ...)
{
	va_list ap;
	e->file = file;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	va_end(ap);
	energy_model_close(m);
	return code;
}
#define EM_FAIL(file, ...) return em_fail(m, e, -EINVAL, file, __VA_ARGS__)
#define EM_FAIL_OOM() return em_fail(m, e, -ENOMEM, NULL, "out of memory")

int energy_model_open(struct energy_model *m, const struct em_opts *o, struct em_error *e)
{
	char err[512];
	int rc;
	memset(m, 0, sizeof *m);
	m->ring_path = o->ring;
	m->perun_path = o->perun;
	if ((rc = ringload_load(&m->rl, o->ring, err, sizeof err)))
		return em_fail(m, e, rc, o->ring, "%s", err);
	if (!m->rl.rf.nev)
		EM_FAIL(o->ring, "the ring holds no records%s",
			   m->rl.rf.stats.bad_check ? " (every record fails its check: written by another anchor version?)"
						    : "");
	m->base_ns = m->rl.rf.ev[0].ts_ns;
	if (phase_set_build(m->rl.rf.ev, m->rl.rf.nev, &m->rl.procs, &m->ph))
		EM_FAIL_OOM();
	if (!m->ph.nnames)
		EM_FAIL(o->ring, "the ring holds no phases: no anchor.mark/anchor.phase calls and no "
				    "ANCHOR_AUTO anchors were recorded");
	/* Guarded: a libhdf5 crash or hang on a corrupt file becomes a line. */
	if ((rc = perun_load_guarded(o->perun, &m->pf, err, sizeof err)))
		return em_fail(m, e, rc, o->perun, "%s", err);
	if (!m->pf.nruns)
		EM_FAIL(o->perun, "no perun run in the file");
	m->run = o->run ? perun_find_run(&m->pf, o->run) : &m->pf.runs[m->pf.nruns - 1];
	if (!m->run)
		EM_FAIL(o->perun, "no multirun '%s' in the file", o->run);
	if (o->round < 0 || (size_t)o->round >= m->run->nrounds)
		EM_FAIL(o->perun, "multirun %s has %zu round(s), no round %ld", m->run->id, m->run->nrounds,
			   o->round);
	m->round = &m->run->rounds[o->round];
	m->host = pick_host(m->round, o->host ? o->host : m->rl.rf.hdr.hostname);
	if (!m->host)
		EM_FAIL(o->perun, "round %s has no host", m->round->id);
	if ((m->emulated = file_exists_beside(o->perun, "EMULATED_SENSOR.txt")) < 0)
		EM_FAIL_OOM();

	/* Power sensors of the host, grouped by device group. */
	if (energy_model_add_sensors(m->host, &m->sen, &m->nsen, &m->groups, &m->ngroups))
		EM_FAIL_OOM();

	/* Alignment: the exact hook, else execution_dt (+ fit). */
	m->align.prior_offset_s = NAN;
	const struct perun_sensor *ref = NULL;
	for (size_t g = 0; g < m->host->ngroups && !ref; g++)
		for (size_t s = 0; s < m->host->groups[g].nsensors && !ref; s++)
			if (m->host->groups[g].sensors[s].n > 1)
				ref = &m->host->groups[g].sensors[s];
	int hook = align_perun_hook(m->rl.rf.ev, m->rl.rf.nev, &m->rl.clock, m->run, (size_t)o->round,
				    ref ? ref->timesteps_s : NULL, ref ? ref->n : 0, m->base_ns, &m->align);
	if (hook < 0)
		EM_FAIL(o->perun, "does not match the perun run recorded in %s (its %zu perun.sample stamps vs "
				     "%zu timesteps here, multirun %s round %ld): files from different runs (or pick "
				     "--run/--round)",
			   o->ring, m->align.hook_samples, ref ? ref->n : (size_t)0, m->run->id, o->round);
	if (hook <= 0) {
		if (!align_perun_prior(m->run, &m->rl.clock, o->tz, m->base_ns, &m->align))
			EM_FAIL(o->perun, "cannot align: no perun.sample anchors in %s and execution_dt '%s' "
					     "is unusable (or the ring has no SYNC record)",
				   o->ring, m->run->execution_dt ? m->run->execution_dt : "");
		double range_s = o->fit_range_s;
		contain_prior(m, &range_s);
		if (m->nsen && !o->no_fit) {
			size_t niv;
			struct attrib_interval *iv = primary_intervals(m, &niv);
			int fit = 0;
			if (!iv && m->ph.nthr)
				EM_FAIL_OOM();
			if (iv && niv)
				fit = align_perun_fit(&m->sen[0].ser, iv, niv, m->ph.nnames, range_s, &m->align);
			free(iv);
			if (fit < 0)
				EM_FAIL_OOM();
		}
	}
	for (size_t i = 0; i < m->nsen; i++)
		for (size_t k = 0; k < m->sen[i].ser.n; k++)
			m->sen[i].t_tl[k] = m->sen[i].ps->timesteps_s[k] + m->align.offset_s;

	/* Same run?  The perun span must overlap the ring's phases. */
	{
		const struct perun_sensor *any = NULL;
		for (size_t g = 0; g < m->host->ngroups && !any; g++)
			for (size_t s = 0; s < m->host->groups[g].nsensors && !any; s++)
				if (m->host->groups[g].sensors[s].n > 1)
					any = &m->host->groups[g].sensors[s];
		if (!any)
			EM_FAIL(o->perun, "host %s has no sensor data", m->host->name);
		m->span_t0_s = any->timesteps_s[0] + m->align.offset_s;
		m->span_t1_s = any->timesteps_s[any->n - 1] + m->align.offset_s;
		double r0 = 0, r1 = energy_model_tl(m, m->rl.rf.ev[m->rl.rf.nev - 1].ts_ns);
		/* Phases must mostly lie inside perun's span: a fitted offset can
		 * slide another run's data a little into view. */
		double inside = 0, all = 0;
		if (m->ph.nthr) {
			const struct phase_thread *th = &m->ph.thr[m->ph.primary];
			for (size_t i = 0; i < th->nseg; i++) {
				double a = energy_model_tl(m, th->seg[i].t0_ns), b = energy_model_tl(m, th->seg[i].t1_ns);
				double ca = a > m->span_t0_s ? a : m->span_t0_s, cb = b < m->span_t1_s ? b : m->span_t1_s;
				all += b - a;
				if (cb > ca)
					inside += cb - ca;
			}
		}
		if (all > 0 && inside < 0.5 * all)
			r0 = r1 + 1; /* refused below */
		if (m->span_t1_s < r0 || m->span_t0_s > r1) {
			char a[48], b[48], c[48], d[48];
			ring_clock_iso(ring_clock_unix_ns(&m->rl.clock, m->base_ns), a, sizeof a);
			ring_clock_iso(ring_clock_unix_ns(&m->rl.clock, m->base_ns + (uint64_t)(r1 * 1e9)), b,
				       sizeof b);
			ring_clock_iso(ring_clock_unix_ns(&m->rl.clock, (uint64_t)((double)m->base_ns +
										m->span_t0_s * 1e9)),
				       c, sizeof c);
			ring_clock_iso(ring_clock_unix_ns(&m->rl.clock, (uint64_t)((double)m->base_ns +
										m->span_t1_s * 1e9)),
				       d, sizeof d);
			EM_FAIL(o->perun, "no time overlap with %s (files from different runs?): ring %s .. %s, "
					     "perun %s .. %s (%s)",
				   o->ring, a, b, c, d, m->align.method);
		}
	}
	return 0;
}

void energy_model_close(struct energy_model *m)
{
	for (size_t i = 0; i < m->nsen; i++) {
		free(m->sen[i].cum_j);
		free(m->sen[i].t_tl);
	}
	free(m->sen);
	free(m->groups);
	perun_free(&m->pf);
	phase_set_free(&m->ph);
	ringload_close(&m->rl);
	memset(m, 0, sizeof *m);
}

int energy_model_add_sensors(const struct perun_host *h, struct em_sensor **sen, size_t *nsen,
			     char ***groups, size_t *ngroups)
{
	for (size_t g = 0; g < h->ngroups; g++) {
		const struct perun_group *gr = &h->groups[g];
		for (size_t s = 0; s < gr->nsensors; s++) {
			if (!perun_sensor_is_power(&gr->sensors[s]) || gr->sensors[s].n < 2)
				continue;
			struct em_sensor *ns = realloc(*sen, (*nsen + 1) * sizeof *ns);
			if (!ns)
				return -ENOMEM;
			*sen = ns;
			memset(&ns[*nsen], 0, sizeof *ns);
			ns[*nsen].ps = &gr->sensors[s];
			ns[*nsen].group = gr->name;
			/* Counted first so that the caller's close frees a half-built one. */
			if (build_sensor(&ns[(*nsen)++]))
				return -ENOMEM;
			size_t k;
			for (k = 0; k < *ngroups && strcmp((*groups)[k], gr->name); k++)
				;
			if (k == *ngroups) {
				char **ng = realloc(*groups, (*ngroups + 1) * sizeof *ng);
				if (!ng)
					return -ENOMEM;
				*groups = ng;
				(*groups)[(*ngroups)++] = gr->name;
			}
		}
	}
	return 0;
}
