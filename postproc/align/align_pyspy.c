/* align_pyspy.c - py-spy samples on the ring's timeline (see align_pyspy.h). */
#include "align/align_pyspy.h"
#include "align/align_torch.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "align/pyspy_sites.h"
#include "util/tunables.h"

#define PULSE_RANGE PYSPY_PULSE_RANGE
#define PULSE_FRAME PYSPY_PULSE_FRAME
/* Tunables (tunables.h) under their short local names. */
#define LIFETIME_SLACK_S ALIGN_PYSPY_LIFETIME_SLACK_S
#define STAMP_LAG_S ALIGN_PYSPY_STAMP_LAG_S
#define COARSE_STEP_S ALIGN_PYSPY_COARSE_STEP_S
#define MAX_DRIFT ALIGN_PYSPY_MAX_DRIFT
#define PULSE_GAP_X_S ALIGN_PYSPY_PULSE_GAP_X_S
#define MAX_SCALE_DEV ALIGN_PYSPY_MAX_SCALE_DEV
#define FINE_STEP_S ALIGN_PYSPY_FINE_STEP_S

struct burst {
	double t0, t1;
};

/* A constraint: at timeline x*scale + o the thread was (busy) or was not
 * (!busy) inside a pulse burst. */
struct pt {
	double x;
	int busy;
	const struct burst *b; /* the bursts it is tested against */
	size_t nb;
	const struct burst *b_all; /* all bursts of the point's ring thread */
	size_t nb_all;
};

/* Groups of bursts: bursts more than ALIGN_PYSPY_PULSE_GROUP_GAP_S apart
 * are separate pulses.
 * Start index of group g in b[0..nb), or nb past the last. */
static size_t group_start(const struct burst *b, size_t nb, size_t g)
{
	size_t i = 0;
	for (size_t k = 0; k < g && i < nb; k++) {
		i++;
		while (i < nb && b[i].t0 - b[i - 1].t1 <= ALIGN_PYSPY_PULSE_GROUP_GAP_S)
			i++;
	}
	return i;
}

static size_t group_count(const struct burst *b, size_t nb)
{
	size_t g = nb ? 1 : 0;
	for (size_t i = 1; i < nb; i++)
		g += b[i].t0 - b[i - 1].t1 > ALIGN_PYSPY_PULSE_GROUP_GAP_S;
	return g;
}

/* Mean burst midpoint of group g. */
static double group_mid(const struct burst *b, size_t nb, size_t g)
{
	size_t i0 = group_start(b, nb, g), i1 = group_start(b, nb, g + 1);
	double m = 0;
	for (size_t i = i0; i < i1; i++)
		m += (b[i].t0 + b[i].t1) / 2;
	return i1 > i0 ? m / (double)(i1 - i0) : NAN;
}

/* Test points only against group g of their bursts. */
static void pin_to_group(struct pt *pts, size_t n, size_t g)
{
	for (size_t i = 0; i < n; i++) {
		size_t lo = group_start(pts[i].b_all, pts[i].nb_all, g);
		size_t hi = group_start(pts[i].b_all, pts[i].nb_all, g + 1);
		pts[i].b = pts[i].b_all + lo;
		pts[i].nb = hi - lo;
	}
}

struct fit {
	double offset_s, half_s, cost_s;
	double max_s; /* largest single miss at the offset */
	double rms_s; /* RMS of the misses over all points */
	int ok;
};

static void seterr(char *err, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void seterr(char *err, size_t cap, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, cap, fmt, ap);
	va_end(ap);
}

static double tl(uint64_t base_ns, uint64_t ts_ns)
{
	return ((double)ts_ns - (double)base_ns) / 1e9;
}

/* ---- thread map ---------------------------------------------------- */

struct ring_thr {
	uint32_t pid, tid;
	double start_s, end_s; /* timeline: first record, process end */
};

static double proc_end_s(const struct ringload *rl, uint64_t base_ns, uint32_t pid)
{
	const struct ring_proc *pr = ring_procs_find(&rl->procs, pid);
	if (pr && pr->exit_ns)
		return tl(base_ns, pr->exit_ns);
	return INFINITY;
}

static int map_threads(const struct ringload *rl, uint64_t base_ns, const struct pyspy_profile *p,
		       struct align_pyspy *a, struct ring_thr *rt)
{
	const struct ring_event *ev = rl->rf.ev;
	size_t n = rl->rf.nev;
	for (uint32_t k = 0; k < p->nthreads; k++) {
		const struct pyspy_thread *t = &p->threads[k];
		uint32_t pid = 0, tid = 0;
		a->thr[k].ring_end_s = INFINITY;
		a->thr[k].ring_start_s = -INFINITY;
		uint64_t start = 0;
		uint64_t last = 0;
		int chrome = p->meta.format == PYSPY_FMT_CHROMETRACE;
		unsigned long long ostid = 0;
		if (!chrome) {
			char *end;
			ostid = strtoull(t->tid, &end, 10);
			if (end == t->tid || *end)
				continue;
		}
		for (size_t i = 0; i < n; i++) {
			const struct ring_event *e = &ev[i];
			int match;
			if (chrome)
				match = e->kind == ANCHOR_KIND_THREAD && (int64_t)e->pid == t->pid &&
					e->value == t->pthread_id;
			else
				match = e->tid == ostid && (t->pid < 0 || (int64_t)e->pid == t->pid);
			if (!match)
				continue;
			if (!pid) {
				pid = e->pid;
				tid = e->tid;
				start = e->ts_ns;
			}
			if (e->pid == pid && e->tid == tid)
				last = e->ts_ns;
		}
		if (!pid) {
			/* A thread that never wrote a record has no THREAD record,
			 * but its process's end still bounds its samples (py-spy
			 * keeps a dead process's last stack open to the end). */
			if (chrome && t->pid > 0 && ring_procs_find(&rl->procs, (uint32_t)t->pid)) {
				a->thr[k].ring_pid = (uint32_t)t->pid;
				a->thr[k].ring_end_s = proc_end_s(rl, base_ns, (uint32_t)t->pid);
			}
			continue;
		}
		/* A thread that existed before its process's PROC_START/FORK (the
		 * main thread) starts with the process. */
		const struct ring_proc *pr = ring_procs_find(&rl->procs, pid);
		if (pr && pr->start_ns && pr->start_ns < start)
			start = pr->start_ns;
		a->thr[k].ring_pid = pid;
		a->thr[k].ring_tid = tid;
		rt[k].pid = pid;
		rt[k].tid = tid;
		rt[k].start_s = tl(base_ns, start);
		/* With no exit in the ring (killed by a signal libanchor does not
		 * catch, e.g. a second Ctrl-C during perun's saving) the process
		 * may have lived on long after its last record: no bound. */
		rt[k].end_s = proc_end_s(rl, base_ns, pid);
		(void)last;
		a->thr[k].ring_end_s = proc_end_s(rl, base_ns, pid);
		/* the process's start, not the thread's first record: a
		 * thread runs before it first writes */
		if (pr && pr->start_ns)
			a->thr[k].ring_start_s = tl(base_ns, pr->start_ns);
		a->nmapped++;
	}
	return 0;
}

/* ---- samples per thread -------------------------------------------- */

struct thr_rows {
	size_t *idx; /* sample indices, by time */
	size_t n;
};

static int cmp_idx_time(const void *x, const void *y, void *ctx)
{
	const struct pyspy_profile *p = ctx;
	double a = p->samples[*(const size_t *)x].t_rel_s, b = p->samples[*(const size_t *)y].t_rel_s;
	return a < b ? -1 : a > b;
}

static int rows_by_thread(const struct pyspy_profile *p, struct thr_rows *tr)
{
	size_t *cnt = calloc(p->nthreads ? p->nthreads : 1, sizeof *cnt);
	if (!cnt)
		return -ENOMEM;
	for (size_t i = 0; i < p->nsamples; i++)
		cnt[p->samples[i].thread]++;
	for (uint32_t k = 0; k < p->nthreads; k++) {
		tr[k].idx = malloc((cnt[k] ? cnt[k] : 1) * sizeof *tr[k].idx);
		if (!tr[k].idx) {
			free(cnt);
			return -ENOMEM;
		}
		tr[k].n = 0;
	}
	free(cnt);
	for (size_t i = 0; i < p->nsamples; i++) {
		struct thr_rows *r = &tr[p->samples[i].thread];
		r->idx[r->n++] = i;
	}
	/* Readers deliver each thread's rows in time order already; sorting
	 * makes that an assumption nobody has to trust. */
	for (uint32_t k = 0; k < p->nthreads; k++)
		qsort_r(tr[k].idx, tr[k].n, sizeof *tr[k].idx, cmp_idx_time, (void *)p);
	return 0;
}

/* ---- the pulse fit ------------------------------------------------- */

static double pt_cost(const struct pt *q, double y)
{
	const struct burst *b = q->b;
	size_t lo = 0, hi = q->nb;
	/* last burst with t0 <= y */
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (b[mid].t0 <= y)
			lo = mid + 1;
		else
			hi = mid;
	}
	int inside = lo > 0 && y <= b[lo - 1].t1;
	if (q->busy) {
		double d = INFINITY;
		if (inside)
			return 0;
		if (lo > 0)
			d = y - b[lo - 1].t1;
		if (lo < q->nb && b[lo].t0 - y < d)
			d = b[lo].t0 - y;
		/* Cap: one far-off point must not outweigh the rest. */
		return d < 1.0 ? d : 1.0;
	}
	if (!inside)
		return 0;
	{
		double a = y - b[lo - 1].t0, c = b[lo - 1].t1 - y;
		return a < c ? a : c;
	}
}

