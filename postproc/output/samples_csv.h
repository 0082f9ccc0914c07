/*
 * samples_csv.h - samples.csv: py-spy's profile as one row per sample
 * (speedscope), per interval of an unchanged stack (chrometrace) or per
 * sample of each collapsed stack (raw), with the stacks, frames and threads
 * tables beside it; per frame with --by-frame.  `samples` and `report`
 * write it.  The columns: `anchorpost samples --help` and docs/report.md.
 */
#ifndef ANCHORPOST_SAMPLES_CSV_H
#define ANCHORPOST_SAMPLES_CSV_H

#include <stdint.h>

#include "align/align_pyspy.h"
#include "input/pyspy.h"
#include "input/ringload.h"
#include "util/diag.h"

/* `samples PROFILE --ring RING -o out` from a loaded profile aligned with
 * the ring (align_pyspy_fit: al, base_ns = the ring's first record):
 * t_s,unix_s per sample, OUT.alignment.txt and the stacks/frames/threads
 * companions when out is a file.  in and ring name the inputs.  0, or a
 * negative errno with *e filled and none of the files left. */
int samples_csv_write_ring(const struct pyspy_profile *p, const char *in, const struct ringload *rl,
			   const struct align_pyspy *al, uint64_t base_ns, const char *ring, const char *out,
			   int stack_text, struct em_error *e);

/* `samples PROFILE -o out`: reads in (format fmt) into *p (initialised by
 * the caller; its frames, threads and metadata stay for the caller) while
 * the rows stream out, then the companions.  0, or a negative errno with
 * *e filled (the profile's own parse error too) and no file left. */
int samples_csv_write(const char *in, enum pyspy_format fmt, struct pyspy_profile *p, const char *out, int stack_text,
		      struct em_error *e);

/* `samples --by-frame`: reads in into *p, aggregating per stack, then one
 * row per frame.  0, or a negative errno with *e filled. */
int samples_csv_write_by_frame(const char *in, enum pyspy_format fmt, struct pyspy_profile *p, const char *out,
			       struct em_error *e);

#endif
