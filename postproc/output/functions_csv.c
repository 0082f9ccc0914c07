/* functions_csv.c - functions.csv and its companions (see functions_csv.h). */
#include "output/functions_csv.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/energy_model.h"
#include "model/lookup.h"
#include "model/sample_energy.h"
#include "output/csv.h"
#include "output/function_phases.h"
#include "output/outfile.h"
#include "output/pyspy_energy.h"
#include "output/timebase.h"
#include "util/diag.h"

/* calloc of at least one element; a failure sets *oom, so that a run of
 * allocations is checked once after it. */
static void *xcalloc(size_t n, size_t sz, int *oom)
{
	void *p = calloc(n ? n : 1, sz);
	if (!p)
		*oom = 1;
	return p;
}

static size_t *order;
static const struct fn_energy *sort_g;
static size_t sort_gw;
static int cmp_self(const void *x, const void *y)
{
	double a = sort_g->self_j[*(const size_t *)x * sort_gw], b = sort_g->self_j[*(const size_t *)y * sort_gw];
	if (a != b)
		return a > b ? -1 : 1;
	return (*(const size_t *)x > *(const size_t *)y) - (*(const size_t *)x < *(const size_t *)y);
}

static int write_functions(struct csv *c, const struct energy_model *m, const struct pyspy_profile *p,
			   const struct fn_energy *g)
{
	size_t ng = m->ngroups, gw = ng + 1, np = m->ph.nnames + 1, nf = g->nfunc + 1, nrows = 0;
	int oom = 0;
	const char **cols = xcalloc(10 + 2 * ng + 1, sizeof *cols, &oom);
	char **owned = xcalloc(2 * ng + 1, sizeof *owned, &oom);
	size_t nc = 0;
	if (oom)
		goto fail;
	static const char *const base[] = {"function", "file", "line", "self_j", "total_j",
					   "self_s", "samples", "top_phase", "unplaced_j"};
	for (size_t i = 0; i < 9; i++)
		cols[nc++] = base[i];
	if (ng > 1)
		for (size_t k = 0; k < ng; k++) {
			/* a failed asprintf leaves its pointer undefined */
			if (asprintf(&owned[2 * k], "self_j_%s", m->groups[k]) < 0) {
				owned[2 * k] = NULL;
				goto fail;
			}
			if (asprintf(&owned[2 * k + 1], "total_j_%s", m->groups[k]) < 0) {
				owned[2 * k + 1] = NULL;
				goto fail;
			}
			cols[nc++] = owned[2 * k];
			cols[nc++] = owned[2 * k + 1];
		}
	cols[nc] = NULL;
	csv_header(c, cols);

	if (!(order = xcalloc(nf, sizeof *order, &oom)))
		goto fail;
	for (size_t f = 0; f < nf; f++)
		if (g->samples[f] || g->total_j[f * gw] > 0)
			order[nrows++] = f;
	sort_g = g;
	sort_gw = gw;
	qsort(order, nrows, sizeof *order, cmp_self);
	for (size_t r = 0; r < nrows; r++) {
		size_t f = order[r];
		const struct func *fn = &g->fn[f];
		size_t best = 0;
		for (size_t q = 1; q < np; q++)
			if (g->phase_j[f * np + q] > g->phase_j[f * np + best])
				best = q;
		csv_str(c, fn->name);
		csv_str(c, fn->file);
		if (fn->best_frame != UINT32_MAX && p->frames.v[fn->best_frame].line >= 0)
			csv_i64(c, p->frames.v[fn->best_frame].line);
		else
			csv_empty(c);
		csv_f64(c, g->self_j[f * gw], 9);
		csv_f64(c, g->total_j[f * gw], 9);
		csv_f64(c, g->self_s[f], 9);
		csv_u64(c, g->samples[f]);
		/* no phase named when most of its joules are unplaced: the
		 * phase of those samples is not known (issue 21) */
		int named = best && g->phase_j[f * np + best] > 0 && !(g->unplaced_j[f] > 0.5 * g->total_j[f * gw]);
		csv_str(c, named ? m->ph.names[best - 1] : "");
		csv_f64(c, g->unplaced_j[f], 9);
		if (ng > 1)
			for (size_t k = 0; k < ng; k++) {
				csv_f64(c, g->self_j[f * gw + 1 + k], 9);
				csv_f64(c, g->total_j[f * gw + 1 + k], 9);
			}
		csv_row_end(c);
	}
	free(order);
	for (size_t k = 0; k < 2 * ng; k++)
		free(owned[k]);
	free(owned);
	free(cols);
	return 0;
fail:
	for (size_t k = 0; owned && k < 2 * ng; k++)
		free(owned[k]);
	free(owned);
	free(cols);
	return -ENOMEM;
}

