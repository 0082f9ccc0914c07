/*
 * fn_energy.c - each Python function's joules, self and total, from the
 * samples' energies (see fn_energy.h).
 */
#include "model/fn_energy.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "model/lookup.h"

/* calloc of at least one element; a failure sets *oom, so that a run of
 * allocations is checked once after it. */
static void *xcalloc(size_t n, size_t sz, int *oom)
{
	void *p = calloc(n ? n : 1, sz);
	if (!p)
		*oom = 1;
	return p;
}

/* The run model's functions (name, file), with the empty stack's last. */
static int build_functions(const struct run_model *rm, struct fn_energy *g)
{
	const struct pyspy_profile *p = &rm->p;
	int oom = 0;
	uint32_t nf = p->frames.n, *first = rm->fn_first, n = rm->nfn;
	g->func_of_frame = xcalloc(nf, sizeof *g->func_of_frame, &oom);
	g->fn = xcalloc(nf + 1, sizeof *g->fn, &oom);
	if (oom)
		return -ENOMEM;
	memcpy(g->func_of_frame, rm->fn_of_frame, nf * sizeof *g->func_of_frame);
	for (g->nfunc = 0; g->nfunc < n; g->nfunc++) {
		g->fn[g->nfunc].name = p->frames.v[first[g->nfunc]].name;
		g->fn[g->nfunc].file = p->frames.v[first[g->nfunc]].file;
		g->fn[g->nfunc].best_frame = first[g->nfunc];
		g->fn[g->nfunc].best_self = -1;
	}
	/* The empty stack's pseudo-function comes last. */
	g->fn[g->nfunc].name = NO_FRAME;
	g->fn[g->nfunc].file = NULL;
	g->fn[g->nfunc].best_frame = UINT32_MAX;
	return 0;
}

static int aggregate(const struct energy_model *m, const struct pyspy_profile *p, const struct align_pyspy *a,
		     const struct sample_energy *se, struct fn_energy *g)
{
	size_t ng = m->ngroups, gw = ng + 1, np = m->ph.nnames + 1, nn = p->stacks.n, nf = g->nfunc + 1;
	uint32_t *fr = NULL, cap = 0;
	int oom = 0;
	uint8_t *seen = xcalloc(nf, 1, &oom);

	g->node_j = xcalloc(nn * gw, sizeof *g->node_j, &oom);
	g->node_s = xcalloc(nn, sizeof *g->node_s, &oom);
	g->node_n = xcalloc(nn, sizeof *g->node_n, &oom);
	g->node_phase_j = xcalloc(nn * np, sizeof *g->node_phase_j, &oom);
	g->node_un_j = xcalloc(nn, sizeof *g->node_un_j, &oom);
	g->unplaced_j = xcalloc(nf, sizeof *g->unplaced_j, &oom);
	g->self_j = xcalloc(nf * gw, sizeof *g->self_j, &oom);
	g->total_j = xcalloc(nf * gw, sizeof *g->total_j, &oom);
	g->self_s = xcalloc(nf, sizeof *g->self_s, &oom);
	g->samples = xcalloc(nf, sizeof *g->samples, &oom);
	g->phase_j = xcalloc(nf * np, sizeof *g->phase_j, &oom);
	g->frame_self = xcalloc(p->frames.n, sizeof *g->frame_self, &oom);
	if (oom) {
		free(seen);
		return -ENOMEM; /* the caller frees g */
	}

	for (size_t i = 0; i < p->nsamples; i++) {
		uint32_t node = p->samples[i].stack;
		double e = 0;
		for (size_t k = 0; k < ng; k++) {
			g->node_j[node * gw + 1 + k] += se->e_j[i * ng + k];
			e += se->e_j[i * ng + k];
		}
		g->node_j[node * gw] += e;
		g->node_s[node] += se->t1_s[i] > se->t0_s[i] ? se->t1_s[i] - se->t0_s[i] : 0;
		g->node_n[node]++;
		/* an unplaced sample (CANNOT PLACE, or outside its process's
		 * life) names no phase: its joules are counted apart */
		int unpl = a->unplaced && a->unplaced[i];
		int ph = unpl ? -1 : sample_energy_phase_at(m, a, p->samples[i].thread, (se->t0_s[i] + se->t1_s[i]) / 2);
		if (unpl)
			g->node_un_j[node] += e;
		g->node_phase_j[node * np + (size_t)(ph + 1)] += e;
	}
	for (uint32_t node = 0; node < nn; node++) {
		uint32_t d = p->stacks.v[node].depth;
		size_t leaf_fn;
		if (!g->node_n[node])
			continue;
		if (d > cap) {
			uint32_t *nfr = realloc(fr, d * sizeof *nfr);
			if (!nfr) {
				free(fr);
				free(seen);
				return -ENOMEM;
			}
			fr = nfr;
			cap = d;
		}
		lookup_stack_frames(p, node, fr, cap);
		leaf_fn = d ? g->func_of_frame[fr[d - 1]] : g->nfunc;
		for (size_t k = 0; k < gw; k++)
			g->self_j[leaf_fn * gw + k] += g->node_j[node * gw + k];
		g->self_s[leaf_fn] += g->node_s[node];
		g->samples[leaf_fn] += g->node_n[node];
		if (d)
			g->frame_self[fr[d - 1]] += g->node_j[node * gw];
		/* total: each function once per stack; the empty stack's
		 * pseudo-function totals only empty stacks */
		for (uint32_t k = 0; k < (d ? d : 1); k++) {
			size_t f = d ? g->func_of_frame[fr[k]] : g->nfunc;
			if (seen[f])
				continue;
			seen[f] = 1;
			for (size_t q = 0; q < gw; q++)
				g->total_j[f * gw + q] += g->node_j[node * gw + q];
			for (size_t q = 0; q < np; q++)
				g->phase_j[f * np + q] += g->node_phase_j[node * np + q];
			g->unplaced_j[f] += g->node_un_j[node];
		}
		for (uint32_t k = 0; k < d; k++)
			seen[g->func_of_frame[fr[k]]] = 0;
		seen[g->nfunc] = 0;
	}
	/* A function's line: its frame (line) with the most self energy. */
	for (uint32_t f = 0; f < p->frames.n; f++) {
		struct func *fn = &g->fn[g->func_of_frame[f]];
		if (g->frame_self[f] > fn->best_self) {
			fn->best_self = g->frame_self[f];
			fn->best_frame = f;
		}
	}
	free(fr);
	free(seen);
	return 0;
}

int fn_energy_build(struct fn_energy *g, const struct run_model *rm)
{
	memset(g, 0, sizeof *g);
	return build_functions(rm, g) || aggregate(&rm->m, &rm->p, &rm->al, &rm->se, g) ? -ENOMEM : 0;
}

void fn_energy_free(struct fn_energy *g)
{
	free(g->fn);
	free(g->func_of_frame);
	free(g->self_j);
	free(g->total_j);
	free(g->self_s);
	free(g->phase_j);
	free(g->samples);
	free(g->frame_self);
	free(g->node_j);
	free(g->node_s);
	free(g->node_n);
	free(g->node_phase_j);
	free(g->node_un_j);
	free(g->unplaced_j);
	memset(g, 0, sizeof *g);
}
