/* mring.c - many rings + a multi-host perun file (see mring.h). */
#include "model/mring.h"
#include "util/tunables.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <libgen.h>
#include <malloc.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "align/align.h"
#include "anchors/ring_clock.h"
#include "anchors/ring_procs.h"
#include "attrib/attrib.h"
#include "attrib/sensor_model.h"
#include "input/input_file.h"
#include "model/attrib_count.h"
#include "input/ringload.h"
#include "input/slurm_acct.h"
#include "model/train_procs.h"
#include "phase/phase_set.h"
#include "phase/phase_stats.h"
#include "util/diag.h"

#define FIT_SPAN_S 10.0 /* windows given to the offset fit (fit_ring) */

static const char *const default_steps[] = {"train_step", "optimizer_step", "optimizer.step", "step",
					    "iteration", NULL};

int mring_is_collective(const char *name)
{
	if (!strncmp(name, "dist.", 5))
		return 1;
	if (strncmp(name, "MPI_", 4))
		return 0;
	return strncmp(name, "MPI_Init", 8) != 0 && strcmp(name, "MPI_Finalize") != 0;
}

void mring_unit_label(const struct mr_unit *u, char *buf, size_t cap)
{
	if (u->rank >= 0)
		snprintf(buf, cap, "r%d@%s", u->rank, u->host);
	else
		snprintf(buf, cap, "pid%u@%s", u->pid, u->host);
}

const char mring_split_rule[] =
	"a node's power is shared at each instant equally by its ranks that are in a phase then "
	"(collectives included), each rank's phase power taken from its own attribution; what no phase "
	"explains is split equally over the node's ranks, so a node's ranks add up to its perun total";

#define OOM(e) diag_error(e, -ENOMEM, NULL, "out of memory")

/* ---- inputs ---------------------------------------------------------- */

