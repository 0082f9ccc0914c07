/*
 * cmd_report.c - `anchorpost report --ring R --perun P [--profile S] -d OUTDIR`:
 * everything in one go.
 *
 * Writes into OUTDIR: phases.csv (as `phases`), occurrences.csv (as
 * `phases --occurrences`), perun.csv (+ .energy.csv,
 * as `perun`), timeline.csv (as `timeline`); with a profile samples.csv
 * (as `samples --ring`), functions.csv + energy.speedscope.json (as
 * `functions`); timeline.svg/.png and phases.svg/.png (plot.h), trace.json
 * (trace_json.h, py-spy placed by align_pyspy.h); then prints the
 * per-phase table with both alignments' quality and the list of files.
 * The run is opened once (run_model.h: ring, perun file, profile, both
 * alignments, each sample's energy) and every file comes from the same
 * writer the single command uses (output/), so each input is read
 * once and report and the single commands cannot disagree.
 *
 * All or nothing: the files are built in "OUTDIR.tmp.anchorpost-PID-..."
 * (temp_name.h: a report killed there is swept by the next) beside OUTDIR and
 * moved into OUTDIR only when every one is written; a failure removes that
 * directory and leaves OUTDIR as it was.  `report DIR` (no --ring/--perun)
 * finds the run's files in DIR (run_find.h) and writes DIR/report.
 *
 * A distributed run (several rings, or one ring of several ranks or
 * training processes: report_ranks.h) gets phases.csv with a scope per
 * host and per rank, its joules shared over each node's ranks (the node
 * split, mring.h), stragglers.csv and ranks.csv; the terminal shows the
 * ranks, every scope and the stragglers.  The other files follow the
 * ring of the lowest rank, its timeline explaining its node's power.
 *
 * Without a perun file (none given, none in DIR) the ring still holds
 * every phase's times: phases.csv per process, phases.svg/.png as times,
 * samples.csv with a profile and trace.json, after a note saying why
 * there may be no perun file (perun_absent.h); the files that need
 * perun are listed as not written.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <dirent.h>
#include <libgen.h>

#include "align/align_pyspy.h"
#include "cmd/cmd_fatal.h"
#include "cmd/commands.h"
#include "cmd/no_energy_note.h"
#include "cmd/options.h"
#include "cmd/report_ranks.h"
#include "cmd/run_warnings.h"
#include "input/input_file.h"
#include "input/pyspy.h"
#include "input/run_find.h"
#include "model/energy_model.h"
#include "model/results.h"
#include "model/run_model.h"
#include "model/sample_energy.h"
#include "model/sample_times.h"
#include "output/counter_table.h"
#include "output/csv.h"
#include "output/functions_csv.h"
#include "output/occurrences_csv.h"
#include "output/op_table.h"
#include "output/outfile.h"
#include "output/perun_csv.h"
#include "output/phase_table.h"
#include "output/phases_csv.h"
#include "output/plot.h"
#include "output/plot_layers.h"
#include "output/ranks_csv.h"
#include "output/samples_csv.h"
#include "output/temp_name.h"
#include "output/timeline_csv.h"
#include "output/trace_json.h"
#include "util/diag.h"
#include "util/file_ids.h"

struct report {
	const char *dir;   /* where the files are built: tmp_dir */
	const char *final; /* OUTDIR */
	char *tmp_dir;
	int committed;
	char **files;      /* written, in order, for the closing list */
	size_t nfiles;
	int progress;      /* stderr is a terminal */
	struct timespec t_start;
	const struct mring *ranks; /* a distributed run (report_ranks.h), else NULL */
};

static const struct cmd_usage report_usage = {
	.name = "report",
	.usage = "--ring RING [--perun FILE.hdf5] [--profile PYSPY] -d OUTDIR [options]\n"
		 "       anchorpost report RUNDIR [-d OUTDIR] [options]",
	.about = "  everything in one go: phases.csv, occurrences.csv, perun.csv, timeline.csv, with --profile also\n"
		 "  samples.csv, functions.csv and energy.speedscope.json; timeline.svg/.png,\n"
		 "  phases.svg/.png, trace.json (Chrome/Perfetto); then the per-phase table with\n"
		 "  the alignment quality and the list of files.  RUNDIR: the files `record` wrote\n"
		 "  (one ring, or one per rank; one perun file; at most one profile), OUTDIR then\n"
		 "  RUNDIR/report.  Several ranks: also stragglers.csv and ranks.csv, every rank's rows.\n"
		 "  Without a perun file: the phases' times (phases.csv per process, occurrences.csv,\n"
		 "  phases.svg), samples.csv with a profile, trace.json, and why perun left no file.\n"
		 "  All or nothing: built beside OUTDIR, moved in when every file is written\n",
};

