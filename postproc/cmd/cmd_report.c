/*
 * cmd_report.c - `anchorpost report --ring R --perun P [--profile S] -d OUTDIR`:
 * everything in one go.
 *
 * Writes into OUTDIR: phases.csv (as `phases`), perun.csv (+ .energy.csv,
 * as `perun`), timeline.csv (as `timeline`); with a profile samples.csv
 * (as `samples --ring`), functions.csv + energy.speedscope.json (as
 * `functions`); timeline.svg/.png and phases.svg/.png (plot.h), trace.json
 * (trace_json.h, py-spy placed by align_pyspy.h); then prints the
 * per-phase table with both alignments' quality and the list of files.
 * The ring and perun file are loaded and aligned once (energy_model.h);
 * the other commands' outputs come from their own entry points so that
 * report and the single commands cannot disagree.  Every output is all-or-nothing (outfile.h); a failure stops
 * the report with one line, leaving the files already finished.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "align_pyspy.h"
#include "commands.h"
#include "counter_table.h"
#include "csv.h"
#include "diag.h"
#include "energy_model.h"
#include "options.h"
#include "outfile.h"
#include "phase_table.h"
#include "plot.h"
#include "pyspy.h"
#include "sample_energy.h"
#include "trace_json.h"

struct report {
	const char *dir;
	char *fwd[16];     /* perun/alignment options for functions, timeline */
	int nfwd;
	char **files;      /* written, in order, for the closing list */
	size_t nfiles;
	int progress;      /* stderr is a terminal */
	struct timespec t_start;
};

static const struct cmd_usage report_usage = {
	.name = "report",
	.usage = "--ring RING --perun FILE.hdf5 [--profile PYSPY] -d OUTDIR [options]",
	.about = "  everything in one go: phases.csv, perun.csv, timeline.csv, with --profile also\n"
		 "  samples.csv, functions.csv and energy.speedscope.json; timeline.svg/.png,\n"
		 "  phases.svg/.png, trace.json (Chrome/Perfetto); then the per-phase table with\n"
		 "  the alignment quality and the list of files\n",
};

static const struct opt_choice stack_choices[] = {
	{"phases", 0, "of processes with phases"},
	{"all", 1, "of every sampled process"},
	{"none", 2, NULL},
	{NULL, 0, NULL},
};

/* The perun and alignment options functions and timeline take (not the
 * attribution ones: they split each sample's slice), from their values. */
static void forward_options(struct report *r, const struct em_opts *o)
{
	static char round_s[32], fit_s[40];
	snprintf(round_s, sizeof round_s, "%ld", o->round);
	snprintf(fit_s, sizeof fit_s, "%.17g", o->fit_range_s);
	const char *kv[][2] = {{"--run", o->run}, {"--round", o->round ? round_s : NULL}, {"--host", o->host},
			       {"--tz", o->tz}, {"--fit-range", fit_s}};
	for (size_t k = 0; k < sizeof kv / sizeof *kv; k++)
		if (kv[k][1]) {
			r->fwd[r->nfwd++] = (char *)kv[k][0];
			r->fwd[r->nfwd++] = (char *)kv[k][1];
		}
	if (o->no_fit)
		r->fwd[r->nfwd++] = "--no-fit";
	if (o->no_hook)
		r->fwd[r->nfwd++] = "--no-hook";
}

static double elapsed_s(const struct report *r)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - r->t_start.tv_sec) + (double)(now.tv_nsec - r->t_start.tv_nsec) / 1e9;
}

static void progress(const struct report *r, const char *what)
{
	if (r->progress)
		fprintf(stderr, "report: [%6.1f s] %s\n", elapsed_s(r), what);
}

static char *out_path(struct report *r, const char *name)
{
	char *p, **nf;
	if (asprintf(&p, "%s/%s", r->dir, name) < 0)
		diag_fatal(NULL, "out of memory");
	nf = realloc(r->files, (r->nfiles + 1) * sizeof *nf);
	if (!nf)
		diag_fatal(NULL, "out of memory");
	r->files = nf;
	r->files[r->nfiles++] = p;
	return p;
}

static void mkdir_p(const char *dir)
{
	char *d = strdup(dir);
	if (!d)
		diag_fatal(NULL, "out of memory");
	for (char *s = d + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = '\0';
		if (mkdir(d, 0777) && errno != EEXIST)
			diag_fatal(d, "cannot create directory: %s", strerror(errno));
		*s = '/';
	}
	if (mkdir(d, 0777) && errno != EEXIST)
		diag_fatal(d, "cannot create directory: %s", strerror(errno));
	free(d);
}

/* Run another command's entry point with its stdout (tables meant for a
 * person running it alone) silenced: report prints its own summary. */
