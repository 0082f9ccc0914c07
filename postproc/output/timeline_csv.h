/*
 * timeline_csv.h - timeline.csv: fixed time bins on the ring's timeline,
 * as a long (tidy) table: one row per bin, process with phases and perun
 * device group (`timeline` and `report` write it).
 *
 * Columns (the same names for every run):
 *   t_s        bin start, seconds since the ring's first record
 *   unix_s     the same instant in UTC (ring SYNC records, timebase.h)
 *   pid        a process with phases (0 when no process has any)
 *   phase      innermost phase on that process's primary thread at the
 *              bin's midpoint ("" outside every phase)
 *   group      perun device group ("" when perun has no power sensor)
 *   power_w    mean power of the group over the part of the bin perun
 *              covers (empty where it covers none); the group's, so it
 *              repeats on every pid's row of the bin
 *   top_frame  with a profile: the leaf frame sampled for the most time
 *              in the bin, phase threads first (top_frames())
 *   flags      sensor-glitch where the bin's power holds a repaired reading
 * Bins run from the earlier of the ring's and perun's start to the later
 * of their ends.  Alignment methods and uncertainties: OUT.alignment.txt.
 */
#ifndef ANCHORPOST_TIMELINE_CSV_H
#define ANCHORPOST_TIMELINE_CSV_H

#include "model/run_model.h"
#include "util/diag.h"

/* timeline.csv (out NULL: stdout, the alignment note then to stderr) in
 * bins of bin_s, and OUT.alignment.txt.  0, or a negative errno with *e
 * filled and no file left. */
int timeline_csv_write(const struct run_model *rm, const char *out, double bin_s, struct em_error *e);

#endif
