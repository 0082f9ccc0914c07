/*
 * phase_table.h - joules, seconds and watts per phase and device group: the
 * numbers behind `anchorpost phases` (phases.csv and its terminal table),
 * shared with `report` (the table, the bar chart).  It formats a scope the
 * results stage attributed (model/phase_results.h); it attributes nothing.
 */
#ifndef ANCHORPOST_PHASE_TABLE_H
#define ANCHORPOST_PHASE_TABLE_H

#include <stdint.h>
#include <stdio.h>

#include "model/energy_model.h"
#include "model/phase_results.h"
#include "model/results.h"
#include "output/csv.h"

/* phases.csv: the header row. */
void phase_table_csv_header(struct csv *c);

/* phases.csv rows of one scope; the readable table too when tty != NULL.
 * Returns 0, or a negative errno with *e filled. */
int phase_table_write_scope(struct csv *c, const struct energy_model *m, const struct phase_scope *sr, FILE *tty,
			    struct em_error *e);

/* The flags cell phases.csv holds for row k (a phase; nnames: unattributed)
 * in group g of the scope, for the other places its number is shown (the
 * bar chart).  0 (buf "" when the row has no occurrence), or -ENOMEM. */
int phase_table_flags_text(const struct energy_model *m, const struct phase_scope *sr, size_t k, size_t g, char *buf,
			   size_t cap);

/* Every scope: "all", then one per process with phases when by_process
 * (res computed with RESULTS_PROCS).  0, or a negative errno with *e
 * filled. */
int phase_table_write(struct csv *c, const struct energy_model *m, const struct run_results *res, int by_process,
		      FILE *tty, struct em_error *e);

#endif
