/*
 * report_ranks.h - the per-rank part of `report DIR` and of `anchorpost`
 * alone, for a recording of several ranks (one ring per rank, or one ring
 * holding every rank, or several training processes without ranks): the
 * tables over all ranks, per host and per rank (output/rank_table.h), the
 * stragglers (output/straggler_table.h), ranks.csv and, for a Slurm job,
 * Slurm's own energy accounting beside perun's.
 */
#ifndef ANCHORPOST_REPORT_RANKS_H
#define ANCHORPOST_REPORT_RANKS_H

#include <stdio.h>

#include "model/energy_model.h"
#include "model/mring.h"

/* 1 when the run has several rings, or one ring with several training
 * processes (m: that ring opened; NULL with several rings). */
int report_ranks_wanted(size_t nrings, const struct energy_model *m);

/* Open the per-rank model over the rings (exits with the one-line error). */
void report_ranks_open(struct mring *mr, const char *const *rings, size_t nrings, const struct em_opts *o,
		       enum attrib_choice method, const struct attrib_opts *ao);

#endif
