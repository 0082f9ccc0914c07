/*
 * op_table.h - joules per operator of a torch.profiler trace (ops.csv):
 * aten ops, record_function ranges, module scopes and kernels, self and
 * total, each with a 95 % interval.
 *
 * The rule (each op's pieces of time at the power the phase attribution
 * found for the phase running then) is model/op_energy.h's; this file
 * writes the rows.
 */
#ifndef ANCHORPOST_OP_TABLE_H
#define ANCHORPOST_OP_TABLE_H

#include "model/op_energy.h"
#include "model/run_model.h"
#include "util/diag.h"

/* Write ops.csv for rm's (torch) profile to path (outfile rules) from
 * ops (the results stage's, RESULTS_OPS).  0, or -errno with e set. */
int op_table_write(const struct run_model *rm, const struct op_energy *ops, const char *path, struct em_error *e);

#endif