static int run_quiet(int (*fn)(int, char **), char **argv)
{
	int argc = 0, saved, devnull, rc;
	while (argv[argc])
		argc++;
	fflush(stdout);
	saved = dup(STDOUT_FILENO);
	devnull = open("/dev/null", O_WRONLY);
	if (saved < 0 || devnull < 0)
		diag_fatal(NULL, "cannot redirect stdout: %s", strerror(errno));
	dup2(devnull, STDOUT_FILENO);
	close(devnull);
	rc = fn(argc, argv);
	fflush(stdout);
	dup2(saved, STDOUT_FILENO);
	close(saved);
	return rc;
}

/* Append the forwarded options at argv[n] (argv has room for 32). */
static void forward(const struct report *r, char **argv, int n)
{
	for (int k = 0; k < r->nfwd; k++)
		argv[n++] = r->fwd[k];
	argv[n] = NULL;
}

static void print_files(const struct report *r)
{
	printf("\nfiles in %s:\n", r->dir);
	for (size_t i = 0; i < r->nfiles; i++) {
		struct stat st;
		const char *base = strrchr(r->files[i], '/');
		if (stat(r->files[i], &st))
			continue;
		printf("  %10lld  %s\n", (long long)st.st_size, base ? base + 1 : r->files[i]);
	}
}

