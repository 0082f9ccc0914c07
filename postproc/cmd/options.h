/*
 * options.h - one option table per subcommand, one parser for all of them.
 *
 * Modelled on perf's parse-options (tools/lib/subcmd): a command lists its
 * options as an array of struct option ending in OPT_END(); the options
 * several commands share (the alignment and attribution knobs) are macros
 * below, so they are written, defaulted and range-checked in one place.
 * From the same table come `CMD --help`, the one-line usage errors and the
 * bash completion (`anchorpost --completion bash`, which asks every
 * command for `--list-opts`).
 *
 * The command line convention (README "Command line"):
 *   - inputs are flags (--ring, --perun, --profile) in every command; the
 *     positional form still works where it did (info RING, samples PROFILE);
 *   - -o FILE names an output file, -d DIR an output directory; "-o -" is
 *     the CSV on stdout and nothing else there (tables go to stderr);
 *   - --name VALUE and --name=VALUE both work; "--" ends the options;
 *   - -h/--help prints the help on stdout, exit 0; a usage error is one
 *     line on stderr, exit 2; a runtime error one line, exit 1.
 */
#ifndef ANCHORPOST_OPTIONS_H
#define ANCHORPOST_OPTIONS_H

#include <stddef.h>
#include <stdio.h>

#include "attrib/sensor_model.h"
#include "util/tunables.h"

enum opt_type {
	OPT_END_,
	OPT_BOOL_,     /* int *, set to 1 */
	OPT_STRING_,   /* const char **, the argument itself */
	OPT_DOUBLE_,   /* double *, in [min, max] */
	OPT_LONG_,     /* long *, integral, in [min, max] */
	OPT_UINT_,     /* unsigned *, integral, in [min, max] */
	OPT_CHOICE_,   /* int *, the value of the named choice */
	OPT_CALLBACK_, /* cb(opt, arg): for repeatable options */
};

struct opt_choice {
	const char *name;
	int value;
	const char *help; /* one line, shown under the option; may be NULL */
};

struct option;
struct em_error;
/* Return 0, or -1 after writing a reason (no option name) to e->msg:
 * the project's one error carrier (util/diag.h), file NULL. */
typedef int (*opt_cb)(const struct option *opt, const char *arg, struct em_error *e);

struct option {
	enum opt_type type;
	int short_name;          /* 'o', or 0 */
	const char *long_name;   /* "fit-range", or NULL */
	void *value;
	const char *argh;        /* the value's name in help: FILE, DIR, S ... ;
				  * completion offers directories for DIR, files
				  * for other FILE-like names */
	const char *help;        /* NULL: accepted but not listed (an old alias) */
	double min, max;         /* numbers: the accepted range */
	double def;              /* numbers: stored before parsing when has_def */
	int has_def;
	const struct opt_choice *choices; /* OPT_CHOICE_: ends with {NULL} */
	opt_cb cb;
};

#define OPT_END() {.type = OPT_END_}
#define OPT_BOOL(s, l, v, h) {.type = OPT_BOOL_, .short_name = (s), .long_name = (l), .value = (v), .help = (h)}
#define OPT_STRING(s, l, v, a, h) \
	{.type = OPT_STRING_, .short_name = (s), .long_name = (l), .value = (v), .argh = (a), .help = (h)}
/* A number with its range and default (the default is stored before
 * parsing and printed in the help). */
#define OPT_DOUBLE(s, l, v, a, lo, hi, d, h)                                                                   \
	{.type = OPT_DOUBLE_, .short_name = (s), .long_name = (l), .value = (v), .argh = (a), .help = (h),    \
	 .min = (lo), .max = (hi), .def = (d), .has_def = 1}
#define OPT_LONG(s, l, v, a, lo, hi, d, h)                                                                     \
	{.type = OPT_LONG_, .short_name = (s), .long_name = (l), .value = (v), .argh = (a), .help = (h),      \
	 .min = (lo), .max = (hi), .def = (d), .has_def = 1}
#define OPT_UINT(s, l, v, a, lo, hi, d, h)                                                                     \
	{.type = OPT_UINT_, .short_name = (s), .long_name = (l), .value = (v), .argh = (a), .help = (h),      \
	 .min = (lo), .max = (hi), .def = (d), .has_def = 1}
#define OPT_CHOICE(s, l, v, a, c, h) \
	{.type = OPT_CHOICE_, .short_name = (s), .long_name = (l), .value = (v), .argh = (a), .help = (h), .choices = (c)}
#define OPT_CALLBACK(s, l, v, a, f, h) \
	{.type = OPT_CALLBACK_, .short_name = (s), .long_name = (l), .value = (v), .argh = (a), .help = (h), .cb = (f)}

