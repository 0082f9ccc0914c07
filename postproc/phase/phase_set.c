/* phase_set.c - phases from a ring (see phase_set.h). */
#include "phase/phase_set.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

struct thr_state {
	uint32_t pid, tid;
	int has_ranges;
	uint64_t last_ns;
	long *stack; /* open occurrence indices */
	size_t nstack, capstack;
	long mark_open; /* open mark segment, -1 none */
};

struct builder {
	struct phase_set *ps;
	size_t capocc, capnames;
	struct thr_state *ts;
	size_t nts, capts;
};

static int intern(struct builder *b, const char *name)
{
	struct phase_set *ps = b->ps;
	for (size_t i = 0; i < ps->nnames; i++)
		if (!strcmp(ps->names[i], name))
			return (int)i;
	if (ps->nnames == b->capnames) {
		size_t cap = b->capnames ? b->capnames * 2 : 16;
		char **n = realloc(ps->names, cap * sizeof *n);
		if (!n)
			return -1;
		ps->names = n;
		b->capnames = cap;
	}
	ps->names[ps->nnames] = strdup(name);
	if (!ps->names[ps->nnames])
		return -1;
	return (int)ps->nnames++;
}

static struct thr_state *thread_of(struct builder *b, uint32_t pid, uint32_t tid)
{
	for (size_t i = b->nts; i-- > 0;)
		if (b->ts[i].pid == pid && b->ts[i].tid == tid)
			return &b->ts[i];
	if (b->nts == b->capts) {
		size_t cap = b->capts ? b->capts * 2 : 16;
		struct thr_state *t = realloc(b->ts, cap * sizeof *t);
		if (!t)
			return NULL;
		b->ts = t;
		b->capts = cap;
	}
	memset(&b->ts[b->nts], 0, sizeof b->ts[0]);
	b->ts[b->nts].pid = pid;
	b->ts[b->nts].tid = tid;
	b->ts[b->nts].mark_open = -1;
	return &b->ts[b->nts++];
}

/* The time of a range edge: device edges carry it in value. */
static uint64_t edge_ns(const struct ring_event *e)
{
	return e->kind == ANCHOR_KIND_DEV_BEGIN || e->kind == ANCHOR_KIND_DEV_END ? e->value : e->ts_ns;
}

static uint32_t edge_tid(const struct ring_event *e)
{
	return e->kind == ANCHOR_KIND_DEV_BEGIN || e->kind == ANCHOR_KIND_DEV_END ? PHASE_DEVICE_TID : e->tid;
}

/* "dev=cuda:0 bracket_ns=N drift_ppm=X resid_ns=N" (ring_format.h). */
static void dev_clock(struct phase_set *ps, const char *text)
{
	long long bracket = 0, resid = 0;
	double ppm = 0;
	const char *p;
	if ((p = strstr(text, "bracket_ns=")))
		bracket = atoll(p + 11);
	if ((p = strstr(text, "drift_ppm=")))
		ppm = atof(p + 10);
	if ((p = strstr(text, "resid_ns=")))
		resid = atoll(p + 9);
	if (resid < 0)
		resid = -resid;
	ps->dev_calibrations++;
	if ((double)bracket / 1e3 > ps->dev_max_bracket_us)
		ps->dev_max_bracket_us = (double)bracket / 1e3;
	if ((double)resid / 1e3 > ps->dev_max_resid_us)
		ps->dev_max_resid_us = (double)resid / 1e3;
	ps->dev_drift_ppm = ppm; /* the latest: measured over the longest baseline */
}

static long new_occ(struct builder *b, const struct ring_event *e, int phase, int depth, int from_mark)
{
	struct phase_set *ps = b->ps;
	if (ps->nocc == b->capocc) {
		size_t cap = b->capocc ? b->capocc * 2 : 1024;
		struct phase_occ *o = realloc(ps->occ, cap * sizeof *o);
		if (!o)
			return -1;
		ps->occ = o;
		b->capocc = cap;
	}
	struct phase_occ *o = &ps->occ[ps->nocc];
	memset(o, 0, sizeof *o);
	o->t0_ns = o->t1_ns = edge_ns(e);
	o->pid = e->pid;
	o->tid = edge_tid(e);
	o->phase = phase;
	o->depth = depth;
	o->from_mark = (uint8_t)from_mark;
	return (long)ps->nocc++;
}

static int push(struct thr_state *t, long occ)
{
	if (t->nstack == t->capstack) {
		size_t cap = t->capstack ? t->capstack * 2 : 8;
		long *s = realloc(t->stack, cap * sizeof *s);
		if (!s)
			return -1;
		t->stack = s;
		t->capstack = cap;
	}
	t->stack[t->nstack++] = occ;
	return 0;
}