static double total_cost(const struct pt *pts, size_t n, double scale, double o)
{
	double c = 0;
	for (size_t i = 0; i < n; i++)
		c += pt_cost(&pts[i], pts[i].x * scale + o);
	return c;
}

/* Best offset in [lo, hi]: coarse scan, then the plateau of minimal cost
 * around the best coarse point at fine resolution. */
static struct fit fit_offset(const struct pt *pts, size_t n, double scale, double lo, double hi, double near)
{
	struct fit f = {.ok = 0};
	double best = INFINITY, bo = lo;
	if (!n || !(hi >= lo))
		return f;
	size_t steps = (size_t)((hi - lo) / COARSE_STEP_S) + 1;
	for (size_t s = 0; s <= steps; s++) {
		double o = lo + (double)s * COARSE_STEP_S;
		double c = total_cost(pts, n, scale, o);
		/* Ties (several zero-cost offsets far apart) go to the one
		 * nearest the prediction. */
		if (c < best - 1e-12 || (fabs(c - best) <= 1e-12 && fabs(o - near) < fabs(bo - near))) {
			best = c;
			bo = o;
		}
	}
	/* Fine scan of +-3 coarse steps. */
	{
		size_t m = (size_t)(6 * COARSE_STEP_S / FINE_STEP_S) + 1;
		double *c = malloc(m * sizeof *c);
		double f0 = bo - 3 * COARSE_STEP_S, cmin = INFINITY;
		size_t imin = 0;
		if (!c)
			return f;
		for (size_t i = 0; i < m; i++) {
			c[i] = total_cost(pts, n, scale, f0 + (double)i * FINE_STEP_S);
			if (c[i] < cmin) {
				cmin = c[i];
				imin = i;
			}
		}
		size_t a = imin, b = imin;
		double tol = cmin + 1e-9;
		while (a > 0 && c[a - 1] <= tol)
			a--;
		while (b + 1 < m && c[b + 1] <= tol)
			b++;
		f.offset_s = f0 + (double)(a + b) / 2 * FINE_STEP_S;
		f.half_s = (double)(b - a) / 2 * FINE_STEP_S + FINE_STEP_S / 2;
		f.cost_s = cmin;
		f.max_s = 0;
		f.rms_s = 0;
		for (size_t i = 0; i < n; i++) {
			double d = pt_cost(&pts[i], pts[i].x * scale + f.offset_s);
			if (d > f.max_s)
				f.max_s = d;
			f.rms_s += d * d;
		}
		f.rms_s = sqrt(f.rms_s / (double)n);
		f.ok = 1;
		free(c);
	}
	return f;
}

static int node_busy_flags(const struct pyspy_profile *p, uint8_t **out)
{
	uint8_t *busy = calloc(p->stacks.n ? p->stacks.n : 1, 1);
	if (!busy)
		return -ENOMEM;
	/* A child node is always created after its parent. */
	for (uint32_t i = 1; i < p->stacks.n; i++) {
		const struct pyspy_node *nd = &p->stacks.v[i];
		busy[i] = (nd->parent != UINT32_MAX && busy[nd->parent]) ||
			  !strcmp(p->frames.v[nd->frame].name, PULSE_FRAME);
	}
	*out = busy;
	return 0;
}

/* Constraint points of thread k against its ring thread's bursts. */
static int add_points(const struct pyspy_profile *p, const struct thr_rows *r, const uint8_t *busy,
		      const struct burst *b, size_t nb, struct pt **pts, size_t *npts, size_t *cap,
		      size_t *nbusy)
{
	int chrome = p->meta.format == PYSPY_FMT_CHROMETRACE;
	for (size_t j = 0; j < r->n; j++) {
		const struct pyspy_sample *s = &p->samples[r->idx[j]];
		int is_busy = busy[s->stack];
		int near = is_busy;
		const struct pyspy_sample *nx = j + 1 < r->n ? &p->samples[r->idx[j + 1]] : NULL;
		if (!is_busy) {
			/* A non-busy sample next to a busy one bounds the burst. */
			near = (j > 0 && busy[p->samples[r->idx[j - 1]].stack]) || (nx && busy[nx->stack]);
		}
		if (!near)
			continue;
		if (*npts + 2 > *cap) {
			size_t nc = *cap ? *cap * 2 : 256;
			struct pt *np = realloc(*pts, nc * sizeof *np);
			if (!np)
				return -ENOMEM;
			*pts = np;
			*cap = nc;
		}
		(*pts)[(*npts)++] = (struct pt){.x = s->t_rel_s, .busy = is_busy, .b = b, .nb = nb, .b_all = b, .nb_all = nb};
		*nbusy += (size_t)is_busy;
		/* chrometrace: the end of a busy interval is a sample that was
		 * no longer busy (unless the next interval is busy again). */
		if (chrome && is_busy && !(nx && busy[nx->stack] && nx->t_rel_s <= s->t_rel_s + s->duration_s))
			(*pts)[(*npts)++] = (struct pt){.x = s->t_rel_s + s->duration_s, .busy = 0, .b = b, .nb = nb,
							.b_all = b, .nb_all = nb};
	}
	return 0;
}

static int cmp_pt(const void *x, const void *y)
{
	double a = ((const struct pt *)x)->x, b = ((const struct pt *)y)->x;
	return a < b ? -1 : a > b;
}

/* ---- phase-frames fit (no pulse sampled) --------------------------- */

/* Phase of timeline time y on a thread's exclusive timeline, -1 none. */
static int phase_at(const struct phase_thread *th, uint64_t base_ns, double y)
{
	double yn = y * 1e9 + (double)base_ns;
	return yn < 0 ? -1 : phase_set_phase_at(th, (uint64_t)yn);
}

/* Room in *fr for a stack d frames deep.  -ENOMEM. */
static int frames_room(uint32_t **fr, uint32_t *cap, uint32_t d)
{
	if (d > *cap) {
		uint32_t *nfr = realloc(*fr, d * sizeof *nfr);
		if (!nfr)
			return -ENOMEM;
		*fr = nfr;
		*cap = d;
	}
	return 0;
}

/* phase_frames_fit's inputs and working tables, shared by its stages. */
struct pf_work {
	const struct pyspy_profile *p;
	const struct thr_rows *r;
	const struct phase_thread *th;
	uint64_t base_ns;
	double scale;
	size_t nf, n, nphase, np; /* np: phases with a signature (at most 64) */
	uint32_t *fr, cap;	  /* one stack's frames */
	double *in, *out;	  /* [q * nf + f]: samples holding f inside / outside phase q */
	int *sig;		  /* per phase: its typical frame, -1 for none */
	uint8_t *has;		  /* [j * nphase + q]: row j's stack holds sig[q] */
};

/* Tallies, at offset o, how often each frame is on a stack inside and
 * outside each phase; cnt_in[q]: samples inside q, *tot: all.  -ENOMEM. */
static int pf_count(struct pf_work *w, double o, size_t *cnt_in, size_t *tot)
{
	const struct pyspy_profile *p = w->p;
	size_t nf = w->nf, np = w->np;

	memset(w->in, 0, nf * w->nphase * sizeof *w->in);
	memset(w->out, 0, nf * w->nphase * sizeof *w->out);
	for (size_t j = 0; j < w->n; j++) {
		const struct pyspy_sample *s = &p->samples[w->r->idx[j]];
		int ph = phase_at(w->th, w->base_ns, s->t_rel_s * w->scale + o);
		uint32_t d = p->stacks.v[s->stack].depth;
		if (frames_room(&w->fr, &w->cap, d))
			return -ENOMEM;
		pyspy_stack_frames(&p->stacks, s->stack, w->fr, w->cap);
		(*tot)++;
		if (ph >= 0 && (size_t)ph < np)
			cnt_in[ph]++;
		for (size_t q = 0; q < np; q++)
			for (uint32_t k = 0; k < d; k++) {
				if (ph == (int)q)
					w->in[q * nf + w->fr[k]] += 1;
				else
					w->out[q * nf + w->fr[k]] += 1;
			}
	}
	return 0;
}

/* Per phase, the frame with the best recall x precision (as in
 * sig_masks); none for a phase with no samples or all of them. */
static void pf_signatures(struct pf_work *w, const size_t *cnt_in, size_t tot)
{
	size_t nf = w->nf;

	for (size_t q = 0; q < w->np; q++) {
		double bestv = 0;
		w->sig[q] = -1;
		if (!cnt_in[q] || cnt_in[q] == tot)
			continue;
		for (size_t f = 0; f < nf; f++) {
			/* recall x precision, as in sig_masks */
			double both = w->in[q * nf + f] + w->out[q * nf + f];
			double v = both > 0 ? w->in[q * nf + f] / (double)cnt_in[q] * (w->in[q * nf + f] / both) : 0;
			if (v > bestv) {
				bestv = v;
				w->sig[q] = (int)f;
			}
		}
	}
}

/* has[]: which rows' stacks hold each phase's signature frame. */
static void pf_mark_rows(struct pf_work *w)
{
	const struct pyspy_profile *p = w->p;

	for (size_t j = 0; j < w->n; j++) {
		const struct pyspy_sample *s = &p->samples[w->r->idx[j]];
		uint32_t d = p->stacks.v[s->stack].depth;
		pyspy_stack_frames(&p->stacks, s->stack, w->fr, w->cap);
		for (size_t q = 0; q < w->np; q++) {
			w->has[j * w->nphase + q] = 0;
			for (uint32_t k = 0; k < d && w->sig[q] >= 0; k++)
				if (w->fr[k] == (uint32_t)w->sig[q])
					w->has[j * w->nphase + q] = 1;
		}
	}
}

