/*
 * align_torch.c - put a torch.profiler trace (input/torch_trace.c) on the
 * ring's timeline.  Fills the same struct align_pyspy as py-spy's
 * chrometrace alignment (scale 1, one offset for every thread), so every
 * output that places samples places ops the same way.
 *
 * Methods, best first:
 *   record_function  an anchor range mirrored as a record_function of the
 *                    same name on the same OS thread (`with anchor.phase(n),
 *                    record_function(n):`, or anchor.torch's mirroring)
 *                    is in both files: each pair's start and end give the
 *                    offset directly.  Pairs are made around the prior (a
 *                    trace covers only the profiler's active steps, so
 *                    counting occurrences from the first would pair the
 *                    wrong ones), the offset is their median, and the
 *                    uncertainty the largest distance of any pair's edges
 *                    from it (the two ranges open a few µs apart: Python
 *                    enters one context manager before the other).
 *   baseTime+sync    torch >= 2.4 states its clock: ts + baseTimeNanoseconds
 *                    is unix time (torch's system-clock reading); the ring's
 *                    SYNC records map unix time to CLOCK_MONOTONIC.  The
 *                    uncertainty is the widest SYNC bracket plus what torch's
 *                    clock conversion may be off by (TORCH_CLOCK_PRIOR_MS).
 *                    Older traces have absolute unix µs as ts (base 0).
 * Threads: host rows carry the OS pid and tid, as the ring's events do.
 * Device rows (kernels; pid < 0 in the model) take the host offset: Kineto
 * has already put CUPTI's device times on the same host clock.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "align/align_torch.h"
#include "util/tunables.h"

static double tl(uint64_t base_ns, uint64_t ns)
{
	return ((double)ns - (double)base_ns) / 1e9;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* Each profile thread's ring process and thread, and its process's life. */
static void map_threads(const struct ringload *rl, uint64_t base_ns, const struct pyspy_profile *p,
			struct align_pyspy *a)
{
	for (uint32_t k = 0; k < p->nthreads; k++) {
		const struct pyspy_thread *t = &p->threads[k];
		struct align_pyspy_thread *at = &a->thr[k];
		at->ring_end_s = INFINITY;
		at->ring_start_s = -INFINITY;
		if (t->pid <= 0)
			continue;
		const struct ring_proc *pr = ring_procs_find(&rl->procs, (uint32_t)t->pid);
		if (!pr)
			continue;
		at->ring_pid = (uint32_t)t->pid;
		unsigned long tid = strtoul(t->tid, NULL, 10);
		for (size_t i = 0; i < rl->rf.nev; i++)
			if (rl->rf.ev[i].pid == at->ring_pid && rl->rf.ev[i].tid == tid) {
				at->ring_tid = (uint32_t)tid;
				break;
			}
		if (pr->exit_ns)
			at->ring_end_s = tl(base_ns, pr->exit_ns);
		if (pr->start_ns)
			at->ring_start_s = tl(base_ns, pr->start_ns);
		a->nmapped++;
	}
}

/* The prior: unix time of the trace's t_rel_s 0, through the ring's clock.
 * 1 when the trace states its clock, 0 else. */
static int prior(const struct ringload *rl, uint64_t base_ns, const struct pyspy_profile *p, struct align_pyspy *a)
{
	if (!rl->clock.n && !rl->clock.from_creation)
		return 0;
	double unix_ns = (double)p->meta.torch_base_ns + p->meta.torch_t0_us * 1e3;
	if (!(unix_ns > 1e18)) /* before 2001: ts is not unix time */
		return 0;
	uint64_t mono = ring_clock_mono_ns(&rl->clock, (int64_t)unix_ns);
	a->prior_offset_s = tl(base_ns, mono);
	snprintf(a->prior, sizeof a->prior, "%s + the ring's SYNC records",
		 p->meta.torch_has_base ? "baseTimeNanoseconds" : "ts as unix time");
	return 1;
}

/* Pair record_function rows with the ring's ranges of the same name on the
 * same thread, each with the one nearest to where offset center_s puts
 * it; offsets of their starts into d0, of their ends into d1. */
