/*
 * fn_phases.c - each function's joules per phase as [lo_j, hi_j] over
 * every placement the data allow (fn_phases.h; output/function_phases.h
 * says what each column of functions.phases.csv holds).
 *
 * Why intervals: with one helper line for every phase (`with
 * anchor.phase(name)` in a loop) speedscope's samples say "in some
 * phase", not which, and the alignment says CANNOT PLACE.  Their joules as
 * computed at their (unknown) instants are another phase's power, so
 * neither the phase nor the number is known; what is known is which
 * phases each sample may be in and how much power those phases drew.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/fn_phases.h"
#include "model/lookup.h"
#include "model/results.h"
#include "model/sample_energy.h"

/* The power a phase of one process drew: per phase, its attributed
 * energy over its seconds and the 95 % interval's ends, all groups. */
struct proc_power {
	uint32_t pid;
	double *hi_w;   /* nnames: NAN where the phase has no time there */
	double *lo_w, *pt_w;
	double any_w;   /* the highest window power of the run (no phase time) */
};

struct fp_ctx {
	const struct run_model *rm;
	const struct run_results *res;
	size_t np;                 /* phases */
	uint32_t *fn_of_frame, nfn;
	const char **fn_name, **fn_file;
	struct proc_power *pp;
	size_t npp;
	double any_w;
};

/* A function is (name, file), as functions.csv counts them (the run
 * model's ids). */
static int map_functions(struct fp_ctx *c)
{
	const struct run_model *rm = c->rm;
	const struct pyspy_profile *p = &rm->p;
	uint32_t nf = p->frames.n;
	c->fn_of_frame = calloc(nf ? nf : 1, sizeof *c->fn_of_frame);
	c->fn_name = calloc(nf + 1, sizeof *c->fn_name);
	c->fn_file = calloc(nf + 1, sizeof *c->fn_file);
	if (!c->fn_of_frame || !c->fn_name || !c->fn_file)
		return -ENOMEM;
	memcpy(c->fn_of_frame, rm->fn_of_frame, nf * sizeof *c->fn_of_frame);
	c->nfn = rm->nfn;
	for (uint32_t g = 0; g < c->nfn; g++) {
		c->fn_name[g] = p->frames.v[rm->fn_first[g]].name;
		c->fn_file[g] = p->frames.v[rm->fn_first[g]].file;
	}
	/* the empty stack's row, as in functions.csv */
	c->fn_name[c->nfn] = "(no python frame)";
	c->fn_file[c->nfn] = NULL;
	return 0;
}

/* The phase powers of pid's primary thread (cached; its attribution is the
 * results stage's), NULL when pid has none: no thread with phases, or too
 * few perun windows to fit its phases (a short run), so samples keep their
 * slices' joules (and the run's highest power as the upper end); not an
 * error of functions. */
static const struct proc_power *power_of(struct fp_ctx *c, uint32_t pid, struct em_error *e, int *rc)
{
	const struct energy_model *m = &c->rm->m;
	const struct phase_scope *sr;
	struct proc_power *n;
	*rc = 0;
	for (size_t i = 0; i < c->npp; i++)
		if (c->pp[i].pid == pid)
			return c->pp[i].hi_w ? &c->pp[i] : NULL;
	n = realloc(c->pp, (c->npp + 1) * sizeof *n);
	if (!n) {
		*rc = diag_error(e, -ENOMEM, NULL, "out of memory");
		return NULL;
	}
	c->pp = n;
	n = &c->pp[c->npp++];
	memset(n, 0, sizeof *n);
	n->pid = pid;
	if (!(sr = results_proc(c->res, pid)))
		return NULL;
	n->hi_w = malloc((c->np ? c->np : 1) * sizeof *n->hi_w);
	n->lo_w = malloc((c->np ? c->np : 1) * sizeof *n->lo_w);
	n->pt_w = malloc((c->np ? c->np : 1) * sizeof *n->pt_w);
	if (!n->hi_w || !n->lo_w || !n->pt_w) {
		free(n->lo_w);
		free(n->pt_w);
		free(n->hi_w);
		n->hi_w = n->lo_w = n->pt_w = NULL;
		*rc = diag_error(e, -ENOMEM, NULL, "out of memory");
		return NULL;
	}
	for (size_t q = 0; q < c->np; q++) {
		double w = 0, lw = 0, pw = 0, t = 0;
		for (size_t g = 0; g < m->ngroups; g++) {
			const struct phase_group_row *r = &sr->row[q * m->ngroups + g];
			if (r->time_s > 0) {
				/* the interval's ends, never across the point */
				w += fmax(r->hi_j, r->energy_j) / r->time_s;
				lw += fmax(0, fmin(r->lo_j, r->energy_j)) / r->time_s;
				pw += r->energy_j / r->time_s;
				t = r->time_s;
			}
		}
		n->hi_w[q] = t > 0 ? w : NAN;
		n->lo_w[q] = t > 0 ? lw : NAN;
		n->pt_w[q] = t > 0 ? pw : NAN;
	}
	return n;
}