/* Scans offsets lo..hi by step for the share of in-phase rows holding
 * their phase's frame; the best offset is the middle of the first plateau
 * of equal best scores.  *b_lo..*b_hi: that plateau. */
static double pf_scan(const struct pf_work *w, double o, double lo, double hi, double step, double *bs_out,
		      double *b_lo_out, double *b_hi_out)
{
	double bs = -1, bo = o, b_lo = o, b_hi = o;

	for (double c = lo; c <= hi + 1e-12; c += step) {
		size_t agree = 0, inph = 0;
		for (size_t j = 0; j < w->n; j++) {
			const struct pyspy_sample *s = &w->p->samples[w->r->idx[j]];
			int ph = phase_at(w->th, w->base_ns, s->t_rel_s * w->scale + c);
			if (ph < 0 || (size_t)ph >= w->np)
				continue;
			inph++;
			agree += w->has[j * w->nphase + (size_t)ph];
		}
		double sc = inph ? (double)agree / (double)inph : 0;
		if (sc > bs + 1e-12) {
			bs = sc;
			bo = b_lo = b_hi = c;
		} else if (sc >= bs - 1e-12 && c - b_hi <= step * 1.5) {
			b_hi = c;
			bo = (b_lo + b_hi) / 2;
		}
	}
	*bs_out = bs;
	*b_lo_out = b_lo;
	*b_hi_out = b_hi;
	return bo;
}

/* For every phase, the frame whose presence in a stack is most typical of
 * samples inside it (highest share inside minus share outside), given
 * offset o; then the share of in-phase samples holding their phase's
 * frame, scanned over offsets. */
static int phase_frames_fit(const struct pyspy_profile *p, const struct thr_rows *r, const struct phase_thread *th,
			    uint64_t base_ns, size_t nphase, double scale, double lo, double hi, double *best_o,
			    double *best_score, double *half_s)
{
	struct pf_work w = { .p = p, .r = r, .th = th, .base_ns = base_ns, .scale = scale, .nf = p->frames.n,
			     .n = r->n, .nphase = nphase, .np = nphase < 64 ? nphase : 64 };
	int rc = -ENOMEM;
	double o = (lo + hi) / 2, step;

	if (!w.n || !nphase || !w.nf)
		return -ENODATA;
	w.in = calloc(w.nf * nphase, sizeof *w.in);
	w.out = calloc(w.nf * nphase, sizeof *w.out);
	w.sig = malloc(nphase * sizeof *w.sig);
	w.has = calloc(w.n * nphase, 1);
	if (!w.in || !w.out || !w.sig || !w.has)
		goto done;
	/* Two rounds: signatures at the centre, scan; signatures at the
	 * best offset, scan narrower. */
	step = (hi - lo) / 400 > COARSE_STEP_S ? (hi - lo) / 400 : COARSE_STEP_S;
	for (int round = 0; round < 2; round++) {
		size_t cnt_in[64] = {0}, tot = 0;
		double bs, b_lo, b_hi;
		if (pf_count(&w, o, cnt_in, &tot))
			goto done;
		pf_signatures(&w, cnt_in, tot);
		pf_mark_rows(&w);
		o = pf_scan(&w, o, lo, hi, step, &bs, &b_lo, &b_hi);
		*best_score = bs;
		*half_s = (b_hi - b_lo) / 2 + step / 2;
		lo = o - 5 * step;
		hi = o + 5 * step;
		step = step / 10 > FINE_STEP_S * 10 ? step / 10 : FINE_STEP_S * 10;
	}
	*best_o = o;
	rc = 0;
done:
	free(w.fr);
	free(w.in);
	free(w.out);
	free(w.sig);
	free(w.has);
	return rc;
}

/* ---- speedscope warp ----------------------------------------------- */

#define WARP_BAND 24
#define WARP_PASSES 3
#define WARP_NEAR_S 0.5
#define WARP_MAX_CELLS 20000000ULL /* 12 bytes each */

static int cmp_frame_fn(const void *x, const void *y, void *ctx)
{
	const struct pyspy_profile *p = ctx;
	const struct pyspy_frame *a = &p->frames.v[*(const uint32_t *)x], *b = &p->frames.v[*(const uint32_t *)y];
	int c = strcmp(a->name, b->name);
	return c ? c : strcmp(a->file ? a->file : "", b->file ? b->file : "");
}

/* fn[f]: a function id per frame, the same for every line of one
 * (name, file).  0 or -ENOMEM. */
static int function_ids(const struct pyspy_profile *p, uint32_t **fn_out, size_t *nfn)
{
	uint32_t nf = p->frames.n, *ord = malloc((nf ? nf : 1) * sizeof *ord), *fn = malloc((nf ? nf : 1) * sizeof *fn);
	if (!ord || !fn) {
		free(ord);
		free(fn);
		return -ENOMEM;
	}
	for (uint32_t f = 0; f < nf; f++)
		ord[f] = f;
	qsort_r(ord, nf, sizeof *ord, cmp_frame_fn, (void *)p);
	*nfn = 0;
	for (uint32_t i = 0; i < nf; i++) {
		if (i && cmp_frame_fn(&ord[i - 1], &ord[i], (void *)p))
			(*nfn)++;
		fn[ord[i]] = (uint32_t)*nfn;
	}
	if (nf)
		(*nfn)++;
	free(ord);
	*fn_out = fn;
	return 0;
}

/* sig_masks' inputs and working tables, shared by its stages. */
struct sm_work {
	const struct pyspy_profile *p;
	const struct thr_rows *r;
	size_t nf, np;		  /* nf: functions (function_ids) */
	uint32_t *fn;		  /* frame -> function */
	uint32_t *fr, cap;	  /* one stack's frames */
	double *in, *out;	  /* [q * nf + g]: stacks holding g inside / outside phase q */
	size_t cnt[64];		  /* rows inside each phase */
	int sig[64];		  /* per phase: its typical function, -1 for none */
};

/* Tallies, rows timed y (those in use), how many stacks inside and
 * outside each phase hold each function, once per stack.  -ENOMEM. */
static int sm_count(struct sm_work *w, const struct phase_thread *th, uint64_t base_ns, const double *y,
		    const uint8_t *use, uint8_t *mark)
{
	const struct pyspy_profile *p = w->p;
	size_t nf = w->nf, np = w->np;

	for (size_t j = 0; j < w->r->n; j++) {
		const struct pyspy_sample *s = &p->samples[w->r->idx[j]];
		int ph = phase_at(th, base_ns, y[j]);
		uint32_t d = p->stacks.v[s->stack].depth;
		if (use && !use[j])
			continue;
		if (frames_room(&w->fr, &w->cap, d))
			return -ENOMEM;
		pyspy_stack_frames(&p->stacks, s->stack, w->fr, w->cap);
		if (ph >= 0 && (size_t)ph < np)
			w->cnt[ph]++;
		for (uint32_t k = 0; k < d; k++) {
			uint32_t g = w->fn[w->fr[k]];
			if (mark[g])
				continue; /* once per stack */
			mark[g] = 1;
			for (size_t q = 0; q < np; q++) {
				if (ph == (int)q)
					w->in[q * nf + g] += 1;
				else
					w->out[q * nf + g] += 1;
			}
		}
		for (uint32_t k = 0; k < d; k++)
			mark[w->fn[w->fr[k]]] = 0;
	}
	return 0;
}

/* Per phase, the function with the best recall x precision^2 above 0.05;
 * none for a phase with no rows or all of them (tot: rows in use). */
static void sm_signatures(struct sm_work *w, size_t tot)
{
	size_t nf = w->nf;

	for (size_t q = 0; q < w->np; q++) {
		double best = 0.05; /* weaker evidence is no signature */
		w->sig[q] = -1;
		if (!w->cnt[q] || w->cnt[q] == tot)
			continue;
		for (size_t f = 0; f < nf; f++) {
			/* recall x precision^2: a frame on every stack (main,
			 * <module>) has full recall but poor precision, and while
			 * the alignment is still rough the function that runs
			 * the phase has neither at 1 (measured: with recall x
			 * precision, main beat hot_spin for "hot") */
			double both = w->in[q * nf + f] + w->out[q * nf + f];
			double prec = both > 0 ? w->in[q * nf + f] / both : 0;
			double v = w->in[q * nf + f] / (double)w->cnt[q] * prec * prec;
			if (v > best) {
				best = v;
				w->sig[q] = (int)f;
			}
		}
	}
}

/* mask[j]: bit q when row j's stack holds phase q's function (every row,
 * in use or not).  -ENOMEM. */
static int sm_masks(struct sm_work *w, uint64_t *mask)
{
	const struct pyspy_profile *p = w->p;

	for (size_t j = 0; j < w->r->n; j++) {
		const struct pyspy_sample *s = &p->samples[w->r->idx[j]];
		uint32_t d = p->stacks.v[s->stack].depth;
		if (frames_room(&w->fr, &w->cap, d))
			return -ENOMEM;
		pyspy_stack_frames(&p->stacks, s->stack, w->fr, w->cap);
		mask[j] = 0;
		for (size_t q = 0; q < w->np; q++)
			for (uint32_t k = 0; k < d && w->sig[q] >= 0; k++)
				if (w->fn[w->fr[k]] == (uint32_t)w->sig[q])
					mask[j] |= 1ULL << q;
	}
	return 0;
}

/* Per row: bit q set when the stack holds phase q's typical function,
 * the one whose presence is most over-represented inside q (rows timed
 * y).  Functions, not frames: a frame is one line, and the line of main
 * that calls sync_pulse also covers the gaps between its bursts. */
