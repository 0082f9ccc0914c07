/*
 * sample_times.c - samples.csv's view of the alignment (see sample_times.h).
 */
#include "model/sample_times.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/timebase.h"

/* The ring's tid (chrometrace) and THREAD name of each mapped thread. */
static int thread_names(struct sample_times *st, const struct ringload *rl, const struct pyspy_profile *p,
			const struct align_pyspy *al)
{
	for (uint32_t k = 0; k < p->nthreads && k < al->nthr; k++) {
		const struct align_pyspy_thread *at = &al->thr[k];
		st->ring_pid[k] = at->ring_pid;
		if (!at->ring_tid)
			continue;
		if (p->meta.format == PYSPY_FMT_CHROMETRACE && asprintf(&st->tid_text[k], "%u", at->ring_tid) < 0) {
			st->tid_text[k] = NULL;
			return -ENOMEM;
		}
		if (p->threads[k].thread_name && p->threads[k].thread_name[0])
			continue;
		for (size_t i = 0; i < rl->rf.nev; i++) {
			const struct ring_event *e = &rl->rf.ev[i];
			if (e->kind == ANCHOR_KIND_THREAD && e->pid == at->ring_pid && e->tid == at->ring_tid &&
			    e->text && e->text[0]) {
				if (!(st->name_text[k] = strdup(e->text)))
					return -ENOMEM;
				break;
			}
		}
	}
	return 0;
}

int sample_times_build(struct sample_times *st, const struct pyspy_profile *p, const struct ringload *rl,
		       const struct align_pyspy *al, uint64_t base_ns)
{
	size_t n = p->nsamples;
	memset(st, 0, sizeof *st);
	st->n = n;
	st->nthr = p->nthreads;
	st->clk = &rl->clock;
	st->base_ns = base_ns;
	st->uncert_ms = al->uncert_ms;
	snprintf(st->method, sizeof st->method, "%s", al->method);
	align_pyspy_describe(al, p, st->align_text, sizeof st->align_text);
	timebase_iso(timebase_unix_ns(&rl->clock, base_ns), st->base_iso, sizeof st->base_iso);
	st->t0_s = malloc((n ? n : 1) * sizeof *st->t0_s);
	st->t_s = malloc((n ? n : 1) * sizeof *st->t_s);
	st->placed = malloc(n ? n : 1);
	st->ring_pid = calloc(st->nthr + 1, sizeof *st->ring_pid);
	st->tid_text = calloc(st->nthr + 1, sizeof *st->tid_text);
	st->name_text = calloc(st->nthr + 1, sizeof *st->name_text);
	if (!st->t0_s || !st->t_s || !st->placed || !st->ring_pid || !st->tid_text || !st->name_text)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		double t1;
		align_pyspy_slice(al, p, i, &st->t0_s[i], &t1);
		st->t_s[i] = align_pyspy_time(al, p->samples[i].thread, p->samples[i].t_rel_s);
		st->placed[i] = !(al->unplaced && al->unplaced[i]);
	}
	return thread_names(st, rl, p, al);
}

void sample_times_free(struct sample_times *st)
{
	for (uint32_t k = 0; k < st->nthr; k++) {
		if (st->tid_text)
			free(st->tid_text[k]);
		if (st->name_text)
			free(st->name_text[k]);
	}
	free(st->t0_s);
	free(st->t_s);
	free(st->placed);
	free(st->ring_pid);
	free(st->tid_text);
	free(st->name_text);
	memset(st, 0, sizeof *st);
}
