/*
 * functions_csv.h - functions.csv: joules per Python function from py-spy
 * samples aligned with the ring (`functions` and `report` write it).
 *
 * Every sample gets the energy of its aligned slice (sample_energy.h:
 * overlapping samples split it, busy ones before idle ones).  A function
 * is (name, file): py-spy's line is the line running at the sample, so one
 * function has many; `line` is its line with the most self energy.
 *   self_j    energy of samples whose leaf is the function
 *   total_j   energy of samples with the function anywhere on the stack
 *             (counted once per stack, recursion or not)
 *   self_s    aligned time of those leaf samples
 *   samples   profile rows: samples (speedscope) or intervals of an
 *             unchanged stack (chrometrace)
 *   top_phase phase (innermost, on the sample's thread, else its process's
 *             primary thread) holding most of the function's total energy
 * Per device group columns follow when perun has more than one group.
 * With device-side edges in the ring (a GPU, issue 14) the GPU groups'
 * joules of a phase's device-side execution go to the samples of the
 * host-side occurrence that launched it (sample_energy.h states the rule);
 * CPU/DRAM stay on the samples' own slices.  OUT.alignment.txt says
 * which rule each group got.
 * Samples with an empty stack are the row "(no python frame)", so self_j
 * sums to the attributed energy.  The alignment, its uncertainty and the
 * energy nobody was sampled for go to OUT.alignment.txt.
 */
#ifndef ANCHORPOST_FUNCTIONS_CSV_H
#define ANCHORPOST_FUNCTIONS_CSV_H

#include "model/results.h"
#include "model/run_model.h"
#include "util/diag.h"

/* functions.csv (out NULL: stdout) + OUT.alignment.txt (stderr beside
 * stdout) and OUT.phases.csv (its phase powers from res, computed with
 * RESULTS_FUNCTIONS); the energy speedscope, stacks and samples files where
 * their paths are given; then the alignment's lines on stderr.  0, or a
 * negative errno with *e filled and none of the files left. */
int functions_csv_write(const struct run_model *rm, const struct run_results *res, const char *out, const char *ss_out,
			const char *stacks_out, const char *samples_out, struct em_error *e);

#endif