static int write_stacks(const char *path, const struct energy_model *m, const struct pyspy_profile *p,
			const struct fn_energy *g, struct em_error *e)
{
	struct outfile of;
	struct csv c;
	size_t ng = m->ngroups, gw = ng + 1;
	int oom = 0, rc;
	const char **cols = xcalloc(5 + ng, sizeof *cols, &oom);
	char **owned = xcalloc(ng + 1, sizeof *owned, &oom);
	uint32_t *fr = NULL, cap = 0;
	size_t nc = 0;
	if (oom) {
		rc = diag_error(e, -ENOMEM, NULL, "out of memory");
		goto done;
	}
	cols[nc++] = "stack_text"; /* not "stack": DataFrame.stack */
	cols[nc++] = "samples";
	cols[nc++] = "self_s";
	cols[nc++] = "energy_j";
	if (ng > 1)
		for (size_t k = 0; k < ng; k++) {
			if (asprintf(&owned[k], "energy_j_%s", m->groups[k]) < 0) {
				owned[k] = NULL;
				rc = diag_error(e, -ENOMEM, NULL, "out of memory");
				goto done;
			}
			cols[nc++] = owned[k];
		}
	if ((rc = outfile_create(&of, path, e)))
		goto done;
	csv_init(&c, of.fp);
	csv_header(&c, cols);
	for (uint32_t node = 0; node < p->stacks.n; node++) {
		uint32_t d = p->stacks.v[node].depth;
		char *s = NULL;
		size_t len = 0;
		FILE *ms;
		if (!g->node_n[node])
			continue;
		if (d > cap) {
			uint32_t *nfr = realloc(fr, d * sizeof *nfr);
			if (!nfr)
				goto oom;
			fr = nfr;
			cap = d;
		}
		lookup_stack_frames(p, node, fr, cap);
		if (!(ms = open_memstream(&s, &len)))
			goto oom;
		for (uint32_t k = 0; k < d; k++) {
			const struct pyspy_frame *f = &p->frames.v[fr[k]];
			fprintf(ms, "%s%s (%s:%d)", k ? ";" : "", f->name, f->file ? f->file : "", f->line);
		}
		if (!d)
			fputs(NO_FRAME, ms);
		fclose(ms);
		csv_strn(&c, s, len);
		free(s);
		csv_u64(&c, g->node_n[node]);
		csv_f64(&c, g->node_s[node], 9);
		csv_f64(&c, g->node_j[node * gw], 9);
		if (ng > 1)
			for (size_t k = 0; k < ng; k++)
				csv_f64(&c, g->node_j[node * gw + 1 + k], 9);
		csv_row_end(&c);
	}
	rc = outfile_done(&of, e);
	goto done;
oom:
	outfile_abort(&of);
	rc = diag_error(e, -ENOMEM, NULL, "out of memory");
done:
	free(fr);
	for (size_t k = 0; owned && k < ng; k++)
		free(owned[k]);
	free(owned);
	free(cols);
	return rc;
}

