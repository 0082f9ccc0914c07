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

#include "model/sample_times.h"
#include "util/diag.h"

/* `samples PROFILE --ring RING -o out` from a loaded profile aligned with
 * the ring (st: model/sample_times.h): t_s,unix_s per sample,
 * OUT.alignment.txt and the stacks/frames/threads companions when out is a
 * file.  in and ring name the inputs.  0, or a negative errno with *e
 * filled and none of the files left. */
int samples_csv_write_ring(const struct pyspy_profile *p, const char *in, const struct sample_times *st,
			   const char *ring, const char *out, int stack_text, struct em_error *e);

/* `samples PROFILE -o out` while the profile streams in (the caller reads
 * it: pyspy_read with samples_csv_stream_sample as its callback and the
 * stream as its context), then the companions: open, read, close with the
 * reader's outcome (read_rc 0, or its error and message).  The rows wait
 * in the stream's temp file, so a profile that fails to parse leaves
 * nothing.  Each returns 0, or a negative errno with *e (open's) filled;
 * close frees the stream and leaves no file on an error. */
struct samples_stream;
int samples_csv_stream_open(struct samples_stream **ss, const char *in, const char *out, int stack_text,
			    struct em_error *e);
int samples_csv_stream_sample(void *ctx, const struct pyspy_profile *p, const struct pyspy_sample_ev *s,
			      struct em_error *err);
int samples_csv_stream_close(struct samples_stream *ss, const struct pyspy_profile *p, int read_rc,
			     const struct em_error *read_err);

/* `samples --by-frame`: the same, aggregating per stack while the profile
 * streams in, then one row per frame at close. */
struct frames_stream;
int samples_csv_frames_open(struct frames_stream **fs, struct em_error *e);
int samples_csv_frames_sample(void *ctx, const struct pyspy_profile *p, const struct pyspy_sample_ev *s,
			      struct em_error *err);
int samples_csv_frames_close(struct frames_stream *fs, const struct pyspy_profile *p, const char *in, const char *out,
			     int read_rc, const struct em_error *read_err, struct em_error *e);

#endif