static size_t pair_ranges(const struct phase_set *ph, uint64_t base_ns, const struct pyspy_profile *p,
			  const struct align_pyspy *a, double center_s, double *d0, double *d1)
{
	size_t nd = 0;
	const struct pyspy_stacks *st = &p->stacks;
	/* Every row is an interval of constant stack: an annotation's own
	 * start is the first row whose stack holds it at a new depth, its
	 * end the last such row's end.  Walk rows per thread and track the
	 * innermost annotation opened: enough for ranges that are not nested
	 * in themselves. */
	for (size_t i = 0; i < p->nsamples;) {
		const struct pyspy_sample *s = &p->samples[i];
		const struct align_pyspy_thread *at = &a->thr[s->thread];
		/* For each annotation frame at depth k, find its extent: rows
		 * j >= i whose stack at depth k is the same node. */
		uint32_t path[64];
		uint32_t depth = pyspy_stack_frames(st, s->stack, path, 64);
		int used = 0;
		for (uint32_t k = 0; k < depth && k < 64; k++) {
			const struct pyspy_frame *f = &p->frames.v[path[k]];
			if (!f->file || strcmp(f->file, "user_annotation"))
				continue;
			/* the node of the prefix of depth k+1 */
			uint32_t node = s->stack;
			while (st->v[node].depth > k + 1)
				node = st->v[node].parent;
			/* only where it opens: the previous row of the thread
			 * does not hold this node */
			int opens = 1;
			if (i > 0 && p->samples[i - 1].thread == s->thread) {
				uint32_t q = p->samples[i - 1].stack;
				while (q && st->v[q].depth > k + 1)
					q = st->v[q].parent;
				opens = q != node || p->samples[i - 1].t_rel_s + p->samples[i - 1].duration_s <
							     s->t_rel_s - 1e-9;
			}
			if (!opens)
				continue;
			size_t j = i;
			double t1 = s->t_rel_s + s->duration_s;
			for (size_t m = i + 1; m < p->nsamples && p->samples[m].thread == s->thread; m++) {
				uint32_t q = p->samples[m].stack;
				while (q && st->v[q].depth > k + 1)
					q = st->v[q].parent;
				if (q != node)
					break;
				j = m;
				t1 = p->samples[m].t_rel_s + p->samples[m].duration_s;
			}
			(void)j;
			int phase = phase_set_find(ph, f->name);
			if (phase < 0 || !at->ring_tid)
				continue;
			double t0 = s->t_rel_s;
			/* the ring's range of that name on that thread nearest
			 * to where the prior puts this one */
			double want = center_s + t0, best = INFINITY;
			const struct phase_occ *bo = NULL;
			for (size_t o = 0; o < ph->nocc; o++) {
				const struct phase_occ *oc = &ph->occ[o];
				if (oc->phase != phase || oc->pid != at->ring_pid || oc->tid != at->ring_tid ||
				    oc->from_mark || oc->unclosed)
					continue;
				double dist = fabs(tl(base_ns, oc->t0_ns) - want);
				if (dist < best) {
					best = dist;
					bo = oc;
				}
			}
			if (!bo)
				continue;
			d0[nd] = tl(base_ns, bo->t0_ns) - t0;
			d1[nd++] = tl(base_ns, bo->t1_ns) - t1;
			used = 1;
		}
		(void)used;
		i++;
	}
	return nd;
}

