/*
 * op_table.h - joules per operator of a torch.profiler trace (ops.csv):
 * aten ops, record_function ranges, module scopes and kernels, self and
 * total, each with a 95 % interval.
 *
 * Why not functions.csv's slice rule (sample_energy.h: each row gets the
 * sensor's energy over its own slice): an op lasts µs to ms, perun's
 * window 0.1 s and more, so the slice's energy is the window's average
 * power times the op's time, whatever the op's phase drew.  Here an op
 * gets, for each piece of its time, the power the phase attribution found
 * for the phase running then (phase_table.h: the fitted per-phase power of
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
#ifndef ANCHORPOST_OP_TABLE_H
#define ANCHORPOST_OP_TABLE_H

#include "attrib/attrib.h"
#include "model/run_model.h"
#include "util/diag.h"

#include "output/phase_table.h"

/* Write ops.csv for rm's (torch) profile to path (outfile rules), with the
 * powers of scope sr (the results stage's scope "all", results.h).  0, or
 * -errno with e set. */
int op_table_write(const struct run_model *rm, const struct phase_scope *sr, const char *path, struct em_error *e);

/* Each row's joules (all groups) by the same rule, into row_j
 * (rm->p.nsamples): what trace.json puts on the ops' slices.  0 or
 * -ENOMEM. */
int op_table_row_j(const struct run_model *rm, const struct phase_scope *sr, double *row_j);

#endif
