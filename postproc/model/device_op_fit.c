/*
 * device_op_fit.c - joules per device op on the device's busy time (see
 * device_op_fit.h for the rule and why).
 */
#include "model/device_op_fit.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "attrib/sensor_model.h"

static int by_phase_t0(const void *x, const void *y)
{
	const struct attrib_interval *a = x, *b = y;
	if (a->phase != b->phase)
		return a->phase < b->phase ? -1 : 1;
	return a->t0_s < b->t0_s ? -1 : a->t0_s > b->t0_s;
}

/* One op's rows on several streams may overlap; a phase's intervals must
 * not (attrib.h): merge them into their union, in place.  Returns the new
 * count. */
static size_t merge_same_op(struct attrib_interval *iv, size_t n)
{
	size_t k = 0;
	qsort(iv, n, sizeof *iv, by_phase_t0);
	for (size_t i = 0; i < n; i++) {
		if (k && iv[k - 1].phase == iv[i].phase && iv[i].t0_s <= iv[k - 1].t1_s) {
			if (iv[i].t1_s > iv[k - 1].t1_s)
				iv[k - 1].t1_s = iv[i].t1_s;
			continue;
		}
		iv[k++] = iv[i];
	}
	return k;
}

/* The device rows whose stack is the op alone, as intervals on sensor time
 * with a compact op index; idx[f] = that index or -1. */
static int collect(const struct run_model *rm, struct attrib_interval **ivp, size_t *niv, int32_t *idx,
		   uint32_t **op_frame, size_t *nop, double *rows_s)
{
	const struct pyspy_profile *p = &rm->p;
	const struct energy_model *m = &rm->m;
	size_t nf = p->frames.n, n = 0;
	uint32_t *of = calloc(nf + 1, sizeof *of);
	unsigned char *deep = calloc(nf + 1, 1);
	struct attrib_interval *iv = calloc(p->nsamples + 1, sizeof *iv);
	if (!of || !deep || !iv) {
		free(of);
		free(deep);
		free(iv);
		return -ENOMEM;
	}
	for (size_t f = 0; f < nf; f++)
		idx[f] = -1;
	*nop = 0;
	/* An op that also appears inside another device row's stack keeps the
	 * phase rule: its total would need its parents refitted too. */
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct pyspy_sample *s = &p->samples[i];
		if (p->threads[s->thread].pid >= 0)
			continue;
		uint32_t depth = p->stacks.v[s->stack].depth;
		uint32_t path[64];
		if (depth == 0 || depth > 64)
			continue;
		pyspy_stack_frames(&p->stacks, s->stack, path, 64);
		for (uint32_t d = 0; depth > 1 && d < depth; d++)
			deep[path[d]] = 1;
	}
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct pyspy_sample *s = &p->samples[i];
		uint32_t leaf;
		double a, b;
		if (p->threads[s->thread].pid >= 0 || p->stacks.v[s->stack].depth != 1)
			continue;
		pyspy_stack_frames(&p->stacks, s->stack, &leaf, 1);
		if (deep[leaf])
			continue;
		align_pyspy_slice(&rm->al, p, i, &a, &b);
		if (!(b > a))
			continue;
		if (idx[leaf] < 0) {
			idx[leaf] = (int32_t)*nop;
			of[(*nop)++] = leaf;
		}
		rows_s[leaf] += b - a;
		/* Sensor time = timeline - perun's offset (as the phases; a
		 * device group's sensors keep perun's stamps, model/sensor_lag.h). */
		iv[n].t0_s = a - m->align.offset_s;
		iv[n].t1_s = b - m->align.offset_s;
		iv[n].phase = idx[leaf];
		n++;
	}
	free(deep);
	*niv = merge_same_op(iv, n);
	*ivp = iv;
	*op_frame = of;
	return 0;
}

int device_op_fit(const struct run_model *rm, size_t group, enum attrib_choice method, const struct attrib_opts *ao,
		  struct device_op_fit *out)
{
	const struct energy_model *m = &rm->m;
	size_t nf = rm->p.frames.n, niv = 0, nop = 0;
	struct attrib_interval *iv = NULL;
	uint32_t *op_frame = NULL;
	int32_t *idx = calloc(nf + 1, sizeof *idx);
	int rc = 0;
	memset(out, 0, sizeof *out);
	out->nf = nf;
	out->j = calloc(nf + 1, sizeof *out->j);
	out->lo = calloc(nf + 1, sizeof *out->lo);
	out->hi = calloc(nf + 1, sizeof *out->hi);
	out->has = calloc(nf + 1, 1);
	out->flags = calloc(nf + 1, sizeof *out->flags);
	out->rows_s = calloc(nf + 1, sizeof *out->rows_s);
	if (!idx || !out->j || !out->lo || !out->hi || !out->has || !out->flags || !out->rows_s) {
		rc = -ENOMEM;
		goto out;
	}
	if (!rm->have_profile || (rc = collect(rm, &iv, &niv, idx, &op_frame, &nop, out->rows_s)))
		goto out;
	unsigned char *got = calloc(nop + 1, 1);
	if (!got) {
		rc = -ENOMEM;
		goto out;
	}
	for (size_t k = 0; nop && k < m->nsen; k++) {
		const struct em_sensor *es = &m->sen[k];
		struct attrib_result r;
		if (energy_model_group_of(m, es) != group)
			continue;
		memset(&r, 0, sizeof r);
		rc = attrib_choose(method, &es->ser, iv, niv, nop, ao, &r);
		if (rc == -ENODATA) { /* too few windows over the kernels: the phase rule stays */
			rc = 0;
			continue;
		}
		if (rc)
			break;
		for (size_t o = 0; o < nop; o++) {
			struct attrib_row *ar = &r.row[o];
			uint32_t f = op_frame[o];
			if (!strcmp(es->group, "gpu"))
				ar->energy_j = sensor_model_gpu_joules(ar->energy_j, &ar->ci_low_j, &ar->ci_high_j);
			out->j[f] += ar->energy_j;
			out->lo[f] += ar->ci_low_j;
			out->hi[f] += ar->ci_high_j;
			out->flags[f] |= ar->flags;
			got[o] = 1;
		}
		attrib_result_free(&r);
	}
	for (size_t o = 0; o < nop; o++)
		out->has[op_frame[o]] = got[o];
	free(got);
out:
	free(iv);
	free(op_frame);
	free(idx);
	if (rc)
		device_op_fit_free(out);
	return rc;
}

void device_op_fit_free(struct device_op_fit *f)
{
	free(f->j);
	free(f->lo);
	free(f->hi);
	free(f->has);
	free(f->flags);
	free(f->rows_s);
	memset(f, 0, sizeof *f);
}