static int add_path(struct mring *m, const char *p, struct em_error *e)
{
	struct mr_ring *r = realloc(m->rings, (m->nrings + 1) * sizeof *r);
	if (!r)
		return OOM(e);
	m->rings = r;
	memset(&r[m->nrings], 0, sizeof *r);
	if (!(r[m->nrings].path = strdup(p)))
		return OOM(e);
	m->nrings++;
	return 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The *.ring files of directory in, sorted by name. */
static int expand_dir(struct mring *m, const char *in, struct em_error *e)
{
	DIR *d = opendir(in);
	struct dirent *de;
	char **names = NULL;
	size_t n = 0;
	int rc = 0;
	if (!d)
		return diag_error(e, -errno, in, "cannot open directory: %s", strerror(errno));
	while ((de = readdir(d)) && !rc) {
		size_t l = strlen(de->d_name);
		if (l < 6 || strcmp(de->d_name + l - 5, ".ring"))
			continue;
		char **nn = realloc(names, (n + 1) * sizeof *nn);
		if (!nn || !(nn[n] = malloc(strlen(in) + l + 2))) {
			names = nn ? nn : names;
			rc = OOM(e);
			break;
		}
		names = nn;
		sprintf(names[n], "%s/%s", in, de->d_name);
		n++;
	}
	closedir(d);
	if (!rc && !n)
		rc = diag_error(e, -ENOENT, in, "no *.ring file in the directory");
	if (!rc)
		qsort(names, n, sizeof *names, cmp_str);
	for (size_t i = 0; i < n; i++) {
		if (!rc)
			rc = add_path(m, names[i], e);
		free(names[i]);
	}
	free(names);
	return rc;
}

static int expand_input(struct mring *m, const char *in, struct em_error *e)
{
	struct stat st;
	if (stat(in, &st) == 0 && S_ISDIR(st.st_mode))
		return expand_dir(m, in, e);
	if (strpbrk(in, "*?[")) {
		glob_t g;
		int rc = glob(in, 0, NULL, &g);
		if (rc == GLOB_NOMATCH)
			return diag_error(e, -ENOENT, in, "the pattern matches no file");
		if (rc)
			return diag_error(e, -EINVAL, in, "cannot expand the pattern");
		for (size_t i = 0; i < g.gl_pathc && !rc; i++)
			rc = add_path(m, g.gl_pathv[i], e);
		globfree(&g);
		return rc;
	}
	return add_path(m, in, e);
}

/* The earliest ring creation: the timeline's origin (header only). */
static int read_origin(struct mring *m, struct em_error *e)
{
	int64_t t0 = 0;
	for (size_t i = 0; i < m->nrings; i++) {
		struct anchor_ring_hdr h;
		struct em_error fe;
		int fd = input_file_open(m->rings[i].path, INPUT_FILE_REMEMBER, &fe);
		ssize_t got;
		if (fd < 0)
			return diag_error(e, fd, m->rings[i].path, "%s", fe.msg);
		got = pread(fd, &h, sizeof h, 0);
		close(fd);
		if (got != (ssize_t)sizeof h || memcmp(h.magic, ANCHOR_RING_MAGIC, 8))
			return diag_error(e, -EINVAL, m->rings[i].path,
					  "not an anchor ring (bad magic or shorter than a header)");
		if (h.create_realtime_ns && (!t0 || (int64_t)h.create_realtime_ns < t0))
			t0 = (int64_t)h.create_realtime_ns;
	}
	m->t0_unix_ns = t0;
	return 0;
}

static long host_of(const struct mring *m, const char *name);


/* ---- a pool of two (or more) threads over the rings ------------------- */

/* A task fails with a negative errno and *e; the first failure is kept
 * and stops the others taking new rings, so the command prints one line
 * however many threads fail. */
typedef int (*ring_task)(struct mring *, const struct mring_opts *, size_t, struct em_error *);

struct pool {
	struct mring *m;
	const struct mring_opts *o;
	ring_task fn;
	size_t next;
	pthread_mutex_t lock;
	int rc;
	struct em_error *e;
};

static void *pool_worker(void *arg)
{
	struct pool *p = arg;
	for (;;) {
		size_t i = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
		struct em_error e;
		int rc;
		if (i >= p->m->nrings || __atomic_load_n(&p->rc, __ATOMIC_RELAXED))
			return NULL;
		if (!(rc = p->fn(p->m, p->o, i, &e)))
			continue;
		pthread_mutex_lock(&p->lock);
		if (!p->rc) {
			p->rc = rc;
			*p->e = e;
		}
		pthread_mutex_unlock(&p->lock);
		return NULL;
	}
}

static int run_pool(struct mring *m, const struct mring_opts *o, ring_task fn, struct em_error *e)
{
	struct pool p = {.m = m, .o = o, .fn = fn, .e = e};
	int n = o->threads > 0 ? o->threads : 2;
	pthread_t th[64];
	int started = 0;
	pthread_mutex_init(&p.lock, NULL);
	if (n > 64)
		n = 64;
	for (int i = 1; i < n; i++)
		if (pthread_create(&th[started], NULL, pool_worker, &p) == 0)
			started++;
	pool_worker(&p);
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
	pthread_mutex_destroy(&p.lock);
	return p.rc;
}

/* ---- loading one ring ---------------------------------------------------- */

/* ringload_read (ringload.h, quiet: each ring is read twice) and what a
 * ring must have to go on the common timeline.  Errors name path. */
static int load_ring(const char *path, struct ringload *l, struct em_error *e)
{
	struct em_error re;
	int rc = ringload_read(l, path, &re);
	if (rc)
		return diag_error(e, rc, path, "%s", re.msg);
	if (!l->rf.nev && l->rf.stats.bad_check)
		rc = diag_error(e, -EINVAL, path, "no valid record: all %llu committed records fail the check hash "
						  "(another format revision, or corrupted)",
				(unsigned long long)l->rf.stats.bad_check);
	else if (!l->rf.nev)
		rc = diag_error(e, -EINVAL, path, "the ring holds no records");
	else if (!l->clock.n)
		rc = diag_error(e, -EINVAL, path,
				"no SYNC record: the ring cannot be placed on the common (UTC) timeline");
	if (rc)
		ringload_close(l);
	return rc;
}

static double tl_s(const struct mring *m, const struct ring_clock *c, uint64_t mono_ns)
{
	return (double)(ring_clock_unix_ns(c, mono_ns) - m->t0_unix_ns) / 1e9;
}

/* The primary thread of the ring's lowest rank (else the ring's primary),
 * -1 when it has no segment. */
static long fit_thread(const struct ringload *l, const struct phase_set *ps, int min_rank)
{
	long thr = -1;
	for (size_t p = 0; p < l->procs.n && thr < 0; p++)
		if (l->procs.p[p].rank == min_rank)
			thr = phase_set_primary_of(ps, l->procs.p[p].pid);
	if (thr < 0 && ps->nthr)
		thr = (long)ps->primary;
	return thr >= 0 && ps->thr[thr].nseg ? thr : -1;
}

/* The primary thread's segments on the ring's own timeline (seconds of
 * its clock since base_ns), the tools' own activity left out as for one
 * ring (energy_model.c).  NULL on OOM. */
static struct attrib_interval *ring_intervals(const struct phase_set *ps, const struct phase_thread *th,
					      uint64_t base_ns, size_t *n)
{
	struct attrib_interval *iv = malloc((th->nseg ? th->nseg : 1) * sizeof *iv);
	*n = 0;
	if (!iv)
		return NULL;
	for (size_t i = 0; i < th->nseg; i++) {
		if (phase_set_is_tool(ps, th->seg[i].phase))
			continue;
		iv[*n].t0_s = ((double)th->seg[i].t0_ns - (double)base_ns) / 1e9;
		iv[*n].t1_s = ((double)th->seg[i].t1_ns - (double)base_ns) / 1e9;
		iv[*n].phase = th->seg[i].phase;
		(*n)++;
	}
	return iv;
}

/*
 * Without stamps, this ring's offset by the rule single-ring `phases`
 * follows (align_perun_fallback): the prior a (execution_dt, on the
 * ring's own timeline), bounded by its lowest rank's process lifetimes and
 * perun's sampler, refined by fitting that rank's primary thread against
 * its host's first power sensor.  The fit costs a least-squares solve per
 * candidate offset over every window it is given; an hour-long rank would
 * cost seconds, times the number of hosts: FIT_SPAN_S of intervals around
 * the middle holds thousands of phase occurrences, plenty to pin one
 * constant offset.  Every ring does it; align_hosts keeps the lowest
 * rank's.  Bounds that contradict each other fail: not one run.
 */
static int fit_ring(const struct mring *m, const struct mring_opts *o, struct mr_ring *r, const struct ringload *l,
		    struct align_perun *a, struct em_error *e)
{
	long h = host_of(m, r->host), thr;
	uint64_t base = l->rf.ev[0].ts_ns;
	struct phase_set ps;
	struct attrib_interval *iv = NULL;
	size_t niv = 0;
	int rc;

	if (h < 0 || !m->hosts[h].nsen)
		return 0;
	if (phase_set_build(l->rf.ev, l->rf.nev, &l->procs, &ps))
		return diag_error(e, -ENOMEM, r->path, "out of memory");
	if ((thr = fit_thread(l, &ps, r->min_rank)) < 0) {
		phase_set_free(&ps);
		return 0;
	}
	ps.primary = (size_t)thr;
	if (!o->no_fit && !(iv = ring_intervals(&ps, &ps.thr[thr], base, &niv))) {
		phase_set_free(&ps);
		return OOM(e);
	}
	const struct perun_sensor *ref = energy_model_ref_sensor(m->hosts[h].ph);
	struct align_fallback_in in = {
		.procs = &l->procs, .ph = &ps, .base_ns = base,
		.ts_s = ref ? ref->timesteps_s : NULL, .nts = ref ? ref->n : 0,
		.ser = niv ? &m->hosts[h].sen[0].ser : NULL, .iv = iv, .niv = niv, .n_phase = ps.nnames,
		.range_s = o->fit_range_s > 0 ? o->fit_range_s : ANCHOR_FIT_RANGE_S, .span_s = FIT_SPAN_S,
	};
	a->bound_lo_s = -INFINITY;
	a->bound_hi_s = INFINITY;
	rc = align_perun_fallback(&in, a);
	free(iv);
	phase_set_free(&ps);
	if (rc == -EDOM)
		return diag_error(e, -EINVAL, o->perun,
				  "cannot be the perun run recorded in %s: %s contradict each other (offset >= %.3f s "
				  "and <= %.3f s)",
				  r->path, a->bound_why, a->bound_lo_s, a->bound_hi_s);
	if (rc < 0)
		return OOM(e);
	r->fit_offset_s = a->offset_s + r->first_s;
	r->fit_uncert_ms = a->uncert_ms;
	r->fit_ci95_ms = a->ci95_ms;
	r->bound_lo_s = a->bound_lo_s + r->first_s;
	r->bound_hi_s = a->bound_hi_s + r->first_s;
	snprintf(r->bound_why, sizeof r->bound_why, "%s", a->bound_why);
	snprintf(r->fit_method, sizeof r->fit_method, "%s", a->method);
	return 0;
}

/* The perun offsets this ring can tell: its perun.sample stamps (exact),
 * execution_dt through its clock, and that prior refined by the fit. */
static int ring_offsets(struct mring *m, const struct mring_opts *o, struct mr_ring *r, const struct ringload *l,
			struct em_error *e)
{
	struct align_perun a;
	uint64_t base = l->rf.ev[0].ts_ns;
	memset(&a, 0, sizeof a);
	/* The stamps must reproduce this host's timesteps (else they are
	 * another perun run's). */
	long h = host_of(m, r->host);
	const struct perun_sensor *ref = h >= 0 ? energy_model_ref_sensor(m->hosts[h].ph) : NULL;
	int hook = o->no_hook ? 0 : align_perun_hook(l->rf.ev, l->rf.nev, &l->clock, m->run, (size_t)o->round,
						     ref ? ref->timesteps_s : NULL, ref ? ref->n : 0, base, &a);
	if (hook > 0) {
		r->hook_offset_s = a.offset_s + r->first_s;
		r->hook_samples = a.hook_samples;
	} else if (hook < 0) {
		diag_warn(r->path, "its perun.sample stamps (%zu) do not match host %s's timesteps in %s: "
				   "another perun run; using execution_dt",
			  a.hook_samples, r->host, o->perun);
	}
	memset(&a, 0, sizeof a);
	if (align_perun_prior(m->run, &l->clock, o->tz, base, &a))
		r->prior_offset_s = a.offset_s + r->first_s;
	if (isnan(r->hook_offset_s) && !isnan(r->prior_offset_s))
		return fit_ring(m, o, r, l, &a, e);
	return 0;
}

/* Pass 1: clock, host, the perun offsets this ring can tell. */
static int pass1(struct mring *m, const struct mring_opts *o, size_t i, struct em_error *e)
{
	struct mr_ring *r = &m->rings[i];
	struct ringload l;
	const char *host = NULL;
	int rc;

	if ((rc = load_ring(r->path, &l, e)))
		return rc;
	for (size_t p = 0; p < l.procs.n && !host; p++)
		if (l.procs.p[p].host[0])
			host = l.procs.p[p].host;
	snprintf(r->host, sizeof r->host, "%s", host ? host : l.rf.hdr.hostname);
	r->nev = l.rf.nev;
	r->stats = l.rf.stats;
	r->first_s = tl_s(m, &l.clock, l.rf.ev[0].ts_ns);
	r->last_s = tl_s(m, &l.clock, l.rf.ev[l.rf.nev - 1].ts_ns);
	r->mono_to_unix_s = (double)l.clock.pt[0].offset_ns / 1e9;
	r->clock_steps = l.clock.steps;
	r->hook_offset_s = r->prior_offset_s = r->fit_offset_s = NAN;
	r->min_rank = -1;
	for (size_t p = 0; p < l.procs.n; p++)
		if (l.procs.p[p].rank >= 0 && (r->min_rank < 0 || l.procs.p[p].rank < r->min_rank))
			r->min_rank = l.procs.p[p].rank;
	if (m->have_perun)
		rc = ring_offsets(m, o, r, &l, e);
	ringload_close(&l);
	return rc;
}

/* ---- pass 2: per-unit summaries ------------------------------------------ */

static long host_of(const struct mring *m, const char *name)
{
	for (size_t h = 0; h < m->nhosts; h++)
		if (!strcmp(m->hosts[h].ph->name, name))
			return (long)h;
	/* One perun host and rings naming another: perun's hostname and the
	 * ring's can differ in domain part; take the only one there is. */
	return m->nhosts == 1 ? 0 : -1;
}

static size_t group_index(const struct mring *m, const char *g)
{
	for (size_t k = 0; k < m->ngroups; k++)
		if (!strcmp(m->groups[k], g))
			return k;
	return 0;
}

/* Energy of a host over timeline [a, b], all sensors. */
static double host_slice_j(const struct mr_host *h, double a, double b)
{
	double e = 0;
	for (size_t s = 0; s < h->nsen; s++)
		e += energy_model_slice_j(&h->sen[s], a, b);
	return e;
}

/* Add one sensor's attribution to the unit's phase rows (group g). */
static void add_result(const struct phase_set *ps, const struct attrib_result *r, size_t g, struct mr_unit *u)
{
	size_t np = ps->nnames;
	u->total_j[g] += r->total_j;
	u->node_total_j[g] += r->total_j;
	u->unattr_j[g] += r->row[np].energy_j;
	u->unattr_lo_j[g] += r->row[np].ci_low_j;
	u->unattr_hi_j[g] += r->row[np].ci_high_j;
	for (size_t k = 0; k < u->nph; k++) {
		int idx = phase_set_find(ps, u->ph[k].name);
		const struct attrib_row *ar = &r->row[idx];
		struct mr_phase *p = &u->ph[k];
		if (p->tool)
			continue; /* no power of its own: its time is unattributed */
		if (isnan(p->energy_j[g]))
			p->energy_j[g] = p->lo_j[g] = p->hi_j[g] = p->node_j[g] = 0;
		p->energy_j[g] += ar->energy_j;
		p->node_j[g] += ar->energy_j;
		p->lo_j[g] += ar->ci_low_j;
		p->hi_j[g] += ar->ci_high_j;
		p->flags[g] |= ar->flags;
		if (!p->method)
			p->method = (int)ar->method;
	}
}

/* The highest and lowest window power of group g around the unit's
 * occurrences of each phase (what the plausibility flags compare with,
 * phase_flags.h), sensors of the group summed. */
static void window_facts(const struct mring *m, const struct phase_set *ps, const struct phase_thread *th,
			 const struct ring_clock *clk, size_t g, struct mr_unit *u)
{
	const struct mr_host *h = &m->hosts[u->host_idx];
	for (size_t k = 0; k < u->nph; k++) {
		struct mr_phase *p = &u->ph[k];
		int idx = phase_set_find(ps, p->name);
		double maxw = 0, minw = 0;
		int seen = 0;
		if (p->tool)
			continue;
		for (size_t s = 0; s < h->nsen; s++) {
			double hi = -INFINITY, lo = INFINITY;
			if (group_index(m, h->sen[s].group) != g)
				continue;
			for (size_t i = 0; i < th->nseg; i++)
				if (th->seg[i].phase == idx)
					energy_model_window_range(&h->sen[s], tl_s(m, clk, th->seg[i].t0_ns),
								  tl_s(m, clk, th->seg[i].t1_ns), &hi, &lo);
			if (hi > -INFINITY) {
				maxw += hi;
				minw += lo;
				seen = 1;
			}
		}
		p->maxw_w[g] = seen ? maxw : NAN;
		p->minw_w[g] = seen ? minw : NAN;
	}
}

/* The unit's host power explained by its primary thread, with the same
 * methods (attrib_choose), default, tool rule and interval widening as
 * single-ring `phases` (model/phase_results.c). */
static int attribute_unit(const struct mring *m, const struct mring_opts *o, const struct phase_set *ps, long thr,
			  struct mr_unit *u, const struct ring_clock *clk, struct em_error *e)
{
	const struct mr_host *h = &m->hosts[u->host_idx];
	const struct phase_thread *th = &ps->thr[thr];
	struct attrib_interval *iv = calloc(th->nseg ? th->nseg : 1, sizeof *iv);
	struct attrib_opts ao = o->ao;
	size_t np = ps->nnames, niv = 0;

	if (!iv)
		return OOM(e);
	/* Sensor time = timeline - the host's offset (same for its sensors).
	 * The tools' own activity (perun's MPI set-up in a rank that runs
	 * `perun monitor`) gets no power of its own. */
	for (size_t i = 0; i < th->nseg; i++) {
		if (phase_set_is_tool(ps, th->seg[i].phase))
			continue;
		iv[niv].t0_s = tl_s(m, clk, th->seg[i].t0_ns) - h->offset_s;
		iv[niv].t1_s = tl_s(m, clk, th->seg[i].t1_ns) - h->offset_s;
		iv[niv].phase = th->seg[i].phase;
		niv++;
	}
	/* An offset known only to within its 95 % interval (no stamps) moves
	 * every phase by up to that much: the intervals widen by the change
	 * such a shift makes, as for one ring. */
	if (h->ci95_ms / 1e3 > ao.offset_sigma_s && h->ci95_ms > 3.0)
		ao.offset_sigma_s = h->ci95_ms / 1e3;
	for (size_t s = 0; s < h->nsen; s++) {
		const struct em_sensor *es = &h->sen[s];
		struct attrib_result r;
		int rc;
		memset(&r, 0, sizeof r);
		if (1) {
			char ring[32];
			snprintf(ring, sizeof ring, "rank %d's ring", u->rank);
			attrib_count_note(ring, th->tid, es->ps->id);
		}
		rc = attrib_choose(o->method, &es->ser, iv, niv, np, &ao, &r);
		if (rc == -ENODATA) {
			/* Outside perun's span on its host, or in too few of its
			 * windows: the data cannot give this rank joules; it keeps
			 * its times and says why. */
			double span = es->ser.n > 1 ? es->ser.t_s[es->ser.n - 1] - es->ser.t_s[0] : 0;
			snprintf(u->no_energy, sizeof u->no_energy,
				 "too few of perun's %zu sample windows (%.3g s apart) over its %zu phase intervals to "
				 "attribute %zu phases (a short run: perun monitor --sampling_period 0.1)",
				 es->ser.n ? es->ser.n - 1 : 0, es->ser.n > 1 ? span / (double)(es->ser.n - 1) : 0.0, niv, np);
			continue;
		}
		if (rc) {
			free(iv);
			return diag_error(e, rc, m->pf.app, "attribution failed on host %s sensor %s (%s)", h->ph->name,
					  es->ps->id, strerror(-rc));
		}
		/* GPU joules: the board's gain floor, as one ring's phases do
		 * (sensor_model.h); shares are gain-free. */
		if (!strcmp(es->group, "gpu")) {
			double lo = NAN, hi = NAN;
			r.total_j = sensor_model_gpu_joules(r.total_j, &lo, &hi);
			for (size_t k = 0; k <= r.n_phase; k++)
				r.row[k].energy_j = sensor_model_gpu_joules(r.row[k].energy_j, &r.row[k].ci_low_j,
									    &r.row[k].ci_high_j);
		}
		add_result(ps, &r, group_index(m, es->group), u);
		attrib_result_free(&r);
	}
	free(iv);
	for (size_t g = 0; g < (m->ngroups ? m->ngroups : 1); g++)
		window_facts(m, ps, th, clk, g, u);
	return 0;
}

/* Union of [a,b) intervals (sorted by a in place): total length. */
static double union_len(double (*v)[2], size_t n)
{
	double tot = 0, ca = 0, cb = 0;
	int open = 0;
	for (size_t i = 1; i < n; i++) /* insertion sort: a handful per step */
		for (size_t j = i; j > 0 && v[j][0] < v[j - 1][0]; j--) {
			double a = v[j][0], b = v[j][1];
			v[j][0] = v[j - 1][0];
			v[j][1] = v[j - 1][1];
			v[j - 1][0] = a;
			v[j - 1][1] = b;
		}
	for (size_t i = 0; i <= n; i++) {
		if (i < n && open && v[i][0] <= cb) {
			if (v[i][1] > cb)
				cb = v[i][1];
			continue;
		}
		if (open)
			tot += cb - ca;
		if (i < n) {
			ca = v[i][0];
			cb = v[i][1];
			open = 1;
		}
	}
	return tot;
}

/*
 * Energy spent waiting.  Collectives last milliseconds, far below perun's
 * sampling period, so slicing the host's power curve over a wait would
 * hand it the window's average power (forward and backward included).
 * The attributed power of the collective phase (its joules over its self
 * time, all groups, from the phase attribution: split/regress separate
 * short phases) is the honest rate; slicing is the fallback for a phase
 * that got no joules.
 */
static double *phase_power_w(const struct phase_set *ps, const struct mr_unit *u, size_t ng)
{
	double *w = calloc(ps->nnames ? ps->nnames : 1, sizeof *w);
	for (size_t k = 0; w && k < ps->nnames; k++) {
		w[k] = NAN;
		for (size_t p = 0; p < u->nph; p++) {
			const struct mr_phase *ph = &u->ph[p];
			double e = 0;
			int any = 0;
			if (strcmp(ph->name, ps->names[k]) || ph->self_s <= 0)
				continue;
			for (size_t g = 0; g < ng; g++)
				if (!isnan(ph->energy_j[g])) {
					e += ph->energy_j[g];
					any = 1;
				}
			if (any)
				w[k] = e / ph->self_s;
		}
	}
	return w;
}

/* Collective occurrences of this thread, by start (occ is sorted by
 * (pid, tid, t0); the primary thread's are what count: a rank waits where
 * its training loop runs); their time into u->coll_s.  NULL with
 * *n = 0 when there are none; -ENOMEM as *n = (size_t)-1. */
static size_t *unit_collectives(const struct phase_set *ps, const struct phase_thread *th, const char *is_coll,
				struct mr_unit *u, size_t *n)
{
	size_t *coll = NULL, ncoll = 0;
	for (size_t i = 0; i < ps->nocc; i++) {
		const struct phase_occ *oc = &ps->occ[i];
		if (oc->pid != th->pid || oc->tid != th->tid || !is_coll[oc->phase])
			continue;
		if (!(ncoll & (ncoll + 1)) || !coll) {
			size_t *nc = realloc(coll, (ncoll * 2 + 2) * sizeof *nc);
			if (!nc) {
				free(coll);
				*n = (size_t)-1;
				return NULL;
			}
			coll = nc;
		}
		coll[ncoll++] = i;
		u->coll_s += (double)(oc->t1_ns - oc->t0_ns) / 1e9;
	}
	*n = ncoll;
	return coll;
}

/* What unit_steps works on. */
struct step_ctx {
	const struct mring *m;
	const struct phase_set *ps;
	const struct ring_clock *clk;
	const struct mr_host *h;
	const double *pw;   /* phase_power_w */
	const size_t *coll; /* unit_collectives */
	size_t ncoll, c0;
	double (*iv)[2];    /* scratch: one step's collective intervals */
	size_t ivcap;
};

/* One step: its span, and the collectives inside it (wait time and joules). */
static int step_wait(struct step_ctx *x, const struct phase_occ *oc, struct mr_step *s)
{
	size_t k = 0;
	s->wait_j = 0;
	s->t0_s = tl_s(x->m, x->clk, oc->t0_ns);
	s->t1_s = tl_s(x->m, x->clk, oc->t1_ns);
	/* Steps come in time order; skip collectives that ended before. */
	while (x->c0 < x->ncoll && x->ps->occ[x->coll[x->c0]].t1_ns <= oc->t0_ns)
		x->c0++;
	for (size_t j = x->c0; j < x->ncoll && x->ps->occ[x->coll[j]].t0_ns < oc->t1_ns; j++) {
		const struct phase_occ *c = &x->ps->occ[x->coll[j]];
		uint64_t a = c->t0_ns > oc->t0_ns ? c->t0_ns : oc->t0_ns;
		uint64_t b = c->t1_ns < oc->t1_ns ? c->t1_ns : oc->t1_ns;
		if (b <= a)
			continue;
		if (k == x->ivcap) {
			size_t cap = x->ivcap ? x->ivcap * 2 : 16;
			double(*ni)[2] = realloc(x->iv, cap * sizeof *ni);
			if (!ni)
				return -ENOMEM;
			x->iv = ni;
			x->ivcap = cap;
		}
		x->iv[k][0] = tl_s(x->m, x->clk, a);
		x->iv[k][1] = tl_s(x->m, x->clk, b);
		if (x->h)
			s->wait_j += !isnan(x->pw[c->phase]) ? x->pw[c->phase] * (x->iv[k][1] - x->iv[k][0])
							     : host_slice_j(x->h, x->iv[k][0], x->iv[k][1]);
		k++;
	}
	s->wait_s = union_len(x->iv, k);
	if (!x->h)
		s->wait_j = NAN;
	return 0;
}

static int unit_steps(const struct mring *m, const struct phase_set *ps, const struct ring_clock *clk,
		      const struct phase_thread *th, int step_idx, const char *is_coll, struct mr_unit *u,
		      struct em_error *e)
{
	struct step_ctx x = {.m = m, .ps = ps, .clk = clk};
	size_t n = 0, cap = 0;
	int rc = 0;
	double *pw = phase_power_w(ps, u, m->ngroups ? m->ngroups : 1);
	size_t *coll = unit_collectives(ps, th, is_coll, u, &x.ncoll);
	x.h = u->host_idx >= 0 ? &m->hosts[u->host_idx] : NULL;
	x.pw = pw;
	x.coll = coll;
	if (!pw || x.ncoll == (size_t)-1) {
		x.ncoll = 0;
		rc = OOM(e);
	}
	for (size_t i = 0; !rc && step_idx >= 0 && i < ps->nocc; i++) {
		const struct phase_occ *oc = &ps->occ[i];
		if (oc->pid != th->pid || oc->tid != th->tid || oc->phase != step_idx)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			struct mr_step *ns = realloc(u->steps, cap * sizeof *ns);
			if (!ns) {
				rc = OOM(e);
				break;
			}
			u->steps = ns;
		}
		if (step_wait(&x, oc, &u->steps[n++]))
			rc = OOM(e);
	}
	u->nsteps = rc ? 0 : n;
	free(pw);
	free(x.iv);
	free(coll);
	return rc;
}