int align_torch_fit(const struct ringload *rl, const struct phase_set *ph, uint64_t base_ns,
		    const struct pyspy_profile *p, struct align_pyspy *a, struct em_error *e)
{
	memset(a, 0, sizeof *a);
	a->scale = 1;
	a->sample_period_s = NAN;
	a->prior_offset_s = NAN;
	a->resid_ms = a->resid_max_ms = NAN;
	snprintf(a->prior, sizeof a->prior, "none");
	if (!(a->thr = calloc(p->nthreads ? p->nthreads : 1, sizeof *a->thr))) {
		diag_error(e, -ENOMEM, NULL, "out of memory");
		return -ENOMEM;
	}
	a->nthr = p->nthreads;
	map_threads(rl, base_ns, p, a);
	if (!a->nmapped) {
		diag_error(e, -1, NULL, "no process of the torch.profiler trace is in the ring (was the traced script run "
					"under libanchor or with `import anchor`?)");
		align_pyspy_free(a);
		return -1;
	}
	int have_prior = prior(rl, base_ns, p, a);
	double *d0 = malloc((2 * p->nsamples + 2) * sizeof *d0), *d1 = d0 ? d0 + p->nsamples + 1 : NULL;
	if (!d0) {
		diag_error(e, -ENOMEM, NULL, "out of memory");
		align_pyspy_free(a);
		return -ENOMEM;
	}
	size_t nd = 0;
	double m0 = NAN, m1 = NAN, med = NAN;
	/* Twice: around the prior, then around the first estimate (a prior
	 * off by more than half a step pairs neighbours at first; most pairs
	 * are still right, so their medians are, and the second pass pairs
	 * all). */
	for (int pass = 0; have_prior && pass < 2; pass++) {
		nd = pair_ranges(ph, base_ns, p, a, pass ? med : a->prior_offset_s, d0, d1);
		if (!nd)
			break;
		qsort(d0, nd, sizeof *d0, cmp_d);
		qsort(d1, nd, sizeof *d1, cmp_d);
		m0 = d0[nd / 2];
		m1 = d1[nd / 2];
		med = (m0 + m1) / 2;
	}
	if (nd) {
		/* One range opens inside the other (Python enters one context
		 * manager, then the next), so starts and ends differ from the
		 * offset by the enter and exit lags, with opposite signs: the
		 * offset lies between the two medians.  Single pairs are off by
		 * much more now and then (measured: 76 ms once, the process
		 * preempted between the two enters on a loaded machine), so
		 * medians, not means, and the spread is the MAD of the middle
		 * of each side, not its worst. */
		double dev = 0, ss = 0, mad0, mad1;
		for (size_t i = 0; i < nd; i++) {
			double x = fabs(d0[i] - med) > fabs(d1[i] - med) ? fabs(d0[i] - med) : fabs(d1[i] - med);
			dev = x > dev ? x : dev;
			ss += (d0[i] - med) * (d0[i] - med) + (d1[i] - med) * (d1[i] - med);
		}
		for (size_t i = 0; i < nd; i++) {
			d0[i] = fabs(d0[i] - m0);
			d1[i] = fabs(d1[i] - m1);
		}
		qsort(d0, nd, sizeof *d0, cmp_d);
		qsort(d1, nd, sizeof *d1, cmp_d);
		mad0 = d0[nd / 2];
		mad1 = d1[nd / 2];
		/* half the lag between the medians, plus 3 sigma (1.4826 MAD)
		 * of the noisier side over sqrt(pairs): the medians' own error */
		double mad = mad0 > mad1 ? mad0 : mad1;
		a->offset_s = med;
		a->uncert_ms = (fabs(m1 - m0) / 2 + 3 * 1.4826 * mad / sqrt((double)nd)) * 1e3;
		a->resid_max_ms = dev * 1e3;
		a->resid_ms = sqrt(ss / (2.0 * (double)nd)) * 1e3;
		a->pulse_samples = nd; /* pairs used */
		snprintf(a->method, sizeof a->method, "record_function");
	} else if (have_prior) {
		a->offset_s = a->prior_offset_s;
		a->uncert_ms = TORCH_CLOCK_PRIOR_MS + rl->clock.max_bracket_us / 1e3;
		snprintf(a->method, sizeof a->method, "baseTime+sync");
	} else {
		free(d0);
		diag_error(e, -1, NULL, "the trace neither states its clock (no baseTimeNanoseconds, ts not unix time) nor "
					"has record_function ranges named as the ring's anchors: cannot place it");
		align_pyspy_free(a);
		return -1;
	}
	free(d0);
	for (uint32_t k = 0; k < p->nthreads; k++)
		a->thr[k].offset_s = a->offset_s;
	return 0;
}

void align_torch_describe(const struct align_pyspy *a, const struct pyspy_profile *p, char *buf, size_t cap)
{
	char extra[160] = "";
	if (!strcmp(a->method, "record_function"))
		snprintf(extra, sizeof extra, "; %zu record_function range(s) paired with anchors, rms %.3g ms, worst %.3g ms",
			 a->pulse_samples, a->resid_ms, a->resid_max_ms);
	snprintf(buf, cap, "torch.profiler trace: %s, offset %.6f s, uncertainty +-%.3g ms%s; %llu events "
			   "(%llu on devices); prior %s at %.6f s (%+.3g ms from the offset)",
		 a->method, a->offset_s, a->uncert_ms, extra, (unsigned long long)p->meta.torch_events,
		 (unsigned long long)p->meta.torch_device_events, a->prior, a->prior_offset_s,
		 (a->prior_offset_s - a->offset_s) * 1e3);
}