/* The attribution method `--method` chooses (phases, report, MPI). */
extern const struct opt_choice opt_method_choices[];

/* Shared by every command that aligns a ring with a perun file
 * (phases, functions, timeline, report): eo is a struct em_opts *. */
#define OPTS_PERUN_SELECT(eo)                                                                                   \
	OPT_STRING(0, "run", &(eo)->run, "ID", "perun multirun (default: the last)"),                          \
	OPT_LONG(0, "round", &(eo)->round, "N", 0, 1e6, 0, "perun round"),                                      \
	OPT_STRING(0, "host", &(eo)->host, "NAME", "perun host (default: the ring's)"),                        \
	OPT_STRING(0, "tz", &(eo)->tz, "+HH:MM", "zone of perun's execution_dt (default: this machine's)")
#define OPTS_ALIGN(eo)                                                                                          \
	OPT_DOUBLE(0, "fit-range", &(eo)->fit_range_s, "S", 0, ANCHOR_FIT_RANGE_MAX_S, ANCHOR_FIT_RANGE_S,     \
		   "offset search around the execution_dt estimate, s"),                                       \
	OPT_BOOL(0, "no-fit", &(eo)->no_fit, "keep the execution_dt estimate")
/* eo: a struct em_opts * or struct mring_opts *: align as if perun's stamps were
 * absent, to see what the fallback alignment would have said. */
#define OPT_NO_HOOK(eo) OPT_BOOL(0, "no-hook", &(eo)->no_hook, "ignore perun's sample stamps in the ring (shows the fallback)")
/* method: an enum attrib_choice *; ao: a struct attrib_opts *. */
#define OPTS_ATTRIB(method, ao)                                                                                 \
	OPT_CHOICE(0, "method", (method), "M", opt_method_choices, "how joules are attributed [auto]"),      \
	OPT_UINT(0, "boot", &(ao)->n_boot, "N", 1, 1e6, ANCHOR_BOOT_RESAMPLES,                                 \
		 "bootstrap resamples for regress intervals"),                                                  \
	OPT_DOUBLE(0, "gpu-window", &sensor_model_window_override_s, "S", -1, 60, -1,                         \
		   "GPU power reads = mean over S s before each (-1: by GPU model, sensor_model.c)"),           \
	OPT_DOUBLE(0, "gpu-coverage", &sensor_model_coverage_override, "F", -1, 1, -1,                        \
		   "fraction of that window the GPU samples (-1: by GPU model)"),                              \
	OPT_GPU_GAIN
/* The board's gain from an external meter (sensor_model.h). */
#define OPT_GPU_GAIN                                                                                            \
	OPT_DOUBLE(0, "gpu-gain", &sensor_model_gpu_gain, "G", -1, 10, -1,                                    \
		   "GPU gain from an external meter (reported/true): joules divided by it, no +-5 % floor")

/* What the help and the usage errors say about a command. */
struct cmd_usage {
	const char *name;  /* "phases" */
	const char *usage; /* after "usage: anchorpost NAME ", one or more lines */
	const char *about; /* one or more lines under the usage; may be NULL */
	const char *more;  /* printed after the options; may be NULL */
};

enum {
	/* Stop at the first non-option (record: the rest is the command). */
	OPTS_STOP_AT_NON_OPTION = 1,
};

/*
 * Parse argv[1..argc-1] against opts.  Numbers get their defaults first.
 * -h/--help prints the help to stdout and exits 0; --list-opts prints the
 * completion data and exits 0; a usage error prints one line and exits 2.
 * The arguments that are not options are moved, in order, to argv[1..n];
 * returns n.  argv[0] is left alone.
 */
int options_parse(int argc, char **argv, const struct option *opts, const struct cmd_usage *u, unsigned flags);

/* The one input of a command that takes it as a flag (--ring R) or, as it
 * always did, as its only positional argument (info R): argv/npos as
 * options_parse left them.  A usage error when missing or given twice. */
const char *options_input(const struct cmd_usage *u, int npos, char **argv, const char *flag_val,
			  const char *flag);

/* Print the help of a command to fp. */
void options_help(FILE *fp, const struct option *opts, const struct cmd_usage *u);

/* "anchorpost: NAME: <msg> (see 'anchorpost NAME --help')" and exit 2. */
void options_usage_error(const struct cmd_usage *u, const char *fmt, ...)
	__attribute__((format(printf, 2, 3), noreturn));

/* Write a bash completion script for the commands names[0..n-1]; the
 * options of each come from running `anchorpost NAME --list-opts`
 * through list(name, fp) in a child process. */
int options_completion_bash(FILE *fp, const char *const *names, size_t n, int (*list)(const char *name));

#endif