/* The unit's steps once more (pass 3: after the node split changed the
 * power its waits are counted at). */
static int ring_steps(const struct mring *m, const struct phase_set *ps, const struct ring_clock *clk, struct mr_unit *u,
		      struct em_error *e)
{
	long thr = phase_set_primary_of(ps, u->pid);
	char *is_coll = calloc(ps->nnames ? ps->nnames : 1, 1);
	int rc;
	if (!is_coll)
		return OOM(e);
	for (size_t k = 0; k < ps->nnames; k++)
		is_coll[k] = (char)mring_is_collective(ps->names[k]);
	free(u->steps);
	u->steps = NULL;
	u->nsteps = 0;
	u->coll_s = 0;
	rc = thr < 0 ? 0 : unit_steps(m, ps, clk, &ps->thr[thr], m->step[0] ? phase_set_find(ps, m->step) : -1, is_coll, u, e);
	free(is_coll);
	return rc;
}

static void unit_status(const struct ring_proc *p, struct mr_unit *u)
{
	if (p && p->exit_known && p->exit_signal) {
		snprintf(u->status, sizeof u->status, "killed by signal %d", p->exit_value);
		u->abnormal = 1;
	} else if (p && p->exit_known) {
		snprintf(u->status, sizeof u->status, "exit %d", p->exit_value);
		u->abnormal = p->exit_value != 0;
	} else if (p && p->exit_ns) {
		snprintf(u->status, sizeof u->status, "exited (status unknown)");
	} else {
		snprintf(u->status, sizeof u->status, "no exit record (killed, e.g. SIGKILL)");
		u->abnormal = 1;
	}
}