static int write_samples(const char *path, const struct energy_model *m, const struct pyspy_profile *p,
			 const struct align_pyspy *a, const struct sample_energy *se, struct em_error *err)
{
	static const char *const cols[] = {"pid", "tid", "t0_s", "t1_s", "unix_s", "idle", "energy_j", "phase",
					   "leaf_function", "leaf_line", "t_s", "phase_at_t", NULL};
	struct outfile of;
	struct csv c;
	int rc;
	if ((rc = outfile_create(&of, path, err)))
		return rc;
	csv_init(&c, of.fp);
	csv_header(&c, cols);
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct pyspy_sample *s = &p->samples[i];
		const struct align_pyspy_thread *t = &a->thr[s->thread];
		double e = 0;
		int ph = sample_energy_phase_at(m, a, s->thread, (se->t0_s[i] + se->t1_s[i]) / 2);
		for (size_t k = 0; k < m->ngroups; k++)
			e += se->e_j[i * m->ngroups + k];
		if (t->ring_pid) {
			csv_u64(&c, t->ring_pid);
			csv_u64(&c, t->ring_tid);
		} else {
			csv_i64(&c, p->threads[s->thread].pid);
			/* chrometrace names pthread ids, not OS tids */
			csv_str(&c, p->meta.format == PYSPY_FMT_CHROMETRACE ? "" : p->threads[s->thread].tid);
		}
		csv_fixed(&c, se->t0_s[i], 9);
		csv_fixed(&c, se->t1_s[i], 9);
		timebase_unix_field(&c, &m->rl.clock, m->base_ns, se->t0_s[i]); /* of t0_s */
		csv_u64(&c, se->idle[i]);
		csv_f64(&c, e, 9);
		csv_str(&c, ph >= 0 ? m->ph.names[ph] : "");
		if (s->stack) {
			const struct pyspy_frame *f = &p->frames.v[pyspy_stack_leaf(&p->stacks, s->stack)];
			csv_str(&c, f->name);
			csv_i64(&c, f->line);
		} else {
			csv_empty(&c);
			csv_empty(&c);
		}
		/* The instant the stack was read (the slice around it can span
		 * dropped idle samples): where a placement check looks. */
		double ts = se->t_s[i];
		int pt = sample_energy_phase_at(m, a, s->thread, ts);
		csv_fixed(&c, ts, 9);
		csv_str(&c, pt >= 0 ? m->ph.names[pt] : "");
		csv_row_end(&c);
	}
	return outfile_done(&of, err);
}

/* Which groups are attributed on the device-side phases, and how. */
static void write_device_rule(FILE *fp, const struct energy_model *m, const struct sample_energy *se)
{
	int any = 0;
	for (size_t g = 0; g < m->ngroups; g++)
		any |= se->dev_group && se->dev_group[g];
	if (!any) {
		fprintf(fp, "device rule: none (no device-side edges in the ring): every group on the samples' "
			    "own slices\n");
		return;
	}
	for (size_t g = 0; g < m->ngroups; g++)
		fprintf(fp, "group %s: %s\n", m->groups[g],
			se->dev_group[g] ? "device-side (GPU work runs after its launch)" : "host-side");
	fprintf(fp, "device rule: a device group's energy inside each device-side phase occurrence (pid %u) "
		    "goes to the samples of the host-side occurrence that launched it (same phase, same "
		    "occurrence number on the process's primary thread): equal shares to the samples read "
		    "inside its own time (busy ones first; none there: the nearest sample a SITE record places in "
		    "that phase, else by the time their slices overlap it); "
		    "outside device-side phases it stays on the samples' slices; CPU/DRAM groups always do\n",
		se->dev_pid);
	fprintf(fp, "device phase shares: %s\n",
		se->dev_fit ? "as `anchorpost phases` fits them on the device timeline (split), scaled so they add "
			      "up to perun's energy over the device-side phase time"
			    : "perun's energy over each device-side phase's time (too few windows for a fit)");
	fprintf(fp, "device occurrences: %zu paired with their host-side occurrence, %zu without a twin "
		    "(their energy stays on the host timeline)\n",
		se->dev_paired, se->dev_unpaired);
	for (size_t g = 0; g < m->ngroups; g++)
		if (se->dev_group[g])
			fprintf(fp, "energy %s in device-side phases: %.6f J\n", m->groups[g], se->dev_j[g]);
}

/* The profile and the energy file observed different processes (two
 * concurrent runs of the script sharing one ring, issue 21 point 3). */
static const char *other_process_note(const struct energy_model *m, const struct align_pyspy *a,
				      const struct sample_energy *se)
{
	static char buf[640];
	double t0 = INFINITY, t1 = -INFINITY, span = m->span_t1_s - m->span_t0_s;
	for (size_t i = 0; i < se->n; i++) {
		t0 = fmin(t0, se->t0_s[i]);
		t1 = fmax(t1, se->t1_s[i]);
	}
	/* the part of perun's span the profile covers: the rest of perun's
	 * joules ("unsampled") were drawn while the profiled process was not
	 * sampled, by the other run alone */
	t0 = fmax(t0, m->span_t0_s);
	t1 = fmin(t1, m->span_t1_s);
	snprintf(buf, sizeof buf,
		 "the profile observed pid %u, the phases carrying the energy are pid %u's: the samples are placed on "
		 "pid %u's own phases, and each one's joules are what the machine drew at its time (both processes "
		 "together), not pid %u's share; the profile covers %.3f .. %.3f s of perun's %.3f .. %.3f s "
		 "(%.0f %%), perun's other joules (unsampled) were drawn while pid %u was not sampled",
		 a->ref_pid, m->ph.thr[m->ph.primary].pid, a->ref_pid, a->ref_pid, t0, t1, m->span_t0_s, m->span_t1_s,
		 span > 0 && t1 > t0 ? 100 * (t1 - t0) / span : 0.0, a->ref_pid);
	return buf;
}

