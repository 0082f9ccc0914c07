/*
 * phases_csv.h - phases.csv and the readable per-phase table: what
 * `phases`, `anchorpost` alone and `report` write (phase_table.h holds the
 * rows, counter_table.h the ring's own counters after them), over what the
 * results stage computed (model/results.h).
 */
#ifndef ANCHORPOST_PHASES_CSV_H
#define ANCHORPOST_PHASES_CSV_H

#include <stdio.h>

#include "model/energy_model.h"
#include "output/phase_table.h"
#include "util/diag.h"

/* phases.csv to out (NULL: stdout, the table then to stderr, else to
 * stdout followed by "wrote OUT"): every scope of phase_table_write, then
 * the ms counters (res computed with RESULTS_COUNTERS).
 * 0, or a negative errno with *e filled and no file left. */
int phases_csv_write(const struct energy_model *m, const struct run_results *res, const char *out, int by_process,
		     struct em_error *e);

/* report's phases.csv at path: scope *all and the ring's ms counters,
 * the readable table into *table (malloc'd; the caller prints it after
 * the run).  0, or a negative errno with *e filled and no file left. */
int phases_csv_write_scope(const struct energy_model *m, const struct run_results *res, const char *path,
			   char **table, struct em_error *e);

/* report's phases.csv without joules: every scope's times, per process
 * too (without joules the times are all there is); the table into *table
 * as above. */
int phases_csv_write_times(const struct energy_model *m, const struct run_results *res, const char *path,
			   char **table, struct em_error *e);

#endif