/* Phase rows of this process (every thread, phase_stats_of), self time on
 * its primary thread th. */
static int unit_phases(const struct phase_set *ps, const struct phase_thread *th, size_t ng, struct mr_unit *u)
{
	if (!(u->ph = calloc(ps->nnames ? ps->nnames : 1, sizeof *u->ph)))
		return -ENOMEM;
	for (size_t k = 0; k < ps->nnames; k++) {
		struct phase_stats st;
		double self = 0;
		if (phase_stats_of(ps, (int)k, u->pid, PHASE_STATS_ALL, &st))
			return -ENOMEM;
		if (!st.count)
			continue;
		for (size_t s = 0; s < th->nseg; s++)
			if (th->seg[s].phase == (int)k)
				self += (double)(th->seg[s].t1_ns - th->seg[s].t0_ns) / 1e9;
		struct mr_phase *ph = &u->ph[u->nph++];
		ph->count = st.count;
		ph->total_s = st.total_s;
		ph->self_s = self;
		ph->mean_ms = st.mean_ms;
		ph->p50_ms = st.p50_ms;
		ph->p95_ms = st.p95_ms;
		ph->name = strdup(ps->names[k]);
		ph->tool = phase_set_is_tool(ps, (int)k);
		ph->split = 1;
		ph->energy_j = calloc(ng, sizeof(double));
		ph->lo_j = calloc(ng, sizeof(double));
		ph->hi_j = calloc(ng, sizeof(double));
		ph->node_j = calloc(ng, sizeof(double));
		ph->maxw_w = calloc(ng, sizeof(double));
		ph->minw_w = calloc(ng, sizeof(double));
		ph->flags = calloc(ng, sizeof(unsigned));
		if (!ph->name || !ph->energy_j || !ph->lo_j || !ph->hi_j || !ph->node_j || !ph->maxw_w || !ph->minw_w ||
		    !ph->flags)
			return -ENOMEM;
		for (size_t g = 0; g < ng; g++)
			ph->energy_j[g] = ph->lo_j[g] = ph->hi_j[g] = ph->node_j[g] = ph->maxw_w[g] = ph->minw_w[g] = NAN;
	}
	return 0;
}