/* Highest window power of the whole span, all groups: what a sample may
 * have drawn in a phase its process's attribution saw no time of. */
static double highest_power(const struct energy_model *m)
{
	double sum = 0;
	for (size_t g = 0; g < m->ngroups; g++) {
		double best = 0;
		for (size_t s = 0; s < m->nsen; s++) {
			double hi = -INFINITY, lo = INFINITY;
			if (energy_model_group_of(m, &m->sen[s]) != g)
				continue;
			energy_model_window_range(&m->sen[s], m->span_t0_s, m->span_t1_s, &hi, &lo);
			if (hi > 0)
				best += hi; /* sensors of one group add up (two packages) */
		}
		sum += best;
	}
	return sum;
}

/* The longest time an unplaced sample may stand for.  Not its aligned
 * slice: the fit that could not place it warped its neighbours too
 * (slices of 3 ms for a 10 ms period were measured on a CANNOT PLACE
 * recording).  py-spy's nominal period, or, when its process lived longer
 * than the thread's samples account for (py-spy fell behind, or idle
 * samples were dropped without --idle), the life shared among them. */
static double sample_time_hi(const struct align_pyspy *a, const struct pyspy_sample *s, const size_t *thr_n)
{
	double d = s->duration_s > 0 ? s->duration_s : a->sample_period_s;
	if (s->thread < a->nthr && thr_n[s->thread]) {
		const struct align_pyspy_thread *t = &a->thr[s->thread];
		double life = t->ring_end_s - t->ring_start_s;
		if (isfinite(life) && life > 0)
			d = fmax(d, life / (double)thr_n[s->thread]);
	}
	return d;
}

/* Share by which n samples may miss the time they stand for (95 %). */
static double count_err(double n)
{
	return n > 0 ? (2 * sqrt(n) + 1) / n : 0;
}

static int cmp_row(const void *x, const void *y)
{
	const struct fn_phase_row *a = x, *b = y;
	if (a->hi_j != b->hi_j)
		return a->hi_j > b->hi_j ? -1 : 1;
	if (a->fn != b->fn)
		return a->fn < b->fn ? -1 : 1;
	return (a->phase > b->phase) - (a->phase < b->phase);
}

int fn_phases_build(struct fn_phases *out, const struct run_model *rm, const struct run_results *res,
		    struct em_error *e)
{
	const struct energy_model *m = &rm->m;
	const struct pyspy_profile *p = &rm->p;
	const struct align_pyspy *a = &rm->al;
	const struct sample_energy *se = &rm->se;
	struct fp_ctx c = {.rm = rm, .res = res, .np = m->ph.nnames};
	size_t np = c.np, nn = p->stacks.n, nrows = 0;
	/* joules: point and lower end of the placed samples, upper end of
	 * placed and unplaced ones; per node, then per function */
	double *node_pl = NULL, *node_lo = NULL, *node_un = NULL, *fn_pl = NULL, *fn_lo = NULL, *fn_un = NULL;
	uint64_t *node_npl = NULL, *node_nun = NULL, *fn_npl = NULL, *fn_nun = NULL;
	uint8_t *seen = NULL;
	uint32_t *fr = NULL, cap = 0;
	size_t *thr_n = NULL; /* samples per profile thread */
	struct fn_phase_row *rows = NULL;
	int rc = 0;