static void write_alignment(FILE *fp, const struct energy_model *m, const struct pyspy_profile *p,
			    const struct align_pyspy *a, const struct sample_energy *se, const char *profile,
			    const char *align_text)
{
	fprintf(fp, "profile: %s\n", profile);
	fprintf(fp, "alignment: %s\n", align_text);
	fprintf(fp, "alignment_method: %s\n", a->method);
	fprintf(fp, "alignment_uncert_ms: %.6g\n", a->uncert_ms);
	fprintf(fp, "perun alignment: %s (+-%.3g ms)\n", m->align.method, m->align.uncert_ms);
	fprintf(fp, "perun span: %.6f .. %.6f s\n", m->span_t0_s, m->span_t1_s);
	fprintf(fp, "threads mapped to the ring: %zu of %zu\n", a->nmapped, a->nthr);
	if (m->ph.nthr && a->ref_pid && m->ph.thr[m->ph.primary].pid != a->ref_pid)
		fprintf(fp, "processes: %s\n", other_process_note(m, a, se));
	for (size_t g = 0; g < m->ngroups; g++)
		fprintf(fp, "energy %s: attributed %.6f J, unsampled %.6f J, perun span %.6f J\n", m->groups[g],
			se->attributed_j[g], se->unsampled_j[g], se->span_j[g]);
	fprintf(fp, "split rule: overlapping samples share a slice equally; idle samples (empty stack or a "
		    "blocking leaf line) only when no busy sample overlaps\n");
	write_device_rule(fp, m, se);
	if (m->emulated)
		fprintf(fp, "sensor: %s\n", energy_model_sensor_note(m));
}

/* The profile with each sample's joules (all groups) as its weight. */
static int write_energy_speedscope(const char *path, const struct energy_model *m, const struct pyspy_profile *p,
				   const struct align_pyspy *a, const struct sample_energy *se, struct em_error *e)
{
	struct outfile so;
	int oom = 0, rc;
	double *w = xcalloc(p->nsamples, sizeof *w, &oom);
	char name[256];
	if (oom)
		return diag_error(e, -ENOMEM, NULL, "out of memory");
	for (size_t i = 0; i < p->nsamples; i++)
		for (size_t k = 0; k < m->ngroups; k++)
			w[i] += se->e_j[i * m->ngroups + k];
	snprintf(name, sizeof name, "energy in joules (anchorpost functions; alignment %s +-%.3g ms%s)%s%s",
		 a->method, a->uncert_ms, se->dev_paired ? "; GPU joules on the samples that launched the work" : "",
		 m->emulated ? "; " : "", energy_model_sensor_note(m));
	if ((rc = outfile_create(&so, path, e)))
		goto done;
	if (pyspy_write_energy_speedscope(p, w, so.fp, name)) {
		outfile_abort(&so);
		rc = diag_error(e, -EIO, path, "write failed");
		goto done;
	}
	rc = outfile_done(&so, e);
done:
	free(w);
	return rc;
}

/* g's arrays (a partly built g too: free(NULL) is a no-op). */