/* The unit's busy time: its primary thread's segments in the user's
 * phases on the timeline, touching ones merged (a training step is one
 * interval, not five): what the node split counts ranks with. */
static int unit_busy(const struct mring *m, const struct phase_set *ps, const struct phase_thread *th,
		     const struct ring_clock *clk, struct mr_unit *u)
{
	size_t n = 0;
	if (!(u->busy = malloc((th->nseg ? th->nseg : 1) * sizeof *u->busy)))
		return -ENOMEM;
	for (size_t i = 0; i < th->nseg; i++) {
		if (phase_set_is_tool(ps, th->seg[i].phase))
			continue;
		double a = tl_s(m, clk, th->seg[i].t0_ns), b = tl_s(m, clk, th->seg[i].t1_ns);
		if (n && a <= u->busy[n - 1][1]) {
			if (b > u->busy[n - 1][1])
				u->busy[n - 1][1] = b;
			continue;
		}
		u->busy[n][0] = a;
		u->busy[n][1] = b;
		n++;
	}
	u->nbusy = n;
	return 0;
}

/* What pass2 knows of one ring, for each of its units. */
struct ring_ctx {
	struct mring *m;
	const struct mring_opts *o;
	struct mr_ring *r;
	size_t ri;
	const struct ringload *l;
	const struct phase_set *ps;
	const char *is_coll;
	int step_idx;
};

/* One process as a unit: identity, status, phases, energy, steps. */
static int add_unit(const struct ring_ctx *x, const struct ring_proc *pr, long thr, struct em_error *e)
{
	const struct mring *m = x->m;
	const struct ringload *l = x->l;
	struct mr_unit *u = &x->r->units[x->r->nunits++];
	const struct phase_thread *th = &x->ps->thr[thr];
	size_t ng = m->ngroups ? m->ngroups : 1;
	int rc;
	u->ring = x->ri;
	u->pid = pr->pid;
	u->rank = pr->rank;
	snprintf(u->rank_var, sizeof u->rank_var, "%s", pr->rank_var ? pr->rank_var : "");
	u->slurm_procid = pr->slurm_procid;
	snprintf(u->job_id, sizeof u->job_id, "%s", pr->job_id);
	snprintf(u->step_id, sizeof u->step_id, "%s", pr->step_id);
	snprintf(u->host, sizeof u->host, "%s", pr->host[0] ? pr->host : x->r->host);
	u->host_idx = m->have_perun ? host_of(m, u->host) : -1;
	if (u->host_idx >= 0 && !m->hosts[u->host_idx].nsen)
		u->host_idx = -1;
	u->first_s = tl_s(m, &l->clock, pr->start_ns ? pr->start_ns : l->rf.ev[0].ts_ns);
	u->last_s = tl_s(m, &l->clock, pr->exit_ns ? pr->exit_ns : l->rf.ev[l->rf.nev - 1].ts_ns);
	unit_status(pr, u);
	u->unattr_j = calloc(ng, sizeof(double));
	u->total_j = calloc(ng, sizeof(double));
	u->unattr_lo_j = calloc(ng, sizeof(double));
	u->unattr_hi_j = calloc(ng, sizeof(double));
	u->node_total_j = calloc(ng, sizeof(double));
	if (!u->unattr_j || !u->total_j || !u->unattr_lo_j || !u->unattr_hi_j || !u->node_total_j ||
	    unit_phases(x->ps, th, ng, u) || unit_busy(m, x->ps, th, &l->clock, u))
		return OOM(e);
	if (u->host_idx >= 0 && (rc = attribute_unit(m, x->o, x->ps, thr, u, &l->clock, e)))
		return rc;
	if (u->host_idx >= 0 && u->no_energy[0])
		u->host_idx = -1; /* times only (rank_table says why) */
	return unit_steps(m, x->ps, &l->clock, th, x->step_idx, x->is_coll, u, e);
}

