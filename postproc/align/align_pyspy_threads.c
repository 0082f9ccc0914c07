/* align_pyspy_threads.c - profile threads to ring threads, and each
 * thread's samples in time order (align_pyspy.h). */
#include "align/align_pyspy_internal.h"

#include <errno.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- thread map ---------------------------------------------------- */

static double proc_end_s(const struct ringload *rl, uint64_t base_ns, uint32_t pid)
{
	const struct ring_proc *pr = ring_procs_find(&rl->procs, pid);
	if (pr && pr->exit_ns)
		return tl(base_ns, pr->exit_ns);
	return INFINITY;
}

int apy_map_threads(const struct ringload *rl, uint64_t base_ns, const struct pyspy_profile *p,
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

static int cmp_idx_time(const void *x, const void *y, void *ctx)
{
	const struct pyspy_profile *p = ctx;
	double a = p->samples[*(const size_t *)x].t_rel_s, b = p->samples[*(const size_t *)y].t_rel_s;
	return a < b ? -1 : a > b;
}

int apy_rows_by_thread(const struct pyspy_profile *p, struct thr_rows *tr)
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

void apy_seterr(struct em_error *e, const char *fmt, ...)
{
	va_list ap;
	if (!e)
		return;
	e->file = NULL;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	va_end(ap);
}
