/*
 * cmd_mpi.c - several rings at once (one per rank or host):
 *
 *   anchorpost phases --rings DIR|GLOB|FILE [--rings ...] [--perun P]
 *                     [--by-rank] [-o phases.csv] [--stragglers S.csv]
 *   anchorpost stragglers --rings ... [--perun P] [-o stragglers.csv]
 *
 * (`phases` comes here when given --rings, --by-rank or --ring twice.)
 *
 * The phases CSV and the terminal's blocks (all, per host, per rank, the
 * node split that shares a node's joules over its ranks) come from
 * output/rank_table.h, the stragglers CSV from output/straggler_table.h:
 * the same writers `report` uses on a distributed recording.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "anchors/ring_clock.h"
#include "cmd/cmd_fatal.h"
#include "cmd/commands.h"
#include "cmd/options.h"
#include "model/mring.h"
#include "model/sensor_glitch.h"
#include "output/rank_table.h"
#include "output/ranks_csv.h"
#include "util/diag.h"

#define MAX_INPUTS 4096

struct mpi_args {
	struct mring_opts o;
	const char *inputs[MAX_INPUTS];
	const char *out, *stragglers_out;
	int by_rank;
	long threads;
};

static const struct cmd_usage stragglers_usage = {
	.name = "stragglers",
	.usage = "--rings DIR|GLOB|RING [--rings ...] [--perun FILE.hdf5] [-o stragglers.csv] [options]",
	.about = "  per step: the slowest rank, the others' time waiting in collectives, its joules\n",
};
static const struct cmd_usage phases_mpi_usage = {
	.name = "phases",
	.usage = "--rings DIR|GLOB|RING [--rings ...] [--perun FILE.hdf5] [--by-rank] [-o phases.csv]\n"
		 "                         [--stragglers S.csv] [options]",
	.about = "  phases of many rings (ranks, hosts) on one UTC-based timeline\n",
};

/* --ring/--rings: one more input. */
static int add_input(const struct option *opt, const char *arg, struct em_error *e)
{
	struct mpi_args *a = opt->value;
	if (a->o.ninputs == MAX_INPUTS) {
		snprintf(e->msg, sizeof e->msg, "more than %d of them (use a directory or a glob)", MAX_INPUTS);
		return -1;
	}
	a->inputs[a->o.ninputs++] = arg;
	return 0;
}

/* `phases` options that mean several rings. */
int phases_wants_mpi(int argc, char **argv)
{
	int rings = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = NULL;
		if (!strcmp(a, "--"))
			break;
		if (!strcmp(a, "--rings") || !strncmp(a, "--rings=", 8) || !strcmp(a, "--by-rank") ||
		    !strcmp(a, "--stragglers") || !strncmp(a, "--stragglers=", 13))
			return 1;
		if (!strcmp(a, "--ring") && i + 1 < argc)
			v = argv[i + 1];
		else if (!strncmp(a, "--ring=", 7))
			v = a + 7;
		if (v) {
			struct stat st;
			rings++;
			if (strpbrk(v, "*?[") || (stat(v, &st) == 0 && S_ISDIR(st.st_mode)))
				return 1;
		}
	}
	return rings > 1;
}

