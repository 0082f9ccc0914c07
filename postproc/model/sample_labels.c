/* sample_labels.c - see sample_labels.h. */
#include "model/sample_labels.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>


static int occ_cmp(const void *a, const void *b)
{
	const struct label_occ *u = a, *v = b;
	if (u->phase != v->phase)
		return u->phase < v->phase ? -1 : 1;
	return (u->t0_ns > v->t0_ns) - (u->t0_ns < v->t0_ns);
}

int sample_labels_build(const struct energy_model *m, const struct pyspy_profile *p, const struct align_pyspy *a,
			const struct pyspy_sites *sites, uint32_t pid, uint32_t tid, struct sample_labels *out)
{
	size_t n = p->nsamples;

	memset(out, 0, sizeof *out);
	out->lab = malloc((n ? n : 1) * sizeof *out->lab);
	out->x_ns = malloc((n ? n : 1) * sizeof *out->x_ns);
	out->occ = malloc((m->ph.nocc ? m->ph.nocc : 1) * sizeof *out->occ);
	if (!out->lab || !out->x_ns || !out->occ) {
		sample_labels_free(out);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++) {
		uint32_t st = p->samples[i].stack;
		double t = align_pyspy_time(a, p->samples[i].thread, p->samples[i].t_rel_s) * 1e9 + (double)m->base_ns;
		out->lab[i] = pyspy_sites_soft(sites, st) ? -1 : pyspy_sites_of(sites, st);
		out->x_ns[i] = t > 0 ? (uint64_t)t : 0;
		out->nlabelled += out->lab[i] >= 0;
	}
	for (size_t o = 0; o < m->ph.nocc; o++)
		if (m->ph.occ[o].pid == pid && m->ph.occ[o].tid == tid)
			out->occ[out->nocc++] = (struct label_occ){m->ph.occ[o].phase, m->ph.occ[o].t0_ns,
								   m->ph.occ[o].t1_ns};
	qsort(out->occ, out->nocc, sizeof *out->occ, occ_cmp);
	return 0;
}

int sample_labels_misstamped(const struct sample_labels *l, size_t i)
{
	int32_t q = l->lab[i];
	uint64_t x = l->x_ns[i];
	size_t lo = 0, hi = l->nocc;
	if (q < 0)
		return 0;
	while (lo < hi) { /* first occurrence after (q, x) */
		size_t mid = lo + (hi - lo) / 2;
		if (l->occ[mid].phase < q || (l->occ[mid].phase == q && l->occ[mid].t0_ns <= x))
			lo = mid + 1;
		else
			hi = mid;
	}
	/* the latest-starting occurrence of q at or before x, and the one
	 * before it (a same-name occurrence nested in it) */
	for (size_t k = lo; k-- > 0 && k + 2 >= lo && l->occ[k].phase == q;)
		if (l->occ[k].t1_ns > x)
			return 0;
	return 1;
}

void sample_labels_free(struct sample_labels *l)
{
	free(l->lab);
	free(l->x_ns);
	free(l->occ);
	memset(l, 0, sizeof *l);
}
