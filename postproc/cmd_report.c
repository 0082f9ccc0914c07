/*
 * cmd_report.c - `anchorpost report --ring R --perun P [--profile S] -d OUTDIR`:
 * everything in one go.
 *
 * Writes into OUTDIR: phases.csv (as `phases`), perun.csv (+ .energy.csv,
 * as `perun`), samples.csv (as `samples --ring`, with a profile),
 * timeline.svg/.png and phases.svg/.png (plot.h), trace.json
 * (trace_json.h); then prints the per-phase table with the alignment
 * quality and the list of files.  The ring and perun file are loaded and
 * aligned once (energy_model.h); the other commands' outputs come from
 * their own entry points so that report and the single commands cannot
 * disagree.  Every output is all-or-nothing (outfile.h); a failure stops
 * the report with one line, leaving the files already finished.
 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "csv.h"
#include "diag.h"
#include "energy_model.h"
#include "outfile.h"
#include "phase_table.h"
#include "plot.h"
#include "pyspy.h"
#include "trace_json.h"

struct report {
	const char *dir;
	char **files;      /* written, in order, for the closing list */
	size_t nfiles;
	int progress;      /* stderr is a terminal */
	struct timespec t_start;
};

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: anchorpost report --ring RING --perun FILE.hdf5 [--profile PYSPY] -d OUTDIR [options]\n"
		"  everything in one go: phases.csv, perun.csv, samples.csv (with --profile),\n"
		"  timeline.svg/.png, phases.svg/.png, trace.json (Chrome/Perfetto), then the\n"
		"  per-phase table with the alignment quality and the list of files\n"
		"  --title TEXT       names the run in the pictures and the trace\n"
		"                     (default: the basename of OUTDIR)\n"
		"  --trace-stacks phases|all|none  py-spy stacks in trace.json: of processes\n"
		"                     with phases (default), of every sampled process, or none\n"
		"  --method auto|split|perphase|integrate|regress, --run ID, --round N, --host NAME,\n"
		"  --tz +HH:MM, --fit-range S, --no-fit, --boot N: as for 'anchorpost phases'\n");
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

/* Where py-spy's t_rel_s = 0 lies on the timeline: the start of the
 * profiled process (what `samples --ring` assumes; py-spy makes its clock
 * just before it spawns or attaches).  The earliest-started process the
 * profile names, else the ring's first process. */
static double pyspy_offset(const struct energy_model *m, const struct pyspy_profile *p, char *method, size_t cap,
			   double *uncert_ms)
{
	const struct ring_proc *best = NULL;
	for (uint32_t t = 0; t < p->nthreads; t++) {
		const struct ring_proc *rp;
		if (p->threads[t].pid < 0)
			continue;
		rp = ring_procs_find(&m->rl.procs, (uint32_t)p->threads[t].pid);
		if (rp && rp->start_ns && (!best || rp->start_ns < best->start_ns))
			best = rp;
	}
	if (!best)
		for (size_t i = 0; i < m->rl.procs.n; i++)
			if (m->rl.procs.p[i].start_ns && (!best || m->rl.procs.p[i].start_ns < best->start_ns))
				best = &m->rl.procs.p[i];
	if (!best)
		diag_fatal(m->rl.rf.path, "no process start record to place the py-spy profile on");
	snprintf(method, cap, "process-start anchor (pid %u): py-spy's time 0 taken as its PROC_START", best->pid);
	/* py-spy's start-up and attach race the target's start: a prior,
	 * good to a py-spy start-up (~0.2 s as measured here), not a fit. */
	*uncert_ms = 200;
	return energy_model_tl(m, best->start_ns);
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
	const char *profile = NULL, *title = NULL, *stacks = "phases";
	int method = 0, n;
	struct energy_model m;
	struct phase_scope all;
	struct outfile of;
	struct csv c;
	char *table = NULL, *path, title_buf[256];
	size_t table_len = 0;
	FILE *tty;

	phase_table_defaults(&o);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if ((n = phase_table_option(argc, argv, i, &o, &ao, &method)) > 0) {
			i += n - 1;
		} else if (!v) {
			usage(stderr);
			diag_fatal(NULL, "report: '%s' needs a value", a);
		} else if (!strcmp(a, "--ring")) {
			o.ring = v, i++;
		} else if (!strcmp(a, "--perun")) {
			o.perun = v, i++;
		} else if (!strcmp(a, "--profile")) {
			profile = v, i++;
		} else if (!strcmp(a, "-d")) {
			r.dir = v, i++;
		} else if (!strcmp(a, "--title")) {
			title = v, i++;
		} else if (!strcmp(a, "--trace-stacks")) {
			stacks = v, i++;
			if (strcmp(v, "phases") && strcmp(v, "all") && strcmp(v, "none"))
				diag_fatal(NULL, "report: --trace-stacks must be phases, all or none, not '%s'", v);
		} else {
			usage(stderr);
			diag_fatal(NULL, "report: unknown option '%s'", a);
		}
	}
	if (!o.ring || !o.perun || !r.dir) {
		usage(stderr);
		return 2;
	}
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
		char *pv[] = {"perun", (char *)o.perun, "-o", out_path(&r, "perun.csv"), NULL, NULL, NULL};
		if (o.run)
			pv[4] = "--run", pv[5] = (char *)o.run;
		run_quiet(cmd_perun, pv);
		out_path(&r, "perun.csv.energy.csv");
	}

	if (profile) {
		progress(&r, "samples.csv");
		char *sv[] = {"samples", (char *)profile, "-o", out_path(&r, "samples.csv"), "--ring", (char *)o.ring, NULL};
		run_quiet(cmd_samples, sv);
		out_path(&r, "samples.csv.alignment.txt");
	}

	progress(&r, "timeline.svg, timeline.png");
	plot_timeline(&m, title, out_path(&r, "timeline.svg"), PLOT_SVG);
	plot_timeline(&m, title, out_path(&r, "timeline.png"), PLOT_PNG);
	progress(&r, "phases.svg, phases.png");
	plot_phases(&m, &all, title, out_path(&r, "phases.svg"), PLOT_SVG);
	plot_phases(&m, &all, title, out_path(&r, "phases.png"), PLOT_PNG);

	{
		struct pyspy_profile p;
		struct trace_pyspy tp = {0};
		struct trace_stats ts;
		char method_buf[160];
		pyspy_profile_init(&p);
		if (profile && strcmp(stacks, "none")) {
			struct pyspy_error err;
			progress(&r, "reading the py-spy profile");
			if (pyspy_load(profile, PYSPY_FMT_AUTO, &p, &err))
				diag_fatal(profile, "%s", err.msg);
			if (p.meta.times_known) {
				tp.p = &p;
				tp.offset_s = pyspy_offset(&m, &p, method_buf, sizeof method_buf, &tp.uncert_ms);
				tp.method = method_buf;
				tp.all_processes = !strcmp(stacks, "all");
			} else {
				diag_warn(profile, "%s profile has no sample times: no py-spy stacks in trace.json",
					  pyspy_format_name(p.meta.format));
			}
		}
		progress(&r, "trace.json");
		trace_json_write(&m, &tp, title, out_path(&r, "trace.json"), &ts);
		pyspy_profile_free(&p);
	}

	progress(&r, "done");
	fputs(table, stdout);
	free(table);
	print_files(&r);
	phase_scope_free(&all);
	energy_model_close(&m);
	for (size_t i = 0; i < r.nfiles; i++)
		free(r.files[i]);
	free(r.files);
	return 0;
}
