/*
 * cmd_phases.c - `anchorpost phases --ring R --perun P [-o phases.csv]`:
 * joules, seconds and watts per phase and device group.
 *
 * One CSV row per (scope, phase, device_group), then "(unattributed)" (time
 * inside perun's span outside every phase) and "(total)", which equals
 * perun's energy over the span.  Columns:
 *   scope              "all", or a pid with --by-process
 *   phase, device_group
 *   count, total_s     occurrences and their summed duration (inclusive),
 *                      over every thread in the scope
 *   self_s             exclusive time on the attributed (primary) thread
 *   mean_ms p50_ms p95_ms  per-occurrence duration
 *   energy_j           exclusive (self) energy
 *   mean_power_w       energy_j / self_s
 *   share              energy_j / the group's total over the span
 *   ci95_low_j ci95_high_j
 *   incl_energy_j      inclusive energy (nested phases included)
 *   method             split | integrate | regress (| off-primary: time only)
 *   flags              unidentifiable, at-zero, ...
 *   alignment align_uncert_ms sensor_note
 * Energy is attributed on one thread's exclusive timeline per scope (the
 * thread with the most phase time): whole-machine power is explained by
 * what that thread was doing.  Phases only seen on other threads get their
 * time statistics and no joules.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/cmd_fatal.h"
#include "cmd/commands.h"
#include "cmd/no_energy_note.h"
#include "cmd/options.h"
#include "cmd/report_ranks.h"
#include "cmd/run_warnings.h"
#include "input/run_find.h"
#include "model/energy_model.h"
#include "model/results.h"
#include "output/occurrences_csv.h"
#include "output/phase_table.h"
#include "output/phases_csv.h"
#include "output/ranks_csv.h"
#include "util/diag.h"

static const struct cmd_usage phases_usage = {
	.name = "phases",
	.usage = "--ring RING [--perun FILE.hdf5] [-o phases.csv] [options]",
	.about = "  joules per phase and device group, with 95% intervals and the method used\n"
		 "  (-o -: the CSV on stdout, the table on stderr); without --perun the phases'\n"
		 "  times (count, total, mean, p50, p95) per process, and why there is no perun file\n",
	.more = "  several rings: 'anchorpost phases --rings x --help' and docs/mpi.md\n",
};

/* phases.csv over the results stage: scope all (this perun file's run
 * when the ring holds several), the processes with by_process, the ms
 * counters; or occurrences.csv. */
static int write_phases(const struct energy_model *m, enum attrib_choice method, const struct attrib_opts *ao,
			const char *out, int by_process, int occurrences, struct em_error *e)
{
	struct results_opts ro = {.method = method, .ao = ao, .all_pid = energy_model_own_pid(m),
				  .what = occurrences ? RESULTS_OCCURRENCES
				  : RESULTS_ALL | RESULTS_COUNTERS | (by_process ? RESULTS_PROCS : 0u)};
	struct run_results res;
	int rc = results_compute(&res, m, NULL, &ro, e);
	if (!rc)
		rc = occurrences ? occurrences_csv_write(m, &res, out, out ? stdout : stderr, e)
				 : phases_csv_write(m, &res, out, by_process, e);
	results_free(&res);
	return rc;
}

