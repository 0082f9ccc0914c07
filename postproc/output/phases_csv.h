/*
 * phases_csv.h - phases.csv and the readable per-phase table: what
 * `phases`, `anchorpost` alone and `report` write (phase_table.h holds the
 * rows, counter_table.h the ring's own counters after them).
 */
#ifndef ANCHORPOST_PHASES_CSV_H
#define ANCHORPOST_PHASES_CSV_H

#include <stdio.h>

#include "model/energy_model.h"
#include "util/diag.h"

/* phases.csv to out (NULL: stdout, the table then to stderr, else to
 * stdout followed by "wrote OUT"): every scope of phase_table_write.
 * 0, or a negative errno with *e filled and no file left. */
int phases_csv_write(const struct energy_model *m, const char *out, enum attrib_choice method,
		     const struct attrib_opts *ao, int by_process, struct em_error *e);

#endif
