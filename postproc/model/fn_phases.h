/*
 * fn_phases.h - each Python function's joules per phase as an interval
 * that holds every placement the data allow (issue 21), computed once by
 * the results stage (results.h) for functions.phases.csv
 * (output/function_phases.h writes it).
 *
 * functions.csv names one top_phase per function; where the alignment
 * could not place samples (CANNOT PLACE, or outside their process's life:
 * align_pyspy.unplaced) that single phase would be a point estimate in a
 * possibly wrong phase.  Here a row is (function, phase), every sample's
 * joules its time at the phase's power as `anchorpost phases` fits it for
 * the sample's process (a slice's own joules follow perun's windows, which
 * mix short phases; they are the fallback where no fit exists): lo_j is
 * what is there for sure, hi_j adds every unplaced sample that could lie
 * in that phase at its upper power (output/function_phases.h, the
 * columns).
 * Counting error: n samples of a function inside a stretch estimate its
 * time to within about 2 sqrt(n) samples (95 %, a binomial share) plus
 * one at the stretch's edges; lo and hi are moved by that share.
 */
#ifndef ANCHORPOST_FN_PHASES_H
#define ANCHORPOST_FN_PHASES_H

#include <stddef.h>
#include <stdint.h>

#include "model/run_model.h"
#include "util/diag.h"

struct run_results;

struct fn_phase_row {
	size_t fn;                 /* the function (run model's ids; nfn: no Python frame) */
	const char *name, *file;   /* its name and file (file NULL: none) */
	int phase;                 /* index into the phase set's names */
	double lo_j, hi_j, placed_j;
	uint64_t n_placed, n_un;   /* placed and unplaced samples behind it */
};

struct fn_phases {
	struct fn_phase_row *rows; /* by hi_j, highest first */
	size_t nrows;
	size_t n_unplaced;         /* samples whose phase the interval leaves open */
};

/* The rows for rm (opened with a profile and a perun file), with the
 * processes' phase powers res holds.  0, or a negative errno with *e
 * filled (out still to be freed). */
int fn_phases_build(struct fn_phases *out, const struct run_model *rm, const struct run_results *res,
		    struct em_error *e);

void fn_phases_free(struct fn_phases *fp);

#endif
