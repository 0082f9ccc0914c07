/*
 * results.h - the results stage: after the run is loaded and aligned, every
 * attribution the writers show is computed here, once, into plain tables;
 * the writers (output/) only read them and format (issue 27).
 *
 * What it holds, each computed only when asked for (RESULTS_*):
 *   all      (RESULTS_ALL) scope "all": the run's primary thread against every sensor
 *            (phase_results.h); phases.csv, the table, the pictures,
 *            trace.json and ops.csv all read this one
 *   proc     one scope per process: every process with phases
 *            (RESULTS_PROCS: phases --by-process, times-only phases.csv),
 *            or the processes py-spy's samples are in (RESULTS_FUNCTIONS:
 *            functions.phases.csv's phase powers); ring order
 *   fn_energy (RESULTS_FUNCTIONS) each function's joules, self, total
 *            and per phase, from the samples' energies (fn_energy.h)
 *   fn_phases (RESULTS_FUNCTIONS) each function's joules per phase over
 *            every placement the data allow (fn_phases.h)
 *   counters (RESULTS_COUNTERS) the ring's ms counters per phase
 *            (counter_results.h)
 *   ops      (RESULTS_OPS) a torch.profiler trace's joules per operator
 *            and per row through scope all's powers (op_energy.h):
 *            ops.csv and trace.json's slices
 *   occ      (RESULTS_OCCURRENCES) every phase occurrence's joules where
 *            the data decide them (occ_energy.h): occurrences.csv
 *
 * One attribution per (scope, sensor): a process whose primary thread and
 * device timeline are those of scope "all" (a one-process run) takes a
 * copy of all's rows instead of a second pass (model/attrib_count.h is the
 * hook that counts the passes).  Every scope is attributed by the one
 * method and options the command was given.
 */
#ifndef ANCHORPOST_RESULTS_H
#define ANCHORPOST_RESULTS_H

#include <stddef.h>
#include <stdint.h>

#include "model/counter_results.h"
#include "model/fn_energy.h"
#include "model/fn_phases.h"
#include "model/occ_energy.h"
#include "model/op_energy.h"
#include "model/phase_results.h"
#include "model/run_model.h"

enum {
	RESULTS_ALL = 1u << 3,       /* scope "all": an attribution error is the command's */
	RESULTS_PROCS = 1u << 0,     /* every process: an attribution error is the command's */
	RESULTS_FUNCTIONS = 1u << 1, /* the samples' processes: one that cannot be attributed has none */
	RESULTS_COUNTERS = 1u << 2,  /* the ring's ms counters */
	RESULTS_OCCURRENCES = 1u << 4, /* every occurrence's joules */
	RESULTS_OPS = 1u << 5,       /* a torch trace's ops through scope all (with RESULTS_ALL) */
};

struct results_opts {
	enum attrib_choice method;
	const struct attrib_opts *ao; /* NULL: the defaults */
	uint32_t all_pid;             /* scope "all"'s pid: 0, or one run's among several (phases) */
	int all_no_energy;            /* scope "all" gets times only (report: too few windows for the lead rank) */
	unsigned what;                /* RESULTS_* */
};

struct proc_result {
	uint32_t pid;
	int ok;                       /* 0: no primary thread, or (RESULTS_FUNCTIONS) too few windows */
	struct phase_scope sr;
};

struct run_results {
	struct phase_scope all;
	struct proc_result *proc;
	size_t nproc;
	struct counter_results counters; /* .n_counters == 0: none in the ring, or not asked */
	struct occ_energy occ;           /* not asked: nocc 0 */
	struct op_energy ops;            /* not asked, or no torch trace: row_j NULL */
	struct fn_energy fn_energy;      /* RESULTS_FUNCTIONS: each function's joules, self and total */
	struct fn_phases fn_phases;      /* RESULTS_FUNCTIONS: each function's joules per phase */
};

/* Compute what o->what asks over m (and rm's profile for
 * RESULTS_FUNCTIONS; rm may be NULL otherwise).  0, or a negative errno
 * with *e filled (res still to be freed). */
int results_compute(struct run_results *res, const struct energy_model *m, const struct run_model *rm,
		    const struct results_opts *o, struct em_error *e);

void results_free(struct run_results *res);

/* The scope of process pid, NULL when it has none (no primary thread, not
 * asked for, or too few perun windows). */
const struct phase_scope *results_proc(const struct run_results *res, uint32_t pid);

#endif