/* OUT.alignment.txt beside a file, on stderr beside stdout or a stream. */
static int write_alignment_file(const struct run_model *rm, const struct run_results *res, const char *out,
				const char *profile, struct em_error *e)
{
	const struct energy_model *m = &rm->m;
	const struct pyspy_profile *p = &rm->p;
	const struct align_pyspy *a = &rm->al;
	const struct sample_energy *se = &rm->se;
	struct outfile af;
	char *apath, *ppath;
	size_t nun = 0;
	int rc;
	if (!out || outfile_is_stream(out)) {
		write_alignment(stderr, m, p, a, se, profile, rm->align_text);
		return 0;
	}
	/* OUT's per-phase intervals (function_phases.h), named in the note. */
	if (!(ppath = function_phases_path(out)))
		return diag_error(e, -ENOMEM, NULL, "out of memory");
	nun = res->fn_phases.n_unplaced;
	if ((rc = function_phases_write(rm, res, ppath, e))) {
		free(ppath);
		return rc;
	}
	if (asprintf(&apath, "%s.alignment.txt", out) < 0) {
		free(ppath);
		return diag_error(e, -ENOMEM, NULL, "out of memory");
	}
	if (!(rc = outfile_create(&af, apath, e))) {
		write_alignment(af.fp, m, p, a, se, profile, rm->align_text);
		/* by its name beside this file: report builds both in a
		 * temporary directory renamed at the end */
		const char *base = strrchr(ppath, '/');
		fprintf(af.fp, "by phase: %s (beside this file): each function's joules per phase as [lo_j, hi_j]; %zu "
			       "sample(s) unplaced, their joules in hi_j of every phase they may be in (at that phase's "
			       "power), never in lo_j\n",
			base ? base + 1 : ppath, nun);
		rc = outfile_done(&af, e);
	}
	if (rc)
		diag_error_keep_file(e); /* it names apath */
	free(apath);
	free(ppath);
	return rc;
}

/* The lines on stderr where the user looks: the alignment, and which
 * recording places exactly. */
static void print_summary(const struct energy_model *m, const struct pyspy_profile *p, const struct align_pyspy *a,
			  const struct sample_energy *se, const char *align_text)
{
	fprintf(stderr, "anchorpost functions: %s\n", align_text);
	if (m->ph.nthr && a->ref_pid && m->ph.thr[m->ph.primary].pid != a->ref_pid)
		fprintf(stderr, "anchorpost functions: %s\n", other_process_note(m, a, se));
	if (p->meta.format == PYSPY_FMT_SPEEDSCOPE && (a->cannot_place || a->uncert_ms > 100))
		fprintf(stderr, "anchorpost functions: speedscope placement is weak here (%s): record with "
				"`py-spy record --format chrometrace` or call anchor.sync_pulse() at the start and "
				"end of the script for exact placement\n",
			a->cannot_place	     ? "CANNOT PLACE"
			: a->slip_open_ms > 0 ? "STEP OPEN: another step of the loop holds the phase sites as well"
					      : "uncertainty above 100 ms");
}

int functions_csv_write(const struct run_model *rm, const struct run_results *res, const char *out, const char *ss_out,
			const char *stacks_out, const char *samples_out, struct em_error *e)
{
	const struct energy_model *mp = &rm->m;
	const struct pyspy_profile *pp = &rm->p;
	const struct align_pyspy *ap = &rm->al;
	const struct sample_energy *sep = &rm->se;
	const char *profile = rm->profile;
	const struct fn_energy *g = &res->fn_energy;
	struct outfile of;
	struct csv c;
	char why[768];
	int rc;

	if (ap->idle_dropped)
		diag_warn(profile, "looks recorded without py-spy --idle (%s; %.2g%% idle samples): idle samples "
				   "were dropped with no gap, so sample times and energies are unreliable; re-record "
				   "with --idle",
			  pp->meta.idle_reason, 100 * sep->idle_share);
	if (!sample_energy_overlaps(mp, pp, ap, sep, why, sizeof why))
		return diag_error(e, -ENODATA, profile, "%s", why);
	if ((rc = outfile_create(&of, out ? out : "-", e)))
		return rc;
	csv_init(&c, of.fp);
	if (write_functions(&c, mp, pp, g))
		rc = diag_error(e, -ENOMEM, NULL, "out of memory");
	if (!rc && stacks_out)
		rc = write_stacks(stacks_out, mp, pp, g, e);
	if (!rc && samples_out)
		rc = write_samples(samples_out, mp, pp, ap, sep, e);
	if (!rc && ss_out)
		rc = write_energy_speedscope(ss_out, mp, pp, ap, sep, e);
	if (!rc)
		rc = write_alignment_file(rm, res, out, profile, e);
	if (rc)
		outfile_abort(&of);
	else if (!(rc = outfile_done(&of, e)))
		print_summary(mp, pp, ap, sep, rm->align_text);
	return rc;
}