static const struct opt_choice stack_choices[] = {
	{"phases", 0, "of processes with phases"},
	{"all", 1, "of every sampled process"},
	{"none", 2, NULL},
	{NULL, 0, NULL},
};

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

/* Register name as one of the report's files: *path is DIR/name in the
 * build directory, for the writer; the list is what the commit moves and
 * the closing lines show.  0, or -ENOMEM with *e filled. */
static int out_path(struct report *r, const char *name, const char **path, struct em_error *e)
{
	char *p, **nf;
	if (asprintf(&p, "%s/%s", r->dir, name) < 0)
		return diag_error(e, -ENOMEM, NULL, "out of memory");
	nf = realloc(r->files, (r->nfiles + 1) * sizeof *nf);
	if (!nf) {
		free(p);
		return diag_error(e, -ENOMEM, NULL, "out of memory");
	}
	r->files = nf;
	r->files[r->nfiles++] = p;
	if (path)
		*path = p;
	return 0;
}

/* Directories mkdir_p created, removed again (when empty) if the report
 * fails: a failed report leaves nothing behind. */
static char *made_dirs[64];
static size_t nmade;

static void mkdir_one(const char *d)
{
	if (mkdir(d, 0777) == 0) {
		if (nmade < sizeof made_dirs / sizeof *made_dirs)
			made_dirs[nmade++] = strdup(d);
	} else if (errno != EEXIST) {
		diag_fatal(d, "cannot create directory: %s", strerror(errno));
	}
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
		mkdir_one(d);
		*s = '/';
	}
	mkdir_one(d);
	free(d);
}

/* A failed report: remove the half-built directory (only ever our own,
 * made by mkdtemp in start_tmp_dir) and the parents mkdir_p made for it.
 * Called by cmd_report on the way out, explicitly: a signal instead
 * leaves it to the next report's sweep (temp_name.h). */
static void remove_tmp_dir(struct report *r)
{
	DIR *d;
	struct dirent *de;
	if (r->committed || !r->tmp_dir)
		return;
	if ((d = opendir(r->tmp_dir))) {
		while ((de = readdir(d)))
			if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
				unlinkat(dirfd(d), de->d_name, 0);
		closedir(d);
	}
	rmdir(r->tmp_dir);
	while (nmade)
		if (made_dirs[--nmade])
			rmdir(made_dirs[nmade]);
}

/* Create OUTDIR's parent and the build directory beside OUTDIR. */
static void start_tmp_dir(struct report *r)
{
	char *d = strdup(r->final), *parent;
	if (!d)
		diag_fatal(NULL, "out of memory");
	parent = dirname(d);
	if (strcmp(parent, ".") && strcmp(parent, "/"))
		mkdir_p(parent);
	free(d);
	{
		/* "out/" -> "out.tmp.anchorpost-PID-KEY-XXXXXX", not "out/.tmp...":
		 * named for this process, so that a later report removes it if
		 * we are killed (temp_name.h) */
		size_t len = strlen(r->final);
		char *base, *pre;
		while (len > 1 && r->final[len - 1] == '/')
			len--;
		if (!(base = strndup(r->final, len)) || !(pre = temp_name_prefix(base)) ||
		    asprintf(&r->tmp_dir, "%sXXXXXX", pre) < 0)
			diag_fatal(NULL, "out of memory");
		free(base);
		free(pre);
		d = strdup(r->final);
		if (!d)
			diag_fatal(NULL, "out of memory");
		temp_name_sweep(dirname(d));
		free(d);
	}
	if (!mkdtemp(r->tmp_dir))
		diag_fatal(r->final, "cannot create a directory beside it: %s", strerror(errno));
	r->dir = r->tmp_dir;
	/* Errors name OUTDIR/FILE, the path the user gave, not the build
	 * directory that is removed on the way out. */
	diag_alias_path(r->tmp_dir, r->final);
}

/* Every file report may write into OUTDIR, and when (write_all is the
 * truth; a name missing here is still checked before the commit, only
 * later).  Checked before anything is written. */