/* Units: the ring's training processes (train_procs.h). */
static int ring_units(const struct ring_ctx *x, struct em_error *e)
{
	struct train_procs tp;
	int rc = 0;
	if (train_procs_find(&x->l->procs, x->ps, 0, &tp))
		return OOM(e);
	if (!(x->r->units = calloc(tp.n ? tp.n : 1, sizeof *x->r->units))) {
		train_procs_free(&tp);
		return OOM(e);
	}
	for (size_t i = 0; i < tp.n && !rc; i++)
		rc = add_unit(x, tp.p[i].proc, tp.p[i].thr, e);
	train_procs_free(&tp);
	return rc;
}

static int pass2(struct mring *m, const struct mring_opts *o, size_t ri, struct em_error *e)
{
	struct mr_ring *r = &m->rings[ri];
	struct ringload l;
	struct phase_set ps;
	char *is_coll;
	int rc;

	if ((rc = load_ring(r->path, &l, e)))
		return rc;
	if (phase_set_build(l.rf.ev, l.rf.nev, &l.procs, &ps)) {
		ringload_close(&l);
		return diag_error(e, -ENOMEM, r->path, "out of memory");
	}
	if (!(is_coll = calloc(ps.nnames ? ps.nnames : 1, 1))) {
		rc = OOM(e);
	} else {
		struct ring_ctx x = {.m = m, .o = o, .r = r, .ri = ri, .l = &l, .ps = &ps, .is_coll = is_coll,
				     .step_idx = -1};
		for (size_t k = 0; k < ps.nnames; k++)
			is_coll[k] = (char)mring_is_collective(ps.names[k]);
		if (m->step[0])
			x.step_idx = phase_set_find(&ps, m->step);
		rc = ring_units(&x, e);
	}
	free(is_coll);
	phase_set_free(&ps);
	ringload_close(&l);
	return rc;
}

/* ---- the node split (mring.h) ----------------------------------------------- */

struct edge {
	double t;
	int d; /* +1 a unit becomes busy, -1 it stops */
};

static int cmp_edge(const void *a, const void *b)
{
	const struct edge *x = a, *y = b;
	return x->t < y->t ? -1 : x->t > y->t;
}

/* How many of host h's units are in a phase, as a step function over the
 * timeline: busy_n[k] on [busy_t[k], busy_t[k+1]). */
static int host_busy(struct mring *m, size_t h)
{
	struct mr_host *mh = &m->hosts[h];
	struct edge *ev;
	size_t ne = 0, k = 0;
	int n = 0;
	for (size_t i = 0; i < m->nunits; i++)
		if (m->units[i]->host_idx == (long)h)
			ne += 2 * m->units[i]->nbusy;
	if (!(ev = malloc((ne ? ne : 1) * sizeof *ev)) || !(mh->busy_t = malloc((ne ? ne : 1) * sizeof *mh->busy_t)) ||
	    !(mh->busy_n = malloc((ne ? ne : 1) * sizeof *mh->busy_n))) {
		free(ev);
		return -ENOMEM;
	}
	ne = 0;
	for (size_t i = 0; i < m->nunits; i++) {
		const struct mr_unit *u = m->units[i];
		if (u->host_idx != (long)h)
			continue;
		for (size_t b = 0; b < u->nbusy; b++) {
			ev[ne++] = (struct edge){u->busy[b][0], +1};
			ev[ne++] = (struct edge){u->busy[b][1], -1};
		}
	}
	qsort(ev, ne, sizeof *ev, cmp_edge);
	for (size_t i = 0; i < ne;) {
		double t = ev[i].t;
		for (; i < ne && ev[i].t == t; i++)
			n += ev[i].d;
		mh->busy_t[k] = t;
		mh->busy_n[k] = n > 0 ? (unsigned)n : 0;
		k++;
	}
	mh->nbusy = k;
	free(ev);
	return 0;
}

/* The integral of 1 / (busy units) over [a, b] (at least the unit asking
 * is busy: a count of 0 from rounding at an edge counts as 1); *hint:
 * where the last call ended, for calls in time order. */
static double inv_busy(const struct mr_host *h, double a, double b, size_t *hint)
{
	size_t k = *hint;
	double sum = 0;
	if (k >= h->nbusy || h->busy_t[k] > a) {
		size_t lo = 0, hi = h->nbusy;
		while (lo < hi) { /* the last step starting at or before a */
			size_t mid = (lo + hi) / 2;
			if (h->busy_t[mid] <= a)
				lo = mid + 1;
			else
				hi = mid;
		}
		k = lo ? lo - 1 : 0;
	}
	while (k + 1 < h->nbusy && h->busy_t[k + 1] <= a)
		k++;
	for (double t = a; t < b && k < h->nbusy; k++) {
		double end = k + 1 < h->nbusy ? h->busy_t[k + 1] : b;
		if (end > b)
			end = b;
		if (end > t)
			sum += (end - t) / (h->busy_n[k] ? h->busy_n[k] : 1);
		t = end;
		if (end >= b)
			break;
	}
	*hint = k;
	return sum;
}

/* c[r,p] for each of unit u's phases: the mean of 1 / (busy units of its
 * node) over its time in p inside perun's span; the phase joules scaled
 * by it. */
static int split_unit(const struct mring *m, const struct phase_set *ps, const struct ring_clock *clk,
		      struct mr_unit *u)
{
	const struct mr_host *h = &m->hosts[u->host_idx];
	long thr = phase_set_primary_of(ps, u->pid);
	size_t ng = m->ngroups ? m->ngroups : 1, hint = 0;
	size_t np = ps->nnames ? ps->nnames : 1;
	double *inv = calloc(np, sizeof *inv), *in_span = calloc(np, sizeof *in_span);
	double s0 = h->sen[0].t_tl[0], s1 = h->sen[0].t_tl[h->sen[0].ser.n - 1];
	if (!inv || !in_span) {
		free(inv);
		free(in_span);
		return -ENOMEM;
	}
	for (size_t i = 0; thr >= 0 && i < ps->thr[thr].nseg; i++) {
		const struct phase_seg *sg = &ps->thr[thr].seg[i];
		double a = tl_s(m, clk, sg->t0_ns), b = tl_s(m, clk, sg->t1_ns);
		if (phase_set_is_tool(ps, sg->phase))
			continue;
		a = a > s0 ? a : s0;
		b = b < s1 ? b : s1;
		if (b <= a)
			continue;
		inv[sg->phase] += inv_busy(h, a, b, &hint);
		in_span[sg->phase] += b - a;
	}
	for (size_t k = 0; k < u->nph; k++) {
		struct mr_phase *p = &u->ph[k];
		int idx = phase_set_find(ps, p->name);
		p->split = idx >= 0 && in_span[idx] > 0 ? inv[idx] / in_span[idx] : 1;
		for (size_t g = 0; g < ng; g++) {
			p->energy_j[g] *= p->split;
			p->lo_j[g] *= p->split;
			p->hi_j[g] *= p->split;
		}
	}
	free(inv);
	free(in_span);
	return 0;
}

static int ring_steps(const struct mring *m, const struct phase_set *ps, const struct ring_clock *clk, struct mr_unit *u,
		      struct em_error *e);

/* Pass 3: the split for this ring's units on nodes of several units, and
 * their steps again (their wait joules at the split power). */