	memset(out, 0, sizeof *out);
	if (map_functions(&c)) {
		rc = diag_error(e, -ENOMEM, NULL, "out of memory");
		goto out;
	}
	c.any_w = highest_power(m);
	thr_n = calloc(a->nthr + 1, sizeof *thr_n);
	if (!thr_n) {
		rc = diag_error(e, -ENOMEM, NULL, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < p->nsamples; i++)
		if (p->samples[i].thread < a->nthr)
			thr_n[p->samples[i].thread]++;
	node_pl = calloc(nn * np + 1, sizeof *node_pl);
	node_un = calloc(nn * np + 1, sizeof *node_un);
	node_lo = calloc(nn * np + 1, sizeof *node_lo);
	fn_lo = calloc((c.nfn + 1) * np + 1, sizeof *fn_lo);
	node_npl = calloc(nn * np + 1, sizeof *node_npl);
	node_nun = calloc(nn * np + 1, sizeof *node_nun);
	fn_pl = calloc((c.nfn + 1) * np + 1, sizeof *fn_pl);
	fn_un = calloc((c.nfn + 1) * np + 1, sizeof *fn_un);
	fn_npl = calloc((c.nfn + 1) * np + 1, sizeof *fn_npl);
	fn_nun = calloc((c.nfn + 1) * np + 1, sizeof *fn_nun);
	seen = calloc(c.nfn + 1, 1);
	if (!node_pl || !node_un || !node_lo || !fn_lo || !node_npl || !node_nun || !fn_pl || !fn_un || !fn_npl || !fn_nun || !seen) {
		rc = diag_error(e, -ENOMEM, NULL, "out of memory");
		goto out;
	}

	/* Per stack node: a placed sample in the phase at its slice's middle
	 * (functions.csv's rule) at that phase's power as `phases` fits it
	 * (not the slice's own joules: perun's windows are longer than short
	 * phases, so a slice's power is its window's mix of phases: 30.6 J
	 * for a 9.3 J truth was measured on a 100 %-placed recording); an
	 * unplaced one in each phase it may be in, at that phase's upper
	 * power. */
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct pyspy_sample *s = &p->samples[i];
		size_t node = s->stack;
		long th = sample_energy_thread(m, a, s->thread);
		const struct proc_power *pw = NULL;
		if (th < 0)
			continue;
		pw = power_of(&c, m->ph.thr[th].pid, e, &rc);
		if (rc)
			goto out;
		if (!(a->unplaced && a->unplaced[i])) {
			int q = sample_energy_phase_at(m, a, s->thread, (se->t0_s[i] + se->t1_s[i]) / 2);
			double d = se->t1_s[i] > se->t0_s[i] ? se->t1_s[i] - se->t0_s[i] : 0, ej = 0;
			size_t k;
			if (q < 0)
				continue;
			k = node * np + (size_t)q;
			for (size_t g = 0; g < m->ngroups; g++)
				ej += se->e_j[i * m->ngroups + g];
			if (pw && !isnan(pw->pt_w[q])) {
				node_pl[k] += d * pw->pt_w[q];
				node_lo[k] += d * pw->lo_w[q];
				node_un[k] += d * pw->hi_w[q];
			} else { /* no fitted power there: the slice's own, up to the run's highest */
				node_pl[k] += ej;
				node_lo[k] += ej;
				node_un[k] += fmax(ej, d * c.any_w);
			}
			node_npl[k]++;
			continue;
		}
		double d = sample_time_hi(a, s, thr_n);
		uint64_t set = lookup_stack_phases(rm, s->stack);
		out->n_unplaced++;
		for (size_t q = 0; q < np; q++) {
			double w;
			if (phase_set_is_tool(&m->ph, (int)q))
				continue; /* anchor's and perun's own activity runs no user code */
			if (set ? !(q < 64 && (set >> q & 1)) : !(pw && !isnan(pw->hi_w[q])))
				continue;
			w = pw && !isnan(pw->hi_w[q]) ? pw->hi_w[q] : c.any_w;
			node_un[node * np + q] += d * w;
			node_nun[node * np + q]++;
		}
	}
	/* Per function: each stack once, whatever its recursion. */
	for (uint32_t node = 0; node < nn; node++) {
		uint32_t dep = p->stacks.v[node].depth;
		int any = 0;
		for (size_t q = 0; q < np && !any; q++)
			any = node_npl[node * np + q] || node_nun[node * np + q];
		if (!any)
			continue;
		if (dep > cap) {
			uint32_t *nfr = realloc(fr, dep * sizeof *nfr);
			if (!nfr) {
				rc = diag_error(e, -ENOMEM, NULL, "out of memory");
				goto out;
			}
			fr = nfr;
			cap = dep;
		}
		lookup_stack_frames(p, node, fr, cap);
		for (uint32_t k = 0; k < (dep ? dep : 1); k++) {
			size_t f = dep ? c.fn_of_frame[fr[k]] : c.nfn;
			if (seen[f])
				continue;
			seen[f] = 1;
			for (size_t q = 0; q < np; q++) {
				fn_pl[f * np + q] += node_pl[node * np + q];
				fn_lo[f * np + q] += node_lo[node * np + q];
				fn_un[f * np + q] += node_un[node * np + q];
				fn_npl[f * np + q] += node_npl[node * np + q];
				fn_nun[f * np + q] += node_nun[node * np + q];
			}
		}
		for (uint32_t k = 0; k < dep; k++)
			seen[c.fn_of_frame[fr[k]]] = 0;
		seen[c.nfn] = 0;
	}

