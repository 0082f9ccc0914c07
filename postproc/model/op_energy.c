/*
 * op_energy.c - joules per operator of a torch.profiler trace through the
 * phase attribution (op_energy.h; op_table.h says the rule and why).
 */
#include "model/op_energy.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/device_op_fit.h"


/* Power per (phase, group), W, with its interval; row np = outside every
 * phase (the unattributed row). */
struct op_power {
	double *w, *lo, *hi; /* (np + 1) x ng */
};

static int power_of(const struct energy_model *m, const struct phase_scope *sr, struct op_power *pw)
{
	size_t np = m->ph.nnames, ng = m->ngroups, n = (np + 1) * ng;
	pw->w = calloc(n ? n : 1, sizeof *pw->w);
	pw->lo = calloc(n ? n : 1, sizeof *pw->lo);
	pw->hi = calloc(n ? n : 1, sizeof *pw->hi);
	if (!pw->w || !pw->lo || !pw->hi)
		return -ENOMEM;
	for (size_t k = 0; k < n; k++) {
		const struct phase_group_row *r = &sr->row[k];
		if (!(r->time_s > 0))
			continue;
		pw->w[k] = r->energy_j / r->time_s;
		pw->lo[k] = r->lo_j / r->time_s;
		pw->hi[k] = r->hi_j / r->time_s;
	}
	return 0;
}