static int sig_masks(const struct pyspy_profile *p, const struct thr_rows *r, const struct phase_thread *th,
		     uint64_t base_ns, size_t nphase, const double *y, const uint8_t *use, uint64_t *mask)
{
	struct sm_work w = { .p = p, .r = r, .np = nphase < 64 ? nphase : 64 };
	size_t n = r->n, tot = n;
	uint8_t *mark = NULL;
	int rc = -ENOMEM;
	if (function_ids(p, &w.fn, &w.nf))
		goto done;
	w.in = calloc(w.nf * w.np + 1, sizeof *w.in);
	w.out = calloc(w.nf * w.np + 1, sizeof *w.out);
	mark = calloc(w.nf + 1, 1);
	if (!w.in || !w.out || !mark)
		goto done;
	if (use) {
		tot = 0;
		for (size_t j = 0; j < n; j++)
			tot += use[j];
	}
	if (sm_count(&w, th, base_ns, y, use, mark))
		goto done;
	sm_signatures(&w, tot);
	if (sm_masks(&w, mask))
		goto done;
	rc = 0;
done:
	free(w.fn);
	free(w.in);
	free(w.out);
	free(w.fr);
	free(mark);
	return rc;
}

/* Piecewise-linear knots for the reference thread's rows (timed y by the
 * linear fit so far): an order-preserving assignment of samples to the
 * thread's exclusive timeline (phase segments and the gaps between them)
 * that maximises agreement (+1 a sample holding its interval's typical
 * frame, -1 one holding another phase's, 0 one holding none), by dynamic
 * programming in a band of +-WARP_BAND intervals around the linear
 * prediction.  Then each interval's first and last agreeing sample are
 * pinned half a sample period inside its ends. */
/* Keep the pulses' knots (hard evidence) and, between two of them, only
 * the warp's knots that lie inside both their x and y range. */
static int merge_pulse_knots(struct align_pyspy *a, const double *px, const double *py, size_t pn)
{
	size_t n = a->nknots, m = 0, i = 0, w = 0;
	double *kx = malloc((n + pn) * sizeof *kx), *ky = malloc((n + pn) * sizeof *ky);
	if (!kx || !ky) {
		free(kx);
		free(ky);
		return -ENOMEM;
	}
	while (i < pn || w < n) {
		if (w >= n || (i < pn && px[i] <= a->knot_x[w])) {
			while (m && (kx[m - 1] >= px[i] || ky[m - 1] >= py[i]))
				m--; /* a warp knot the pulse contradicts */
			kx[m] = px[i];
			ky[m++] = py[i++];
			continue;
		}
		double x = a->knot_x[w], y = a->knot_y[w++];
		if (m && (x <= kx[m - 1] || y <= ky[m - 1]))
			continue;
		if (i < pn && y >= py[i])
			continue;
		kx[m] = x;
		ky[m++] = y;
	}
	free(a->knot_x);
	free(a->knot_y);
	a->knot_x = kx;
	a->knot_y = ky;
	a->nknots = m;
	return 0;
}

/* The band must reach as far as the nominal times may have drifted from
 * the mapping (intervals of the typical length), within the cell cap. */
static size_t warp_band(const struct phase_thread *th, uint64_t base_ns, size_t n, double drift_s)
{
	size_t band = WARP_BAND;
	if (drift_s > 0 && th->nseg > 1) {
		double len = (tl(base_ns, th->seg[th->nseg - 1].t1_ns) - tl(base_ns, th->seg[0].t0_ns)) /
			     (double)(2 * th->nseg);
		if (len > 0 && drift_s / len + WARP_BAND > band)
			band = (size_t)(drift_s / len) + WARP_BAND;
		while (band > WARP_BAND && (double)n * (double)(2 * band + 1) > (double)WARP_MAX_CELLS)
			band /= 2;
		if (band < WARP_BAND)
			band = WARP_BAND;
	}
	return band;
}

/* Per row, the phases it may hold: with SITE labels (pyspy_sites.h) the
 * labelled phase, hard[j] = 1 where a labelled row may not land in
 * another interval (0 for a mark's label, only preferred), *labelled =
 * 1; else the typical-frame masks of sig_masks, hard all 0.  0 or
 * -ENOMEM. */
static int warp_masks(const struct pyspy_profile *p, const struct thr_rows *r, const struct phase_thread *th,
		      uint64_t base_ns, size_t nphase, const double *y, const struct burst *pulses, size_t npulses,
		      int first, const struct pyspy_sites *sites, uint64_t *mask, uint8_t *hard, int *labelled)
{
	size_t n = r->n, nl = 0;
	memset(hard, 0, n ? n : 1);
	*labelled = 0;
	for (size_t j = 0; j < n && sites && sites->nsites; j++) {
		uint32_t st = p->samples[r->idx[j]].stack;
		int32_t q = pyspy_sites_of(sites, st);
		mask[j] = q >= 0 && q < 64 ? 1ULL << q : 0;
		hard[j] = mask[j] && !pyspy_sites_soft(sites, st);
		nl += mask[j] != 0;
	}
	if (nl) {
		*labelled = 1;
		return 0;
	}
	/* First pass (no knots yet): the line is right only near the
	 * pulses that fixed it, so typical frames come from the samples
	 * within WARP_NEAR_S of a pulse (measured: from all samples, a line
	 * 300 ms off in the middle made main and <module> typical). */
	uint8_t *use = NULL;
	if (first && npulses) {
		use = calloc(n ? n : 1, 1);
		if (!use)
			return -ENOMEM;
		for (size_t j = 0; j < n; j++)
			for (size_t b = 0; b < npulses && !use[j]; b++)
				use[j] = fabs(y[j] - pulses[b].t0) < WARP_NEAR_S;
	}
	int rc = sig_masks(p, r, th, base_ns, nphase, y, use, mask);
	free(use);
	return rc;
}

/* Intervals: segments and the gaps between them, timeline seconds. */
static size_t warp_intervals(const struct phase_thread *th, uint64_t base_ns, double *it0, double *it1, int *iph)
{
	size_t ni = 0;
	for (size_t k = 0; k < th->nseg; k++) {
		double s0 = tl(base_ns, th->seg[k].t0_ns), s1 = tl(base_ns, th->seg[k].t1_ns);
		if (ni && s0 > it1[ni - 1]) {
			it0[ni] = it1[ni - 1];
			it1[ni] = s0;
			iph[ni++] = -1;
		}
		it0[ni] = s0;
		it1[ni] = s1;
		iph[ni++] = th->seg[k].phase;
	}
	return ni;
}

/* lo[j]: the first interval of row j's band (non-decreasing). */
static void warp_band_starts(const double *y, size_t n, const double *it1, size_t ni, size_t band, long *lo)
{
	for (size_t j = 0; j < n; j++) {
		size_t l = 0, h = ni;
		while (l < h) { /* first interval ending after y */
			size_t mid = (l + h) / 2;
			if (it1[mid] <= y[j])
				l = mid + 1;
			else
				h = mid;
		}
		long kp = (long)(l < ni ? l : ni - 1);
		lo[j] = kp - (long)band;
		if (j && lo[j] < lo[j - 1])
			lo[j] = lo[j - 1];
	}
}

/* Score of row j (mask m) in interval k: +1 its phase, -1 another phase's
 * typical frame, 0 none; hard labels make another interval all but
 * impossible (not -inf: a row with no interval of its phase in the band
 * must not make the whole assignment infeasible). */
static double warp_score(uint64_t m, int ph, uint8_t hard, long dk)
{
	double sc = (ph >= 0 && ph < 64 && (m >> ph & 1)) ? 1.0 : m ? (hard ? -1e6 : -1.0) : 0.0;
	return sc - 1e-4 * (double)labs(dk); /* ties: stay near the line */
}

/* pmax[q], parg[q]: the best of row[0..q] and where (the last of equal
 * bests; -1 while all are -inf), so each cell of the next row finds its
 * best predecessor at once instead of scanning the band. */
static void prefix_best(const double *row, size_t W, double *pmax, int32_t *parg)
{
	double m = -INFINITY;
	int32_t at = -1;
	for (size_t q = 0; q < W; q++) {
		if (row[q] > -INFINITY && row[q] >= m) {
			m = row[q];
			at = (int32_t)q;
		}
		pmax[q] = m;
		parg[q] = at;
	}
}

/* The order-preserving assignment kas[j] of rows to intervals with the
 * best total score, by dynamic programming in the band.  1 found, 0 none,
 * -ENOMEM. */
static int warp_dp(size_t n, size_t band, const long *lo, const uint64_t *mask, const uint8_t *hard, const int *iph,
		   size_t ni, long *kas)
{
	size_t W = 2 * band + 1;
	double *best = malloc(n * W * sizeof *best), *pmax = malloc(W * sizeof *pmax);
	int32_t *from = malloc(n * W * sizeof *from), *parg = malloc(W * sizeof *parg);
	if (!best || !from || !pmax || !parg) {
		free(best);
		free(from);
		free(pmax);
		free(parg);
		return -ENOMEM;
	}
	for (size_t j = 0; j < n; j++) {
		if (j)
			prefix_best(best + (j - 1) * W, W, pmax, parg);
		for (size_t w = 0; w < W; w++) {
			long k = lo[j] + (long)w;
			double sc = -INFINITY;
			int32_t fr = -1;
			if (k >= 0 && k < (long)ni) {
				sc = warp_score(mask[j], iph[k], hard[j], k - lo[j] - (long)band);
				if (j) {
					/* best over k' <= k in the previous row's band */
					long kk = k - lo[j - 1];
					if (kk >= (long)W)
						kk = (long)W - 1;
					fr = kk >= 0 ? parg[kk] : -1;
					sc = fr >= 0 ? sc + pmax[kk] : -INFINITY;
				}
			}
			best[j * W + w] = sc;
			from[j * W + w] = fr;
		}
	}
	size_t bw = 0;
	for (size_t w = 1; w < W; w++)
		if (best[(n - 1) * W + w] > best[(n - 1) * W + bw])
			bw = w;
	int found = isfinite(best[(n - 1) * W + bw]);
	for (size_t j = n; found && j-- > 0;) {
		kas[j] = lo[j] + (long)bw;
		if (j)
			bw = (size_t)from[j * W + bw];
	}
	free(best);
	free(from);
	free(pmax);
	free(parg);
	return found;
}

