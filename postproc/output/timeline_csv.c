/* timeline_csv.c - timeline.csv (see timeline_csv.h). */
#include "output/timeline_csv.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/energy_model.h"
#include "model/sample_energy.h"
#include "output/csv.h"
#include "output/outfile.h"
#include "output/timebase.h"
#include "util/diag.h"

struct hit {
	size_t bin;
	uint32_t frame;
	uint8_t cls; /* 0 a phase thread's sample, 1 running, 2 idle */
	double w_s;
};

static int cmp_hit(const void *x, const void *y)
{
	const struct hit *a = x, *b = y;
	if (a->bin != b->bin)
		return a->bin < b->bin ? -1 : 1;
	if (a->cls != b->cls)
		return a->cls - b->cls;
	return (a->frame > b->frame) - (a->frame < b->frame);
}

/* top[b]: leaf frame with the most sampled time in bin b, UINT32_MAX none.
 * With --idle every thread is sampled all the time, so a bin's leaves are
 * ranked by class first: samples of a thread whose phases the timeline
 * shows (what the run was doing), then running samples of other threads,
 * then idle ones; within a class by sampled time. */
static int top_frames(const struct energy_model *m, const struct pyspy_profile *p, const struct align_pyspy *al,
		      const struct sample_energy *se, double t0, double w, size_t nbins, uint32_t *top)
{
	uint8_t *phase_thr = calloc(p->nthreads ? p->nthreads : 1, 1);
	if (!phase_thr)
		return -ENOMEM;
	for (uint32_t k = 0; k < p->nthreads; k++) {
		long th = al->thr[k].ring_pid ? phase_set_primary_of(&m->ph, al->thr[k].ring_pid) : -1;
		phase_thr[k] = th >= 0 && m->ph.thr[th].tid == al->thr[k].ring_tid;
	}
	struct hit *h = NULL;
	size_t n = 0, cap = 0;
	for (size_t b = 0; b < nbins; b++)
		top[b] = UINT32_MAX;
	for (size_t i = 0; i < p->nsamples; i++) {
		double a = se->t0_s[i], z = se->t1_s[i];
		uint32_t st = p->samples[i].stack;
		if (!st || !(z > a) || z <= t0)
			continue;
		long b0 = (long)floor((a - t0) / w), b1 = (long)floor((z - t0) / w);
		if (b0 < 0)
			b0 = 0;
		for (long b = b0; b <= b1 && b < (long)nbins; b++) {
			double lo = t0 + (double)b * w, hi = lo + w;
			double ov = (z < hi ? z : hi) - (a > lo ? a : lo);
			if (ov <= 0)
				continue;
			if (n == cap) {
				cap = cap ? cap * 2 : 4096;
				struct hit *nh = realloc(h, cap * sizeof *nh);
				if (!nh) {
					free(h);
					free(phase_thr);
					return -ENOMEM;
				}
				h = nh;
			}
			uint8_t cls = phase_thr[p->samples[i].thread] ? 0 : se->idle[i] ? 2 : 1;
			h[n++] = (struct hit){(size_t)b, pyspy_stack_leaf(&p->stacks, st), cls, ov};
		}
	}
	if (n > 1) /* h is NULL when no sample fell in a bin: qsort's argument is nonnull */
		qsort(h, n, sizeof *h, cmp_hit);
	for (size_t i = 0; i < n;) {
		size_t b = h[i].bin;
		double best = -1;
		int best_cls = 3;
		while (i < n && h[i].bin == b) {
			size_t j = i;
			double sum = 0;
			while (j < n && h[j].bin == b && h[j].cls == h[i].cls && h[j].frame == h[i].frame)
				sum += h[j++].w_s;
			if (h[i].cls < best_cls || (h[i].cls == best_cls && sum > best)) {
				best = sum;
				best_cls = h[i].cls;
				top[b] = h[i].frame;
			}
			i = j;
		}
	}
	free(h);
	free(phase_thr);
	return 0;
}

/* One phase column per process that has phases: its pid and primary
 * thread (index into mp->ph.thr); returns how many. */
static size_t phase_columns(const struct energy_model *mp, uint32_t *pids, long *pthr)
{
	size_t npids = 0;

	for (size_t i = 0; i < mp->rl.procs.n; i++) {
		uint32_t pid = mp->rl.procs.p[i].pid;
		long th = phase_set_primary_of(&mp->ph, pid);
		int seen = 0;
		for (size_t k = 0; k < npids; k++)
			seen |= pids[k] == pid;
		if (th < 0 || seen)
			continue;
		pids[npids] = pid;
		pthr[npids++] = th;
	}
	return npids;
}