static void parse(int argc, char **argv, struct mpi_args *a, int stragglers)
{
	const struct cmd_usage *u = stragglers ? &stragglers_usage : &phases_mpi_usage;
	const struct option opts[] = {
		OPT_CALLBACK(0, "rings", a, "DIR", add_input, "a ring, a directory of *.ring, or a glob (repeatable)"),
		OPT_CALLBACK(0, "ring", a, "RING", add_input, "the same as --rings"),
		OPT_STRING(0, "perun", &a->o.perun, "FILE", "perun's HDF5 output (none: times only)"),
		OPT_STRING('o', "out", &a->out, "FILE", "the CSV (default -: stdout; the tables then go to stderr)"),
		OPT_BOOL(0, "by-rank", &a->by_rank, "one block of rows per rank"),
		/* phases only: stragglers writes its table to -o. */
		OPT_STRING(0, "stragglers", &a->stragglers_out, "FILE", stragglers ? NULL : "also the stragglers CSV"),
		OPT_STRING(0, "step", &a->o.step, "NAME",
			   "the step phase (default: first of train_step, optimizer_step, optimizer.step, step, "
			   "iteration)"),
		OPTS_ATTRIB(&a->o.method, &a->o.ao),
		OPT_STRING(0, "run", &a->o.run, "ID", "perun multirun (default: the last)"),
		OPT_LONG(0, "round", &a->o.round, "N", 0, 1e6, 0, "perun round"),
		OPT_STRING(0, "tz", &a->o.tz, "+HH:MM", "zone of perun's execution_dt (default: this machine's)"),
		OPTS_ALIGN(&a->o),
		OPT_NO_HOOK(&a->o),
		OPT_LONG(0, "threads", &a->threads, "N", 1, 1024, 2, "rings loaded in parallel"),
		OPT_END(),
	};
	memset(a, 0, sizeof *a);
	a->o.inputs = a->inputs;
	if (options_parse(argc, argv, opts, u, 0))
		options_usage_error(u, "unexpected argument '%s'", argv[1]);
	if (stragglers && a->stragglers_out)
		options_usage_error(u, "unknown option '--stragglers'");
	a->o.threads = (int)a->threads;
	if (a->out && !strcmp(a->out, "-"))
		a->out = NULL;
	if (!a->o.ninputs)
		options_usage_error(u, "needs --rings (or --ring)");
}

static void report_resources(FILE *tty, const struct timespec *t0)
{
	struct timespec t1;
	struct rusage ru;
	if (!getenv("ANCHORPOST_STATS"))
		return;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	getrusage(RUSAGE_SELF, &ru);
	fprintf(tty, "anchorpost: %.3f s wall, %.3f s cpu, peak RSS %.1f MB\n",
		(double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9,
		(double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
			(double)ru.ru_stime.tv_usec / 1e6,
		(double)ru.ru_maxrss / 1024.0);
}

/* One CSV (path NULL: stdout) and, for the phases, where it went. */
static void write_csv(const char *path, const struct mring *m, FILE *tty, const struct mpi_args *a, int stragglers)
{
	struct em_error e;
	if (stragglers ? ranks_csv_write_stragglers(m, path, tty, &e) : ranks_csv_write_phases(m, path, tty, a->by_rank, &e))
		diag_fatal(e.file, "%s", e.msg);
	if (!stragglers && path && tty)
		fprintf(tty, "\nwrote %s\n", path);
}

static int run(int argc, char **argv, int stragglers)
{
	struct mpi_args a;
	struct mring m;
	struct em_error e;
	struct timespec t0;
	FILE *tty;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	parse(argc, argv, &a, stragglers);
	if (mring_open(&m, &a.o, &e))
		diag_fatal(e.file, "%s", e.msg); /* e.file may be m's: printed before any close */
	tty = a.out ? stdout : stderr;
	rank_table_print_ranks(tty, &m);
	if (!m.nunits)
		diag_fatal(NULL, "no ring holds a training process with phases");
	if (m.have_perun) {
		size_t nsen = 0;
		for (size_t h = 0; h < m.nhosts; h++)
			nsen += m.hosts[h].nsen;
		if (!nsen)
			diag_warn(a.o.perun, "the file holds no power sensors (psutil only: no RAPL or GPU was "
					     "readable), so no energy can be attributed; reporting times only");
		/* Impossible readings were repaired (sensor_glitch.h); these
		 * tables have no flags column, so say it here. */
		for (size_t h = 0; h < m.nhosts; h++)
			for (size_t s = 0; s < m.hosts[h].nsen; s++)
				if (m.hosts[h].sen[s].fix.g.nbad) {
					char line[512];
					sensor_glitch_describe(m.hosts[h].sen[s].ps, &m.hosts[h].sen[s].fix, line,
							       sizeof line);
					diag_warn(a.o.perun, "host %s %s; every energy of that host's ranks over "
							     "that time includes the repair", m.hosts[h].ph->name, line);
				}
	}
	if (stragglers) {
		write_csv(a.out, &m, tty, &a, 1);
	} else {
		write_csv(a.out, &m, tty, &a, 0);
		if (a.stragglers_out)
			write_csv(a.stragglers_out, &m, tty, &a, 1);
	}
	report_resources(tty, &t0);
	mring_close(&m);
	return 0;
}

int cmd_phases_mpi(int argc, char **argv)
{
	return run(argc, argv, 0);
}

int cmd_stragglers(int argc, char **argv)
{
	return run(argc, argv, 1);
}
