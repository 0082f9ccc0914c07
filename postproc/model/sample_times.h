/*
 * sample_times.h - what samples.csv's --ring columns need from the ring and
 * the alignment, computed once before the rows are written: each sample's
 * aligned slice start and own instant, whether it is placed, each profile
 * thread's ring pid, tid and name, and the time base to UTC.
 */
#ifndef ANCHORPOST_SAMPLE_TIMES_H
#define ANCHORPOST_SAMPLE_TIMES_H

#include <stddef.h>
#include <stdint.h>

#include "align/align_pyspy.h"
#include "input/pyspy.h"
#include "input/ringload.h"

struct sample_times {
	size_t n;                   /* p->nsamples */
	double *t0_s, *t_s;         /* the aligned slice's start, the sample's own instant (timeline s) */
	uint8_t *placed;            /* 0: its phase cannot be named (CANNOT PLACE, outside its process) */
	double uncert_ms;           /* the placement's stated uncertainty */
	uint32_t nthr;              /* p->nthreads */
	uint32_t *ring_pid;         /* per thread: the ring's pid (0 none) */
	char **tid_text;            /* per thread: the ring's tid for chrometrace (its pthread ids are no tids), or NULL */
	char **name_text;           /* per thread: the ring's THREAD name where py-spy has none, or NULL */
	const struct ring_clock *clk; /* the ring's SYNC records (model/timebase.h) */
	uint64_t base_ns;           /* timeline zero */
	char method[48];            /* the alignment's method */
	char align_text[3072];      /* the alignment in one line */
	char base_iso[48];          /* base_ns in UTC */
};

/* From p aligned with rl by al (align_profile_fit).  0 or -ENOMEM
 * (st still to be freed). */
int sample_times_build(struct sample_times *st, const struct pyspy_profile *p, const struct ringload *rl,
		       const struct align_pyspy *al, uint64_t base_ns);

void sample_times_free(struct sample_times *st);

#endif