/* WITH_PERUN: not written without a perun file (write_times_only). */
enum { ALWAYS, WITH_PROFILE, EMULATED, WITH_RANKS, WITH_PERUN, WITH_PROFILE_PERUN, WITH_TORCH_PERUN, WITH_LAYERS_PERUN };
static const struct {
	const char *name;
	int when;
} planned[] = {
	{"phases.csv", ALWAYS},
	{"occurrences.csv", ALWAYS},
	{"EMULATED_SENSOR.txt", EMULATED},
	{"perun.csv", WITH_PERUN},
	{"perun.csv.energy.csv", WITH_PERUN},
	{"samples.csv", WITH_PROFILE},
	{"samples.csv.alignment.txt", WITH_PROFILE},
	{"samples.stacks.csv", WITH_PROFILE},
	{"samples.frames.csv", WITH_PROFILE},
	{"samples.threads.csv", WITH_PROFILE},
	{"functions.csv", WITH_PROFILE_PERUN},
	{"energy.speedscope.json", WITH_PROFILE_PERUN},
	{"functions.csv.alignment.txt", WITH_PROFILE_PERUN},
	{"functions.phases.csv", WITH_PROFILE_PERUN},
	{"ops.csv", WITH_TORCH_PERUN},
	{"timeline.csv", WITH_PERUN},
	{"timeline.csv.alignment.txt", WITH_PROFILE_PERUN},
	{"timeline.svg", WITH_PERUN},
	{"timeline.png", WITH_PERUN},
	{"phases.svg", ALWAYS},
	{"phases.png", ALWAYS},
	{"layers.svg", WITH_LAYERS_PERUN},
	{"layers.png", WITH_LAYERS_PERUN},
	{"trace.json", ALWAYS},
	{"stragglers.csv", WITH_RANKS},
	{"ranks.csv", WITH_RANKS},
};

/* OUTDIR/base may be replaced by the rename only when it does not exist or
 * is a regular file that is none of this run's inputs.  A FIFO, a device,
 * a socket, a directory or a symlink there is someone's (a rename would
 * drop it silently), and an input there (a ring given as OUTDIR/phases.csv)
 * would be lost: refuse with one line, OUTDIR untouched. */
static int check_target(const char *final, const char *base, struct em_error *e)
{
	static char path_kept[4096]; /* the path the error names outlives this call */
	struct stat st;
	const char *in;
	char *path;
	int rc = 0;
	if (asprintf(&path, "%s/%s", final, base) < 0)
		return diag_error(e, -ENOMEM, NULL, "out of memory");
	snprintf(path_kept, sizeof path_kept, "%s", path);
	if (lstat(path, &st) != 0) {
		if (errno != ENOENT)
			rc = diag_error(e, -errno, path_kept, "cannot check what is there: %s", strerror(errno));
	} else if (S_ISLNK(st.st_mode)) {
		rc = diag_error(e, -EEXIST, path_kept, "is a symlink: report replaces only regular files in OUTDIR, "
						       "never a link; remove it or choose another -d");
	} else if (!S_ISREG(st.st_mode)) {
		rc = diag_error(e, -EEXIST, path_kept,
				"is %s: report replaces only regular files in OUTDIR; remove it or choose another -d",
				input_file_kind(st.st_mode));
	} else if ((in = file_ids_same_input(path, &st))) {
		rc = diag_error(e, -EEXIST, path_kept,
				"is an input of this report (%s): refusing to replace it; choose another -d", in);
	}
	free(path);
	return rc;
}

/* Before anything is written: what this run will write must not replace
 * what check_target refuses. */
static void check_plan(const struct report *r, const struct run_model *rm)
{
	struct em_error e;
	struct stat st;
	if (stat(r->final, &st) != 0 || !S_ISDIR(st.st_mode))
		return; /* a new OUTDIR (or not a directory: the commit says so) */
	for (size_t i = 0; i < sizeof planned / sizeof *planned; i++)
		if (planned[i].when == ALWAYS || (planned[i].when == WITH_PROFILE && rm->have_profile) ||
		    (planned[i].when == EMULATED && rm->m.emulated) || (planned[i].when == WITH_RANKS && r->ranks) ||
		    (planned[i].when == WITH_PERUN && !rm->m.times_only) ||
		    (planned[i].when == WITH_PROFILE_PERUN && rm->have_profile && !rm->m.times_only) ||
		    (planned[i].when == WITH_TORCH_PERUN && rm->have_profile && rm->p.meta.torch && !rm->m.times_only) ||
		    (planned[i].when == WITH_LAYERS_PERUN && plot_layers_count(&rm->m) && !rm->m.times_only))
			if (check_target(r->final, planned[i].name, &e))
				diag_fatal(e.file, "%s", e.msg); /* nothing written yet */
}

/* Move the finished files into OUTDIR: the whole directory when OUTDIR
 * does not exist, else file by file (OUTDIR may hold other files), each
 * target checked again first, all before the first rename. */