/* Close the innermost open range named `phase` on t (with id: only one
 * whose BEGIN carried the same id); 1 if found. */
static int close_on(struct phase_set *ps, struct thr_state *t, int phase, const uint64_t *id, uint64_t ts)
{
	for (size_t i = t->nstack; i-- > 0;) {
		struct phase_occ *o = &ps->occ[t->stack[i]];
		if (o->phase == phase && (!id || (o->has_id && o->id == *id))) {
			o->t1_ns = ts;
			memmove(&t->stack[i], &t->stack[i + 1], (t->nstack - i - 1) * sizeof t->stack[0]);
			t->nstack--;
			return 1;
		}
	}
	return 0;
}

static int cmp_occ_t0(const void *a, const void *b)
{
	const struct phase_occ *x = a, *y = b;
	if (x->t0_ns != y->t0_ns)
		return x->t0_ns < y->t0_ns ? -1 : 1;
	if (x->t1_ns != y->t1_ns)
		return x->t1_ns > y->t1_ns ? -1 : 1; /* outer first */
	return x->depth - y->depth;
}

/* Exclusive timeline and self time of one thread's occurrences
 * occ[lo..hi) (sorted by t0, outer first). */
static int thread_timeline(struct phase_set *ps, size_t lo, size_t hi, struct phase_thread *th)
{
	size_t n = hi - lo, nact = 0, cap = 0;
	long *act = malloc((n ? n : 1) * sizeof *act);
	uint64_t now;
	size_t next = lo;
	if (!act)
		return -1;
	th->seg = NULL;
	th->nseg = 0;
	th->phase_ns = 0;
	for (size_t i = lo; i < hi; i++)
		ps->occ[i].self_ns = ps->occ[i].t1_ns - ps->occ[i].t0_ns;
	now = n ? ps->occ[lo].t0_ns : 0;
	while (next < hi || nact) {
		/* Next boundary: the earliest of the next start and the active ends. */
		uint64_t t_next = UINT64_MAX;
		if (next < hi)
			t_next = ps->occ[next].t0_ns;
		for (size_t k = 0; k < nact; k++)
			if (ps->occ[act[k]].t1_ns < t_next)
				t_next = ps->occ[act[k]].t1_ns;
		if (nact && t_next > now) {
			/* Innermost active: the latest start (deepest on ties). */
			long in = act[0];
			for (size_t k = 1; k < nact; k++) {
				const struct phase_occ *a = &ps->occ[act[k]], *b = &ps->occ[in];
				if (a->t0_ns > b->t0_ns || (a->t0_ns == b->t0_ns && a->depth > b->depth))
					in = act[k];
			}
			/* Time of the innermost is not self time of the others. */
			for (size_t k = 0; k < nact; k++)
				if (act[k] != in)
					ps->occ[act[k]].self_ns -= t_next - now;
			if (th->nseg && th->seg[th->nseg - 1].occ == in && th->seg[th->nseg - 1].t1_ns == now) {
				th->seg[th->nseg - 1].t1_ns = t_next;
			} else {
				if (th->nseg == cap) {
					cap = cap ? cap * 2 : 256;
					struct phase_seg *s = realloc(th->seg, cap * sizeof *s);
					if (!s) {
						free(act);
						return -1;
					}
					th->seg = s;
				}
				th->seg[th->nseg].t0_ns = now;
				th->seg[th->nseg].t1_ns = t_next;
				th->seg[th->nseg].phase = ps->occ[in].phase;
				th->seg[th->nseg].occ = (int)in;
				th->nseg++;
			}
			th->phase_ns += t_next - now;
		}
		now = t_next;
		/* Drop ended, add started. */
		for (size_t k = 0; k < nact;) {
			if (ps->occ[act[k]].t1_ns <= now)
				act[k] = act[--nact];
			else
				k++;
		}
		while (next < hi && ps->occ[next].t0_ns <= now) {
			if (ps->occ[next].t1_ns > now)
				act[nact++] = (long)next;
			next++;
		}
	}
	free(act);
	return 0;
}

static int cmp_occ_thread(const void *a, const void *b)
{
	const struct phase_occ *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return cmp_occ_t0(a, b);
}

/* Is phase k the tools' own activity rather than the user's?  anchor's
 * sync aids ("anchor.*") always; an MPI call ("MPI_*") when every
 * occurrence was made by a perun process (perun imports mpi4py: its
 * MPI_Init_thread, MPI_Allgather, MPI_Barrier, MPI_Finalize) outside the
 * time its user phases span there, i.e. in perun's set-up or tear-down. */