static int pass3(struct mring *m, const struct mring_opts *o, size_t ri, struct em_error *e)
{
	struct mr_ring *r = &m->rings[ri];
	struct ringload l;
	struct phase_set ps;
	int rc = 0, any = 0;
	for (size_t k = 0; k < r->nunits; k++)
		any |= r->units[k].host_idx >= 0 && m->hosts[r->units[k].host_idx].nunits > 1;
	if (!any)
		return 0;
	if ((rc = load_ring(r->path, &l, e)))
		return rc;
	if (phase_set_build(l.rf.ev, l.rf.nev, &l.procs, &ps)) {
		ringload_close(&l);
		return diag_error(e, -ENOMEM, r->path, "out of memory");
	}
	for (size_t k = 0; k < r->nunits && !rc; k++) {
		struct mr_unit *u = &r->units[k];
		if (u->host_idx < 0 || m->hosts[u->host_idx].nunits < 2)
			continue;
		if (split_unit(m, &ps, &l.clock, u))
			rc = OOM(e);
		else
			rc = ring_steps(m, &ps, &l.clock, u, e);
	}
	phase_set_free(&ps);
	ringload_close(&l);
	return rc;
}

/* What no phase explains on each node of several units: the node's total
 * minus its units' phase joules, in equal parts; each unit's total is
 * then its phases plus that part. */
static void split_remainder(struct mring *m)
{
	size_t ng = m->ngroups ? m->ngroups : 1;
	for (size_t h = 0; h < m->nhosts; h++) {
		const struct mr_host *mh = &m->hosts[h];
		if (mh->nunits < 2)
			continue;
		for (size_t g = 0; g < ng; g++) {
			double node = 0, sum = 0, lo = 0, hi = 0, part, part_lo, part_hi;
			for (size_t i = 0; i < m->nunits; i++) {
				const struct mr_unit *u = m->units[i];
				if (u->host_idx != (long)h)
					continue;
				node = fmax(node, u->node_total_j[g]);
				for (size_t p = 0; p < u->nph; p++)
					if (!isnan(u->ph[p].energy_j[g])) {
						sum += u->ph[p].energy_j[g];
						lo += u->ph[p].lo_j[g];
						hi += u->ph[p].hi_j[g];
					}
			}
			part = (node - sum) / (double)mh->nunits;
			/* Energy is not negative: the bound stops at 0 (or at the
			 * estimate, when inconsistent fits leave it below). */
			part_lo = fmax((node - hi) / (double)mh->nunits, fmin(0, (node - sum) / (double)mh->nunits));
			part_hi = (node - lo) / (double)mh->nunits;
			for (size_t i = 0; i < m->nunits; i++) {
				struct mr_unit *u = m->units[i];
				double own = 0;
				if (u->host_idx != (long)h)
					continue;
				for (size_t p = 0; p < u->nph; p++)
					if (!isnan(u->ph[p].energy_j[g]))
						own += u->ph[p].energy_j[g];
				u->node_total_j[g] = node;
				u->unattr_j[g] = part;
				u->unattr_lo_j[g] = part_lo;
				u->unattr_hi_j[g] = part_hi;
				u->total_j[g] = own + part;
			}
		}
	}
}

/* The units of each node; for nodes of several, the split. */
static int node_split(struct mring *m, const struct mring_opts *o, struct em_error *e)
{
	int rc;
	for (size_t i = 0; i < m->nunits; i++)
		if (m->units[i]->host_idx >= 0)
			m->hosts[m->units[i]->host_idx].nunits++;
	for (size_t h = 0; h < m->nhosts; h++) {
		if (m->hosts[h].nunits < 2)
			continue;
		m->split = 1;
		if (host_busy(m, h))
			return OOM(e);
	}
	if (!m->split)
		return 0;
	if ((rc = run_pool(m, o, pass3, e)))
		return rc;
	split_remainder(m);
	return 0;
}

/* ---- perun hosts ----------------------------------------------------------- */

/* The perun file as energy_model opens it (guarded read, run, round), then
 * every host of the round with its power sensors. */
static int load_hosts(struct mring *m, const struct mring_opts *o, struct em_error *e)
{
	const struct perun_round *round;
	int rc = energy_model_open_perun(&m->pf, o->perun, o->run, o->round, &m->run, &round, e);
	if (rc)
		return rc;
	if (!(m->hosts = calloc(round->nhosts ? round->nhosts : 1, sizeof *m->hosts)))
		return OOM(e);
	m->nhosts = round->nhosts;
	for (size_t h = 0; h < round->nhosts; h++) {
		struct mr_host *mh = &m->hosts[h];
		mh->ph = &round->hosts[h];
		mh->offset_s = NAN;
		if (energy_model_add_sensors(mh->ph, &mh->sen, &mh->nsen, &m->groups, &m->ngroups))
			return OOM(e);
		mh->period_s = INFINITY;
		for (size_t k = 0; k < mh->nsen; k++) {
			const struct perun_sensor *ps = mh->sen[k].ps;
			mh->period_s = fmin(mh->period_s, (ps->timesteps_s[ps->n - 1] - ps->timesteps_s[0]) /
								  (double)(ps->n - 1));
		}
	}
	if ((m->emulated = energy_model_emulated(o->perun)) < 0)
		return OOM(e);
	return 0;
}

/* A host's offset from its rings: the perun.sample anchors of any, else
 * the fit on its lowest-rank ring.  0 when neither is there. */
static int host_offset_from_rings(const struct mring *m, size_t h, struct mr_host *mh)
{
	const struct mr_ring *r;
	long best = -1;
	for (size_t i = 0; i < m->nrings; i++) {
		r = &m->rings[i];
		if (!isnan(r->hook_offset_s) && host_of(m, r->host) == (long)h) {
			mh->offset_s = r->hook_offset_s;
			mh->uncert_ms = 0.001;
			snprintf(mh->method, sizeof mh->method, "perun-hook");
			return 1;
		}
	}
	for (size_t i = 0; i < m->nrings; i++) {
		r = &m->rings[i];
		if (isnan(r->fit_offset_s) || host_of(m, r->host) != (long)h)
			continue;
		if (best < 0 || (unsigned)r->min_rank < (unsigned)m->rings[best].min_rank)
			best = (long)i;
	}
	if (best < 0)
		return 0;
	r = &m->rings[best];
	mh->offset_s = r->fit_offset_s;
	mh->uncert_ms = r->fit_uncert_ms;
	mh->ci95_ms = r->fit_ci95_ms;
	mh->bound_lo_s = r->bound_lo_s;
	mh->bound_hi_s = r->bound_hi_s;
	mh->bound_ring = r->path;
	snprintf(mh->bound_why, sizeof mh->bound_why, "%s", r->bound_why);
	snprintf(mh->method, sizeof mh->method, "%s", r->fit_method);
	return 1;
}

/* Each host's offset: its own rings' perun.sample anchors, else the fit,
 * else execution_dt through any ring's clock (the same UTC instant). */
static int align_hosts(struct mring *m, const char *perun, struct em_error *e)
{
	double any_prior = NAN;
	for (size_t i = 0; i < m->nrings && isnan(any_prior); i++)
		any_prior = m->rings[i].prior_offset_s;
	for (size_t h = 0; h < m->nhosts; h++) {
		struct mr_host *mh = &m->hosts[h];
		if (!host_offset_from_rings(m, h, mh)) {
			if (isnan(any_prior))
				return diag_error(e, -EINVAL, perun,
						  "cannot align host %s: no perun.sample anchors in its rings and "
						  "execution_dt '%s' is unusable",
						  mh->ph->name, m->run->execution_dt ? m->run->execution_dt : "");
			mh->offset_s = any_prior;
			mh->uncert_ms = 2000;
			snprintf(mh->method, sizeof mh->method, "execution_dt");
		}
		/* Several rings: no sensor's lag is fitted (sensor_lag.h), the
		 * 3 ms timing error of attrib_split stays. */
		for (size_t s = 0; s < mh->nsen; s++)
			energy_model_place_sensor(&mh->sen[s], mh->offset_s);
	}
	return 0;
}

/* ---- open / close ------------------------------------------------------------ */

