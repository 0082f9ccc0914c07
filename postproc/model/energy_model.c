/* energy_model.c - ring + perun on one timeline (see energy_model.h). */
#include "attrib/sensor_model.h"
#include "model/energy_model.h"

#include <errno.h>
#include <libgen.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/gpu_sensors.h"
#include "util/diag.h"

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

/* Cumulative energy at each sample, and the series attrib reads: the
 * sensor's readings with the impossible ones repaired (sensor_glitch.h). */
static int build_sensor(struct em_sensor *s)
{
	const struct perun_sensor *p = s->ps;
	enum attrib_kind kind = ATTRIB_WINDOW_AVG_W; /* RAPL power: the mean over the window before */
	size_t n = p->n;
	int rc;
	s->cum_j = calloc(n ? n : 1, sizeof *s->cum_j);
	s->t_tl = calloc(n ? n : 1, sizeof *s->t_tl);
	if (!s->cum_j || !s->t_tl)
		return -ENOMEM;
	s->ser.t_s = p->timesteps_s;
	s->ser.n = n;
	if (!strcmp(s->group, "gpu")) {
		/* NVML: power reads; perun integrates trapezoids.  What a read
		 * stands for (a window mean) comes from the GPU model's row of
		 * the response table (sensor_model.h), for the regression. */
		struct sensor_response resp;
		const char *gname = NULL;
		for (size_t k = 0; k < p->nmeta; k++)
			if (!strcmp(p->meta[k].key, "name"))
				gname = p->meta[k].value;
		sensor_model_lookup(gname, &resp);
		s->resp = resp;
		s->ser.avg_window_s = resp.window_s;
		kind = ATTRIB_INSTANT_W;
	}
	/* RAPL with its counter: the counter itself is the most exact
	 * energy; either way the glitches are out before anything reads it. */
	rc = sensor_glitch_repair(p, s->group, kind, &s->fix);
	if (rc == -ENOMEM)
		return rc;
	s->ser.kind = s->fix.kind;
	s->ser.value = s->fix.value;
	if (s->ser.kind == ATTRIB_COUNTER_J)
		s->ser.avg_window_s = 0;
	/* One rule for the curve with attrib (attrib_series_cum_j); no phase
	 * edges here: the slices are cut anywhere. */
	return attrib_series_cum_j(&s->ser, NULL, NULL, s->cum_j);
}

void energy_model_place_sensor(struct em_sensor *s, double offset_s)
{
	s->tl_offset_s = offset_s - s->lag.lag_s;
	for (size_t k = 0; k < s->ser.n; k++)
		s->t_tl[k] = s->ser.t_s[k] + s->tl_offset_s;
}

void energy_model_sensor_free(struct em_sensor *s)
{
	free(s->cum_j);
	free(s->t_tl);
	free(s->t_read);
	free(s->v_read);
	s->t_read = s->v_read = NULL;
	sensor_glitch_free(&s->fix);
	s->cum_j = s->t_tl = NULL;
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

/* Power of window i (t_tl[i-1], t_tl[i]] from the series attribution
 * reads (impossible readings repaired, sensor_glitch.h): the counter's
 * difference, or the value stored for it (perun's mean, NVML's read). */
static double window_w(const struct em_sensor *s, size_t i)
{
	if (s->ser.kind == ATTRIB_COUNTER_J)
		return (s->ser.value[i] - s->ser.value[i - 1]) / (s->ser.t_s[i] - s->ser.t_s[i - 1]);
	return s->ser.value[i];
}

void energy_model_window_range(const struct em_sensor *s, double a, double b, double *hi, double *lo)
{
	const double *t = s->t_tl;
	size_t n = s->ser.n, l = 1, r = n;
	if (n < 2 || b <= t[0] || a >= t[n - 1])
		return;
	/* First window whose end is after a. */
	while (l < r) {
		size_t mid = (l + r) / 2;
		if (t[mid] <= a)
			l = mid + 1;
		else
			r = mid;
	}
	for (size_t i = l; i < n && t[i - 1] < b; i++) {
		double w = window_w(s, i);
		if (!isfinite(w))
			continue;
		*hi = fmax(*hi, w);
		*lo = fmin(*lo, w);
	}
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
		/* the tools' own activity gets no power of its own (model/phase_results.c) */
		if (phase_set_is_tool(&m->ph, th->seg[i].phase))
			continue;
		iv[*n].t0_s = energy_model_tl(m, th->seg[i].t0_ns);
		iv[*n].t1_s = energy_model_tl(m, th->seg[i].t1_ns);
		iv[*n].phase = th->seg[i].phase;
		(*n)++;
	}
	return iv;
}

