/*
 * cmd_writers.h - each command's writer over an opened run (run_model.h),
 * called by the command itself after its options and by `report`, which
 * opens the run once and writes everything from it.  Each returns the
 * command's exit status; errors are one line (diag.h).
 */
#ifndef ANCHORPOST_CMD_WRITERS_H
#define ANCHORPOST_CMD_WRITERS_H

#include <stdint.h>
#include <stdio.h>

#include "input/perun.h"
#include "input/ringload.h"
#include "model/run_model.h"

/* `samples PROFILE --ring RING -o out` from a loaded profile aligned with
 * the ring (align_pyspy_fit: al, base_ns = the ring's first record):
 * t_s,unix_s per sample, OUT.alignment.txt and the stacks/frames/threads
 * companions when out is a file. */
int samples_write_ring(const struct pyspy_profile *p, const char *in, const struct ringload *rl,
		       const struct align_pyspy *al, uint64_t base_ns, const char *ring, const char *out,
		       int stack_text);

#endif