/* One knot, kept only where it continues both axes upwards. */
static void warp_add_knot(struct align_pyspy *a, double x, double y)
{
	if (a->nknots && (x <= a->knot_x[a->nknots - 1] || y <= a->knot_y[a->nknots - 1]))
		return;
	double lin = a->offset_s + a->scale * x;
	if (fabs(y - lin) * 1e3 > a->warp_max_ms)
		a->warp_max_ms = fabs(y - lin) * 1e3;
	a->knot_x[a->nknots] = x;
	a->knot_y[a->nknots++] = y;
}

/* Each interval's first and last agreeing row pinned half a sample
 * period inside its ends.  One agreeing sample in a phase shorter than
 * about a period (fwd of a small model: 5 ms at 100 Hz): it is still
 * inside, so it is pinned to the middle (measured: without these knots
 * 1-20 % of fwd's samples landed in fwd, 10-70 ms off). */
static void warp_knots(struct align_pyspy *a, const struct pyspy_profile *p, const struct thr_rows *r,
		       const long *kas, const uint64_t *mask, const double *it0, const double *it1, const int *iph)
{
	size_t n = r->n;
	for (size_t j = 0; j < n;) {
		long k = kas[j];
		size_t j1 = j, jf = SIZE_MAX, jl = SIZE_MAX;
		for (; j1 < n && kas[j1] == k; j1++)
			if (iph[k] >= 0 && iph[k] < 64 && (mask[j1] >> iph[k] & 1)) {
				if (jf == SIZE_MAX)
					jf = j1;
				jl = j1;
			}
		if (jf != SIZE_MAX) {
			double in = a->sample_period_s / 2, len = it1[k] - it0[k];
			if (!(in < len / 4))
				in = len / 4;
			double xf = p->samples[r->idx[jf]].t_rel_s, xl = p->samples[r->idx[jl]].t_rel_s;
			if (jl == jf) {
				warp_add_knot(a, xf, (it0[k] + it1[k]) / 2);
			} else {
				warp_add_knot(a, xf, it0[k] + in);
				warp_add_knot(a, xl, it1[k] - in);
			}
		}
		j = j1;
	}
}

/* Piecewise-linear knots for the reference thread's rows (timed by the
 * mapping so far): an order-preserving assignment of samples to the
 * thread's exclusive timeline (phase segments and the gaps between them)
 * that maximises agreement (warp_score), in a band of intervals around
 * the prediction; then warp_knots.  With SITE labels each labelled sample
 * lands in an interval of its own phase (unless none is within the band)
 * and the unlabelled ones are interpolated between. */
static int fit_warp(struct align_pyspy *a, const struct pyspy_profile *p, uint32_t ref, const struct thr_rows *r,
		    const struct phase_thread *th, uint64_t base_ns, size_t nphase, const struct burst *pulses,
		    size_t npulses, const double *px, const double *py, size_t pn, double drift_s,
		    const struct pyspy_sites *sites)
{
	/* Labelled samples may sit anywhere the stated uncertainty allows
	 * (no --idle: seconds), and the labels are what finds them there. */
	if (sites && sites->nsites && a->uncert_ms / 1e3 > drift_s)
		drift_s = a->uncert_ms / 1e3;
	size_t n = r->n, band = warp_band(th, base_ns, n, drift_s), ni;
	double *y = malloc((n ? n : 1) * sizeof *y);
	uint64_t *mask = malloc((n ? n : 1) * sizeof *mask);
	double *it0 = malloc((2 * th->nseg + 1) * sizeof *it0), *it1 = malloc((2 * th->nseg + 1) * sizeof *it1);
	int *iph = malloc((2 * th->nseg + 1) * sizeof *iph), labelled = 0, rc = -ENOMEM;
	long *lo = malloc((n ? n : 1) * sizeof *lo), *kas = malloc((n ? n : 1) * sizeof *kas);
	uint8_t *hard = malloc(n ? n : 1);
	if (!y || !mask || !it0 || !it1 || !iph || !lo || !kas || !hard)
		goto done;
	rc = 0; /* nothing to warp, or too big: keep the line */
	if (!n || !th->nseg || n * (2 * band + 1) > WARP_MAX_CELLS)
		goto done;
	rc = -ENOMEM;
	/* Times by the current mapping: the line, or a previous warp. */
	for (size_t j = 0; j < n; j++)
		y[j] = align_pyspy_time(a, ref, p->samples[r->idx[j]].t_rel_s);
	if (warp_masks(p, r, th, base_ns, nphase, y, pulses, npulses, !a->nknots, sites, mask, hard, &labelled))
		goto done;
	free(a->knot_x);
	free(a->knot_y);
	a->knot_x = a->knot_y = NULL;
	a->nknots = 0;
	a->warp_max_ms = 0;
	ni = warp_intervals(th, base_ns, it0, it1, iph);
	warp_band_starts(y, n, it1, ni, band, lo);
	rc = warp_dp(n, band, lo, mask, hard, iph, ni, kas);
	if (rc <= 0)
		goto done;
	rc = -ENOMEM;
	a->knot_x = malloc((2 * ni + 2) * sizeof *a->knot_x);
	a->knot_y = malloc((2 * ni + 2) * sizeof *a->knot_y);
	if (!a->knot_x || !a->knot_y)
		goto done;
	warp_knots(a, p, r, kas, mask, it0, it1, iph);
	/* With labels the pulse samples are labelled too (pyspy_sites.h), so
	 * the assignment already holds them in their bursts; the pulses'
	 * knots, matched by steps in time, can be the worse of the two
	 * (measured: 22.7 ms RMS pulse miss with them, 1.45 ms without) */
	if (pn >= 2 && !labelled && merge_pulse_knots(a, px, py, pn))
		goto done;
	if (a->nknots < 2)
		a->nknots = 0;
	rc = 0;
done:
	free(y);
	free(mask);
	free(it0);
	free(it1);
	free(iph);
	free(lo);
	free(kas);
	free(hard);
	return rc;
}

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

/* Does [t0, t1] meet a segment of phase q on th (a point when t0 == t1)? */
static int in_phase(const struct phase_thread *th, uint64_t base_ns, int q, double t0, double t1)
{
	size_t l = 0, h = th->nseg;
	while (l < h) { /* first segment ending after t0 */
		size_t mid = (l + h) / 2;
		if (tl(base_ns, th->seg[mid].t1_ns) <= t0)
			l = mid + 1;
		else
			h = mid;
	}
	for (size_t k = l; k < th->nseg && tl(base_ns, th->seg[k].t0_ns) <= t1; k++)
		if (th->seg[k].phase == q)
			return 1;
	return 0;
}

/* a->labelled / a->labelled_in: the share of SITE-labelled samples that
 * the final mapping puts inside a range of their phase (speedscope: the
 * sample's instant; chrometrace: its interval). */
static void label_check(struct align_pyspy *a, const struct pyspy_profile *p, const struct phase_set *ph,
			uint64_t base_ns, const struct pyspy_sites *sites)
{
	int chrome = p->meta.format == PYSPY_FMT_CHROMETRACE;
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct pyspy_sample *s = &p->samples[i];
		int32_t q = pyspy_sites_of(sites, s->stack);
		const struct align_pyspy_thread *t = &a->thr[s->thread];
		if (q < 0 || !t->ring_tid)
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
		a->labelled_in += in_phase(th, base_ns, q, t0, t1);
	}
}

/* ---- main entry ---------------------------------------------------- */

/* speedscope: how much longer the thread's process lived than the nominal
 * length of its profile (0 when not). */