static int commit_tmp_dir(struct report *r, struct em_error *e)
{
	static char to_kept[4096]; /* the path the error names */
	struct stat st;
	int rc;
	if (stat(r->final, &st) < 0 && errno == ENOENT) {
		if (rename(r->tmp_dir, r->final) < 0)
			return diag_error(e, -errno, r->final, "cannot move the report into place: %s", strerror(errno));
		r->committed = 1;
		return 0;
	}
	if (!S_ISDIR(st.st_mode))
		return diag_error(e, -ENOTDIR, r->final, "exists and is not a directory");
	for (size_t i = 0; i < r->nfiles; i++)
		if ((rc = check_target(r->final, strrchr(r->files[i], '/') + 1, e)))
			return rc;
	for (size_t i = 0; i < r->nfiles; i++) {
		const char *base = strrchr(r->files[i], '/') + 1;
		char *to;
		if (asprintf(&to, "%s/%s", r->final, base) < 0)
			return diag_error(e, -ENOMEM, NULL, "out of memory");
		if (rename(r->files[i], to) < 0 && errno != ENOENT) {
			snprintf(to_kept, sizeof to_kept, "%s", to);
			free(to);
			return diag_error(e, -errno, to_kept, "cannot move into place: %s", strerror(errno));
		}
		free(to);
	}
	r->committed = 1;
	rmdir(r->tmp_dir);
	return 0;
}

static void print_files(const struct report *r)
{
	printf("\nfiles in %s:\n", r->final);
	for (size_t i = 0; i < r->nfiles; i++) {
		struct stat st;
		const char *base = strrchr(r->files[i], '/') + 1;
		char *path;
		if (asprintf(&path, "%s/%s", r->final, base) < 0)
			diag_fatal(NULL, "out of memory");
		if (!stat(path, &st))
			printf("  %10lld  %s\n", (long long)st.st_size, base);
		free(path);
	}
}

/* phases.csv (the "all" scope and the ms counters); the readable table
 * into *table, printed at the end above the file list. */
static int write_phases_csv(struct report *r, const struct energy_model *m, const struct run_results *res,
			    char **table, struct em_error *e)
{
	const char *path;
	int rc = out_path(r, "phases.csv", &path, e);
	return rc ? rc : phases_csv_write_scope(m, res, path, table, e);
}

/* A distributed run: phases.csv of every scope, stragglers.csv, ranks.csv;
 * the ranks' tables into *table, and which ring the other files show. */
static int write_ranks(struct report *r, const struct energy_model *m, char **table, struct em_error *e)
{
	size_t len = 0;
	const struct ring_proc *lead = m->ph.nthr ? ring_procs_find(&m->rl.procs, m->ph.thr[m->ph.primary].pid) : NULL;
	const char *phases, *stragglers, *ranks;
	FILE *tty;
	int rc;
	if (!(tty = open_memstream(table, &len)))
		return diag_error(e, -ENOMEM, NULL, "out of memory");
	progress(r, "phases.csv (every rank), stragglers.csv, ranks.csv");
	if ((rc = out_path(r, "phases.csv", &phases, e)) || (rc = out_path(r, "stragglers.csv", &stragglers, e)) ||
	    (rc = out_path(r, "ranks.csv", &ranks, e)) ||
	    (rc = ranks_csv_write_all(r->ranks, phases, stragglers, ranks, tty, e))) {
		fclose(tty);
		return rc;
	}
	if (lead && lead->rank >= 0)
		fprintf(tty, "\ntimeline, pictures, trace.json: ring %s, perun's power explained by the timeline of "
			     "rank %d (pid %u); per-rank joules: phases.csv\n", m->ring_path, lead->rank, lead->pid);
	else if (lead)
		fprintf(tty, "\ntimeline, pictures, trace.json: ring %s, perun's power explained by the timeline of "
			     "pid %u; per-process joules: phases.csv\n", m->ring_path, lead->pid);
	fclose(tty);
	return 0;
}

/* perun.csv and samples.csv come from commands that know nothing of the
 * sensor; EMULATED_SENSOR.txt says it beside them. */
static int write_emulated_note(struct report *r, const struct energy_model *m, const char *perun, struct em_error *e)
{
	struct outfile of;
	const char *path;
	int rc;
	if ((rc = out_path(r, "EMULATED_SENSOR.txt", &path, e)) || (rc = outfile_create(&of, path, e)))
		return rc;
	fprintf(of.fp, "%s\n\nperun read an emulated power sensor (no RAPL or GPU was readable when %s\n"
			"was recorded): every joule and watt in this directory (phases.csv, perun.csv,\n"
			"the pictures, trace.json) comes from that emulation.\n",
		energy_model_sensor_note(m), perun);
	return outfile_done(&of, e);
}