/* perun takes execution_dt after its process started and before its
 * first sample: a file whose execution_dt (in the zone assumed) lies
 * outside that stretch of the ring is another run's, or was written in
 * another zone.  The proof goes into the message. */
static int execution_dt_check(const struct energy_model *m, const struct em_opts *o,
			      const struct perun_sensor *ref, double bound_hi_s, struct em_error *e)
{
	const struct phase_thread *th;
	const struct ring_proc *pr;
	int64_t unix_ns;
	char a[48], b[48], c[48];
	if (!m->ph.nthr || !ref || !ref->n || !m->rl.clock.n)
		return 0;
	th = &m->ph.thr[m->ph.primary];
	pr = ring_procs_find(&m->rl.procs, th->pid);
	if (!pr || !pr->start_ns || !strstr(pr->argv, "perun") || !strstr(pr->argv, " monitor ") ||
	    align_parse_execution_dt(m->run->execution_dt, o->tz, &unix_ns))
		return 0;
	double ex = ((double)ring_clock_mono_ns(&m->rl.clock, unix_ns) - (double)m->base_ns) / 1e9;
	double start = energy_model_tl(m, pr->start_ns);
	double first_max = bound_hi_s + ref->timesteps_s[0];
	/* execution_dt has microseconds; 1 s covers SYNC interpolation and a
	 * zone offset of less than that cannot be one anyway */
	if (ex >= start - 1.0 && (!isfinite(first_max) || ex <= first_max + 1.0))
		return 0;
	ring_clock_iso(unix_ns, a, sizeof a);
	ring_clock_iso(ring_clock_unix_ns(&m->rl.clock, pr->start_ns), b, sizeof b);
	if (isfinite(first_max))
		ring_clock_iso(ring_clock_unix_ns(&m->rl.clock, (uint64_t)((double)m->base_ns + first_max * 1e9)), c,
			       sizeof c);
	else
		snprintf(c, sizeof c, "its end");
	e->file = o->perun;
	snprintf(e->msg, sizeof e->msg, "not the perun run recorded in %s: its execution_dt %s (read in %s) must lie between the "
			     "start of perun's process %u at %s and its first sample, by %s, but is %s: another run's "
			     "file, or pass --tz with the zone it was written in",
		   o->ring, a, o->tz ? o->tz : "this machine's zone", pr->pid, b, c,
		 ex < start ? "earlier" : "later");
	return -EINVAL;
}