static int classify_tool(struct phase_set *ps, const struct ring_procs *procs)
{
	struct hull {
		uint32_t pid;
		int perun;
		uint64_t u0, u1;
	} *h = NULL;
	size_t nh = 0;
	ps->tool = calloc(ps->nnames ? ps->nnames : 1, 1);
	if (!ps->tool)
		return -1;
	/* Per process: is it perun, and the span of its user phases. */
	for (size_t i = 0; i < ps->nocc; i++) {
		const struct phase_occ *o = &ps->occ[i];
		const char *nm = ps->names[o->phase];
		size_t j;
		for (j = nh; j-- > 0;)
			if (h[j].pid == o->pid)
				break;
		if (j == (size_t)-1) {
			const struct ring_proc *p = procs ? ring_procs_find(procs, o->pid) : NULL;
			struct hull *nhl = realloc(h, (nh + 1) * sizeof *h);
			if (!nhl) {
				free(h);
				return -1;
			}
			h = nhl;
			j = nh++;
			h[j].pid = o->pid;
			h[j].perun = p && strstr(p->argv, "perun");
			h[j].u0 = UINT64_MAX;
			h[j].u1 = 0;
		}
		if (strncmp(nm, "MPI_", 4) && strncmp(nm, "anchor.", 7)) {
			h[j].u0 = o->t0_ns < h[j].u0 ? o->t0_ns : h[j].u0;
			h[j].u1 = o->t1_ns > h[j].u1 ? o->t1_ns : h[j].u1;
		}
	}
	for (size_t k = 0; k < ps->nnames; k++)
		ps->tool[k] = !strncmp(ps->names[k], "anchor.", 7) || !strncmp(ps->names[k], "MPI_", 4);
	for (size_t i = 0; i < ps->nocc; i++) {
		const struct phase_occ *o = &ps->occ[i];
		size_t j;
		if (!ps->tool[o->phase] || !strncmp(ps->names[o->phase], "anchor.", 7))
			continue;
		for (j = 0; j < nh && h[j].pid != o->pid; j++)
			;
		if (j == nh || !h[j].perun || (h[j].u0 <= h[j].u1 && o->t1_ns > h[j].u0 && o->t0_ns < h[j].u1))
			ps->tool[o->phase] = 0; /* the user's own MPI */
	}
	free(h);
	return 0;
}

int phase_set_is_tool(const struct phase_set *ps, int phase)
{
	return ps->tool && phase >= 0 && (size_t)phase < ps->nnames && ps->tool[phase];
}

/* Pass 1: which threads use ranges, and each thread's last record (where
 * what is still open at the end is closed); device clock notes. */
static int scan_threads(struct builder *b, const struct ring_event *ev, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		struct thr_state *t = thread_of(b, ev[i].pid, edge_tid(&ev[i]));
		if (!t)
			return -1;
		if ((ev[i].kind == ANCHOR_KIND_BEGIN || ev[i].kind == ANCHOR_KIND_END ||
		     ev[i].kind == ANCHOR_KIND_DEV_BEGIN || ev[i].kind == ANCHOR_KIND_DEV_END) &&
		    strncmp(ev[i].text, "perun.", 6))
			t->has_ranges = 1;
		if (edge_ns(&ev[i]) > t->last_ns || edge_tid(&ev[i]) != PHASE_DEVICE_TID)
			t->last_ns = edge_ns(&ev[i]);
		if (ev[i].kind == ANCHOR_KIND_DEV_CLOCK)
			dev_clock(b->ps, ev[i].text);
	}
	return 0;
}

static int on_begin(struct builder *b, struct thr_state *t, const struct ring_event *e, int ph)
{
	struct phase_set *ps = b->ps;
	long o;

	/* A mark segment between ranges ends where the next range
	 * starts; anchor's sync pulses and MPI calls (perun's own,
	 * or a collective inside the marked step) nest in it. */
	if (t->mark_open >= 0 && strncmp(e->text, "anchor.", 7) && strncmp(e->text, "MPI_", 4)) {
		ps->occ[t->mark_open].t1_ns = e->ts_ns;
		t->mark_open = -1;
	}
	if ((o = new_occ(b, e, ph, (int)t->nstack, 0)) < 0 || push(t, o))
		return -1;
	/* A device edge's value is its time, not a range id. */
	if (e->kind == ANCHOR_KIND_BEGIN && (e->flags & ANCHOR_FLAG_VALUE)) {
		ps->occ[o].has_id = 1;
		ps->occ[o].id = e->value;
	}
	return 0;
}