static int cmp_unit(const void *a, const void *b)
{
	const struct mr_unit *x = *(const struct mr_unit *const *)a, *y = *(const struct mr_unit *const *)b;
	unsigned xr = (unsigned)x->rank, yr = (unsigned)y->rank; /* -1 last */
	int c;
	if (xr != yr)
		return xr < yr ? -1 : 1;
	c = strcmp(x->host, y->host);
	if (c)
		return c;
	return x->pid < y->pid ? -1 : x->pid > y->pid;
}

/* The step phase: the first default name that some ring has.  Pass 1 does
 * not build phases, so peek at the first ring with a cheap scan. */
static int pick_step(struct mring *m, const struct mring_opts *o, struct em_error *e)
{
	if (o->step) {
		snprintf(m->step, sizeof m->step, "%s", o->step);
		return 0;
	}
	for (size_t i = 0; i < m->nrings && !m->step[0]; i++) {
		struct ring_file rf;
		char err[512];
		int rc = ring_reader_load(m->rings[i].path, &rf, err, sizeof err);
		if (rc)
			return diag_error(e, rc < 0 ? rc : -EINVAL, m->rings[i].path, "%s", err);
		for (int k = 0; default_steps[k] && !m->step[0]; k++)
			for (size_t ev = 0; ev < rf.nev; ev++)
				if ((rf.ev[ev].kind == ANCHOR_KIND_BEGIN || rf.ev[ev].kind == ANCHOR_KIND_MARK) &&
				    !strcmp(rf.ev[ev].text, default_steps[k])) {
					snprintf(m->step, sizeof m->step, "%s", default_steps[k]);
					break;
				}
		ring_reader_free(&rf);
	}
	return 0;
}

/* ANCHORPOST_STATS=1: wall time of each stage on stderr (bench). */
static void stage(const char *done)
{
	static struct timespec last;
	struct timespec now;
	if (!getenv("ANCHORPOST_STATS"))
		return;
	clock_gettime(CLOCK_MONOTONIC, &now);
	if (done)
		fprintf(stderr, "anchorpost: %-36s %.3f s\n", done,
			(double)(now.tv_sec - last.tv_sec) + (double)(now.tv_nsec - last.tv_nsec) / 1e9);
	last = now;
}

/* Every unit of every ring, sorted by (rank, host, pid). */
static int collect_units(struct mring *m, struct em_error *e)
{
	size_t n = 0;
	for (size_t i = 0; i < m->nrings; i++)
		n += m->rings[i].nunits;
	if (!(m->units = calloc(n ? n : 1, sizeof *m->units)))
		return OOM(e);
	for (size_t i = 0; i < m->nrings; i++)
		for (size_t k = 0; k < m->rings[i].nunits; k++)
			m->units[m->nunits++] = &m->rings[i].units[k];
	qsort(m->units, m->nunits, sizeof *m->units, cmp_unit);
	return 0;
}

int mring_open(struct mring *m, const struct mring_opts *o, struct em_error *e)
{
	int rc = 0;
	memset(m, 0, sizeof *m);
	/* Every ring is loaded twice into arrays of tens of MB: served by mmap
	 * (glibc's default above 32 MB at most) each load faults its pages in
	 * afresh, a tenth of the run (perf).  Keep freed blocks in the heap
	 * for the next ring instead; peak memory is unchanged. */
	mallopt(M_MMAP_THRESHOLD, 256 << 20);
	mallopt(M_TRIM_THRESHOLD, 512 << 20);
	for (size_t i = 0; i < o->ninputs && !rc; i++)
		rc = expand_input(m, o->inputs[i], e);
	if (rc)
		return rc;
	if (!m->nrings)
		return diag_error(e, -EINVAL, NULL, "no ring given");
	if (m->nrings > 65535)
		return diag_error(e, -E2BIG, NULL, "%zu rings: at most 65535", m->nrings);
	if ((rc = read_origin(m, e)))
		return rc;
	if (o->perun) {
		m->have_perun = 1;
		if ((rc = load_hosts(m, o, e)))
			return rc;
	}
	stage(NULL);
	if ((rc = run_pool(m, o, pass1, e)))
		return rc;
	stage("pass 1 (clocks, perun offsets)");
	if (m->have_perun && (rc = align_hosts(m, o->perun, e)))
		return rc;
	if ((rc = pick_step(m, o, e)))
		return rc;
	stage("align hosts, pick step");
	if ((rc = run_pool(m, o, pass2, e)))
		return rc;
	stage("pass 2 (phases, attribution, steps)");
	if ((rc = collect_units(m, e)) || (m->have_perun && (rc = node_split(m, o, e))))
		return rc;
	if (m->split)
		stage("pass 3 (node split)");
	return 0;
}

void mring_close(struct mring *m)
{
	for (size_t i = 0; i < m->nrings; i++) {
		struct mr_ring *r = &m->rings[i];
		for (size_t k = 0; k < r->nunits; k++) {
			struct mr_unit *u = &r->units[k];
			for (size_t p = 0; p < u->nph; p++) {
				free(u->ph[p].name);
				free(u->ph[p].energy_j);
				free(u->ph[p].lo_j);
				free(u->ph[p].hi_j);
				free(u->ph[p].node_j);
				free(u->ph[p].maxw_w);
				free(u->ph[p].minw_w);
				free(u->ph[p].flags);
			}
			free(u->ph);
			free(u->steps);
			free(u->unattr_j);
			free(u->total_j);
			free(u->unattr_lo_j);
			free(u->unattr_hi_j);
			free(u->node_total_j);
			free(u->busy);
		}
		free(r->units);
		free(r->path);
	}
	free(m->rings);
	free(m->units);
	for (size_t h = 0; h < m->nhosts; h++) {
		for (size_t s = 0; s < m->hosts[h].nsen; s++)
			energy_model_sensor_free(&m->hosts[h].sen[s]);
		free(m->hosts[h].sen);
		free(m->hosts[h].busy_t);
		free(m->hosts[h].busy_n);
	}
	free(m->hosts);
	free(m->groups);
	if (m->have_perun)
		perun_free(&m->pf);
	memset(m, 0, sizeof *m);
}

int mring_open_run(struct mring *m, const char *const *rings, size_t nrings, const struct em_opts *o,
		   enum attrib_choice method, const struct attrib_opts *ao, struct em_error *e)
{
	struct mring_opts mo = {
		.inputs = rings, .ninputs = nrings, .perun = o->perun, .run = o->run, .round = o->round, .tz = o->tz,
		.method = method, .threads = 2, .no_fit = o->no_fit, .no_hook = o->no_hook,
		.fit_range_s = o->fit_range_s,
	};
	if (ao)
		mo.ao = *ao;
	return mring_open(m, &mo, e);
}

const char *mring_lead_ring(const struct mring *m)
{
	return m->nunits ? m->rings[m->units[0]->ring].path : NULL;
}

int mring_slurm_job(const struct mring *m, char *job, size_t jcap, char *step, size_t scap)
{
	const char *j = NULL, *st = NULL;
	int same_step = 1;
	job[0] = step[0] = '\0';
	for (size_t i = 0; i < m->nunits; i++) {
		const struct mr_unit *u = m->units[i];
		if (!u->job_id[0] || (j && strcmp(j, u->job_id)))
			return -1;
		same_step &= !st || !strcmp(st, u->step_id);
		j = u->job_id;
		st = u->step_id;
	}
	if (!j)
		return -1;
	snprintf(job, jcap, "%s", j);
	snprintf(step, scap, "%s", same_step && st ? st : "");
	return 0;
}

int mring_slurm_acct(const struct mring *m, struct slurm_acct *a)
{
	char job[24], step[16];
	if (mring_slurm_job(m, job, sizeof job, step, sizeof step))
		return -ENOENT;
	slurm_acct_query(job, step, a);
	return 0;
}