int cmd_phases(int argc, char **argv)
{
	struct em_opts o = {0};
	struct attrib_opts ao = {0};
	const char *out = NULL, *unused = NULL;
	enum attrib_choice method = ATTRIB_CHOICE_AUTO;
	int by_process = 0, unused_flag = 0, occurrences = 0;
	struct energy_model m;
	struct em_error e;
	const struct option opts[] = {
		OPT_STRING(0, "ring", &o.ring, "RING", "the ring (anchor_*.ring)"),
		OPT_STRING(0, "perun", &o.perun, "FILE", "perun's HDF5 output (without it: times only)"),
		OPT_STRING('o', "out", &out, "FILE", "the CSV (default -: stdout; the table then goes to stderr)"),
		OPT_BOOL(0, "by-process", &by_process, "also one block of rows per process"),
		OPT_BOOL(0, "occurrences", &occurrences, "write occurrences.csv instead of phases.csv: one row per "
							  "phase occurrence, its times and joules (docs/report.md)"),
		OPTS_ATTRIB(&method, &ao),
		OPTS_PERUN_SELECT(&o),
		OPTS_ALIGN(&o),
		OPT_NO_HOOK(&o),
		/* Listed for --help and completion; phases_wants_mpi hands them
		 * to cmd_mpi.c before this table is parsed. */
		OPT_STRING(0, "rings", &unused, "DIR", "several rings: a directory, glob or ring (repeatable)"),
		OPT_BOOL(0, "by-rank", &unused_flag, "several rings: one block per rank"),
		OPT_STRING(0, "stragglers", &unused, "FILE", "several rings: also the stragglers CSV"),
		OPT_END(),
	};

	/* Several rings, --by-rank, --stragglers: the multi-ring model. */
	if (phases_wants_mpi(argc, argv))
		return cmd_phases_mpi(argc, argv);
	if (options_parse(argc, argv, opts, &phases_usage, 0))
		options_usage_error(&phases_usage, "unexpected argument '%s'", argv[1]);
	if (!o.ring)
		options_usage_error(&phases_usage, "needs --ring (and --perun for joules)");
	if (energy_model_open(&m, &o, &e))
		run_open_fatal(&o, &e);
	/* Without perun: every phase's times, per process too. */
	if (m.times_only) {
		no_energy_note(&m, "no --perun given");
		by_process = 1;
	}
	run_warnings(&m, &o);
	if (out && !strcmp(out, "-"))
		out = NULL;
	if (write_phases(&m, method, &ao, out, by_process, occurrences, &e))
		diag_fatal(e.file, "%s", e.msg);
	energy_model_close(&m);
	return 0;
}

/* `anchorpost` alone: the run in this directory (run_find.h), its table
 * and phases.csv, with the defaults of `phases`; a distributed run (several
 * rings, or a ring of several ranks) also every host's and rank's, and
 * stragglers.csv and ranks.csv (report_ranks.h). */
int cmd_here(void)
{
	/* The defaults of `phases`' option table. */
	struct em_opts o = {.fit_range_s = ANCHOR_FIT_RANGE_S};
	struct attrib_opts ao = {.n_boot = ANCHOR_BOOT_RESAMPLES};
	struct run_files f;
	struct energy_model m;
	struct em_error e;
	int rc;

	rc = run_find(".", &f, &e);
	if (rc == -ENOENT && !f.ring && !f.perun)
		return -1; /* no run here at all: the caller's usage */
	/* A ring without a perun file is a run too: its phase times. */
	if (rc && !(rc == -ENOENT && f.ring)) {
		fprintf(stderr, "anchorpost: %s\n", e.msg);
		run_find_free(&f);
		return 2;
	}
	o.ring = f.ring;
	o.perun = f.perun;
	if (f.nrings > 1)
		printf("run in this directory: %zu rings (%s ...), perun %s\n", f.nrings, f.ring, f.perun ? f.perun : "none");
	else
		printf("run in this directory: ring %s, perun %s\n", f.ring, f.perun ? f.perun : "none");
	if (report_ranks_wanted(f.nrings, NULL)) {
		struct mring mr;
		if (!f.perun)
			no_energy_note_ring(f.ring, PHASES_NO_PERUN_HERE);
		report_ranks_open(&mr, (const char *const *)f.rings, f.nrings, &o, ATTRIB_CHOICE_AUTO, &ao);
		if (ranks_csv_write_all(&mr, "phases.csv", "stragglers.csv", "ranks.csv", stdout, &e))
			diag_fatal(e.file, "%s", e.msg);
		printf("\nwrote phases.csv, stragglers.csv, ranks.csv\n");
		mring_close(&mr);
		run_find_free(&f);
		return 0;
	}
	if (energy_model_open(&m, &o, &e))
		run_open_fatal(&o, &e);
	if (m.times_only)
		no_energy_note(&m, PHASES_NO_PERUN_HERE);
	run_warnings(&m, &o);
	if (report_ranks_wanted(1, &m)) {
		struct mring mr;
		const char *one[1] = {f.ring};
		energy_model_close(&m);
		report_ranks_open(&mr, one, 1, &o, ATTRIB_CHOICE_AUTO, &ao);
		if (ranks_csv_write_all(&mr, "phases.csv", "stragglers.csv", "ranks.csv", stdout, &e))
			diag_fatal(e.file, "%s", e.msg);
		printf("\nwrote phases.csv, stragglers.csv, ranks.csv\n");
		mring_close(&mr);
		run_find_free(&f);
		return 0;
	}
	if (write_phases(&m, ATTRIB_CHOICE_AUTO, &ao, "phases.csv", m.times_only, 0, &e))
		diag_fatal(e.file, "%s", e.msg);
	energy_model_close(&m);
	run_find_free(&f);
	return 0;
}
