/* mring.c - many rings + a multi-host perun file (see mring.h). */
#include "mring.h"
#include "tunables.h"

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

#include "align.h"
#include "diag.h"
#include "input_file.h"
#include "phase_set.h"
#include "ring_clock.h"
#include "ring_procs.h"

/* diag_fatal from a worker thread: the first one to fail prints its one
 * line and exits; a second failing thread waits here for the exit instead
 * of printing a second line. */
static pthread_mutex_t fatal_lock = PTHREAD_MUTEX_INITIALIZER;
#define worker_fatal(...)                                                                          \
	do {                                                                                       \
		pthread_mutex_lock(&fatal_lock);                                                   \
		diag_fatal(__VA_ARGS__);                                                           \
	} while (0)

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

static void *xcalloc(size_t n, size_t sz)
{
	void *p = calloc(n ? n : 1, sz);
	if (!p)
		worker_fatal(NULL, "out of memory");
	return p;
}

static char *xstrdup(const char *s)
{
	char *d = strdup(s);
	if (!d)
		worker_fatal(NULL, "out of memory");
	return d;
}

/* ---- inputs ---------------------------------------------------------- */

static void add_path(struct mring *m, const char *p)
{
	struct mr_ring *r = realloc(m->rings, (m->nrings + 1) * sizeof *r);
	if (!r)
		diag_fatal(NULL, "out of memory");
	m->rings = r;
	memset(&r[m->nrings], 0, sizeof *r);
	r[m->nrings].path = xstrdup(p);
	m->nrings++;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static void expand_input(struct mring *m, const char *in)
{
	struct stat st;
	if (stat(in, &st) == 0 && S_ISDIR(st.st_mode)) {
		DIR *d = opendir(in);
		struct dirent *de;
		char **names = NULL;
		size_t n = 0;
		if (!d)
			diag_fatal(in, "cannot open directory: %s", strerror(errno));
		while ((de = readdir(d))) {
			size_t l = strlen(de->d_name);
			if (l < 6 || strcmp(de->d_name + l - 5, ".ring"))
				continue;
			char **nn = realloc(names, (n + 1) * sizeof *nn);
			if (!nn)
				diag_fatal(NULL, "out of memory");
			names = nn;
			names[n] = malloc(strlen(in) + l + 2);
			if (!names[n])
				diag_fatal(NULL, "out of memory");
			sprintf(names[n], "%s/%s", in, de->d_name);
			n++;
		}
		closedir(d);
		if (!n)
			diag_fatal(in, "no *.ring file in the directory");
		qsort(names, n, sizeof *names, cmp_str);
		for (size_t i = 0; i < n; i++) {
			add_path(m, names[i]);
			free(names[i]);
		}
		free(names);
	} else if (strpbrk(in, "*?[")) {
		glob_t g;
		int rc = glob(in, 0, NULL, &g);
		if (rc == GLOB_NOMATCH)
			diag_fatal(in, "the pattern matches no file");
		if (rc)
			diag_fatal(in, "cannot expand the pattern");
		for (size_t i = 0; i < g.gl_pathc; i++)
			add_path(m, g.gl_pathv[i]);
		globfree(&g);
	} else {
		add_path(m, in);
	}
}

/* The earliest ring creation: the timeline's origin (header only). */
static int64_t read_origin(const struct mring *m)
{
	int64_t t0 = 0;
	for (size_t i = 0; i < m->nrings; i++) {
		struct anchor_ring_hdr h;
		char err[256];
		int fd = input_file_open(m->rings[i].path, INPUT_FILE_REMEMBER, err, sizeof err);
		if (fd < 0)
			diag_fatal(m->rings[i].path, "%s", err);
		if (pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h || memcmp(h.magic, ANCHOR_RING_MAGIC, 8))
			diag_fatal(m->rings[i].path, "not an anchor ring (bad magic or shorter than a header)");
		close(fd);
		if (h.create_realtime_ns && (!t0 || (int64_t)h.create_realtime_ns < t0))
			t0 = (int64_t)h.create_realtime_ns;
	}
	return t0;
}

static long host_of(const struct mring *m, const char *name);


/* ---- a pool of two (or more) threads over the rings ------------------- */

struct pool {
	struct mring *m;
	const struct mring_opts *o;
	void (*fn)(struct mring *, const struct mring_opts *, size_t);
	size_t next;
};

static void *pool_worker(void *arg)
{
	struct pool *p = arg;
	for (;;) {
		size_t i = __atomic_fetch_add(&p->next, 1, __ATOMIC_RELAXED);
		if (i >= p->m->nrings)
			return NULL;
		p->fn(p->m, p->o, i);
	}
}

static void run_pool(struct mring *m, const struct mring_opts *o,
		     void (*fn)(struct mring *, const struct mring_opts *, size_t))
{
	struct pool p = {m, o, fn, 0};
	int n = o->threads > 0 ? o->threads : 2;
	pthread_t th[64];
	int started = 0;
	if (n > 64)
		n = 64;
	for (int i = 1; i < n; i++)
		if (pthread_create(&th[started], NULL, pool_worker, &p) == 0)
			started++;
	pool_worker(&p);
	for (int i = 0; i < started; i++)
		pthread_join(th[i], NULL);
}

/* ---- loading one ring ---------------------------------------------------- */

struct loaded {
	struct ring_file rf;
	struct ring_clock clk;
	struct ring_procs procs;
};

static void load_ring(const char *path, struct loaded *l)
{
	char err[512];
	memset(l, 0, sizeof *l);
	if (input_file_check(path, INPUT_FILE_REMEMBER, err, sizeof err) ||
	    ring_reader_load(path, &l->rf, err, sizeof err))
		worker_fatal(path, "%s", err);
	if (ring_clock_build(l->rf.ev, l->rf.nev, &l->clk) || ring_procs_build(l->rf.ev, l->rf.nev, l->rf.hdr.hostname, &l->procs))
		worker_fatal(path, "out of memory");
	ring_clock_use_creation(&l->clk, &l->rf.hdr);
	if (!l->rf.nev && l->rf.stats.bad_check)
		worker_fatal(path, "no valid record: all %llu committed records fail the check hash (another "
				   "format revision, or corrupted)",
			     (unsigned long long)l->rf.stats.bad_check);
	if (!l->rf.nev)
		worker_fatal(path, "the ring holds no records");
	if (!l->clk.n)
		worker_fatal(path, "no SYNC record: the ring cannot be placed on the common (UTC) timeline");
}

static void free_loaded(struct loaded *l)
{
	ring_procs_free(&l->procs);
	ring_clock_free(&l->clk);
	ring_reader_free(&l->rf);
}

static double tl_s(const struct mring *m, const struct ring_clock *c, uint64_t mono_ns)
{
	return (double)(ring_clock_unix_ns(c, mono_ns) - m->t0_unix_ns) / 1e9;
}

/* The prior refined on this ring: its lowest rank's primary thread
 * against its host's first power sensor (align_perun_fit, as for one
 * ring).  Every ring does it; align_hosts keeps the lowest rank's. */
static void fit_ring(const struct mring *m, const struct mring_opts *o, struct mr_ring *r, const struct loaded *l)
{
	long h = host_of(m, r->host), thr = -1;
	struct phase_set ps;
	struct align_perun a;
	struct attrib_interval *iv;
	const struct phase_thread *th;

	if (h < 0 || !m->hosts[h].nsen)
		return;
	if (phase_set_build(l->rf.ev, l->rf.nev, &l->procs, &ps))
		worker_fatal(r->path, "out of memory");
	for (size_t p = 0; p < l->procs.n && thr < 0; p++)
		if (l->procs.p[p].rank == r->min_rank)
			thr = phase_set_primary_of(&ps, l->procs.p[p].pid);
	if (thr < 0 && ps.nthr)
		thr = (long)ps.primary;
	if (thr < 0) {
		phase_set_free(&ps);
		return;
	}
	th = &ps.thr[thr];
	if (!th->nseg) {
		phase_set_free(&ps);
		return;
	}
	/*
	 * The fit costs a least-squares solve per candidate offset over every
	 * window it is given; an hour-long rank would cost seconds, times the
	 * number of hosts.  FIT_SPAN_S of windows around the middle of the
	 * rank's phases holds thousands of jittered phase occurrences, plenty
	 * to pin one constant offset.
	 */
	double mid = (tl_s(m, &l->clk, th->seg[0].t0_ns) + tl_s(m, &l->clk, th->seg[th->nseg - 1].t1_ns)) / 2;
	double range = o->fit_range_s > 0 ? o->fit_range_s : ANCHOR_FIT_RANGE_S;
	double lo_tl = mid - FIT_SPAN_S / 2, hi_tl = mid + FIT_SPAN_S / 2;
	struct attrib_series ser = m->hosts[h].sen[0].ser;
	size_t i0 = 0, i1 = ser.n, niv = 0;
	while (i0 < ser.n && ser.t_s[i0] + r->prior_offset_s < lo_tl - range)
		i0++;
	while (i1 > i0 && ser.t_s[i1 - 1] + r->prior_offset_s > hi_tl + range)
		i1--;
	if (i0 > 0)
		i0--; /* the window ending at i0 starts at i0 - 1 */
	ser.t_s += i0;
	ser.value += i0;
	ser.n = i1 - i0;
	iv = xcalloc(th->nseg, sizeof *iv);
	for (size_t i = 0; i < th->nseg; i++) {
		double a0 = tl_s(m, &l->clk, th->seg[i].t0_ns), a1 = tl_s(m, &l->clk, th->seg[i].t1_ns);
		if (a1 < lo_tl || a0 > hi_tl)
			continue;
		iv[niv].t0_s = a0;
		iv[niv].t1_s = a1;
		iv[niv].phase = th->seg[i].phase;
		niv++;
	}
	memset(&a, 0, sizeof a);
	a.offset_s = r->prior_offset_s;
	snprintf(a.method, sizeof a.method, "execution_dt");
	if (niv && ser.n >= 3 && align_perun_fit(&ser, iv, niv, ps.nnames, range, &a) > 0) {
		r->fit_offset_s = a.offset_s;
		r->fit_uncert_ms = a.uncert_ms;
	}
	free(iv);
	phase_set_free(&ps);
}

/* Pass 1: clock, host, the perun offsets this ring can tell. */
static void pass1(struct mring *m, const struct mring_opts *o, size_t i)
{
	struct mr_ring *r = &m->rings[i];
	struct loaded l;
	const char *host = NULL;

	load_ring(r->path, &l);
	for (size_t p = 0; p < l.procs.n && !host; p++)
		if (l.procs.p[p].host[0])
			host = l.procs.p[p].host;
	snprintf(r->host, sizeof r->host, "%s", host ? host : l.rf.hdr.hostname);
	r->nev = l.rf.nev;
	r->stats = l.rf.stats;
	r->first_s = tl_s(m, &l.clk, l.rf.ev[0].ts_ns);
	r->last_s = tl_s(m, &l.clk, l.rf.ev[l.rf.nev - 1].ts_ns);
	r->mono_to_unix_s = (double)l.clk.pt[0].offset_ns / 1e9;
	r->clock_steps = l.clk.steps;
	r->hook_offset_s = r->prior_offset_s = r->fit_offset_s = NAN;
	r->min_rank = -1;
	for (size_t p = 0; p < l.procs.n; p++)
		if (l.procs.p[p].rank >= 0 && (r->min_rank < 0 || l.procs.p[p].rank < r->min_rank))
			r->min_rank = l.procs.p[p].rank;
	if (m->have_perun) {
		struct align_perun a;
		uint64_t base = l.rf.ev[0].ts_ns;
		memset(&a, 0, sizeof a);
		/* The stamps must reproduce this host's timesteps (else they are
		 * another perun run's). */
		long h = host_of(m, r->host);
		const struct perun_sensor *ref = NULL;
		if (h >= 0)
			for (size_t g = 0; g < m->hosts[h].ph->ngroups && !ref; g++)
				for (size_t s = 0; s < m->hosts[h].ph->groups[g].nsensors && !ref; s++)
					if (m->hosts[h].ph->groups[g].sensors[s].n > 1)
						ref = &m->hosts[h].ph->groups[g].sensors[s];
		int hook = align_perun_hook(l.rf.ev, l.rf.nev, &l.clk, m->run, (size_t)o->round,
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
		if (align_perun_prior(m->run, &l.clk, o->tz, base, &a))
			r->prior_offset_s = a.offset_s + r->first_s;
		if (isnan(r->hook_offset_s) && !isnan(r->prior_offset_s) && !o->no_fit)
			fit_ring(m, o, r, &l);
	}
	free_loaded(&l);
}

/* ---- pass 2: per-unit summaries ------------------------------------------ */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static double quantile(const double *v, size_t n, double q)
{
	double pos;
	size_t i;
	if (!n)
		return NAN;
	pos = q * (double)(n - 1);
	i = (size_t)pos;
	if (i + 1 >= n)
		return v[n - 1];
	return v[i] + (v[i + 1] - v[i]) * (pos - (double)i);
}

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

static void attribute_unit(const struct mring *m, const struct mring_opts *o, const struct phase_set *ps,
			   long thr, struct mr_unit *u, const struct ring_clock *clk)
{
	const struct mr_host *h = &m->hosts[u->host_idx];
	const struct phase_thread *th = &ps->thr[thr];
	struct attrib_interval *iv = xcalloc(th->nseg, sizeof *iv);
	size_t np = ps->nnames;

	/* Sensor time = timeline - the host's offset (same for its sensors). */
	for (size_t i = 0; i < th->nseg; i++) {
		iv[i].t0_s = tl_s(m, clk, th->seg[i].t0_ns) - h->offset_s;
		iv[i].t1_s = tl_s(m, clk, th->seg[i].t1_ns) - h->offset_s;
		iv[i].phase = th->seg[i].phase;
	}
	for (size_t s = 0; s < h->nsen; s++) {
		const struct em_sensor *es = &h->sen[s];
		size_t g = group_index(m, es->group);
		struct attrib_result r;
		int rc;
		memset(&r, 0, sizeof r);
		/* The same methods, and default, as single-ring `phases`. */
		if (o->method == ATTRIB_CHOICE_INTEGRATE)
			rc = attrib_integrate(&es->ser, iv, th->nseg, np, &r);
		else if (o->method == ATTRIB_CHOICE_REGRESS)
			rc = attrib_regress(&es->ser, iv, th->nseg, np, &o->ao, &r);
		else if (o->method == ATTRIB_CHOICE_SPLIT || o->method == ATTRIB_CHOICE_AUTO)
			rc = attrib_split(&es->ser, iv, th->nseg, np, &o->ao, &r);
		else
			rc = attrib_auto(&es->ser, iv, th->nseg, np, &o->ao, &r);
		if (rc == -ENODATA)
			continue; /* this rank ran outside perun's span on its host */
		if (rc)
			worker_fatal(m->pf.app, "attribution failed on host %s sensor %s (%s)", h->ph->name, es->ps->id,
				   strerror(-rc));
		u->total_j[g] += r.total_j;
		u->unattr_j[g] += r.row[np].energy_j;
		for (size_t k = 0; k < u->nph; k++) {
			int idx = phase_set_find(ps, u->ph[k].name);
			const struct attrib_row *ar = &r.row[idx];
			struct mr_phase *p = &u->ph[k];
			if (isnan(p->energy_j[g]))
				p->energy_j[g] = p->lo_j[g] = p->hi_j[g] = 0;
			p->energy_j[g] += ar->energy_j;
			p->lo_j[g] += ar->ci_low_j;
			p->hi_j[g] += ar->ci_high_j;
			if (!p->method)
				p->method = (int)ar->method;
		}
		attrib_result_free(&r);
	}
	free(iv);
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
	double *w = xcalloc(ps->nnames, sizeof *w);
	for (size_t k = 0; k < ps->nnames; k++) {
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

static void unit_steps(const struct mring *m, const struct phase_set *ps, const struct ring_clock *clk,
		       const struct phase_thread *th, int step_idx, const char *is_coll, struct mr_unit *u)
{
	const struct mr_host *h = u->host_idx >= 0 ? &m->hosts[u->host_idx] : NULL;
	double *pw = phase_power_w(ps, u, m->ngroups ? m->ngroups : 1);
	size_t n = 0, cap = 0, c0 = 0;
	double (*iv)[2] = NULL;
	size_t ivcap = 0;
	/* Collective occurrences of this pid, by start (occ is sorted by
	 * (pid, tid, t0); the primary thread's are what count: a rank waits
	 * where its training loop runs). */
	size_t *coll = NULL, ncoll = 0;
	for (size_t i = 0; i < ps->nocc; i++) {
		const struct phase_occ *oc = &ps->occ[i];
		if (oc->pid != th->pid || oc->tid != th->tid || !is_coll[oc->phase])
			continue;
		if (!(ncoll & (ncoll + 1)) || !coll) {
			size_t *nc = realloc(coll, (ncoll * 2 + 2) * sizeof *nc);
			if (!nc)
				worker_fatal(NULL, "out of memory");
			coll = nc;
		}
		coll[ncoll++] = i;
		u->coll_s += (double)(oc->t1_ns - oc->t0_ns) / 1e9;
	}
	for (size_t i = 0; step_idx >= 0 && i < ps->nocc; i++) {
		const struct phase_occ *oc = &ps->occ[i];
		size_t k = 0;
		if (oc->pid != th->pid || oc->tid != th->tid || oc->phase != step_idx)
			continue;
		if (n == cap) {
			cap = cap ? cap * 2 : 256;
			struct mr_step *ns = realloc(u->steps, cap * sizeof *ns);
			if (!ns)
				worker_fatal(NULL, "out of memory");
			u->steps = ns;
		}
		struct mr_step *s = &u->steps[n++];
		s->wait_j = 0;
		s->t0_s = tl_s(m, clk, oc->t0_ns);
		s->t1_s = tl_s(m, clk, oc->t1_ns);
		/* Steps come in time order; skip collectives that ended before. */
		while (c0 < ncoll && ps->occ[coll[c0]].t1_ns <= oc->t0_ns)
			c0++;
		for (size_t j = c0; j < ncoll && ps->occ[coll[j]].t0_ns < oc->t1_ns; j++) {
			const struct phase_occ *c = &ps->occ[coll[j]];
			uint64_t a = c->t0_ns > oc->t0_ns ? c->t0_ns : oc->t0_ns;
			uint64_t b = c->t1_ns < oc->t1_ns ? c->t1_ns : oc->t1_ns;
			if (b <= a)
				continue;
			if (k == ivcap) {
				ivcap = ivcap ? ivcap * 2 : 16;
				double(*ni)[2] = realloc(iv, ivcap * sizeof *ni);
				if (!ni)
					worker_fatal(NULL, "out of memory");
				iv = ni;
			}
			iv[k][0] = tl_s(m, clk, a);
			iv[k][1] = tl_s(m, clk, b);
			if (h)
				s->wait_j += !isnan(pw[c->phase]) ? pw[c->phase] * (iv[k][1] - iv[k][0])
								  : host_slice_j(h, iv[k][0], iv[k][1]);
			k++;
		}
		s->wait_s = union_len(iv, k);
		if (!h)
			s->wait_j = NAN;
	}
	u->nsteps = n;
	free(pw);
	free(iv);
	free(coll);
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

static void pass2(struct mring *m, const struct mring_opts *o, size_t ri)
{
	struct mr_ring *r = &m->rings[ri];
	struct loaded l;
	struct phase_set ps;
	char *is_coll;
	int step_idx = -1;
	size_t ng = m->ngroups ? m->ngroups : 1;

	load_ring(r->path, &l);
	if (phase_set_build(l.rf.ev, l.rf.nev, &l.procs, &ps))
		worker_fatal(r->path, "out of memory");
	is_coll = xcalloc(ps.nnames, 1);
	for (size_t k = 0; k < ps.nnames; k++)
		is_coll[k] = (char)mring_is_collective(ps.names[k]);
	if (m->step[0])
		step_idx = phase_set_find(&ps, m->step);

	/* Units: ranked processes, else every process with phases. */
	int any_rank = 0;
	for (size_t p = 0; p < l.procs.n; p++)
		any_rank |= l.procs.p[p].rank >= 0 && phase_set_primary_of(&ps, l.procs.p[p].pid) >= 0;
	r->units = xcalloc(l.procs.n, sizeof *r->units);
	for (size_t p = 0; p < l.procs.n; p++) {
		const struct ring_proc *pr = &l.procs.p[p];
		long thr = phase_set_primary_of(&ps, pr->pid);
		int dup = 0;
		for (size_t q = 0; q < r->nunits; q++)
			dup |= r->units[q].pid == pr->pid;
		if (thr < 0 || dup || (any_rank && (pr->rank < 0 || pr->forked)))
			continue;
		struct mr_unit *u = &r->units[r->nunits++];
		const struct phase_thread *th = &ps.thr[thr];
		u->ring = ri;
		u->pid = pr->pid;
		u->rank = pr->rank;
		snprintf(u->host, sizeof u->host, "%s", pr->host[0] ? pr->host : r->host);
		u->host_idx = m->have_perun ? host_of(m, u->host) : -1;
		if (u->host_idx >= 0 && !m->hosts[u->host_idx].nsen)
			u->host_idx = -1;
		u->first_s = tl_s(m, &l.clk, pr->start_ns ? pr->start_ns : l.rf.ev[0].ts_ns);
		u->last_s = tl_s(m, &l.clk, pr->exit_ns ? pr->exit_ns : l.rf.ev[l.rf.nev - 1].ts_ns);
		unit_status(pr, u);
		u->unattr_j = xcalloc(ng, sizeof(double));
		u->total_j = xcalloc(ng, sizeof(double));

		/* Phase rows of this process (every thread), self time on its
		 * primary thread. */
		u->ph = xcalloc(ps.nnames, sizeof *u->ph);
		double *d = xcalloc(ps.nocc, sizeof *d);
		for (size_t k = 0; k < ps.nnames; k++) {
			size_t n = 0;
			double tot = 0, self = 0;
			for (size_t i = 0; i < ps.nocc; i++)
				if (ps.occ[i].phase == (int)k && ps.occ[i].pid == pr->pid) {
					d[n] = (double)(ps.occ[i].t1_ns - ps.occ[i].t0_ns) / 1e9;
					tot += d[n++];
				}
			if (!n)
				continue;
			for (size_t s = 0; s < th->nseg; s++)
				if (th->seg[s].phase == (int)k)
					self += (double)(th->seg[s].t1_ns - th->seg[s].t0_ns) / 1e9;
			qsort(d, n, sizeof *d, cmp_double);
			struct mr_phase *ph = &u->ph[u->nph++];
			ph->name = xstrdup(ps.names[k]);
			ph->count = n;
			ph->total_s = tot;
			ph->self_s = self;
			ph->mean_ms = tot / (double)n * 1e3;
			ph->p50_ms = quantile(d, n, 0.5) * 1e3;
			ph->p95_ms = quantile(d, n, 0.95) * 1e3;
			ph->energy_j = xcalloc(ng, sizeof(double));
			ph->lo_j = xcalloc(ng, sizeof(double));
			ph->hi_j = xcalloc(ng, sizeof(double));
			for (size_t g = 0; g < ng; g++)
				ph->energy_j[g] = ph->lo_j[g] = ph->hi_j[g] = NAN;
		}
		free(d);
		if (u->host_idx >= 0)
			attribute_unit(m, o, &ps, thr, u, &l.clk);
		unit_steps(m, &ps, &l.clk, th, step_idx, is_coll, u);
	}
	free(is_coll);
	phase_set_free(&ps);
	free_loaded(&l);
}

/* ---- perun hosts ----------------------------------------------------------- */

static void load_hosts(struct mring *m, const struct mring_opts *o)
{
	const struct perun_round *round;
	char err[512];
	/* Guarded as every perun read: libhdf5 crashes and loops on some
	 * corrupt files (perun_guard.c). */
	if (perun_load_guarded(o->perun, &m->pf, err, sizeof err))
		diag_fatal(o->perun, "%s", err);
	if (!m->pf.nruns)
		diag_fatal(o->perun, "no perun run in the file");
	m->run = o->run ? perun_find_run(&m->pf, o->run) : &m->pf.runs[m->pf.nruns - 1];
	if (!m->run)
		diag_fatal(o->perun, "no multirun '%s' in the file", o->run);
	if (o->round < 0 || (size_t)o->round >= m->run->nrounds)
		diag_fatal(o->perun, "multirun %s has %zu round(s), no round %ld", m->run->id, m->run->nrounds,
			   o->round);
	round = &m->run->rounds[o->round];
	m->hosts = xcalloc(round->nhosts, sizeof *m->hosts);
	m->nhosts = round->nhosts;
	for (size_t h = 0; h < round->nhosts; h++) {
		struct mr_host *mh = &m->hosts[h];
		mh->ph = &round->hosts[h];
		mh->offset_s = NAN;
		if (energy_model_add_sensors(mh->ph, &mh->sen, &mh->nsen, &m->groups, &m->ngroups))
			diag_fatal(NULL, "out of memory");
	}
	{
		char *dup = xstrdup(o->perun), buf[4096];
		snprintf(buf, sizeof buf, "%s/EMULATED_SENSOR.txt", dirname(dup));
		m->emulated = access(buf, F_OK) == 0;
		free(dup);
	}
}

/* Each host's offset: its own rings' perun.sample anchors, else
 * execution_dt through any ring's clock (the same UTC instant). */
static void align_hosts(struct mring *m, const char *perun)
{
	double any_prior = NAN;
	for (size_t i = 0; i < m->nrings && isnan(any_prior); i++)
		any_prior = m->rings[i].prior_offset_s;
	for (size_t h = 0; h < m->nhosts; h++) {
		struct mr_host *mh = &m->hosts[h];
		for (size_t i = 0; i < m->nrings && isnan(mh->offset_s); i++) {
			const struct mr_ring *r = &m->rings[i];
			if (!isnan(r->hook_offset_s) && host_of(m, r->host) == (long)h) {
				mh->offset_s = r->hook_offset_s;
				mh->uncert_ms = 0.001;
				snprintf(mh->method, sizeof mh->method, "perun-hook");
			}
		}
		/* Else the fit on the host's lowest-rank ring. */
		long best = -1;
		for (size_t i = 0; i < m->nrings && isnan(mh->offset_s); i++) {
			const struct mr_ring *r = &m->rings[i];
			if (isnan(r->fit_offset_s) || host_of(m, r->host) != (long)h)
				continue;
			if (best < 0 || (unsigned)r->min_rank < (unsigned)m->rings[best].min_rank)
				best = (long)i;
		}
		if (isnan(mh->offset_s) && best >= 0) {
			mh->offset_s = m->rings[best].fit_offset_s;
			mh->uncert_ms = m->rings[best].fit_uncert_ms;
			snprintf(mh->method, sizeof mh->method, "execution_dt+fit");
		}
		if (isnan(mh->offset_s)) {
			if (isnan(any_prior))
				diag_fatal(perun, "cannot align host %s: no perun.sample anchors in its rings and "
						  "execution_dt '%s' is unusable",
					   mh->ph->name, m->run->execution_dt ? m->run->execution_dt : "");
			mh->offset_s = any_prior;
			mh->uncert_ms = 2000;
			snprintf(mh->method, sizeof mh->method, "execution_dt");
		}
		for (size_t s = 0; s < mh->nsen; s++)
			for (size_t k = 0; k < mh->sen[s].ser.n; k++)
				mh->sen[s].t_tl[k] = mh->sen[s].ps->timesteps_s[k] + mh->offset_s;
	}
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
static void pick_step(struct mring *m, const struct mring_opts *o)
{
	if (o->step) {
		snprintf(m->step, sizeof m->step, "%s", o->step);
		return;
	}
	for (size_t i = 0; i < m->nrings && !m->step[0]; i++) {
		struct ring_file rf;
		char err[512];
		if (ring_reader_load(m->rings[i].path, &rf, err, sizeof err))
			diag_fatal(m->rings[i].path, "%s", err);
		for (int k = 0; default_steps[k] && !m->step[0]; k++)
			for (size_t e = 0; e < rf.nev; e++)
				if ((rf.ev[e].kind == ANCHOR_KIND_BEGIN || rf.ev[e].kind == ANCHOR_KIND_MARK) &&
				    !strcmp(rf.ev[e].text, default_steps[k])) {
					snprintf(m->step, sizeof m->step, "%s", default_steps[k]);
					break;
				}
		ring_reader_free(&rf);
	}
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

void mring_open(struct mring *m, const struct mring_opts *o)
{
	memset(m, 0, sizeof *m);
	/* Every ring is loaded twice into arrays of tens of MB: served by mmap
	 * (glibc's default above 32 MB at most) each load faults its pages in
	 * afresh, a tenth of the run (perf).  Keep freed blocks in the heap
	 * for the next ring instead; peak memory is unchanged. */
	mallopt(M_MMAP_THRESHOLD, 256 << 20);
	mallopt(M_TRIM_THRESHOLD, 512 << 20);
	for (size_t i = 0; i < o->ninputs; i++)
		expand_input(m, o->inputs[i]);
	if (!m->nrings)
		diag_fatal(NULL, "no ring given");
	if (m->nrings > 65535)
		diag_fatal(NULL, "%zu rings: at most 65535", m->nrings);
	m->t0_unix_ns = read_origin(m);
	if (o->perun) {
		m->have_perun = 1;
		load_hosts(m, o);
	}
	stage(NULL);
	run_pool(m, o, pass1);
	stage("pass 1 (clocks, perun offsets)");
	if (m->have_perun)
		align_hosts(m, o->perun);
	pick_step(m, o);
	stage("align hosts, pick step");
	run_pool(m, o, pass2);
	stage("pass 2 (phases, attribution, steps)");
	for (size_t i = 0; i < m->nrings; i++)
		m->nunits += m->rings[i].nunits;
	m->units = xcalloc(m->nunits, sizeof *m->units);
	m->nunits = 0;
	for (size_t i = 0; i < m->nrings; i++)
		for (size_t k = 0; k < m->rings[i].nunits; k++)
			m->units[m->nunits++] = &m->rings[i].units[k];
	qsort(m->units, m->nunits, sizeof *m->units, cmp_unit);
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
			}
			free(u->ph);
			free(u->steps);
			free(u->unattr_j);
			free(u->total_j);
		}
		free(r->units);
		free(r->path);
	}
	free(m->rings);
	free(m->units);
	for (size_t h = 0; h < m->nhosts; h++) {
		for (size_t s = 0; s < m->hosts[h].nsen; s++) {
			free(m->hosts[h].sen[s].cum_j);
			free(m->hosts[h].sen[s].t_tl);
		}
		free(m->hosts[h].sen);
	}
	free(m->hosts);
	free(m->groups);
	if (m->have_perun)
		perun_free(&m->pf);
	memset(m, 0, sizeof *m);
}