/* samples.csv and its side files. */
static int write_samples(struct report *r, const struct run_model *rm, const struct em_opts *o, struct em_error *e)
{
	const struct energy_model *m = &rm->m;
	const char *path;
	int rc;
	struct sample_times st;
	progress(r, "samples.csv");
	if ((rc = out_path(r, "samples.csv", &path, e)))
		return rc;
	if (sample_times_build(&st, &rm->p, &m->rl, &rm->al, m->base_ns))
		rc = diag_error(e, -ENOMEM, NULL, "out of memory");
	else
		rc = samples_csv_write_ring(&rm->p, rm->profile, &st, o->ring, path, 0, e);
	sample_times_free(&st);
	if (rc)
		return rc;
	if ((rc = out_path(r, "samples.csv.alignment.txt", NULL, e)) || (rc = out_path(r, "samples.stacks.csv", NULL, e)) ||
	    (rc = out_path(r, "samples.frames.csv", NULL, e)))
		return rc;
	return out_path(r, "samples.threads.csv", NULL, e);
}

/* samples.csv (+ its side files), functions.csv, energy.speedscope.json. */
static int write_profile_files(struct report *r, const struct run_model *rm, const struct run_results *res,
			       const struct em_opts *o, struct em_error *e)
{
	const char *path, *ss;
	char why[768];
	int rc;
	if ((rc = write_samples(r, rm, o, e)))
		return rc;
	/* The other outputs hold without joules per sample (the user's two
	 * concurrent runs, a script shorter than perun's start-up): say why
	 * and leave the per-function files out, not the whole report. */
	if (!sample_energy_overlaps(&rm->m, &rm->p, &rm->al, &rm->se, why, sizeof why)) {
		diag_warn(rm->profile, "%s; functions.csv and energy.speedscope.json left out", why);
		return 0;
	}
	progress(r, "functions.csv, energy.speedscope.json");
	if ((rc = out_path(r, "functions.csv", &path, e)) || (rc = out_path(r, "energy.speedscope.json", &ss, e)) ||
	    (rc = functions_csv_write(rm, res, path, ss, NULL, NULL, e)))
		return rc;
	if ((rc = out_path(r, "functions.csv.alignment.txt", NULL, e)))
		return rc;
	return out_path(r, "functions.phases.csv", NULL, e);
}

/* name.svg and name.png from one plot function (plot.h). */
static int write_picture(struct report *r, const char *name, const struct energy_model *m,
			 const struct phase_scope *all, const char *title, int which, struct em_error *e)
{
	char svg[64], png[64];
	const char *p[2];
	int rc;
	snprintf(svg, sizeof svg, "%s.svg", name);
	snprintf(png, sizeof png, "%s.png", name);
	for (int k = 0; k < 2; k++) {
		enum plot_kind f = k ? PLOT_PNG : PLOT_SVG;
		if ((rc = out_path(r, k ? png : svg, &p[k], e)))
			return rc;
		rc = which == 0 ? plot_timeline(m, title, p[k], f, e)
		     : which == 1 ? plot_phases(m, all, title, p[k], f, e)
				  : plot_layers(m, all, title, p[k], f, e);
		if (rc)
			return rc;
	}
	return 0;
}

static int write_pictures(struct report *r, const struct energy_model *m, const struct phase_scope *all,
			  const char *title, struct em_error *e)
{
	int rc;
	progress(r, "timeline.svg, timeline.png");
	if ((rc = write_picture(r, "timeline", m, all, title, 0, e)))
		return rc;
	progress(r, "phases.svg, phases.png");
	if ((rc = write_picture(r, "phases", m, all, title, 1, e)))
		return rc;
	if (plot_layers_count(m)) {
		progress(r, "layers.svg, layers.png");
		return write_picture(r, "layers", m, all, title, 2, e);
	}
	return 0;
}

/* trace.json, with py-spy's stacks as --trace-stacks says. */
/* res: the results stage's (NULL: times only, no joules on slices). */
static int write_trace(struct report *r, const struct run_model *rm, const struct run_results *res, const char *title,
		       const char *stacks, char *pyspy_line, size_t pyspy_cap, struct em_error *e)
{
	struct trace_pyspy tp = {0};
	struct trace_stats ts;
	const char *path;
	double *row_j = NULL;
	int rc;
	if (rm->have_profile) {
		snprintf(pyspy_line, pyspy_cap, "%s", rm->align_text);
		if (strcmp(stacks, "none")) {
			tp.p = &rm->p;
			tp.al = &rm->al;
			tp.t0_s = rm->se.t0_s;
			tp.t1_s = rm->se.t1_s;
			tp.align_text = rm->align_text;
			tp.all_processes = !strcmp(stacks, "all");
		}
	}
	/* joules on the stack slices: a torch trace's ops by ops.csv's rule,
	 * py-spy's samples by functions.csv's (their own slice) */
	if (tp.p && res && rm->p.nsamples && rm->p.meta.torch) {
		tp.row_j = res->ops.row_j;
	} else if (tp.p && res && rm->p.nsamples) {
		if (!(row_j = calloc(rm->p.nsamples, sizeof *row_j)))
			return diag_error(e, -ENOMEM, NULL, "out of memory");
		if (rm->se.e_j && rm->se.n == rm->p.nsamples) {
			for (size_t i = 0; i < rm->se.n; i++)
				for (size_t g = 0; g < rm->m.ngroups; g++)
					row_j[i] += rm->se.e_j[i * rm->m.ngroups + g];
		} else {
			free(row_j);
			row_j = NULL;
		}
		tp.row_j = row_j;
	}
	progress(r, "trace.json");
	if (!(rc = out_path(r, "trace.json", &path, e)))
		rc = trace_json_write(&rm->m, &tp, title, path, &ts, e);
	free(row_j);
	return rc;
}