/* Mean power per device group over [lo, hi) cut to perun's span; NaN
 * where the bin lies outside it. */
static void bin_power_w(const struct energy_model *mp, double lo, double hi, double *pw)
{
	for (size_t g = 0; g < mp->ngroups; g++) {
		double clo = lo > mp->span_t0_s ? lo : mp->span_t0_s, chi = hi < mp->span_t1_s ? hi : mp->span_t1_s;
		double e = 0;
		pw[g] = NAN;
		if (chi <= clo)
			continue;
		for (size_t s = 0; s < mp->nsen; s++)
			if (energy_model_group_of(mp, &mp->sen[s]) == g)
				e += energy_model_slice_j(&mp->sen[s], clo, chi);
		pw[g] = e / (chi - clo);
	}
}

/* What the CSV's columns are worth: beside OUT, or on stderr with -o -. */
static int write_alignment_note(const struct run_model *rm, const char *out, int have_prof, struct em_error *e)
{
	const struct energy_model *mp = &rm->m;
	FILE *afp = stderr;
	struct outfile af;
	char *apath = NULL;
	int rc = 0;

	if (out && !outfile_is_stream(out)) {
		if (asprintf(&apath, "%s.alignment.txt", out) < 0)
			return diag_error(e, -ENOMEM, NULL, "out of memory");
		if ((rc = outfile_create(&af, apath, e))) {
			diag_error_keep_file(e);
			free(apath);
			return rc;
		}
		afp = af.fp;
	}
	fprintf(afp, "perun alignment: %s (+-%.3g ms)\n", mp->align.method, mp->align.uncert_ms);
	fprintf(afp, "perun span: %.6f .. %.6f s\n", mp->span_t0_s, mp->span_t1_s);
	if (have_prof) {
		fprintf(afp, "py-spy alignment: %s\n", rm->align_text);
	}
	if (mp->emulated)
		fprintf(afp, "sensor: %s\n", energy_model_sensor_note(mp));
	if (apath) {
		rc = outfile_done(&af, e);
		free(apath);
	}
	return rc;
}

/* The bins and their columns, shared by every row of the CSV. */
struct tl_grid {
	double t0, bin_s;
	size_t nbins;
	const uint32_t *top; /* per bin, top frame id; NULL without a profile */
	const uint32_t *pids;
	const long *pthr;
	size_t npids;
	const unsigned char *glitch; /* nbins x ngroups: the bin overlaps a repaired window; NULL: none */
};

/* Which bins of which group overlap a window whose impossible reading was
 * repaired (sensor_glitch.h): their power is partly the repair's, and the
 * row says so.  *out NULL when no sensor had one; -ENOMEM. */
static int glitch_bins(const struct energy_model *mp, double t0, double bin_s, size_t nbins, unsigned char **out)
{
	unsigned char *gb = NULL;
	size_t ng = mp->ngroups ? mp->ngroups : 1;
	for (size_t s = 0; s < mp->nsen; s++) {
		const struct em_sensor *es = &mp->sen[s];
		size_t g = energy_model_group_of(mp, es);
		if (!es->fix.bad)
			continue;
		if (!gb && !(gb = calloc(nbins * ng, 1)))
			return -ENOMEM;
		for (size_t i = 1; i < es->ser.n; i++) {
			double a, b;
			if (!es->fix.bad[i])
				continue;
			a = floor((es->t_tl[i - 1] - t0) / bin_s);
			b = floor((es->t_tl[i] - t0) / bin_s);
			for (double k = a < 0 ? 0 : a; k <= b && k < (double)nbins; k++)
				gb[(size_t)k * ng + g] = 1;
		}
	}
	*out = gb;
	return 0;
}

