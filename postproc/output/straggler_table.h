/*
 * straggler_table.h - the stragglers view of a distributed run (mring.h):
 * per step, which rank was slowest and how long the others waited.
 *
 * CSV, one row per (step, rank), steps matched by index (the k-th
 * occurrence of the step phase on each rank's primary thread):
 *   step, rank, host, t0_utc, t0_unix_ns, dur_ms, compute_ms, wait_ms, wait_j,
 *   slowest (1 for the rank with the most compute time: the one the others
 *   waited for), behind_ms (slowest's compute_ms minus this rank's), pid
 *   (rank empty for a training process without a rank variable)
 * wait = time inside collectives (MPI_*, dist.*) within the step; wait_j =
 * joules spent in those intervals at the collective phase's attributed
 * power on that rank's node, its node-split share (mring.c says why not a
 * slice of the power curve).  The terminal gets one line per rank.
 */
#ifndef ANCHORPOST_STRAGGLER_TABLE_H
#define ANCHORPOST_STRAGGLER_TABLE_H

#include <stdio.h>

#include "model/mring.h"
#include "output/csv.h"
#include "util/diag.h"

/* The CSV into c; the per-rank summary into tty (NULL: none), naming
 * shown (the CSV's path, NULL: none).  0, or -ENOMEM with *e filled. */
int straggler_table_write(const struct mring *m, struct csv *c, FILE *tty, const char *shown, struct em_error *e);

#endif
