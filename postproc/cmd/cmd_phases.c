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

#include "commands.h"
#include "csv.h"
#include "cmd_writers.h"
#include "diag.h"
#include "energy_model.h"
#include "outfile.h"
#include "phase_table.h"
#include "run_find.h"

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: anchorpost phases --ring RING --perun FILE.hdf5 [-o phases.csv] [options]\n"
		"  joules per phase and device group, with 95%% intervals and the method used\n"
		"  --method M         how joules are attributed  [auto]\n"
		"       auto       split where the sensor gives window energies (RAPL),\n"
		"                  else perphase (NVML reads)\n"
		"       split      each window's measured energy, split among its phases by\n"
		"                  time share x NNLS-fitted power (rows add up exactly)\n"
		"       perphase   integrate phases >= 5 sensor periods, regress shorter ones\n"
		"       integrate  cumulative energy between phase edges\n"
		"       regress    NNLS power per phase x phase time\n"
		"  --by-process       also one block of rows per process\n"
		"  --run ID           perun multirun (default: the last)\n"
		"  --round N          perun round (default 0)\n"
		"  --host NAME        perun host (default: the ring's)\n"
		"  --tz +HH:MM        zone of perun's execution_dt (default: this machine's)\n"
		"  --fit-range S      offset search around the execution_dt estimate [3]\n"
		"  --no-fit           keep the execution_dt estimate\n"
		"  --boot N           bootstrap resamples for regress intervals [200]\n"
		"  several rings (MPI ranks, hosts): --rings DIR|GLOB, --by-rank, --stragglers FILE\n"
		"                     ('anchorpost phases --rings x --help', docs/mpi.md)\n");
}

void phases_write(const struct energy_model *m, const char *out, int method, const struct attrib_opts *ao,
		  int by_process)
{
	struct outfile of;
	struct csv c;
	FILE *tty;
	struct em_error e;
	outfile_open(&of, out ? out : "-");
	csv_init(&c, of.fp);
	phase_table_csv_header(&c);
	/* The readable table goes to stdout unless the CSV does. */
	tty = out ? stdout : stderr;
	if (phase_table_write(&c, m, method, ao, by_process, tty, &e))
		diag_fatal(e.file, "%s", e.msg);
	outfile_commit(&of);
	if (out)
		fprintf(tty, "\nwrote %s\n", out);
}

int cmd_phases(int argc, char **argv)
{
	struct em_opts o = {0};
	struct attrib_opts ao = {0};
	const char *out = NULL;
	int method = 0, by_process = 0, n;
	struct energy_model m;
	struct em_error e;

	/* Several rings, --by-rank, --stragglers: the multi-ring model. */
	if (phases_wants_mpi(argc, argv))
		return cmd_phases_mpi(argc, argv);
	phase_table_defaults(&o);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "--by-process")) {
			by_process = 1;
		} else if ((n = phase_table_option(argc, argv, i, &o, &ao, &method)) > 0) {
			i += n - 1;
		} else if (!v) {
			usage(stderr);
			diag_fatal(NULL, "phases: '%s' needs a value", a);
		} else if (!strcmp(a, "--ring")) {
			o.ring = v, i++;
		} else if (!strcmp(a, "--perun")) {
			o.perun = v, i++;
		} else if (!strcmp(a, "-o")) {
			out = v, i++;
		} else {
			usage(stderr);
			diag_fatal(NULL, "phases: unknown option '%s'", a);
		}
	}
	if (!o.ring || !o.perun) {
		usage(stderr);
		return 2;
	}
	if (energy_model_open(&m, &o, &e))
		diag_fatal(e.file, "%s", e.msg);
	phase_table_warn(&m, &o);
	phases_write(&m, out, method, &ao, by_process);
	energy_model_close(&m);
	return 0;
}

/* `anchorpost` alone: the run in this directory (run_find.h), its table
 * and phases.csv, with the defaults of `phases`. */
int cmd_here(void)
{
	struct em_opts o = {0};
	struct attrib_opts ao = {0};
	struct run_files f;
	struct energy_model m;
	struct em_error e;
	char err[2048];
	int rc;

	phase_table_defaults(&o);
	rc = run_find(".", &f, err, sizeof err);
	if (rc == -ENOENT && !f.ring && !f.perun)
		return -1; /* no run here at all: the caller's usage */
	if (rc) {
		fprintf(stderr, "anchorpost: %s\n", err);
		run_find_free(&f);
		return 2;
	}
	o.ring = f.ring;
	o.perun = f.perun;
	printf("run in this directory: ring %s, perun %s\n", f.ring, f.perun);
	if (energy_model_open(&m, &o, &e))
		diag_fatal(e.file, "%s", e.msg);
	phase_table_warn(&m, &o);
	phases_write(&m, "phases.csv", 0, &ao, 0);
	energy_model_close(&m);
	run_find_free(&f);
	return 0;
}