int cmd_report(int argc, char **argv)
{
	struct em_opts o = {0};
	struct attrib_opts ao = {0};
	struct report r = {0};
	const char *profile = NULL, *title = NULL, *stacks;
	enum attrib_choice method = ATTRIB_CHOICE_AUTO;
	int stacks_i = 0;
	struct energy_model m;
	struct phase_scope all;
	struct outfile of;
	struct csv c;
	char *table = NULL, *path, title_buf[256], pyspy_line[1024] = "";
	size_t table_len = 0;
	FILE *tty;

	const struct option opts[] = {
		OPT_STRING(0, "ring", &o.ring, "RING", "the ring (anchor_*.ring)"),
		OPT_STRING(0, "perun", &o.perun, "FILE", "perun's HDF5 output"),
		OPT_STRING(0, "profile", &profile, "FILE", "py-spy's profile"),
		OPT_STRING('d', "dir", &r.dir, "DIR", "the output directory (created)"),
		OPT_STRING('o', NULL, &r.dir, "DIR", NULL), /* the same, as record spells it */
		OPT_STRING(0, "title", &title, "TEXT",
			   "names the run in the pictures and the trace (default: the basename of OUTDIR)"),
		OPT_CHOICE(0, "trace-stacks", &stacks_i, "WHICH", stack_choices, "py-spy stacks in trace.json [phases]"),
		OPTS_ATTRIB(&method, &ao),
		OPTS_PERUN_SELECT(&o),
		OPTS_ALIGN(&o),
		OPT_NO_HOOK(&o),
		OPT_END(),
	};

	if (options_parse(argc, argv, opts, &report_usage, 0))
		options_usage_error(&report_usage, "unexpected argument '%s'", argv[1]);
	if (!o.ring || !o.perun || !r.dir)
		options_usage_error(&report_usage, "needs --ring, --perun and -d DIR");
	stacks = stack_choices[stacks_i].name;
	forward_options(&r, &o);
	if (!title) {
		/* The directory's own name: "out/demo/" -> "demo". */
		size_t len = strlen(r.dir);
		while (len > 1 && r.dir[len - 1] == '/')
			len--;
		snprintf(title_buf, sizeof title_buf, "%.*s", (int)len, r.dir);
		title = strrchr(title_buf, '/') && strrchr(title_buf, '/')[1] ? strrchr(title_buf, '/') + 1 : title_buf;
	}
	r.progress = isatty(STDERR_FILENO);
	clock_gettime(CLOCK_MONOTONIC, &r.t_start);
	mkdir_p(r.dir);

	progress(&r, "loading the ring and perun, aligning");
	energy_model_open(&m, &o);
	phase_table_warn(&m, &o);

	progress(&r, "attributing energy to phases");
	all.thr = m.ph.nthr ? (long)m.ph.primary : -1;
	all.pid = 0;
	phase_scope_attribute(&m, method, &ao, &all);
	path = out_path(&r, "phases.csv");
	outfile_open(&of, path);
	csv_init(&c, of.fp);
	phase_table_csv_header(&c);
	/* The readable table is printed at the end, above the file list. */
	tty = open_memstream(&table, &table_len);
	if (!tty)
		diag_fatal(NULL, "out of memory");
	phase_table_write_scope(&c, &m, &all, tty);
	/* ANCHOR_SENSORS: the ring's ms counters beside perun (scope "counters"). */
	counter_table_write(&c, &m, tty);
	fclose(tty);
	outfile_commit(&of);

	if (m.emulated) {
		/* perun.csv and samples.csv come from commands that know nothing
		 * of the sensor; this file says it beside them. */
		path = out_path(&r, "EMULATED_SENSOR.txt");
		outfile_open(&of, path);
		fprintf(of.fp, "%s\n\nperun read an emulated power sensor (no RAPL or GPU was readable when %s\n"
				"was recorded): every joule and watt in this directory (phases.csv, perun.csv,\n"
				"the pictures, trace.json) comes from that emulation.\n",
			energy_model_sensor_note(&m), o.perun);
		outfile_commit(&of);
	}

	progress(&r, "perun.csv");
	{
		/* --ring and the alignment options: perun.csv's t_s is the
		 * timeline every other output uses. */
		char *pv[32] = {"perun", (char *)o.perun, "-o", out_path(&r, "perun.csv"), "--ring", (char *)o.ring};
		forward(&r, pv, 6);
		run_quiet(cmd_perun, pv);
		out_path(&r, "perun.csv.energy.csv");
	}

	if (profile) {
		progress(&r, "samples.csv");
		char *sv[] = {"samples", (char *)profile, "-o", out_path(&r, "samples.csv"), "--ring", (char *)o.ring, NULL};
		run_quiet(cmd_samples, sv);
		out_path(&r, "samples.csv.alignment.txt");
		out_path(&r, "samples.stacks.csv");
		out_path(&r, "samples.frames.csv");
		out_path(&r, "samples.threads.csv");
	}

	if (profile) {
		progress(&r, "functions.csv, energy.speedscope.json");
		char *fv[32] = {"functions", "--ring", (char *)o.ring, "--perun", (char *)o.perun, "--profile",
				(char *)profile, "-o", out_path(&r, "functions.csv"), "--speedscope-out",
				out_path(&r, "energy.speedscope.json")};
		forward(&r, fv, 11);
		run_quiet(cmd_functions, fv);
		out_path(&r, "functions.csv.alignment.txt");
	}
	progress(&r, "timeline.csv");
	{
		char *tv[32] = {"timeline", "--ring", (char *)o.ring, "--perun", (char *)o.perun, "-o",
				out_path(&r, "timeline.csv")};
		int k = 7;
		if (profile)
			tv[k++] = "--profile", tv[k++] = (char *)profile;
		forward(&r, tv, k);
		run_quiet(cmd_timeline, tv);
		if (profile)
			out_path(&r, "timeline.csv.alignment.txt");
	}

	progress(&r, "timeline.svg, timeline.png");
	plot_timeline(&m, title, out_path(&r, "timeline.svg"), PLOT_SVG);
	plot_timeline(&m, title, out_path(&r, "timeline.png"), PLOT_PNG);
	progress(&r, "phases.svg, phases.png");
	plot_phases(&m, &all, title, out_path(&r, "phases.svg"), PLOT_SVG);
	plot_phases(&m, &all, title, out_path(&r, "phases.png"), PLOT_PNG);

	{
		struct pyspy_profile p;
		struct align_pyspy al;
		struct trace_pyspy tp = {0};
		struct trace_stats ts;
		static char script_buf[1024];
		pyspy_profile_init(&p);
		memset(&al, 0, sizeof al);
		if (profile) {
			struct pyspy_error err;
			char aerr[320];
			progress(&r, "reading and aligning the py-spy profile");
			if (pyspy_load(profile, PYSPY_FMT_AUTO, &p, &err))
				diag_fatal(profile, "%s", err.msg);
			if (align_pyspy_fit(&m.rl, &m.ph, m.base_ns, &p, &al, aerr, sizeof aerr))
				ringload_fatal_mismatch(&m.rl, profile, aerr);
			sample_energy_name_script(&m.rl, &p, script_buf, sizeof script_buf);
			align_pyspy_describe(&al, &p, pyspy_line, sizeof pyspy_line);
			if (strcmp(stacks, "none")) {
				tp.p = &p;
				tp.al = &al;
				tp.all_processes = !strcmp(stacks, "all");
			}
		}
		progress(&r, "trace.json");
		trace_json_write(&m, &tp, title, out_path(&r, "trace.json"), &ts);
		if (profile)
			align_pyspy_free(&al);
		pyspy_profile_free(&p);
	}

	progress(&r, "done");
	fputs(table, stdout);
	if (pyspy_line[0])
		printf("%s\n", pyspy_line);
	free(table);
	print_files(&r);
	phase_scope_free(&all);
	energy_model_close(&m);
	for (size_t i = 0; i < r.nfiles; i++)
		free(r.files[i]);
	free(r.files);
	return 0;
}
