/*
 * attrib_integrate.c - per-phase energy by integrating the sensor's
 * cumulative energy curve between phase boundaries.
 */
#include <errno.h>
#include <stdlib.h>

#include "attrib_internal.h"

void attrib_result_free(struct attrib_result *r)
{
	if (!r)
		return;
	free(r->row);
	r->row = NULL;
	r->n_phase = 0;
}

int attrib_result_setup(const struct attrib_curve *c, const struct attrib_interval *iv, size_t n_iv,
			size_t n_phase, struct attrib_result *out)
{
	const struct attrib_series *s = c->s;
	double *time_s = malloc((n_phase + 1) * sizeof *time_s);
	double *typ_s = malloc((n_phase + 1) * sizeof *typ_s);
	out->row = calloc(n_phase + 1, sizeof *out->row);
	if (!time_s || !typ_s || !out->row) {
		free(time_s);
		free(typ_s);
		attrib_result_free(out);
		return -ENOMEM;
	}
	out->n_phase = n_phase;
	out->span_t0_s = s->t_s[0];
	out->span_t1_s = s->t_s[s->n - 1];
	out->total_j = c->cum_j[s->n - 1];
	out->period_s = c->period_s;
	int rc = attrib_phase_times(iv, n_iv, n_phase, out->span_t0_s, out->span_t1_s, time_s, typ_s);
	if (rc) {
		free(time_s);
		free(typ_s);
		attrib_result_free(out);
		return rc;
	}
	int any = 0;
	for (size_t p = 0; p <= n_phase; p++) {
		out->row[p].time_s = time_s[p];
		out->row[p].typical_s = typ_s[p];
		if (time_s[p] <= 0)
			out->row[p].flags |= ATTRIB_FLAG_NO_TIME;
		else if (p < n_phase)
			any = 1;
	}
	free(time_s);
	free(typ_s);
	if (!any) { /* no phase inside the sensor's span: different runs? */
		attrib_result_free(out);
		return -ENODATA;
	}
	return 0;
}

/* Energy and edge bound of [a, b] clipped to the span. */
static void add_piece(const struct attrib_curve *c, double a, double b, struct attrib_row *r)
{
	double t0 = c->s->t_s[0], t1 = c->s->t_s[c->s->n - 1];
	if (a < t0)
		a = t0;
	if (b > t1)
		b = t1;
	if (b <= a)
		return;
	r->energy_j += attrib_curve_energy_at(c, b) - attrib_curve_energy_at(c, a);
	/* Errors of different edges have unknown signs: add the bounds. */
	double bound = attrib_curve_edge_bound(c, a, 1) + attrib_curve_edge_bound(c, b, 0);
	r->ci_low_j -= bound;
	r->ci_high_j += bound;
}

void attrib_integrate_rows(const struct attrib_curve *c, const struct attrib_interval *iv,
			   size_t n_iv, size_t n_phase, struct attrib_result *out)
{
	for (size_t p = 0; p < n_phase; p++) {
		struct attrib_row *r = &out->row[p];
		r->method = ATTRIB_INTEGRATE;
		r->energy_j = r->ci_low_j = r->ci_high_j = 0;
		r->vif = 0;
	}
	for (size_t i = 0; i < n_iv; i++)
		add_piece(c, iv[i].t0_s, iv[i].t1_s, &out->row[iv[i].phase]);
	for (size_t p = 0; p < n_phase; p++) {
		struct attrib_row *r = &out->row[p];
		/* ci fields hold -bound/+bound so far. */
		double lo = r->energy_j + r->ci_low_j, hi = r->energy_j + r->ci_high_j;
		r->ci_low_j = lo > 0 ? lo : 0;
		r->ci_high_j = hi;
		r->power_w = r->time_s > 0 ? r->energy_j / r->time_s : 0;
	}
}

/* The unattributed row by integration: total minus the union's energy. */
static void integrate_unattributed(const struct attrib_curve *c, const struct attrib_union *u,
				   struct attrib_result *out)
{
	struct attrib_row cov = {0}, *r = &out->row[out->n_phase];
	for (size_t i = 0; i < u->n; i++)
		add_piece(c, u->t0_s[i], u->t1_s[i], &cov);
	r->method = ATTRIB_INTEGRATE;
	r->energy_j = out->total_j - cov.energy_j;
	r->ci_low_j = r->energy_j + cov.ci_low_j; /* the same edges, mirrored */
	if (r->ci_low_j < 0)
		r->ci_low_j = 0;
	r->ci_high_j = r->energy_j + cov.ci_high_j;
	r->power_w = r->time_s > 0 ? r->energy_j / r->time_s : 0;
}

int attrib_integrate(const struct attrib_series *s, const struct attrib_interval *iv, size_t n_iv,
		     size_t n_phase, struct attrib_result *out)
{
	struct attrib_curve c;
	struct attrib_union u;
	if (!out)
		return -EINVAL;
	*out = (struct attrib_result){0};
	int rc = attrib_check_intervals(iv, n_iv, n_phase);
	if (rc)
		return rc;
	rc = attrib_curve_init(s, &c);
	if (rc)
		return rc;
	rc = attrib_union_build(iv, n_iv, &u);
	if (!rc)
		rc = attrib_result_setup(&c, iv, n_iv, n_phase, out);
	if (!rc) {
		attrib_integrate_rows(&c, iv, n_iv, n_phase, out);
		integrate_unattributed(&c, &u, out);
		double sum = 0;
		for (size_t p = 0; p <= n_phase; p++)
			sum += out->row[p].energy_j;
		/* Non-zero only when phases overlap (inclusive accounting). */
		out->closure_j = sum - out->total_j;
	}
	attrib_union_free(&u);
	attrib_curve_fini(&c);
	return rc;
}
