/*
 * run_find.h - find a run's files in a directory: what `anchorpost` with
 * no arguments and `anchorpost report DIR` read.
 *
 * A run directory is what `anchorpost record` writes (run.ring,
 * perun/NAME.hdf5, profile.FORMAT.json), what a distributed job writes
 * with ANCHOR_FILE=DIR/run-%h-%r.ring (one ring per rank, docs/mpi.md), or
 * the same made by hand: one or more rings (*.ring), one perun file
 * (*.hdf5 or *.h5, in DIR, DIR/perun/ or DIR/perun_results/, perun's
 * default --data_out), and optionally one py-spy profile
 * (*.speedscope.json, *.chrometrace.json, profile*.json, profile*.txt).
 * A JSON profile anchorpost wrote itself (the energy profile: its
 * exporter, pyspy.h PYSPY_ENERGY_EXPORTER) is no candidate, whatever its
 * name; it is listed in skipped.  Several rings are the ranks of one run
 * (but two rings with one creator process and creation instant are a
 * copy, refused); several perun files or profiles are not guessed
 * between.
 */
#ifndef ANCHORPOST_RUN_FIND_H
#define ANCHORPOST_RUN_FIND_H

#include <stddef.h>

#include "util/diag.h"

struct run_files {
	char *ring, *perun, *profile; /* NULL: none found; ring: the first by name */
	char **rings;                 /* every ring, sorted by name (ring is rings[0]) */
	size_t nrings;
	char **skipped;               /* profiles anchorpost wrote, not taken */
	size_t nskipped;
};

/* Look in dir.  Returns 0 with ring(s) and perun set (profile if one is
 * there); -ENOENT when a ring or perun file is missing (both missing:
 * *f all NULL); -EEXIST when there are several perun files or profiles,
 * or a ring and its copy, *e naming them; -ENOMEM.  *e gets one line
 * either way, file NULL (the caller names dir). */
int run_find(const char *dir, struct run_files *f, struct em_error *e);

void run_find_free(struct run_files *f);

#endif