/* Bin b: one row per phase column and device group. */
static void write_bin(struct csv *c, const struct run_model *rm, const struct tl_grid *gr, size_t b, double *pw)
{
	const struct energy_model *mp = &rm->m;
	double lo = gr->t0 + (double)b * gr->bin_s, hi = lo + gr->bin_s, mid = (lo + hi) / 2;
	char ts[48], unix_s[48], frame[1024] = "";
	size_t nts = (size_t)snprintf(ts, sizeof ts, "%.9f", lo);
	size_t nunix = timebase_unix_text(&mp->rl.clock, mp->base_ns, lo, unix_s, sizeof unix_s);

	bin_power_w(mp, lo, hi, pw);
	if (gr->top && gr->top[b] != UINT32_MAX) {
		const struct pyspy_frame *f = &rm->p.frames.v[gr->top[b]];
		snprintf(frame, sizeof frame, "%s (%s:%d)", f->name, f->file ? f->file : "", f->line);
	}
	for (size_t k = 0; k < (gr->npids ? gr->npids : 1); k++) {
		const char *phase = "";
		if (gr->npids) {
			double ns = (double)mp->base_ns + mid * 1e9;
			int ph = ns >= 0 ? phase_set_phase_at(&mp->ph.thr[gr->pthr[k]], (uint64_t)ns) : -1;
			phase = ph >= 0 ? mp->ph.names[ph] : "";
		}
		for (size_t g = 0; g < (mp->ngroups ? mp->ngroups : 1); g++) {
			csv_strn(c, ts, nts);
			if (nunix)
				csv_strn(c, unix_s, nunix);
			else
				csv_empty(c);
			csv_u64(c, gr->npids ? gr->pids[k] : 0);
			csv_str(c, phase);
			csv_str(c, mp->ngroups ? mp->groups[g] : "");
			csv_f64(c, mp->ngroups ? pw[g] : NAN, 6);
			if (gr->top)
				csv_str(c, frame);
			csv_str(c, gr->glitch && gr->glitch[b * (mp->ngroups ? mp->ngroups : 1) + g] ? "sensor-glitch"
										       : "");
			csv_row_end(c);
		}
	}
}

int timeline_csv_write(const struct run_model *rm, const char *out, double bin_s, struct em_error *e)
{
	const struct energy_model *mp = &rm->m;
	const struct pyspy_profile *pp = &rm->p;
	const struct align_pyspy *ap = &rm->al;
	const struct sample_energy *sep = &rm->se;
	const char *profile = rm->profile;
	static const char *const cols[] = {"t_s", "unix_s", "pid", "phase", "group", "power_w", "top_frame", "flags",
					   NULL};
	static const char *const cols_np[] = {"t_s", "unix_s", "pid", "phase", "group", "power_w", "flags", NULL};
	struct tl_grid gr = {0};
	struct outfile of;
	struct csv c;
	uint32_t *top = NULL, *pids = NULL;
	long *pthr = NULL;
	unsigned char *glitch = NULL;
	double *pw = NULL;
	int rc = -ENOMEM;

	if (!mp->nsen)
		diag_warn(mp->perun_path, "the file holds no power sensors (psutil only): no power columns");

	double t0 = mp->span_t0_s < 0 ? mp->span_t0_s : 0;
	double ring_end = energy_model_tl(mp, mp->rl.rf.ev[mp->rl.rf.nev - 1].ts_ns);
	double t1 = mp->span_t1_s > ring_end ? mp->span_t1_s : ring_end;
	size_t nbins = (size_t)ceil((t1 - t0) / bin_s - 1e-9);
	if (!nbins)
		nbins = 1;
	if (nbins > 100000000)
		return diag_error(e, -E2BIG, NULL, "timeline: %zu bins of %g s: choose a wider --bin", nbins, bin_s);

	if (rm->have_profile) {
		if (ap->idle_dropped)
			diag_warn(profile, "looks recorded without py-spy --idle (%s): sample times are unreliable",
				  pp->meta.idle_reason);
		if (!(top = malloc(nbins * sizeof *top)) || top_frames(mp, pp, ap, sep, t0, bin_s, nbins, top))
			goto oom;
	}
	pids = calloc(mp->rl.procs.n + 1, sizeof *pids);
	pthr = calloc(mp->rl.procs.n + 1, sizeof *pthr);
	if (!pids || !pthr || glitch_bins(mp, t0, bin_s, nbins, &glitch) ||
	    !(pw = malloc((mp->ngroups + 1) * sizeof *pw)))
		goto oom;
	gr = (struct tl_grid){t0, bin_s, nbins, top, pids, pthr, phase_columns(mp, pids, pthr), glitch};

	if ((rc = outfile_create(&of, out ? out : "-", e)))
		goto done;
	csv_init(&c, of.fp);
	csv_header(&c, top ? cols : cols_np);
	for (size_t b = 0; b < nbins; b++)
		write_bin(&c, rm, &gr, b, pw);
	if ((rc = write_alignment_note(rm, out, top != NULL, e))) {
		outfile_abort(&of);
		goto done;
	}
	rc = outfile_done(&of, e);
	goto done;
oom:
	rc = diag_error(e, -ENOMEM, NULL, "out of memory");
done:
	free(pw);
	free(pids);
	free(pthr);
	free(top);
	free(glitch);
	return rc;
}