/* occurrences.csv: every phase occurrence on the run's time base, with
 * its joules where the data decide them (occurrences_csv.h). */
static int write_occurrences(struct report *r, const struct energy_model *m, const struct run_results *res,
			     struct em_error *e)
{
	const char *path;
	int rc;
	progress(r, "occurrences.csv");
	if ((rc = out_path(r, "occurrences.csv", &path, e)))
		return rc;
	return occurrences_csv_write(m, res, path, NULL, e);
}

/* phases.csv without joules: every scope's times, per process too
 * (without joules the times are all there is). */
static int write_phase_times(struct report *r, const struct energy_model *m, const struct run_results *res,
			     char **table, struct em_error *e)
{
	const char *path;
	int rc;
	progress(r, "phases.csv (times)");
	rc = out_path(r, "phases.csv", &path, e);
	return rc ? rc : phases_csv_write_times(m, res, path, table, e);
}

/* Without a perun file: what the ring (and the profile) give alone.
 * *not_written: the list of the files not written, for the closing lines. */
static int write_times_only(struct report *r, const struct run_model *rm, const struct em_opts *o,
			    enum attrib_choice method, const struct attrib_opts *ao, const char *title, const char *stacks,
			    char **table, char *pyspy_line, size_t pyspy_cap, const char **not_written,
			    struct em_error *e)
{
	const struct energy_model *m = &rm->m;
	/* Times only: scope all (this file's run when the ring holds several)
	 * and every process. */
	struct results_opts ro = {.method = method, .ao = ao, .all_pid = energy_model_own_pid(m),
				  .what = RESULTS_ALL | RESULTS_OCCURRENCES | (r->ranks ? 0u : RESULTS_PROCS)};
	struct run_results res;
	int rc;

	progress(r, "attributing energy to phases");
	if ((rc = results_compute(&res, m, rm, &ro, e)) ||
	    (rc = r->ranks ? write_ranks(r, m, table, e) /* every rank's times */
			   : write_phase_times(r, m, &res, table, e)) ||
	    (rc = write_occurrences(r, m, &res, e)) || (rm->have_profile && (rc = write_samples(r, rm, o, e)))) {
		results_free(&res);
		return rc;
	}
	progress(r, "phases.svg, phases.png");
	rc = write_picture(r, "phases", m, &res.all, title, 1, e);
	results_free(&res);
	if (rc || (rc = write_trace(r, rm, NULL, title, stacks, pyspy_line, pyspy_cap, e)))
		return rc;
	*not_written = rm->have_profile ? "perun.csv, timeline.csv, timeline.svg/.png, functions.csv, energy.speedscope.json"
					: "perun.csv, timeline.csv, timeline.svg/.png";
	return 0;
}

/* perun.csv ... trace.json: every file after the phases' over the
 * attributed scope. */
static int write_rest(struct report *r, const struct run_model *rm, const struct em_opts *o,
		      const struct run_results *res, const char *title, const char *stacks, char *pyspy_line,
		      size_t pyspy_cap, struct em_error *e)
{
	const struct energy_model *m = &rm->m;
	const struct phase_scope *all = &res->all;
	const char *path;
	int rc;
	if ((rc = write_occurrences(r, m, res, e)) || (m->emulated && (rc = write_emulated_note(r, m, o->perun, e))))
		return rc;
	progress(r, "perun.csv");
	/* With the ring: perun.csv's t_s is the timeline every other output uses. */
	if ((rc = out_path(r, "perun.csv", &path, e)) ||
	    (rc = perun_csv_write(&m->pf, o->perun, path, o->run ? m->run : NULL, 0, NULL, m, e)) ||
	    (rc = out_path(r, "perun.csv.energy.csv", NULL, e)) ||
	    (rm->have_profile && (rc = write_profile_files(r, rm, res, o, e))))
		return rc;
	if (rm->have_profile && rm->p.meta.torch) {
		/* joules per operator through the phases' powers (op_table.h) */
		progress(r, "ops.csv");
		if ((rc = out_path(r, "ops.csv", &path, e)) || (rc = op_table_write(rm, &res->ops, path, e)))
			return rc;
	}
	progress(r, "timeline.csv");
	if ((rc = out_path(r, "timeline.csv", &path, e)) ||
	    (rc = timeline_csv_write(rm, path, ANCHOR_TIMELINE_BIN_S, e)) ||
	    (rm->have_profile && (rc = out_path(r, "timeline.csv.alignment.txt", NULL, e))) ||
	    (rc = write_pictures(r, m, all, title, e)))
		return rc;
	return write_trace(r, rm, res, title, stacks, pyspy_line, pyspy_cap, e);
}

