/*
 * attrib_integrate.c - per-phase energy by integrating the sensor's
 * cumulative energy curve between phase boundaries.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "attrib/attrib_internal.h"

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

/* Error budget of one row while integrating. */
struct budget {
	double energy_j, bound_j, var_j2;
};

/* Energy and edge errors of [a, b] clipped to the span. */
static void add_piece(const struct attrib_curve *c, double a, double b, struct budget *r)
{
	double t0 = c->s->t_s[0], t1 = c->s->t_s[c->s->n - 1], bd, v;
	if (a < t0)
		a = t0;
	if (b > t1)
		b = t1;
	if (b <= a)
		return;
	r->energy_j += attrib_curve_energy_at(c, b) - attrib_curve_energy_at(c, a);
	/* Bounds of different edges have unknown signs: they add linearly;
	 * the random split errors add in quadrature. */
	attrib_curve_edge_err(c, a, 1, &bd, &v);
	r->bound_j += bd;
	r->var_j2 += v;
	attrib_curve_edge_err(c, b, 0, &bd, &v);
	r->bound_j += bd;
	r->var_j2 += v;
}

/* noise_j2_s: noise variance per second of phase time, sigma^2 * period:
 * each window's energy is off by sigma * L, and a phase spans time / L
 * windows. */
static void set_row(const struct budget *b, double noise_j2_s, struct attrib_row *r)
{
	double var = b->var_j2 + noise_j2_s * r->time_s;
	/* The relative epsilon keeps a noise-free exact answer inside its
	 * own interval despite rounding. */
	double h = b->bound_j + 1.96 * sqrt(var) + 1e-9 * fabs(b->energy_j);
	r->energy_j = b->energy_j;
	r->ci_low_j = b->energy_j - h > 0 ? b->energy_j - h : 0;
	r->ci_high_j = b->energy_j + h;
	r->power_w = r->time_s > 0 ? r->energy_j / r->time_s : 0;
	r->vif = 0;
}

int attrib_integrate_rows(const struct attrib_curve *c, const struct attrib_interval *iv,
			  size_t n_iv, size_t n_phase, struct attrib_result *out)
{
	struct budget *b = calloc(n_phase, sizeof *b);
	if (!b)
		return -ENOMEM;
	for (size_t i = 0; i < n_iv; i++)
		add_piece(c, iv[i].t0_s, iv[i].t1_s, &b[iv[i].phase]);
	double sigma = attrib_curve_noise_w(c), nv = sigma * sigma * c->period_s;
	for (size_t p = 0; p < n_phase; p++)
		if (out->row[p].method == ATTRIB_INTEGRATE)
			set_row(&b[p], nv, &out->row[p]);
	free(b);
	return 0;
}

/* The unattributed row by integration: total minus the union's energy
 * (the union's edges are the gaps' edges, so its error budget is theirs). */
static void integrate_unattributed(const struct attrib_curve *c, const struct attrib_union *u,
				   struct attrib_result *out)
{
	struct budget cov = {0};
	for (size_t i = 0; i < u->n; i++)
		add_piece(c, u->t0_s[i], u->t1_s[i], &cov);
	cov.energy_j = out->total_j - cov.energy_j;
	out->row[out->n_phase].method = ATTRIB_INTEGRATE;
	double sigma = attrib_curve_noise_w(c);
	set_row(&cov, sigma * sigma * c->period_s, &out->row[out->n_phase]);
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
	rc = attrib_curve_init(s, iv, n_iv, &c);
	if (rc)
		return rc;
	rc = attrib_union_build(iv, n_iv, &u);
	if (!rc)
		rc = attrib_result_setup(&c, iv, n_iv, n_phase, out);
	for (size_t p = 0; !rc && p < n_phase; p++)
		out->row[p].method = ATTRIB_INTEGRATE;
	if (!rc)
		rc = attrib_integrate_rows(&c, iv, n_iv, n_phase, out);
	if (!rc) {
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
