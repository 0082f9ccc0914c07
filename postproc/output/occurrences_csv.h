/*
 * occurrences_csv.h - occurrences.csv: one row per phase occurrence, its
 * times and, where the data decide them, its joules (occ_energy.h builds
 * them in the results stage, occurrence_table.h writes the rows); `phases --occurrences` and
 * `report` write it.
 */
#ifndef ANCHORPOST_OCCURRENCES_CSV_H
#define ANCHORPOST_OCCURRENCES_CSV_H

#include <stdio.h>

#include "model/energy_model.h"
#include "model/results.h"
#include "util/diag.h"

/* occurrences.csv of res (RESULTS_OCCURRENCES) to out (NULL: stdout); a line saying how many into tty
 * (NULL: none).  0, or a negative errno with *e filled and no file left. */
int occurrences_csv_write(const struct energy_model *m, const struct run_results *res, const char *out, FILE *tty,
			  struct em_error *e);

#endif
