/*
 * function_phases.h - each Python function's joules per phase as an
 * interval that holds every placement the data allow (issue 21): the
 * functions.csv side file OUT.phases.csv (functions.phases.csv).
 *
 * functions.csv names one top_phase per function; where the alignment
 * could not place samples (CANNOT PLACE, or outside their process's life:
 * align_pyspy.unplaced) that single phase would be a point estimate in a
 * possibly wrong phase.  Here a row is (function, phase), every sample's
 * joules its time at the phase's power as `anchorpost phases` fits it for
 * the sample's process (a slice's own joules follow perun's windows, which
 * mix short phases; they are the fallback where no fit exists):
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
 * Counting error: n samples of a function inside a stretch estimate its
 * time to within about 2 sqrt(n) samples (95 %, a binomial share) plus
 * one at the stretch's edges; lo and hi are moved by that share.
 */
#ifndef ANCHORPOST_FUNCTION_PHASES_H
#define ANCHORPOST_FUNCTION_PHASES_H
#include <stddef.h>

#include "model/results.h"
#include "model/run_model.h"
#include "util/diag.h"

/* Write the table for rm (opened with a profile and a perun file) to path,
 * with the phase powers res holds (RESULTS_FUNCTIONS).
 * *n_unplaced gets the samples whose phase the interval leaves open.
 * 0, or a negative errno with *e filled. */
int function_phases_write(const struct run_model *rm, const struct run_results *res, const char *path,
			  size_t *n_unplaced, struct em_error *e);

/* The path of the side file of functions.csv path out (".csv" replaced by
 * ".phases.csv"), malloc'd; NULL out of memory. */
char *function_phases_path(const char *out);

#endif