/* First segment of th ending after t (segments are in time order). */
static size_t first_seg(const struct energy_model *m, const struct phase_thread *th, double t)
{
	size_t lo = 0, hi = th->nseg;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (energy_model_tl(m, th->seg[mid].t1_ns) <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Add dt seconds of phase k (np: none) to row energies e/lo/hi (ng each)
 * for the groups this row takes, and to the leaf's phase time. */
static void piece(const struct op_power *pw, size_t k, double dt, size_t ng, const uint8_t *take, double *e,
		  double *lo, double *hi, double *leaf_phase_s)
{
	for (size_t g = 0; g < ng; g++) {
		if (!take[g])
			continue;
		e[g] += pw->w[k * ng + g] * dt;
		lo[g] += pw->lo[k * ng + g] * dt;
		hi[g] += pw->hi[k * ng + g] * dt;
	}
	leaf_phase_s[k] += dt;
}

/* The energy of one row over [a, b] on th's phase timeline, clipped to
 * perun's span (no energy is known outside it). */
static void row_energy(const struct energy_model *m, const struct phase_thread *th, const struct op_power *pw,
		       double a, double b, const uint8_t *take, double *e, double *lo, double *hi, double *leaf_phase_s)
{
	size_t np = m->ph.nnames, ng = m->ngroups;
	if (a < m->span_t0_s)
		a = m->span_t0_s;
	if (b > m->span_t1_s)
		b = m->span_t1_s;
	if (!(b > a))
		return;
	double t = a;
	for (size_t s = th ? first_seg(m, th, a) : 0; th && s < th->nseg && t < b; s++) {
		const struct phase_seg *sg = &th->seg[s];
		double s0 = energy_model_tl(m, sg->t0_ns), s1 = energy_model_tl(m, sg->t1_ns);
		if (s0 >= b)
			break;
		if (s0 > t) {
			piece(pw, np, s0 - t, ng, take, e, lo, hi, leaf_phase_s);
			t = s0;
		}
		double end = s1 < b ? s1 : b;
		if (end > t) {
			piece(pw, phase_set_is_tool(&m->ph, sg->phase) ? np : (size_t)sg->phase, end - t, ng, take, e, lo,
			      hi, leaf_phase_s);
			t = end;
		}
	}
	if (b > t)
		piece(pw, np, b - t, ng, take, e, lo, hi, leaf_phase_s);
}

void op_energy_free(struct op_energy *g)
{
	free(g->self_s);
	free(g->total_s);
	free(g->self_j);
	free(g->self_lo);
	free(g->self_hi);
	free(g->total_j);
	free(g->total_lo);
	free(g->total_hi);
	free(g->phase_s);
	free(g->rows);
	free(g->stamp);
	free(g->row_j);
	memset(g, 0, sizeof *g);
}

static int agg_alloc(struct op_energy *g, size_t nf, size_t np, size_t ng)
{
	size_t n = nf * ng + 1;
	memset(g, 0, sizeof *g);
	g->nf = nf;
	g->np = np;
	g->ng = ng;
	g->self_s = calloc(nf + 1, sizeof *g->self_s);
	g->total_s = calloc(nf + 1, sizeof *g->total_s);
	g->self_j = calloc(n, sizeof *g->self_j);
	g->self_lo = calloc(n, sizeof *g->self_lo);
	g->self_hi = calloc(n, sizeof *g->self_hi);
	g->total_j = calloc(n, sizeof *g->total_j);
	g->total_lo = calloc(n, sizeof *g->total_lo);
	g->total_hi = calloc(n, sizeof *g->total_hi);
	g->phase_s = calloc(nf * (np + 1) + 1, sizeof *g->phase_s);
	g->rows = calloc(nf + 1, sizeof *g->rows);
	g->stamp = calloc(nf + 1, sizeof *g->stamp);
	return g->self_s && g->total_s && g->self_j && g->self_lo && g->self_hi && g->total_j && g->total_lo &&
			       g->total_hi && g->phase_s && g->rows && g->stamp
		       ? 0
		       : -ENOMEM;
}

/* A device row of an op fitted on the device's busy time
 * (device_op_fit.h) takes its share of that op's joules, by its time,
 * for the device groups, instead of its phase's power. */
static void device_override(const struct device_op_fit *fit, size_t ng, uint32_t leaf, double dt, double *e,
			    double *lo, double *hi)
{
	for (size_t gi = 0; gi < ng; gi++) {
		const struct device_op_fit *f = &fit[gi];
		if (!f->has || !f->has[leaf] || !(f->rows_s[leaf] > 0))
			continue;
		double share = dt / f->rows_s[leaf];
		e[gi] = f->j[leaf] * share;
		lo[gi] = f->lo[leaf] * share;
		hi[gi] = f->hi[leaf] * share;
	}
}

/* row_j: each row's joules, all groups (trace.json's slices). */
static int aggregate(const struct run_model *rm, const struct phase_scope *sr, struct op_energy *g, double *row_j)
{
	const struct energy_model *m = &rm->m;
	const struct pyspy_profile *p = &rm->p;
	size_t np = m->ph.nnames, ng = m->ngroups, nf = p->frames.n;
	struct op_power pw = {0};
	int rc = -ENOMEM, any_dev = 0;
	double *e = calloc(3 * ng + 1, sizeof *e), *lo = e + ng, *hi = e + 2 * ng;
	double *ph_s = calloc(np + 1, sizeof *ph_s);
	uint8_t *take_host = calloc(ng + 1, 1), *take_dev = calloc(ng + 1, 1);
	uint32_t *path = NULL;
	uint32_t path_cap = 0;
	struct device_op_fit *fit = calloc(ng + 1, sizeof *fit);
	if (!e || !ph_s || !take_host || !take_dev || !fit || agg_alloc(g, nf, np, ng) || power_of(m, sr, &pw))
		goto out;
	for (uint32_t k = 0; k < p->nthreads; k++)
		any_dev |= p->threads[k].pid < 0;
	for (size_t gi = 0; gi < ng; gi++) {
		int dev = phase_set_group_is_device(m->groups[gi]) != 0;
		take_host[gi] = (uint8_t)(!any_dev || !dev);
		take_dev[gi] = (uint8_t)dev;
		/* The kernels' own fit: the method's default rule (every caller,
		 * ops.csv and trace.json's slices, gets the same numbers). */
		if (any_dev && dev && (rc = device_op_fit(rm, gi, ATTRIB_CHOICE_AUTO, NULL, &fit[gi])))
			goto out;
	}
	rc = -ENOMEM;
	const struct phase_thread *host = sr->thr >= 0 ? &m->ph.thr[sr->thr] : NULL, *devth = host;
	long dthr = host ? phase_set_device_of(&m->ph, host->pid) : -1;
	if (dthr >= 0)
		devth = &m->ph.thr[dthr];
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct pyspy_sample *s = &p->samples[i];
		int dev = p->threads[s->thread].pid < 0;
		double a, b;
		align_pyspy_slice(&rm->al, p, i, &a, &b);
		memset(e, 0, 3 * ng * sizeof *e);
		memset(ph_s, 0, (np + 1) * sizeof *ph_s);
		row_energy(m, dev ? devth : host, &pw, a, b, dev ? take_dev : take_host, e, lo, hi, ph_s);
		uint32_t depth = p->stacks.v[s->stack].depth;
		if (depth > path_cap) {
			uint32_t *np2 = realloc(path, depth * sizeof *path);
			if (!np2)
				goto out;
			path = np2;
			path_cap = depth;
		}
		pyspy_stack_frames(&p->stacks, s->stack, path, path_cap);
		uint32_t leaf = path[depth - 1];
		double dt = b > a ? b - a : 0;
		if (dev && depth == 1)
			device_override(fit, ng, leaf, dt, e, lo, hi);
		if (row_j) {
			row_j[i] = 0;
			for (size_t gi = 0; gi < ng; gi++)
				row_j[i] += e[gi];
		}
		g->self_s[leaf] += dt;
		g->rows[leaf]++;
		for (size_t k = 0; k <= np; k++)
			g->phase_s[(size_t)leaf * (np + 1) + k] += ph_s[k];
		for (size_t gi = 0; gi < ng; gi++) {
			g->self_j[leaf * ng + gi] += e[gi];
			g->self_lo[leaf * ng + gi] += lo[gi];
			g->self_hi[leaf * ng + gi] += hi[gi];
		}
		for (uint32_t d = 0; d < depth; d++) {
			uint32_t f = path[d];
			if (g->stamp[f] == i + 1)
				continue; /* recursion: once per row */
			g->stamp[f] = i + 1;
			g->total_s[f] += dt;
			for (size_t gi = 0; gi < ng; gi++) {
				g->total_j[f * ng + gi] += e[gi];
				g->total_lo[f * ng + gi] += lo[gi];
				g->total_hi[f * ng + gi] += hi[gi];
			}
		}
	}
	rc = 0;
out:
	for (size_t gi = 0; fit && gi < ng; gi++)
		device_op_fit_free(&fit[gi]);
	free(fit);
	free(pw.w);
	free(pw.lo);
	free(pw.hi);
	free(e);
	free(ph_s);
	free(take_host);
	free(take_dev);
	free(path);
	return rc;
}


int op_energy_build(struct op_energy *g, const struct run_model *rm, const struct phase_scope *sr)
{
	double *row_j = calloc(rm->p.nsamples + 1, sizeof *row_j);
	int rc;
	memset(g, 0, sizeof *g);
	if (!row_j)
		return -ENOMEM;
	rc = aggregate(rm, sr, g, row_j);
	g->row_j = row_j;
	if (rc)
		op_energy_free(g);
	return rc;
}
