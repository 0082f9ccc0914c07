/*
 * function_phases.h - each Python function's joules per phase as an
 * interval that holds every placement the data allow (issue 21): the
 * functions.csv side file OUT.phases.csv (functions.phases.csv).
 *
 * The rows are the results stage's (model/fn_phases.h says how they are
 * computed); the columns:
 *   lo_j      its samples placed in that phase at the 95 % interval's
 *             lower power, less their counting error: what is there for
 *             sure
 *   hi_j      the same at the upper power, plus every unplaced sample of
 *             it that could lie in that phase (its stack's SITE label set
 *             when it has one, else any phase of its thread) at that
 *             phase's upper power, with the counting error on top
 *   placed_j  the placed samples at the fitted power (no counting error)
 *   placed_samples, unplaced_samples  the samples behind each part
 *   decided   1 when no unplaced sample could lie in that phase
 */
#ifndef ANCHORPOST_FUNCTION_PHASES_H
#define ANCHORPOST_FUNCTION_PHASES_H
#include <stddef.h>

#include "model/results.h"
#include "model/run_model.h"
#include "util/diag.h"

/* Write res's rows (RESULTS_FUNCTIONS) for rm to path.  0, or a negative
 * errno with *e filled. */
int function_phases_write(const struct run_model *rm, const struct run_results *res, const char *path,
			  struct em_error *e);

/* The path of the side file of functions.csv path out (".csv" replaced by
 * ".phases.csv"), malloc'd; NULL out of memory. */
char *function_phases_path(const char *out);

#endif