static void on_end(struct builder *b, struct thr_state *t, const struct ring_event *e, int ph)
{
	struct phase_set *ps = b->ps;
	/* An END with a value names its range (asyncio tasks
	 * interleave on one thread): that BEGIN first, then
	 * by name alone as for any END. */
	const uint64_t *id = (e->kind == ANCHOR_KIND_END && (e->flags & ANCHOR_FLAG_VALUE)) ? &e->value : NULL;
	int found = 0;

	for (int pass = id ? 0 : 1; pass < 2 && !found; pass++) {
		const uint64_t *want = pass ? NULL : id;
		found = close_on(ps, t, ph, want, edge_ns(e));
		/* Ranges may cross threads: look in the process's others
		 * (host ranges only: the device timeline is its own). */
		for (size_t k = 0; k < b->nts && !found && t->tid != PHASE_DEVICE_TID; k++)
			if (b->ts[k].pid == e->pid && &b->ts[k] != t && b->ts[k].tid != PHASE_DEVICE_TID)
				found = close_on(ps, &b->ts[k], ph, want, e->ts_ns);
	}
	if (!found)
		ps->unmatched_end++;
}

static int on_mark(struct builder *b, struct thr_state *t, const struct ring_event *e, int ph)
{
	struct phase_set *ps = b->ps;
	long o;

	if (t->has_ranges && t->nstack) {
		/* Inside an open range a mark is an instant: cutting the range
		 * would take time from a phase the user delimited exactly. */
		ps->marks_in_range++;
		return 0;
	}
	if (t->mark_open >= 0)
		ps->occ[t->mark_open].t1_ns = e->ts_ns;
	if ((o = new_occ(b, e, ph, 0, 1)) < 0)
		return -1;
	t->mark_open = o;
	return 0;
}

/* Pass 2: one record into occurrences (device edges count as host ones). */
static int take_event(struct builder *b, const struct ring_event *e)
{
	struct thr_state *t;
	int ph;
	int kind = e->kind == ANCHOR_KIND_DEV_BEGIN ? ANCHOR_KIND_BEGIN
		   : e->kind == ANCHOR_KIND_DEV_END ? ANCHOR_KIND_END : e->kind;

	if (kind != ANCHOR_KIND_BEGIN && kind != ANCHOR_KIND_END && kind != ANCHOR_KIND_MARK)
		return 0;
	/* anchor's own bookkeeping (perun's sample clock) is no phase. */
	if (!strncmp(e->text, "perun.", 6))
		return 0;
	t = thread_of(b, e->pid, edge_tid(e));
	if (!t || (ph = intern(b, e->text)) < 0)
		return -1;
	if (kind == ANCHOR_KIND_BEGIN)
		return on_begin(b, t, e, ph);
	if (kind == ANCHOR_KIND_END) {
		on_end(b, t, e, ph);
		return 0;
	}
	return on_mark(b, t, e, ph);
}

/* Close what is still open at the thread's (or process's) last record,
 * then drop the marks that turned out to be instants. */
static void close_open(struct builder *b, const struct ring_procs *procs)
{
	struct phase_set *ps = b->ps;
	size_t n = 0;

	for (size_t k = 0; k < b->nts; k++) {
		struct thr_state *t = &b->ts[k];
		uint64_t end = t->last_ns;
		const struct ring_proc *p = procs ? ring_procs_find(procs, t->pid) : NULL;
		if (p && p->exit_ns > end)
			end = p->exit_ns;
		for (size_t i = 0; i < t->nstack; i++) {
			ps->occ[t->stack[i]].t1_ns = end;
			ps->occ[t->stack[i]].unclosed = 1;
			ps->unclosed_begin++;
		}
		if (t->mark_open >= 0 && t->has_ranges) {
			/* After the thread's last range nothing ends it but the
			 * process: an instant ("done", "groundtruth_end"), not a
			 * phase running through the tools' tear-down. */
			ps->occ[t->mark_open].phase = -1;
			ps->marks_in_range++;
		} else if (t->mark_open >= 0) {
			ps->occ[t->mark_open].t1_ns = end;
		}
	}
	for (size_t i = 0; i < ps->nocc; i++)
		if (ps->occ[i].phase >= 0)
			ps->occ[n++] = ps->occ[i];
	ps->nocc = n;
}