/* Everything into r->dir over the opened run; the table into *table. */
static int write_all(struct report *r, const struct run_model *rm, const struct em_opts *o, enum attrib_choice method,
		     const struct attrib_opts *ao, const char *title, const char *stacks, char **table,
		     char *pyspy_line, size_t pyspy_cap, struct em_error *e)
{
	const struct energy_model *m = &rm->m;
	/* Every attribution the files show, once (results.h): scope all,
	 * the samples' processes for functions.phases.csv, the ms counters. */
	struct results_opts ro = {.method = method, .ao = ao, .all_pid = 0,
				  .what = RESULTS_ALL | RESULTS_COUNTERS | RESULTS_OCCURRENCES | RESULTS_OPS |
					  (rm->have_profile ? RESULTS_FUNCTIONS : 0u)};
	struct run_results res;
	int rc;

	progress(r, "attributing energy to phases");
	if ((rc = results_compute(&res, m, rm, &ro, e)) == -ENODATA && r->ranks) {
		/* Too few perun windows for the lead rank's phases: its ranks'
		 * table says so per rank; the pictures show times alone. */
		diag_warn(e->file, "%s; the pictures and trace.json show times only", e->msg);
		results_free(&res);
		ro.all_no_energy = 1;
		rc = results_compute(&res, m, rm, &ro, e);
	}
	if (!rc)
		rc = r->ranks ? write_ranks(r, m, table, e) : write_phases_csv(r, m, &res, table, e);
	if (!rc)
		rc = write_rest(r, rm, o, &res, title, stacks, pyspy_line, pyspy_cap, e);
	results_free(&res);
	return rc;
}

/* `report DIR`: the run's files found in DIR, the report in DIR/report
 * unless -d says otherwise.  1 (after the message) when DIR does not
 * name one run. */
static int from_run_dir(const char *run_dir, struct em_opts *o, const char **profile, struct report *r,
			struct run_files *found, char **dir_buf)
{
	struct em_error ferr;
	int rc;
	if (o->ring || o->perun || *profile)
		options_usage_error(&report_usage, "give a run directory or --ring/--perun/--profile, not both");
	/* A ring without a perun file still makes a report: its times. */
	if ((rc = run_find(run_dir, found, &ferr)) && !(rc == -ENOENT && found->ring)) {
		fprintf(stderr, "anchorpost: %s: %s\n", run_dir, ferr.msg);
		run_find_free(found);
		return 1;
	}
	for (size_t i = 0; i < found->nskipped; i++)
		diag_warn(found->skipped[i], "not taken as the run's py-spy profile: anchorpost wrote it (an energy profile)");
	o->ring = found->ring, o->perun = found->perun, *profile = found->profile;
	/* Several rings: the ranks of one run (one ring per rank). */
	if (!r->final) {
		if (asprintf(dir_buf, "%s/report", run_dir) < 0)
			diag_fatal(NULL, "out of memory");
		r->final = *dir_buf;
	}
	return 0;
}

/* The directory's own name: "out/demo/" -> "demo". */
static const char *default_title(const char *final, char *buf, size_t cap)
{
	size_t len = strlen(final);
	while (len > 1 && final[len - 1] == '/')
		len--;
	snprintf(buf, cap, "%.*s", (int)len, final);
	return strrchr(buf, '/') && strrchr(buf, '/')[1] ? strrchr(buf, '/') + 1 : buf;
}