static double shortfall_s(const struct pyspy_profile *p, const struct thr_rows *r, const struct ring_thr *rt,
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

/* Knots (cluster mean x, its pulse group's fitted local time) for every
 * cluster of pulse points, cluster c pinned to burst group g0 + c.  Sets
 * a->knot_* when at least two fit; 0, or -ENOMEM. */
/* Which pulse group each cluster of pulse samples is: in order, from
 * group g0 on, the pairing whose steps in time agree best with the
 * clusters' steps in nominal time (py-spy may miss a pulse, a loaded
 * machine may split one; the drift between neighbours is far smaller
 * than the total).  match[c] = group or -1.  0, or -ENOMEM. */
#define MATCH_SKIP 3
#define MATCH_SKIP_COST_S 1.0
static int match_clusters(const double *xc, size_t nc, const struct burst *rb, size_t nrb, size_t g0, double scale,
			  long *match)
{
	size_t ng = group_count(rb, nrb);
	size_t cells = nc * ng > 0 ? nc * ng : 1;
	double *T = malloc((ng ? ng : 1) * sizeof *T), *best = malloc(cells * sizeof *best);
	long *from = malloc(cells * sizeof *from);
	if (!T || !best || !from) {
		free(T);
		free(best);
		free(from);
		return -ENOMEM;
	}
	for (size_t g = 0; g < ng; g++)
		T[g] = group_mid(rb, nrb, g);
	for (size_t c = 0; c < nc; c++)
		match[c] = -1;
	long bi = -1;
	double bv = INFINITY;
	for (size_t c = 0; c < nc; c++)
		for (size_t g = g0; g < ng; g++) {
			double v = MATCH_SKIP_COST_S * (double)c; /* first match */
			long f = -1;
			for (size_t dc = 1; dc <= MATCH_SKIP && dc <= c; dc++)
				for (size_t dg = 1; dg <= MATCH_SKIP && dg + g0 <= g; dg++) {
					double w = best[(c - dc) * ng + g - dg];
					w += fabs((T[g] - T[g - dg]) - scale * (xc[c] - xc[c - dc])) +
					     MATCH_SKIP_COST_S * (double)(dc - 1);
					if (w < v) {
						v = w;
						f = (long)((c - dc) * ng + g - dg);
					}
				}
			best[c * ng + g] = v;
			from[c * ng + g] = f;
			v += MATCH_SKIP_COST_S * (double)(nc - 1 - c);
			if (v < bv) {
				bv = v;
				bi = (long)(c * ng + g);
			}
		}
	for (long i = bi; i >= 0; i = from[i])
		match[(size_t)i / ng] = (long)((size_t)i % ng);
	free(T);
	free(best);
	free(from);
	return 0;
}

static int pulse_knots(struct align_pyspy *a, struct pt *pts, size_t npts, size_t ncl, const struct burst *rb,
		       size_t nrb, size_t g0)
{
	double *kx = malloc(ncl * sizeof *kx), *ky = malloc(ncl * sizeof *ky), *xc = malloc(ncl * sizeof *xc);
	long *match = malloc(ncl * sizeof *match);
	size_t nk = 0, c0 = 0, nc = 0;
	if (!kx || !ky || !xc || !match) {
		free(kx);
		free(ky);
		free(xc);
		free(match);
		return -ENOMEM;
	}
	for (size_t i = 0; i < npts && nc < ncl; nc++) {
		size_t j = i;
		double xm = pts[i].x;
		while (j + 1 < npts && pts[j + 1].x - pts[j].x <= PULSE_GAP_X_S)
			xm += pts[++j].x;
		xc[nc] = xm / (double)(j - i + 1);
		i = j + 1;
	}
	if (match_clusters(xc, nc, rb, nrb, g0, a->scale, match)) {
		free(kx);
		free(ky);
		free(xc);
		free(match);
		return -ENOMEM;
	}
	for (size_t c = 0; c < ncl && c0 < npts; c++) {
		size_t c1 = c0;
		double xm = pts[c0].x;
		while (c1 + 1 < npts && pts[c1 + 1].x - pts[c1].x <= PULSE_GAP_X_S)
			xm += pts[++c1].x;
		xm /= (double)(c1 - c0 + 1);
		if (c < nc && match[c] >= 0) {
			size_t g = (size_t)match[c];
			/* the cluster's own pulse group says when it ran: the
			 * line through the first and last pulse may be off by
			 * more than a pulse's width in between (py-spy falls
			 * behind, then catches up: 1 s measured) */
			double pred = group_mid(rb, nrb, g) - xm;
			pin_to_group(pts + c0, c1 - c0 + 1, g);
			struct fit fc = fit_offset(pts + c0, c1 - c0 + 1, 1.0, pred - ALIGN_PYSPY_PULSE_HALF_S, pred + ALIGN_PYSPY_PULSE_HALF_S, pred);
			for (size_t i = c0; i <= c1; i++) {
				pts[i].b = pts[i].b_all;
				pts[i].nb = pts[i].nb_all;
			}
			double y = xm + fc.offset_s;
			if (fc.ok && (!nk || (xm > kx[nk - 1] && y > ky[nk - 1]))) {
				kx[nk] = xm;
				ky[nk++] = y;
			}
		}
		c0 = c1 + 1;
	}
	free(xc);
	free(match);
	if (nk >= 2) {
		free(a->knot_x);
		free(a->knot_y);
		a->knot_x = kx;
		a->knot_y = ky;
		a->nknots = nk;
		a->pulse_knots = nk;
		strncat(a->method, "+pulses", sizeof a->method - strlen(a->method) - 1);
		double ss = 0;
		for (size_t i = 0; i < npts; i++) {
			double d = pt_cost(&pts[i], align_pyspy_time(a, 0, pts[i].x));
			ss += d * d;
		}
		a->resid_ms = sqrt(ss / (double)npts) * 1e3;
		a->uncert_ms = a->resid_ms;
		return 0;
	}
	free(kx);
	free(ky);
	return 0;
}

static int cmp_double_asc(const void *x, const void *y)
{
	double a = *(const double *)x, b = *(const double *)y;
	return a < b ? -1 : a > b;
}

/* ---- align_pyspy_fit, step by step ------------------------------------ */

/* What the steps of align_pyspy_fit share.  Each step returns 0, or -1
 * with the reason in err. */
struct fit_ctx {
	const struct ringload *rl;
	const struct phase_set *ph;
	uint64_t base_ns;
	const struct pyspy_profile *p;
	struct align_pyspy *a;
	char *err;
	size_t errlen;
	struct ring_thr *rt;      /* per profile thread: its ring thread */
	struct thr_rows *tr;      /* per profile thread: its rows by time */
	struct burst *bursts;     /* pulse bursts: thread k's from b_off[k], b_n[k] of them */
	size_t *b_off, *b_n, nb;
	uint8_t *busy;            /* per stack node: holds the pulse's busy frame */
	struct pt *pts;           /* pulse constraints */
	size_t npts, ptcap, nbusy;
	double lo, hi;            /* bounds on the reference thread's offset */
	double drift_s;           /* speedscope: see align_pyspy.h drift_ms */
	double warp_corr95_s;     /* speedscope: the warp's p95 move off the pulses' mapping */
	int chrome;
	long ref;                 /* the reference thread (most samples) */
	struct pyspy_sites sites; /* SITE labels of the stacks */
};

/* The ring's phase timeline of the reference thread, or -1. */
static long ref_timeline(const struct fit_ctx *c)
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
		seterr(c->err, c->errlen, "the profile has no sample times (raw format): record with --format "
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
	if (!c->a->thr || !c->rt || !c->tr || !c->b_off || !c->b_n || !c->bursts || rows_by_thread(c->p, c->tr) || node_busy_flags(c->p, &c->busy)) {
		seterr(c->err, c->errlen, "out of memory");
		return -1;
	}
	map_threads(c->rl, c->base_ns, c->p, c->a, c->rt);
	if (pyspy_sites_label(&c->rl->rf, c->ph, c->p, &c->sites)) {
		seterr(c->err, c->errlen, "out of memory");
		return -1;
	}
	c->a->label_sites = c->sites.nsites;
	if (!c->a->nmapped) {
		seterr(c->err, c->errlen, "none of the profile's %u thread(s) is a thread of the ring (a profile of "
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
	for (uint32_t k = 0; k < c->p->nthreads; k++)
		if (c->a->thr[k].ring_tid && c->tr[k].n && (c->ref < 0 || c->tr[k].n > c->tr[c->ref].n))
			c->ref = k;
	if (c->ref < 0) {
		seterr(c->err, c->errlen, "no sample of the profile is on a thread of the ring");
		return -1;
	}
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
		seterr(c->err, c->errlen, "no time overlap: the profile's samples do not fit within the lifetime of "
				    "the ring's processes %u.. (files from different runs?)",
		       c->a->thr[c->ref].ring_pid);
		return -1;
	}
	return 0;
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

/* Pulse bursts per ring thread and the constraints their samples give. */
static int fit_pulse_points(struct fit_ctx *c)
{
	/* Pulse bursts per ring thread. */
	{
		int pulse = phase_set_find(c->ph, PULSE_RANGE);
		for (uint32_t k = 0; k < c->p->nthreads && pulse >= 0; k++) {
			if (!c->a->thr[k].ring_tid || (!c->chrome && (long)k != c->ref))
				continue;
			c->b_off[k] = c->nb;
			for (size_t i = 0; i < c->ph->nocc; i++) {
				const struct phase_occ *o = &c->ph->occ[i];
				if (o->phase == pulse && o->pid == c->rt[k].pid && o->tid == c->rt[k].tid)
					c->bursts[c->nb++] = (struct burst){tl(c->base_ns, o->t0_ns), tl(c->base_ns, o->t1_ns)};
			}
			c->b_n[k] = c->nb - c->b_off[k];
		}
	}
	for (uint32_t k = 0; k < c->p->nthreads; k++)
		if (c->b_n[k] && add_points(c->p, &c->tr[k], c->busy, c->bursts + c->b_off[k], c->b_n[k], &c->pts, &c->npts, &c->ptcap, &c->nbusy)) {
			seterr(c->err, c->errlen, "out of memory");
			return -1;
		}
	return 0;
}

/* speedscope, two pulse clusters or more: offset and scale from the
 * first and last, and the drift between them. */
static void pulse_line(struct fit_ctx *c, struct fit *f, double *spread, size_t *g0, int *have_g0)
{
	size_t e0 = 0, s1 = c->npts - 1;
	while (e0 + 1 < c->npts && c->pts[e0 + 1].x - c->pts[e0].x <= PULSE_GAP_X_S)
		e0++;
	while (s1 > 0 && c->pts[s1].x - c->pts[s1 - 1].x <= PULSE_GAP_X_S)
		s1--;
	/* The mapping keeps order, but py-spy may have missed the
	 * first pulses (ANCHOR_SYNC_PULSE pulses at process start,
	 * before py-spy attached): try every pair of burst groups
	 * (i for the first cluster, j for the last) whose line is
	 * plausible, and keep the one the points fit best. */
	const struct burst *rb = c->bursts + c->b_off[c->ref];
	size_t nrb = c->b_n[c->ref], ng = group_count(rb, nrb), gi = 0, gj = ng ? ng - 1 : 0;
	double xm0 = 0, xm1 = 0, bestc = INFINITY;
	for (size_t i = 0; i <= e0; i++)
		xm0 += c->pts[i].x;
	for (size_t i = s1; i < c->npts; i++)
		xm1 += c->pts[i].x;
	xm0 /= (double)(e0 + 1);
	xm1 /= (double)(c->npts - s1);
	for (size_t i = 0; i + 1 < ng && xm1 > xm0; i++)
		for (size_t j = i + 1; j < ng; j++) {
			double ti = group_mid(rb, nrb, i), tj = group_mid(rb, nrb, j);
			double sc = (tj - ti) / (xm1 - xm0), o = ti - sc * xm0;
			if (!(sc >= 1.0 / (1 + MAX_SCALE_DEV) && sc <= 1 + 2 * MAX_SCALE_DEV) ||
			    o < c->lo - 1.0 || o > c->hi + 1.0)
				continue;
			double cost = total_cost(c->pts, c->npts, sc, o);
			if (cost < bestc - 1e-9) {
				bestc = cost;
				gi = i;
				gj = j;
			}
		}
	double gti = ng ? group_mid(rb, nrb, gi) : c->a->prior_offset_s + xm0;
	double gtj = ng ? group_mid(rb, nrb, gj) : c->a->prior_offset_s + xm1;
	*g0 = gi;
	*have_g0 = ng > 0;
	/* Real time between the first and last pulse against the
	 * nominal time of the samples between them: the line
	 * spreads the difference evenly, but py-spy lost (or
	 * crowded) samples somewhere unknown, so a sample between
	 * them may be off by all of it (measured: 50 s misses
	 * under a line that the two pulses fitted to +-5 ms). */
	if (ng)
		c->drift_s = fabs((gtj - gti) - (xm1 - xm0));
	pin_to_group(c->pts, e0 + 1, gi);
	pin_to_group(c->pts + s1, c->npts - s1, gj);
	struct fit f0 = fit_offset(c->pts, e0 + 1, 1.0, gti - xm0 - ALIGN_PYSPY_PULSE_HALF_S,
				     gti - xm0 + ALIGN_PYSPY_PULSE_HALF_S, gti - xm0);
	struct fit f1 = fit_offset(c->pts + s1, c->npts - s1, 1.0, gtj - xm1 - ALIGN_PYSPY_PULSE_HALF_S,
				     gtj - xm1 + ALIGN_PYSPY_PULSE_HALF_S, gtj - xm1);
	for (size_t i = 0; i < c->npts; i++) {
		c->pts[i].b = c->pts[i].b_all;
		c->pts[i].nb = c->pts[i].nb_all;
	}
	if (f0.ok && f1.ok) {
		if (xm1 > xm0)
			c->a->scale = 1.0 + (f1.offset_s - f0.offset_s) / (xm1 - xm0);
		double pred = f0.offset_s - (c->a->scale - 1.0) * xm0;
		*f = fit_offset(c->pts, c->npts, c->a->scale, pred - ALIGN_PYSPY_REFIT_HALF_S, pred + ALIGN_PYSPY_REFIT_HALF_S, pred);
		*spread = f0.half_s > f1.half_s ? f0.half_s : f1.half_s;
	} else {
		*f = f0;
	}
}

/* Sync pulses were sampled: fit to them. */
static int fit_pulses(struct fit_ctx *c)
{
	struct fit f;
	double spread = 0;
	size_t pulse_g0 = 0;
	int have_g0 = 0;
	qsort(c->pts, c->npts, sizeof *c->pts, cmp_pt);
	/* Clusters: points more than PULSE_GAP_X_S apart in profile time
	 * are separate pulses (a pulse is 100 ms; speedscope time can
	 * squeeze 2.4 s between pulses below 1 s: measured). */
	size_t ncl = 1;
	for (size_t i = 1; i < c->npts; i++)
		ncl += c->pts[i].x - c->pts[i - 1].x > PULSE_GAP_X_S;
	c->a->pulse_samples = c->nbusy;
	c->a->pulse_groups = ncl;
	if (!c->chrome && ncl >= 2) {
		pulse_line(c, &f, &spread, &pulse_g0, &have_g0);
	} else {
		/* chrometrace stamps a sample when py-spy's main thread
		 * takes it off the sampler's queue (chrometrace.rs:
		 * Instant elapsed in increment()), never before the stack
		 * was read and tens of ms later on a loaded machine: the
		 * last sample bounds the offset from above only with that
		 * lag allowed (the pulses decide within it). */
		f = fit_offset(c->pts, c->npts, 1.0, c->lo, c->hi + (c->chrome ? STAMP_LAG_S : 0), c->a->prior_offset_s);
	}
	if (!f.ok) {
		seterr(c->err, c->errlen, "out of memory");
		return -1;
	}
	c->a->offset_s = f.offset_s;
	/* py-spy stamps a sample when it processes it, a jittery moment
	 * after reading the stack: the misses' RMS measures that jitter
	 * (the worst is reported beside it). */
	c->a->uncert_ms = sqrt(f.half_s * f.half_s + spread * spread + f.rms_s * f.rms_s) * 1e3;
	c->a->resid_ms = f.cost_s / (double)c->npts * 1e3;
	c->a->resid_max_ms = f.max_s * 1e3;
	snprintf(c->a->method, sizeof c->a->method, "pulse%s", !c->chrome && c->a->scale != 1.0 ? "+scale" : "");
	/* speedscope with more than two pulses (ANCHOR_SYNC_PULSE adds
	 * them at process start and exit): a knot at every pulse, the
	 * clusters taken in order from the first one's group. */
	if (!c->chrome && have_g0 && ncl >= 3 && pulse_knots(c->a, c->pts, c->npts, ncl, c->bursts + c->b_off[c->ref], c->b_n[c->ref], pulse_g0)) {
		seterr(c->err, c->errlen, "out of memory");
		return -1;
	}
	/* knots at every pulse: the drift that matters is the one
	 * between neighbouring pulses */
	if (c->a->pulse_knots >= 2) {
		c->drift_s = 0;
		for (size_t i = 1; i < c->a->nknots; i++) {
			double d = fabs((c->a->knot_y[i] - c->a->knot_y[i - 1]) - (c->a->knot_x[i] - c->a->knot_x[i - 1]));
			if (d > c->drift_s)
				c->drift_s = d;
		}
	}
	return 0;
}

/* No pulse sampled: phases against frames, else the prior alone. */
/* Labelled rows of the reference thread: profile time, duration, phase. */
struct lab_row {
	double x, d;
	int q;
};

/* How many labelled rows lie in their phase at offset o (scale 1). */
static size_t site_score(const struct phase_thread *th, uint64_t base_ns, const struct lab_row *v, size_t n, double o)
{
	size_t in = 0;
	for (size_t j = 0; j < n; j++)
		in += in_phase(th, base_ns, v[j].q, o + v[j].x, o + v[j].x + v[j].d);
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
static int site_offset_fit(struct fit_ctx *c, const struct phase_thread *th, double *o, double *half)
{
	const struct thr_rows *r = &c->tr[c->ref];
	struct lab_row *v = malloc((r->n ? r->n : 1) * sizeof *v);
	size_t n = 0, best = 0;
	if (!v)
		return -ENOMEM;
	for (size_t j = 0; j < r->n; j++) {
		const struct pyspy_sample *s = &c->p->samples[r->idx[j]];
		int32_t q = pyspy_sites_of(&c->sites, s->stack);
		if (q >= 0)
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

static int fit_no_pulse(struct fit_ctx *c)
{
	/* No pulse sampled: phases against frames on the reference
	 * thread, if it has phases; else the prior alone. */
	long th = ref_timeline(c);
	double o, score, half;
	if (c->chrome && c->sites.nsites && th >= 0) {
		int sf = site_offset_fit(c, &c->ph->thr[th], &o, &half);
		if (sf == -ENOMEM) {
			seterr(c->err, c->errlen, "out of memory");
			return -1;
		}
		if (!sf) {
			c->a->offset_s = o;
			c->a->uncert_ms = half * 1e3;
			c->a->resid_ms = NAN;
			snprintf(c->a->method, sizeof c->a->method, "site-labels");
			return 0;
		}
	}
	double w_hi = c->hi < c->lo + ALIGN_PYSPY_FRAMES_WINDOW_S ? c->hi : c->lo + ALIGN_PYSPY_FRAMES_WINDOW_S;
	int pf = th >= 0 ? phase_frames_fit(c->p, &c->tr[c->ref], &c->ph->thr[th], c->base_ns, c->ph->nnames, 1.0, c->lo, w_hi,
					    &o, &score, &half)
			 : -ENODATA;
	if (pf == -ENOMEM) {
		/* not a reason to fall back to the prior silently */
		seterr(c->err, c->errlen, "out of memory");
		return -1;
	}
	if (!pf) {
		c->a->offset_s = o;
		c->a->phase_score = score;
		c->a->uncert_ms = half * 1e3;
		c->a->resid_ms = NAN;
		snprintf(c->a->method, sizeof c->a->method, "phase-frames");
	} else {
		c->a->offset_s = c->a->prior_offset_s;
		c->a->uncert_ms = (c->hi - c->lo) / 2 * 1e3;
		c->a->resid_ms = NAN;
		snprintf(c->a->method, sizeof c->a->method, "proc-start");
	}
	return 0;
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

/* The warp judged by the pulses: kept (method +warp, uncertainty from
 * its moves) or undone back to the pulses' knots px/py (or the line). */
static void warp_judge(struct fit_ctx *c, double *px, double *py, size_t pn, const double *y_line, double ss_line,
		       double line_uncert_ms)
{
	/* The pulses judge the warp: their RMS miss (pulse samples
	 * in, neighbours out) under it must not be clearly worse
	 * than under the line, or the line stays. */
	double half = isnan(c->a->sample_period_s) ? 0 : c->a->sample_period_s / 2;
	double ss_warp = 0;
	for (size_t i = 0; i < c->npts; i++) {
		double d = pt_cost(&c->pts[i], align_pyspy_time(c->a, (uint32_t)c->ref, c->pts[i].x));
		ss_warp += d * d;
	}
	/* the line (or the pulse knots) fit the pulses by
	 * construction, so the warp gets one sample period of
	 * slack there */
	double tol = isnan(c->a->sample_period_s) ? 0 : c->a->sample_period_s;
	if (c->a->nknots && (!c->npts || sqrt(ss_warp / (double)c->npts) <= sqrt(ss_line / (double)c->npts) + tol)) {
		strncat(c->a->method, "+warp", sizeof c->a->method - strlen(c->a->method) - 1);
		/* How far the warp moved samples off the pulses' mapping
		 * (95th percentile): if the frames misled it, it is off
		 * by that much plus the drift the pulses left open
		 * (measured: pulses every 5 steps, drift 65 ms, misses
		 * 102 ms p95). */
		double *cd = malloc((c->tr[c->ref].n ? c->tr[c->ref].n : 1) * sizeof *cd);
		if (cd && c->tr[c->ref].n) {
			for (size_t j = 0; j < c->tr[c->ref].n; j++)
				cd[j] = fabs(align_pyspy_time(c->a, (uint32_t)c->ref,
							      c->p->samples[c->tr[c->ref].idx[j]].t_rel_s) - y_line[j]);
			qsort(cd, c->tr[c->ref].n, sizeof *cd, cmp_double_asc);
			c->warp_corr95_s = cd[(size_t)(0.95 * (double)(c->tr[c->ref].n - 1))];
		}
		free(cd);
		c->a->resid_ms = c->npts ? sqrt(ss_warp / (double)c->npts) * 1e3 : NAN;
		if (c->npts) {
			/* plus half a sample period: where in it a sample fell */
			c->a->uncert_ms = sqrt(c->a->resid_ms * c->a->resid_ms + half * half * 1e6);
		} else {
			/* No pulse checks the warp: it placed samples by the
			 * very frames it is judged on, so its own agreement
			 * says nothing.  What is known: the line's
			 * uncertainty, how far the warp moved samples off
			 * it (RMS), and half a sample period. */
			double ss = 0;
			for (size_t j = 0; j < c->tr[c->ref].n; j++) {
				double d = align_pyspy_time(c->a, (uint32_t)c->ref,
							    c->p->samples[c->tr[c->ref].idx[j]].t_rel_s) - y_line[j];
				ss += d * d;
			}
			double rms_ms = c->tr[c->ref].n ? sqrt(ss / (double)c->tr[c->ref].n) * 1e3 : 0;
			c->a->uncert_ms = sqrt(line_uncert_ms * line_uncert_ms + rms_ms * rms_ms +
					    half * half * 1e6);
		}
		free(px);
		free(py);
	} else {
		/* back to the pulses' knots (or the line) */
		c->a->warp_rejected = c->a->nknots > 0;
		free(c->a->knot_x);
		free(c->a->knot_y);
		c->a->knot_x = px;
		c->a->knot_y = py;
		c->a->nknots = pn;
	}
}

/* How far labelled samples are searched from where the line (or the
 * pulses' knots) put them: the drift the pulses measured, at least the
 * life the profile does not cover (no --idle); with no pulse, nothing
 * bounds py-spy's lag but the process's life. */
static double label_band_s(const struct fit_ctx *c)
{
	double b = c->drift_s, u = shortfall_s(c->p, &c->tr[c->ref], &c->rt[c->ref], c->a->scale);
	double life = c->rt[c->ref].end_s - c->rt[c->ref].start_s;
	if (u > b)
		b = u;
	if (!c->nbusy && isfinite(life) && life > b)
		b = life;
	return b;
}

/* speedscope: local corrections from phases vs frames (or SITE labels). */
static int fit_local_warp(struct fit_ctx *c, long th)
{
	double *px = NULL, *py = NULL;
	size_t pn = c->a->nknots;
	if (pn) {
		px = malloc(pn * sizeof *px);
		py = malloc(pn * sizeof *py);
		if (!px || !py) {
			free(px);
			free(py);
			seterr(c->err, c->errlen, "out of memory");
			return -1;
		}
		memcpy(px, c->a->knot_x, pn * sizeof *px);
		memcpy(py, c->a->knot_y, pn * sizeof *py);
	}
	/* Where the line (or pulse knots) put every sample of the
	 * reference thread: the warp's corrections are measured
	 * against it. */
	double *y_line = malloc((c->tr[c->ref].n ? c->tr[c->ref].n : 1) * sizeof *y_line);
	double line_uncert_ms = c->a->uncert_ms;
	if (!y_line) {
		free(px);
		free(py);
		seterr(c->err, c->errlen, "out of memory");
		return -1;
	}
	for (size_t j = 0; j < c->tr[c->ref].n; j++)
		y_line[j] = align_pyspy_time(c->a, (uint32_t)c->ref, c->p->samples[c->tr[c->ref].idx[j]].t_rel_s);
	double ss_line = 0;
	for (size_t i = 0; i < c->npts; i++) {
		double l = pt_cost(&c->pts[i], align_pyspy_time(c->a, (uint32_t)c->ref, c->pts[i].x));
		ss_line += l * l;
	}
	/* Again and again: typical frames found on warped times are
	 * sharper than those found on the line. */
	/* Labelled samples are searched for as far as the
	 * profile may be off: without --idle, the life it does
	 * not cover. */
	double band_s = c->sites.nsites ? label_band_s(c) : c->drift_s;
	for (int pass = 0; pass < WARP_PASSES; pass++)
		if (fit_warp(c->a, c->p, (uint32_t)c->ref, &c->tr[c->ref], &c->ph->thr[th], c->base_ns, c->ph->nnames,
			     c->bursts + c->b_off[c->ref], c->b_n[c->ref], px, py, c->a->pulse_knots ? pn : 0, band_s,
			     &c->sites)) {
			free(y_line);
			free(px);
			free(py);
			seterr(c->err, c->errlen, "out of memory");
			return -1;
		}
	warp_judge(c, px, py, pn, y_line, ss_line, line_uncert_ms);
	free(y_line);
	return 0;
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
			seterr(c->err, c->errlen, "out of memory");
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
	c->a->unsampled_s = shortfall_s(c->p, &c->tr[c->ref], &c->rt[c->ref], c->a->scale);
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
			double d = pt_cost(&c->pts[i], align_pyspy_time(c->a, (uint32_t)c->ref, c->pts[i].x));
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
			seterr(c->err, c->errlen, "no time overlap between the profile and the ring (files from "
					    "different runs?)");
			return -1;
		}
	}
	return 0;
}

/* chrometrace with SITE labels: labelled samples snapped into their phase. */
static int fit_chrome_snap(struct fit_ctx *c)
{
	long th = c->sites.nsites ? ref_timeline(c) : -1;
	if (th >= 0 && snap_knots(c->a, c->p, (uint32_t)c->ref, &c->tr[c->ref], &c->ph->thr[th], c->base_ns, &c->sites)) {
		seterr(c->err, c->errlen, "out of memory");
		return -1;
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
	if (fit_pulse_points(c) || (c->nbusy ? fit_pulses(c) : fit_no_pulse(c)))
		return -1;
	fit_thread_offsets(c);
	long th = !c->chrome && c->ph->nnames ? ref_timeline(c) : -1;
	if (th >= 0 && fit_local_warp(c, th))
		return -1;
	if (c->chrome && fit_chrome_period(c))
		return -1;
	if (!c->chrome)
		fit_speedscope_uncert(c);
	fit_never_nan(c);
	if (c->chrome && fit_chrome_snap(c))
		return -1;
	if (fit_finish(c))
		return -1;
	if (c->sites.nsites)
		label_check(c->a, c->p, c->ph, c->base_ns, &c->sites);
	return 0;
}

int align_pyspy_fit(const struct ringload *rl, const struct phase_set *ph, uint64_t base_ns,
		    const struct pyspy_profile *p, struct align_pyspy *a, char *err, size_t errlen)
{
	struct fit_ctx c = {
		.rl = rl, .ph = ph, .base_ns = base_ns, .p = p, .a = a, .err = err, .errlen = errlen,
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
	char extra[512] = "";
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
	char per[64] = "", unsampled[400];
	snprintf(unsampled, sizeof unsampled,
		 "; %s: %.3g s of the process's life have no sample and nothing says where, so any sample may be "
		 "off by that much; re-record with py-spy --idle (and anchor.sync_pulse())",
		 a->idle_dropped ? "RECORDED WITHOUT --idle (idle samples dropped with no gap)"
				 : "SAMPLE TIMES UNKNOWN (no --idle, or py-spy fell behind)",
		 a->unsampled_s);
	if (!isnan(a->sample_period_s))
		snprintf(per, sizeof per, " (sample period %.3g ms)", a->sample_period_s * 1e3);
	snprintf(buf, cap, "py-spy %s: %s, offset %.6f s, scale %.6f, uncertainty +-%.3g ms%s%s; "
			   "prior %s at %.6f s%s",
		 pyspy_format_name(p->meta.format), a->method, a->offset_s, a->scale, a->uncert_ms, per, extra, a->prior, a->prior_offset_s,
		 a->idle_dropped || a->time_unknown ? unsampled : "");
}
