/*
 * ranks_csv.h - the files of a run of several ranks (one ring per rank,
 * one ring of several ranks, or several training processes): phases.csv
 * with a scope per host and rank (rank_table.h), stragglers.csv
 * (straggler_table.h) and ranks.csv; `phases --rings`, `stragglers`,
 * `anchorpost` alone and `report` write them.
 */
#ifndef ANCHORPOST_RANKS_CSV_H
#define ANCHORPOST_RANKS_CSV_H

#include <stddef.h>
#include <stdio.h>

#include "model/mring.h"
#include "util/diag.h"

/* Beyond this many ranks the terminal shows only the "all" scope
 * (`report`, `anchorpost` alone, `phases --rings`): 16 blocks of a dozen
 * rows is what a terminal can still be read in; the CSV has them all. */
#define RANKS_TTY_MAX 16

/* The per-scope phases CSV to path (NULL: stdout): "all", then with
 * by_rank every host and rank; the readable blocks into tty (NULL: none),
 * per host and rank up to RANKS_TTY_MAX ranks.  0, or a negative errno
 * with *e filled and no file left. */
int ranks_csv_write_phases(const struct mring *mr, const char *path, FILE *tty, int by_rank, struct em_error *e);

/* stragglers.csv to path (NULL: stdout); the per-rank summary into tty
 * (NULL: none), naming path.  0, or a negative errno with *e filled. */
int ranks_csv_write_stragglers(const struct mring *mr, const char *path, FILE *tty, struct em_error *e);

/* `report`'s and `anchorpost`'s: the ranks table into tty, phases.csv
 * (every scope), stragglers.csv, ranks.csv at the paths given (NULL: not
 * written), the stragglers' summary, and for a Slurm job Slurm's own
 * accounting beside perun's.  0, or a negative errno with *e filled. */
int ranks_csv_write_all(const struct mring *mr, const char *phases, const char *stragglers, const char *ranks,
			FILE *tty, struct em_error *e);

#endif