/* Per thread: exclusive timeline and self times; the primary thread. */
static int build_threads(struct phase_set *ps)
{
	if (ps->nocc)
		qsort(ps->occ, ps->nocc, sizeof *ps->occ, cmp_occ_thread);
	for (size_t lo = 0; lo < ps->nocc;) {
		size_t hi = lo;
		while (hi < ps->nocc && ps->occ[hi].pid == ps->occ[lo].pid && ps->occ[hi].tid == ps->occ[lo].tid)
			hi++;
		struct phase_thread *th = realloc(ps->thr, (ps->nthr + 1) * sizeof *th);
		if (!th)
			return -1;
		ps->thr = th;
		th = &ps->thr[ps->nthr++];
		/* Zeroed: a failure below frees its seg (found by test_oom). */
		memset(th, 0, sizeof *th);
		th->pid = ps->occ[lo].pid;
		th->tid = ps->occ[lo].tid;
		if (thread_timeline(ps, lo, hi, th))
			return -1;
		lo = hi;
	}
	return 0;
}

/* More of the user's phase time, then more phase time. */
static int busier(const struct phase_thread *a, const struct phase_thread *b)
{
	return a->user_ns != b->user_ns ? a->user_ns > b->user_ns : a->phase_ns > b->phase_ns;
}

/* Each thread's time in the user's phases, and the primary: a host thread
 * (device timelines: phase_set_device_of) with the most of it.  After
 * classify_tool: perun's own MPI calls (seconds of MPI_Init in a
 * launcher's perun) are phase time, but not the user's. */
static void pick_primary(struct phase_set *ps)
{
	for (size_t i = 0; i < ps->nthr; i++) {
		struct phase_thread *th = &ps->thr[i];
		th->user_ns = 0;
		for (size_t k = 0; k < th->nseg; k++)
			if (!phase_set_is_tool(ps, th->seg[k].phase))
				th->user_ns += th->seg[k].t1_ns - th->seg[k].t0_ns;
		if (th->tid != PHASE_DEVICE_TID &&
		    (ps->thr[ps->primary].tid == PHASE_DEVICE_TID || busier(th, &ps->thr[ps->primary])))
			ps->primary = i;
	}
}

int phase_set_build(const struct ring_event *ev, size_t n, const struct ring_procs *procs,
		    struct phase_set *ps)
{
	struct builder b = {0};
	int rc = -ENOMEM;

	memset(ps, 0, sizeof *ps);
	b.ps = ps;
	if (scan_threads(&b, ev, n))
		goto out;
	for (size_t i = 0; i < n; i++)
		if (take_event(&b, &ev[i]))
			goto out;
	close_open(&b, procs);
	if (build_threads(ps) || classify_tool(ps, procs))
		goto out;
	pick_primary(ps);
	rc = 0;
out:
	for (size_t k = 0; k < b.nts; k++)
		free(b.ts[k].stack);
	free(b.ts);
	if (rc)
		phase_set_free(ps);
	return rc;
}

void phase_set_free(struct phase_set *ps)
{
	for (size_t i = 0; i < ps->nnames; i++)
		free(ps->names[i]);
	free(ps->names);
	free(ps->tool);
	free(ps->occ);
	for (size_t i = 0; i < ps->nthr; i++)
		free(ps->thr[i].seg);
	free(ps->thr);
	memset(ps, 0, sizeof *ps);
}

int phase_set_find(const struct phase_set *ps, const char *name)
{
	for (size_t i = 0; i < ps->nnames; i++)
		if (!strcmp(ps->names[i], name))
			return (int)i;
	return -1;
}

long phase_set_primary_of(const struct phase_set *ps, uint32_t pid)
{
	long best = -1;
	for (size_t i = 0; i < ps->nthr; i++)
		if (ps->thr[i].pid == pid && ps->thr[i].tid != PHASE_DEVICE_TID &&
		    (best < 0 || busier(&ps->thr[i], &ps->thr[best])))
			best = (long)i;
	return best;
}

long phase_set_device_of(const struct phase_set *ps, uint32_t pid)
{
	long best = -1;
	for (size_t i = 0; i < ps->nthr; i++)
		if ((!pid || ps->thr[i].pid == pid) && ps->thr[i].tid == PHASE_DEVICE_TID &&
		    (best < 0 || ps->thr[i].phase_ns > ps->thr[best].phase_ns))
			best = (long)i;
	return best;
}

int phase_set_group_is_device(const char *group)
{
	/* perun's device groups: "gpu" (NVML, and AMD's under the same name). */
	return group && !strncasecmp(group, "gpu", 3);
}

int phase_set_phase_at(const struct phase_thread *th, uint64_t ts)
{
	size_t lo = 0, hi = th->nseg;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (th->seg[mid].t0_ns <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || th->seg[lo - 1].t1_ns <= ts)
		return -1;
	return th->seg[lo - 1].phase;
}