	rows = calloc((c.nfn + 1) * np + 1, sizeof *rows);
	if (!rows) {
		rc = diag_error(e, -ENOMEM, NULL, "out of memory");
		goto out;
	}
	for (size_t f = 0; f <= c.nfn; f++)
		for (size_t q = 0; q < np; q++) {
			size_t k = f * np + q;
			struct fn_phase_row *r;
			if (!fn_npl[k] && !fn_nun[k])
				continue;
			r = &rows[nrows++];
			r->fn = f;
			r->name = c.fn_name[f];
			r->file = c.fn_file[f];
			r->phase = (int)q;
			r->placed_j = fn_pl[k];
			r->n_placed = fn_npl[k];
			r->n_un = fn_nun[k];
			r->lo_j = fmax(0, fn_lo[k] * (1 - count_err((double)fn_npl[k])));
			r->hi_j = fn_un[k] * (1 + count_err((double)(fn_npl[k] + fn_nun[k])));
		}
	qsort(rows, nrows, sizeof *rows, cmp_row);

	out->rows = rows;
	out->nrows = nrows;
	rows = NULL;
	rc = 0;
out:
	for (size_t i = 0; i < c.npp; i++)
		free(c.pp[i].hi_w), free(c.pp[i].lo_w), free(c.pp[i].pt_w);
	free(c.pp);
	free(c.fn_of_frame);
	free(c.fn_name);
	free(c.fn_file);
	free(node_pl);
	free(node_un);
	free(node_lo);
	free(fn_lo);
	free(node_npl);
	free(node_nun);
	free(fn_pl);
	free(fn_un);
	free(fn_npl);
	free(fn_nun);
	free(seen);
	free(fr);
	free(rows);
	free(thr_n);
	return rc;
}

void fn_phases_free(struct fn_phases *fp)
{
	free(fp->rows);
	memset(fp, 0, sizeof *fp);
}
