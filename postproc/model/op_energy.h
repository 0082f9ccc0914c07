/*
 * op_energy.h - joules per operator of a torch.profiler trace: aten ops,
 * record_function ranges, module scopes and kernels, self and total, each
 * with a 95 % interval (ops.csv, op_table.h), and each row's joules
 * (trace.json's slices); computed once by the results stage (results.h).
 *
 * Why not functions.csv's slice rule (sample_energy.h: each row gets the
 * sensor's energy over its own slice): an op lasts µs to ms, perun's
 * window 0.1 s and more, so the slice's energy is the window's average
 * power times the op's time, whatever the op's phase drew.  Here an op
 * gets, for each piece of its time, the power the phase attribution found
 * for the phase running then (phase_results.h: the fitted per-phase power of
 * the primary thread's exclusive timeline, the unattributed row's outside
 * every phase), and its interval from that power's interval.  So ops
 * inside a layer phase (anchor.torch.layers) carry that layer's power,
 * and the per-op split is only as fine as the phases: within one phase,
 * joules go by time.  An interval sums the bounds of the pieces (the
 * pieces of one phase share one power, whose error they share).
 *
 * Devices: where the trace has device rows (kernels, memcpy, memset),
 * device groups (gpu) are given to device rows on their device-side times
 * and host groups (cpu, ram) to host rows; without device rows every
 * group goes to the host rows.  A device op (a row whose stack is the op
 * alone) takes its device groups' joules from its own fit on the device's
 * busy time (device_op_fit.h), not from its phase's average power, which
 * mixes in the device's idle time inside the phase.  Rows that overlap on several threads (or
 * streams) each get the power of their own time, so where ops of two
 * threads ran at once their joules add up to more than was drawn: a
 * phase's power is the machine's, not a thread's.
 */
#ifndef ANCHORPOST_OP_ENERGY_H
#define ANCHORPOST_OP_ENERGY_H

#include <stddef.h>
#include <stdint.h>

#include "model/phase_results.h"
#include "model/run_model.h"

struct op_energy {
	size_t nf, np, ng;               /* frames (ops), phases, groups */
	double *self_s, *total_s;        /* nf */
	double *self_j, *self_lo, *self_hi; /* nf x ng */
	double *total_j, *total_lo, *total_hi;
	double *phase_s;                 /* nf x (np + 1): self seconds per phase */
	uint64_t *rows;                  /* nf: rows with it as leaf */
	uint64_t *stamp;                 /* nf: last row that counted it in total */
	double *row_j;                   /* per profile row (rm->p.nsamples): its joules, all groups */
};

/* Every op of rm's (torch) profile through the powers of scope sr (the
 * results stage's "all").  0, or a negative errno (nothing left to free). */
int op_energy_build(struct op_energy *g, const struct run_model *rm, const struct phase_scope *sr);

void op_energy_free(struct op_energy *g);

#endif
