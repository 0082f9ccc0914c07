/*
 * main.c - anchorpost: read anchor rings, py-spy profiles and perun HDF5,
 * align their clocks and attribute energy.  Dispatches to one file per
 * subcommand (commands.h).
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "anchors/ring_format.h"
#include "cmd/cmd_fatal.h"
#include "model/attrib_count.h"
#include "cmd/commands.h"
#include "cmd/options.h"
#include "anchor_version.h"
#include "util/diag.h"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
	/* Outputs renamed into place as each is finished, not all together
	 * when the command returns (outfile_hold): record's launcher script
	 * runs while record is still working. */
	int commit_each;
};

static const struct command commands[] = {
	{"info", cmd_info, "RING: header, processes, time span, record counts", 0},
	{"dump", cmd_dump, "RING [-o FILE.csv]: one CSV row per event", 0},
	{"perun", cmd_perun, "FILE.hdf5 [-o FILE.csv] [--run ID] [--regions]: perun data as long CSV", 0},
	{"phases", cmd_phases, "--ring R [--perun P] [-o phases.csv] [--occurrences]: joules (or times) per phase (--rings: MPI)", 0},
	{"stragglers", cmd_stragglers, "--rings DIR|GLOB [--perun P]: per step, slowest rank, waits, joules", 0},
	{"functions", cmd_functions, "--ring R --perun P --profile S [-o functions.csv]: joules per function", 0},
	{"timeline", cmd_timeline, "--ring R --perun P [--profile S] [--bin 0.1]: power, phases, top frame per bin", 0},
	{"sensors", cmd_sensors, "RING [-o FILE.csv]: GPU power sensor period/window and joules per phase, from the run", 0},
	{"samples", cmd_samples, "PROFILE [-o FILE.csv]: py-spy speedscope/chrometrace/raw to CSV", 0},
	{"record", cmd_record, "[-o DIR] -- python SCRIPT.py ...: run under perun + py-spy + libanchor", 1},
	{"report", cmd_report, "DIR | --ring R [--perun P] [--profile S] -d OUTDIR: all outputs, pictures, trace, table", 0},
	{NULL, NULL, NULL, 0},
};

static void usage(FILE *fp)
{
	fprintf(fp, "usage: anchorpost COMMAND [ARGS]\n\ncommands:\n");
	for (const struct command *c = commands; c->name; c++)
		fprintf(fp, "  %-10s %s\n", c->name, c->summary);
	fprintf(fp, "\n'anchorpost' alone in a run directory: its phase table and phases.csv;\n"
		    "'anchorpost COMMAND --help' shows a command's options;\n"
		    "'anchorpost --version' prints the version;\n"
		    "'anchorpost --completion bash' prints the bash completion script.\n");
}

/* `anchorpost NAME --list-opts` in the completion writer's child. */
static int list_opts(const char *name)
{
	char *argv[] = {(char *)name, "--list-opts", NULL};
	for (const struct command *c = commands; c->name; c++)
		if (!strcmp(c->name, name))
			return c->fn(2, argv);
	return 1;
}

static int completion(void)
{
	const char *names[sizeof commands / sizeof *commands];
	size_t n = 0;
	for (const struct command *c = commands; c->name; c++)
		names[n++] = c->name;
	if (options_completion_bash(stdout, names, n, list_opts))
		diag_fatal(NULL, "--completion: could not list the commands' options");
	return 0;
}

static void on_xfsz(int sig)
{
	(void)sig; /* the write that raised it returns EFBIG: outfile.c reports it */
}

/* `ulimit -f`: a write past the limit raises SIGXFSZ, whose default action
 * kills the process without a word and leaves its temp files.  Caught, the
 * write fails with EFBIG and the output's error path says so in one line
 * and removes the temp.  A handler rather than SIG_IGN because exec resets
 * a handler: `record`'s children (the script, perun, py-spy) keep the
 * disposition they would have had without us.  One the caller chose
 * (`trap '' XFSZ`) is kept. */
static void catch_xfsz(void)
{
	struct sigaction cur, sa;
	if (sigaction(SIGXFSZ, NULL, &cur) != 0 || cur.sa_handler != SIG_DFL || (cur.sa_flags & SA_SIGINFO))
		return;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_xfsz;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	sigaction(SIGXFSZ, &sa, NULL);
}

int main(int argc, char **argv)
{
	catch_xfsz();
	if (argc < 2) {
		int rc;
		outfile_hold();
		rc = cmd_here();
		attrib_count_print(stderr);
		outfile_commit_held();
		outfile_abort_all(); /* nothing is left open by a command that succeeded */
		if (rc >= 0)
			return rc;
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
		printf("anchorpost %s (ring format %d.%d)\n", ANCHOR_VERSION, ANCHOR_RING_VERSION_MAJOR,
		       ANCHOR_RING_VERSION_MINOR);
		return 0;
	}
	if (!strcmp(argv[1], "--completion")) {
		if (argc != 3 || strcmp(argv[2], "bash")) {
			fprintf(stderr, "anchorpost: --completion takes one argument: bash\n");
			return 2;
		}
		return completion();
	}
	for (const struct command *c = commands; c->name; c++) {
		int rc;
		if (strcmp(c->name, argv[1]))
			continue;
		/* A command's outputs (FILE and its side files) appear all
		 * together when it returns, or none when it fails (diag_fatal
		 * and cmd_error remove the held temps). */
		if (!c->commit_each)
			outfile_hold();
		rc = c->fn(argc - 1, argv + 1);
		attrib_count_print(stderr);
		outfile_commit_held();
		/* An output a command did not commit is not its result: remove
		 * it here, in the open, rather than in an exit handler. */
		outfile_abort_all();
		return rc;
	}
	fprintf(stderr, "anchorpost: unknown command '%s' (try 'anchorpost --help')\n", argv[1]);
	return 2;
}
