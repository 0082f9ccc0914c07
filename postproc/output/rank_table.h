/*
 * rank_table.h - the per-rank view of a distributed run (mring.h): who ran,
 * and joules per phase over all ranks, per host and per rank.  What
 * `phases --rings --by-rank`, `report` and `anchorpost` alone print and
 * write for a run of several ranks, from one writer.
 *
 * phases CSV, one row per (scope, phase, device_group):
 *   scope        all | host | rank | process (a training process without a
 *                rank variable: a shell script's Python processes)
 *   host, rank   empty for "all"; rank empty for "host" and "process"
 *   row          phase | unattributed | total
 *   phase, device_group, count, total_s, self_s, mean_ms, p50_ms, p95_ms
 *   energy_j, mean_power_w (energy_j / self_s), share (of the scope's total)
 *   ci95_low_j, ci95_high_j
 *   method       split | integrate | regress | mixed; perun for totals;
 *                not-attributed for the tools' own activity
 *   flags        the attribution's and the power checks' (phase_flags.h),
 *                tool for the tools' own activity
 *   alignment, align_uncert_ms, sensor_note
 *   node_energy_j  rank rows: the node's joules while this rank was in
 *                the phase, before the node split (mring.h)
 *   node_share   rank rows: the split factor c (1: alone on its node)
 *   pid          rank and process rows: the process
 * Rank (and process) rows carry the rank's share of its node (the node split, its rule
 * in mring.h and in the table's closing line); a host's rows are the sums
 * of its ranks', "all" the sums of the hosts'.  Counts and times add up
 * over the scope's ranks; quantiles only in one-rank scopes.  Intervals
 * of sums are the sums of the bounds (conservative).  A rank's (total) is
 * its share by the rule: no interval (a rule, not an estimate).
 */
#ifndef ANCHORPOST_RANK_TABLE_H
#define ANCHORPOST_RANK_TABLE_H

#include <stdio.h>

#include "model/mring.h"
#include "output/csv.h"
#include "util/diag.h"

/* The ranks table (rank, host, pid, the rank's variable, steps, time in
 * collectives, lifetime, exit status), the Slurm job when the ranks are
 * Slurm tasks, and each host aligned without perun's stamps. */
void rank_table_print_ranks(FILE *tty, const struct mring *m);

/* The phases CSV (header and rows): "all", then with by_rank every host
 * and every rank; the readable blocks into tty (NULL: none), hosts and
 * ranks only up to max_tty_units ranks (the CSV has them all).  0, or a
 * negative errno with *e filled. */
int rank_table_write(const struct mring *m, struct csv *c, FILE *tty, int by_rank, size_t max_tty_units,
		     struct em_error *e);

/* ranks.csv: one row per rank: rank, host, pid, rank_from (the variable),
 * slurm_procid, slurm_job_id, slurm_step_id, status, first_s, last_s,
 * steps, coll_s, and per device group its joules (node split) as
 * energy_j_GROUP. */
void rank_table_write_ranks_csv(const struct mring *m, struct csv *c);

/* Slurm's ConsumedEnergy beside perun's total and their ratio; where it
 * cannot be read, that it is not configured and what sacct / scontrol
 * said. */
void rank_table_print_acct(FILE *tty, const struct mring *m, const struct slurm_acct *a);

#endif