int cmd_report(int argc, char **argv)
{
	struct em_opts o = {0};
	struct attrib_opts ao = {0};
	struct report r = {0};
	struct run_opts ro = {0};
	struct run_model rm;
	struct mring mr;
	struct em_error e;
	struct run_files found;
	const char *profile = NULL, *title = NULL, *stacks, *run_dir = NULL, *not_written = NULL;
	enum attrib_choice method = ATTRIB_CHOICE_AUTO;
	int stacks_i = 0, npos, rc;
	char *table = NULL, title_buf[256], pyspy_line[3072] = "", *dir_buf = NULL;

	const struct option opts[] = {
		OPT_STRING(0, "ring", &o.ring, "RING", "the ring (anchor_*.ring)"),
		OPT_STRING(0, "perun", &o.perun, "FILE", "perun's HDF5 output (without it: times only)"),
		OPT_STRING(0, "profile", &profile, "FILE", "py-spy's profile"),
		OPT_STRING('d', "dir", &r.final, "DIR", "the output directory (created; default with RUNDIR: RUNDIR/report)"),
		OPT_STRING('o', NULL, &r.final, "DIR", NULL), /* the same, as record spells it */
		OPT_STRING(0, "title", &title, "TEXT",
			   "names the run in the pictures and the trace (default: the basename of OUTDIR)"),
		OPT_CHOICE(0, "trace-stacks", &stacks_i, "WHICH", stack_choices, "py-spy stacks in trace.json [phases]"),
		OPTS_ATTRIB(&method, &ao),
		OPTS_PERUN_SELECT(&o),
		OPTS_ALIGN(&o),
		OPT_NO_HOOK(&o),
		OPT_END(),
	};

	npos = options_parse(argc, argv, opts, &report_usage, 0);
	if (npos > 1)
		options_usage_error(&report_usage, "unexpected argument '%s'", argv[2]);
	if (npos == 1)
		run_dir = argv[1];
	stacks = stack_choices[stacks_i].name;
	memset(&found, 0, sizeof found);
	if (run_dir && from_run_dir(run_dir, &o, &profile, &r, &found, &dir_buf))
		return 2;
	if (!o.ring || !r.final)
		options_usage_error(&report_usage, "needs RUNDIR, or --ring, --perun and -d DIR (--perun: for joules)");
	if (!title)
		title = default_title(r.final, title_buf, sizeof title_buf);
	r.progress = isatty(STDERR_FILENO);
	clock_gettime(CLOCK_MONOTONIC, &r.t_start);

	progress(&r, profile ? "loading the ring, perun and the py-spy profile, aligning" :
		     o.perun ? "loading the ring and perun, aligning" : "loading the ring");
	/* Several rings: the per-rank model first; the other files follow
	 * the ring of the lowest rank. */
	if (found.nrings > 1) {
		if (!o.perun)
			no_energy_note_ring(found.ring, PHASES_NO_PERUN_HERE);
		report_ranks_open(&mr, (const char *const *)found.rings, found.nrings, &o, method, &ao);
		r.ranks = &mr;
		o.ring = mring_lead_ring(&mr);
	}
	ro.em = o;
	ro.profile = profile;
	ro.need_power = profile != NULL && o.perun; /* functions.csv needs energy to give */
	if (run_model_open(&rm, &ro, &e))
		run_open_fatal(&o, &e);
	if (!r.ranks && report_ranks_wanted(1, &rm.m)) {
		const char *one[1] = {o.ring};
		progress(&r, "several ranks in the ring: the per-rank model");
		report_ranks_open(&mr, one, 1, &o, method, &ao);
		r.ranks = &mr;
	}
	check_plan(&r, &rm); /* before the warnings: a refusal is the only line */
	if (rm.m.times_only)
		no_energy_note(&rm.m, run_dir ? PHASES_NO_PERUN_HERE : "no --perun given");
	run_warnings(&rm.m, &o);
	start_tmp_dir(&r);
	rc = rm.m.times_only ? write_times_only(&r, &rm, &o, method, &ao, title, stacks, &table, pyspy_line,
						sizeof pyspy_line, &not_written, &e)
			     : write_all(&r, &rm, &o, method, &ao, title, stacks, &table, pyspy_line, sizeof pyspy_line, &e);
	/* every file in the build directory, then the directory */
	if (rc || (rc = outfile_release(&e)) || (rc = commit_tmp_dir(&r, &e))) {
		/* All or nothing, here and not in an exit handler: the line
		 * first (it may name a file about to go), then no file. */
		cmd_error(&e);
		remove_tmp_dir(&r);
		return 1;
	}
	diag_alias_path(NULL, NULL);

	progress(&r, "done");
	fputs(table, stdout);
	if (pyspy_line[0])
		printf("%s\n", pyspy_line);
	free(table);
	print_files(&r);
	if (not_written)
		printf("not written without a perun file: %s\n", not_written);
	run_model_close(&rm);
	if (r.ranks)
		mring_close(&mr);
	run_find_free(&found);
	for (size_t i = 0; i < r.nfiles; i++)
		free(r.files[i]);
	free(r.files);
	free(r.tmp_dir);
	free(dir_buf);
	return 0;
}
