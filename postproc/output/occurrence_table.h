/*
 * occurrence_table.h - occurrences.csv: one row per phase occurrence, on
 * the run's time base, so that pandas can join it with samples.csv,
 * perun.csv and timeline.csv on time (docs/report.md).
 *
 * Columns, rows sorted by start (then pid, tid, depth):
 *   pid, rank (empty without one), tid (empty on a device timeline),
 *   timeline   host | device (GPU-side edges, phase_set.h)
 *   phase, depth (0 = outermost on its thread), kind (range | mark)
 *   start_t_s, end_t_s         the run's timeline (timebase.h), 9 decimals
 *   start_unix_s, end_unix_s   the same instants in UTC
 *   duration_s   end - start (nested phases included)
 *   self_s       minus the ranges nested inside it
 *   flags        unclosed (closed at its process's end) | tool
 *   per device group G of the perun file: G_energy_j, G_ci95_low_j,
 *                G_ci95_high_j: joules from start to end where the data
 *                decide them (occ_energy.h), else empty
 *   energy_note  why a cell is empty ("" when every group has joules)
 */
#ifndef ANCHORPOST_OCCURRENCE_TABLE_H
#define ANCHORPOST_OCCURRENCE_TABLE_H

#include "model/energy_model.h"
#include "model/occ_energy.h"
#include "util/diag.h"

/* Write the table to path ("-": stdout), all or nothing (outfile.h).
 * 0, or a negative errno with *e naming path. */
int occurrence_table_write(const struct energy_model *m, const struct occ_energy *oe, const char *path,
			   struct em_error *e);

#endif