/* UTC of timeline second t, for messages. */
static void iso_tl(const struct energy_model *m, double t_s, char *buf, size_t cap)
{
	ring_clock_iso(ring_clock_unix_ns(&m->rl.clock, (uint64_t)((double)m->base_ns + t_s * 1e9)), buf, cap);
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

int energy_model_open_perun(struct perun_file *pf, const char *path, const char *run, long round,
			    const struct perun_multirun **run_out, const struct perun_round **round_out,
			    struct em_error *e)
{
	struct em_error perr;
	const struct perun_multirun *mr;
	int rc;
	/* Guarded: a libhdf5 crash or hang on a corrupt file becomes a line. */
	if ((rc = perun_load_guarded(path, pf, &perr)))
		return diag_error(e, rc, path, "%s", perr.msg);
	if (!pf->nruns)
		return diag_error(e, -EINVAL, path, "no perun run in the file");
	mr = run ? perun_find_run(pf, run) : &pf->runs[pf->nruns - 1];
	if (!mr)
		return diag_error(e, -EINVAL, path, "no multirun '%s' in the file", run);
	if (round < 0 || (size_t)round >= mr->nrounds)
		return diag_error(e, -EINVAL, path, "multirun %s has %zu round(s), no round %ld", mr->id, mr->nrounds,
				  round);
	*run_out = mr;
	*round_out = &mr->rounds[round];
	return 0;
}

const struct perun_sensor *energy_model_ref_sensor(const struct perun_host *h)
{
	for (size_t g = 0; g < h->ngroups; g++)
		for (size_t s = 0; s < h->groups[g].nsensors; s++)
			if (h->groups[g].sensors[s].n > 1)
				return &h->groups[g].sensors[s];
	return NULL;
}

int energy_model_emulated(const char *perun_path)
{
	return file_exists_beside(perun_path, "EMULATED_SENSOR.txt");
}

/* The training processes below root (0: anywhere) and the primary thread
 * of the first: the timeline perun's power is explained by.  A ring with
 * none (no user phases outside the tools') keeps phase_set's choice.
 * 0 or -ENOMEM. */
static int pick_training(struct energy_model *m, uint32_t root)
{
	train_procs_free(&m->train);
	if (train_procs_find(&m->rl.procs, &m->ph, root, &m->train))
		return -ENOMEM;
	if (m->train.n && m->train.p[0].thr >= 0)
		m->ph.primary = (size_t)m->train.p[0].thr;
	return 0;
}

/* Training processes anywhere in the ring that are not this file's run's
 * (m->train, already picked below perun's process): another run of the
 * script sharing the ring, which perun did not start.  0 or -ENOMEM. */
static int count_other_runs(struct energy_model *m)
{
	struct train_procs all;
	m->other_runs = 0;
	m->other_run_pid = 0;
	if (train_procs_find(&m->rl.procs, &m->ph, 0, &all))
		return -ENOMEM;
	for (size_t i = 0; i < all.n; i++) {
		int mine = 0;
		for (size_t j = 0; j < m->train.n && !mine; j++)
			mine = all.p[i].proc->pid == m->train.p[j].proc->pid;
		if (mine)
			continue;
		if (!m->other_runs++)
			m->other_run_pid = all.p[i].proc->pid;
	}
	train_procs_free(&all);
	return 0;
}

uint32_t energy_model_own_pid(const struct energy_model *m)
{
	if ((m->align.hook_runs > 1 || m->other_runs) && m->ph.nthr)
		return m->ph.thr[m->ph.primary].pid;
	return 0;
}

/* The ring and its phases. */
static int load_ring(struct energy_model *m, const struct em_opts *o, struct em_error *e)
{
	struct em_error rerr;
	int rc;
	if ((rc = ringload_load(&m->rl, o->ring, &rerr)))
		return em_fail(m, e, rc, o->ring, "%s", rerr.msg);
	if (!m->rl.rf.nev)
		EM_FAIL(o->ring, "the ring holds no records%s",
			   m->rl.rf.stats.bad_check ? " (every record fails its check: written by another anchor version?)"
						    : "");
	m->base_ns = m->rl.rf.ev[0].ts_ns;
	if (phase_set_build(m->rl.rf.ev, m->rl.rf.nev, &m->rl.procs, &m->ph) || pick_training(m, 0))
		EM_FAIL_OOM();
	if (!m->ph.nnames)
		EM_FAIL(o->ring, "the ring holds no phases: no anchor.mark/anchor.phase calls and no "
				    "ANCHOR_AUTO anchors were recorded");
	return 0;
}

/* The ring, its phases, the perun file, its run, round and host, and the
 * host's power sensors. */
static int load_inputs(struct energy_model *m, const struct em_opts *o, struct em_error *e)
{
	int rc;
	if ((rc = load_ring(m, o, e)))
		return rc;
	if ((rc = energy_model_open_perun(&m->pf, o->perun, o->run, o->round, &m->run, &m->round, e))) {
		energy_model_close(m);
		return rc;
	}
	m->host = pick_host(m->round, o->host ? o->host : m->rl.rf.hdr.hostname);
	if (!m->host)
		EM_FAIL(o->perun, "round %s has no host", m->round->id);
	if ((m->emulated = energy_model_emulated(o->perun)) < 0)
		EM_FAIL_OOM();

	/* Power sensors of the host, grouped by device group. */
	if (energy_model_add_sensors(m->host, &m->sen, &m->nsen, &m->groups, &m->ngroups))
		EM_FAIL_OOM();
	return 0;
}

/* The exact hook: perun's sample stamps in the ring.  Returns
 * align_perun_hook's answer (1 aligned, 0 no stamps), or fails. */
static int align_by_hook(struct energy_model *m, const struct em_opts *o, const struct perun_sensor *ref,
			 struct em_error *e)
{
	int hook = o->no_hook ? 0 : align_perun_hook(m->rl.rf.ev, m->rl.rf.nev, &m->rl.clock, m->run, (size_t)o->round,
				    ref ? ref->timesteps_s : NULL, ref ? ref->n : 0, m->base_ns, &m->align);
	if (hook < 0)
		EM_FAIL(o->perun, "does not match %s perun run recorded in %s (%s%zu perun.sample stamps vs "
				     "%zu timesteps here, multirun %s round %ld): files from different runs (or pick "
				     "--run/--round)",
			   m->align.hook_runs > 1 ? "any" : "the", o->ring, m->align.hook_runs > 1 ? "the first has " : "its ",
			   m->align.hook_samples, ref ? ref->n : (size_t)0, m->run->id, o->round);
	if (hook > 0) {
		/* Attribute on the run whose sampler stamped this file (several
		 * runs may share a ring): its parent is the perun process, and
		 * the training is that process or below it (a launcher's ranks).
		 * Ranks started outside perun's tree (srun's tasks come from
		 * slurmstepd) leave none there: then any training process. */
		const struct ring_proc *sp = ring_procs_find(&m->rl.procs, m->align.hook_pid);
		if (sp && (pick_training(m, sp->ppid) || (!m->train.n && pick_training(m, 0))))
			EM_FAIL_OOM();
		if (sp && m->train.n && count_other_runs(m))
			EM_FAIL_OOM();
		if (sp && m->align.hook_runs > 1 && m->train.n)
			diag_warn(o->ring, "%zu perun runs in this ring: using the one this file belongs to (pid %u, "
					   "sampler %u, by its stamps)",
				  m->align.hook_runs, sp->ppid, sp->pid);
	}
	return hook;
}

/* Without stamps: execution_dt, bounded by the ring, refined by the fit
 * (align_perun_fallback, the rule `mpi` follows too). */
static int align_by_prior(struct energy_model *m, const struct em_opts *o, const struct perun_sensor *ref,
			  struct em_error *e)
{
	int rc;
	size_t niv = 0;
	struct attrib_interval *iv = NULL;
	if (!align_perun_prior(m->run, &m->rl.clock, o->tz, m->base_ns, &m->align))
		EM_FAIL(o->perun, "cannot align: no perun.sample anchors in %s and execution_dt '%s' "
				     "is unusable (or the ring has no SYNC record)",
			   o->ring, m->run->execution_dt ? m->run->execution_dt : "");
	if (m->nsen && !o->no_fit && m->ph.nthr && !(iv = primary_intervals(m, &niv)))
		EM_FAIL_OOM();
	struct align_fallback_in in = {
		.procs = &m->rl.procs, .ph = &m->ph, .base_ns = m->base_ns,
		.ts_s = ref ? ref->timesteps_s : NULL, .nts = ref ? ref->n : 0,
		.ser = iv && niv ? &m->sen[0].ser : NULL, .iv = iv, .niv = niv, .n_phase = m->ph.nnames,
		.range_s = o->fit_range_s,
	};
	rc = align_perun_fallback(&in, &m->align);
	free(iv);
	if (rc == -EDOM)
		EM_FAIL(o->perun, "cannot be the perun run recorded in %s: %s contradict each other (offset "
				     ">= %.3f s and <= %.3f s)", o->ring, m->align.bound_why, m->align.bound_lo_s,
			   m->align.bound_hi_s);
	if (rc < 0)
		EM_FAIL_OOM();
	if ((rc = execution_dt_check(m, o, ref, m->align.bound_hi_s, e)) < 0) {
		energy_model_close(m);
		return rc;
	}
	return 0;
}

/* With perun's stamps exact, each window-energy sensor's readings at the
 * reads the hook timed (sensor_reads.h).  perun before 1.0 stamped with
 * the system clock, the hook times reads with perf_counter_ns: no pairs. */
static int time_reads(struct energy_model *m, const struct em_opts *o, struct em_error *e)
{
	if (m->run && m->run->clock == PERUN_CLOCK_REALTIME)
		return 0;
	for (size_t i = 0; i < m->nsen; i++)
		if (sensor_reads_apply(&m->sen[i], m->rl.rf.ev, m->rl.rf.nev, m->align.hook_pid, (size_t)o->round))
			EM_FAIL_OOM();
	return 0;
}

/* With perun's stamps exact, each window-energy sensor's own lag behind
 * them (sensor_lag.h), fitted on the primary thread's phases; a sensor of
 * a device group keeps its stamps (its phases are the device's). */
static int fit_lags(struct energy_model *m, struct em_error *e)
{
	size_t niv;
	struct attrib_interval *iv;
	int rc = 0;
	if (!m->ph.nthr)
		return 0;
	if (!(iv = primary_intervals(m, &niv)))
		EM_FAIL_OOM();
	for (size_t i = 0; i < m->nsen && !rc; i++)
		if (!phase_set_group_is_device(m->sen[i].group))
			rc = sensor_lag_fit(&m->sen[i], iv, niv, m->ph.nnames, m->align.offset_s);
	free(iv);
	if (rc)
		EM_FAIL_OOM();
	return 0;
}

/* Same run?  The perun span must overlap the ring's phases. */
static int check_overlap(struct energy_model *m, const struct em_opts *o, int hook, struct em_error *e)
{
	const struct perun_sensor *any = energy_model_ref_sensor(m->host);
	if (!any)
		EM_FAIL(o->perun, "host %s has no sensor data", m->host->name);
	m->span_t0_s = any->timesteps_s[0] + m->align.offset_s;
	m->span_t1_s = any->timesteps_s[any->n - 1] + m->align.offset_s;
	double r1 = energy_model_tl(m, m->rl.rf.ev[m->rl.rf.nev - 1].ts_ns);
	double inside = 0, all = 0, p0 = 0, p1 = r1;
	if (m->ph.nthr) {
		const struct phase_thread *th = &m->ph.thr[m->ph.primary];
		for (size_t i = 0; i < th->nseg; i++) {
			if (phase_set_is_tool(&m->ph, th->seg[i].phase))
				continue; /* sync pulses at start and exit lie outside perun's span */
			double a = energy_model_tl(m, th->seg[i].t0_ns), b = energy_model_tl(m, th->seg[i].t1_ns);
			double ca = a > m->span_t0_s ? a : m->span_t0_s, cb = b < m->span_t1_s ? b : m->span_t1_s;
			if (!i || a < p0)
				p0 = a;
			if (!i || b > p1)
				p1 = b;
			all += b - a;
			if (cb > ca)
				inside += cb - ca;
		}
	}
	/* Refused: no phase time inside perun's span at all; or, when the
	 * offset was fitted (a fit can slide another run's data a little
	 * into view), less than half of it.  An exact alignment (perun's
	 * sample stamps are in the ring) needs only some overlap: in a
	 * short run most phase time can be the tools' own (MPI_Init of
	 * perun's mpi4py, sync pulses) outside perun's sampling. */
	int none = m->span_t1_s < 0 || m->span_t0_s > r1 || (all > 0 && !(inside > 0));
	/* With two-sided bounds from the ring (align_perun_bounds) the span
	 * is already known to fit this run's processes (a crashed run's
	 * perun span can be shorter than the script: its first sample
	 * comes late), so some overlap is enough there too. */
	int bounded = isfinite(m->align.bound_lo_s) && isfinite(m->align.bound_hi_s);
	int mostly_out = !none && hook <= 0 && !bounded && all > 0 && inside < 0.5 * all;
	if (none || mostly_out) {
		char a[48], b[48], c[48], d[48], dmg[192], share[64];
		iso_tl(m, p0, a, sizeof a);
		iso_tl(m, p1, b, sizeof b);
		iso_tl(m, m->span_t0_s, c, sizeof c);
		iso_tl(m, m->span_t1_s, d, sizeof d);
		snprintf(share, sizeof share, "only %.0f%% of", all > 0 ? 100 * inside / all : 0.0);
		/* A damaged ring is the likelier culprit than "another run". */
		if (ringload_damage(&m->rl.rf, dmg, sizeof dmg))
			EM_FAIL(o->ring, "damaged ring (%s): %s its phase time (%s .. %s) lies within the "
					    "span of %s (%s .. %s, alignment %s)",
				   dmg, none ? "none of" : share, a, b, o->perun, c, d, m->align.method);
		EM_FAIL(o->perun, "%s (files from different runs?): %s the phase time in %s (%s .. %s) "
				     "lies within perun's span %s .. %s (alignment %s)",
			   none ? "no time overlap" : "too little time overlap", none ? "none of" : share,
			   o->ring, a, b, c, d, m->align.method);
	}
	return 0;
}

/* perun's k-th GPU power sensor is NVML's device k, as libanchor's
 * sampler numbers them (gpu<k>): where the ring identified that GPU's
 * sensor from this run (gpu_sensors.h), its response replaces the table's
 * row for the regression; the table stays for the rest, with its source.
 * Said on stderr either way, when the ring has power readings. */
static int use_ring_ident(struct energy_model *m)
{
	struct gpu_sensors gs;
	size_t k = 0;
	int has = 0;
	for (size_t i = 0; i < m->nsen; i++)
		has |= !strcmp(m->sen[i].group, "gpu") && m->sen[i].ser.kind == ATTRIB_INSTANT_W;
	if (!has)
		return 0;
	if (gpu_sensors_build(m->rl.rf.ev, m->rl.rf.nev, &m->ph, &gs))
		return -ENOMEM;
	for (size_t i = 0; i < m->nsen; i++) {
		struct em_sensor *s = &m->sen[i];
		const struct gpu_sensor *g = NULL;
		char name[16];
		if (strcmp(s->group, "gpu"))
			continue;
		snprintf(name, sizeof name, "gpu%zu", k++);
		for (size_t j = 0; j < gs.n; j++)
			if (!strcmp(gs.g[j].name, name) && gs.g[j].has_power)
				g = &gs.g[j];
		if (!g || s->ser.kind != ATTRIB_INSTANT_W)
			continue;
		if (g->id.decided) {
			const char *table = s->resp.model;
			sensor_model_identified(g->id.grid.step_s, g->id.window_s, g->id.delay_s, &s->resp);
			s->ser.avg_window_s = s->resp.window_s;
			if (attrib_series_cum_j(&s->ser, NULL, NULL, s->cum_j)) {
				gpu_sensors_free(&gs);
				return -ENOMEM;
			}
			diag_warn(m->ring_path,
				  "%s: NVML power reading identified from this run: update period %.1f ms, window %.1f ms "
				  "ending %.1f ms before each update; perun's readings modelled as the mean over %.1f ms "
				  "(not the table's %s row)",
				  name, g->id.grid.step_s * 1e3, g->id.window_s * 1e3, g->id.delay_s * 1e3,
				  s->resp.window_s * 1e3, table);
		} else {
			diag_warn(m->ring_path, "%s: NVML power reading not identified from this run (%s): table row %s "
						"(%s)", name, g->id.why ? g->id.why : "no reason", s->resp.model,
				  s->resp.source);
		}
	}
	gpu_sensors_free(&gs);
	return 0;
}

int energy_model_open(struct energy_model *m, const struct em_opts *o, struct em_error *e)
{
	const struct perun_sensor *ref;
	int rc, hook;
	memset(m, 0, sizeof *m);
	m->ring_path = o->ring;
	m->perun_path = o->perun;
	if (!o->perun) {
		/* Times only: the timeline is the ring's, from its first record
		 * to its last; nothing to align. */
		if ((rc = load_ring(m, o, e)))
			return rc;
		m->times_only = 1;
		snprintf(m->align.method, sizeof m->align.method, "none (no perun file)");
		m->align.uncert_ms = m->align.ci95_ms = NAN;
		m->align.prior_offset_s = NAN;
		m->align.bound_lo_s = -INFINITY;
		m->align.bound_hi_s = INFINITY;
		m->span_t1_s = energy_model_tl(m, m->rl.rf.ev[m->rl.rf.nev - 1].ts_ns);
		return 0;
	}
	if ((rc = load_inputs(m, o, e)))
		return rc;
	if (use_ring_ident(m))
		EM_FAIL_OOM();
	/* Alignment: the exact hook, else execution_dt (+ fit). */
	m->align.prior_offset_s = NAN;
	m->align.bound_lo_s = -INFINITY;
	m->align.bound_hi_s = INFINITY;
	ref = energy_model_ref_sensor(m->host);
	if ((hook = align_by_hook(m, o, ref, e)) < 0)
		return hook;
	if (hook <= 0 && (rc = align_by_prior(m, o, ref, e)))
		return rc;
	if (hook > 0 && (rc = time_reads(m, o, e)))
		return rc;
	for (size_t i = 0; i < m->nsen; i++)
		energy_model_place_sensor(&m->sen[i], m->align.offset_s);
	if ((rc = check_overlap(m, o, hook, e)))
		return rc;
	return hook > 0 ? fit_lags(m, e) : 0;
}

void energy_model_close(struct energy_model *m)
{
	for (size_t i = 0; i < m->nsen; i++)
		energy_model_sensor_free(&m->sen[i]);
	free(m->sen);
	free(m->groups);
	perun_free(&m->pf);
	train_procs_free(&m->train);
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
