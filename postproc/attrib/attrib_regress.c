/*
 * attrib_regress.c - attrib_regress and attrib_auto: turn the window fit
 * (attrib_fit.c) into per-phase joules with intervals, and choose the
 * method per phase.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>

#include "attrib/attrib_internal.h"

/* Averaged readings (sensor_model.h): independent windows (span / window)
 * needed per fitted power before the intervals are trusted. */
#define ATTRIB_MIN_WINDOWS_PER_UNKNOWN 10.0
#include "util/tunables.h"

static void opts_defaults(const struct attrib_opts *o, struct attrib_opts *d)
{
	*d = o ? *o : (struct attrib_opts){0};
	if (d->n_boot == 0)
		d->n_boot = ANCHOR_BOOT_RESAMPLES;
	if (d->seed == 0)
		d->seed = 0x616e63686f72ull;
	if (d->min_periods <= 0)
		d->min_periods = 5;
	if (d->vif_max <= 0)
		d->vif_max = 1e4;
	if (d->offset_sigma_s == 0)
		d->offset_sigma_s = 0.001;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Percentiles 2.5 and 97.5 of v (sorted in place), linear interpolation. */
static void pct95(double *v, unsigned n, double *lo, double *hi)
{
	qsort(v, n, sizeof *v, cmp_double);
	double q[2] = {0.025, 0.975}, *out[2] = {lo, hi};
	for (int i = 0; i < 2; i++) {
		double x = q[i] * (n - 1);
		unsigned a = (unsigned)x;
		unsigned b = a + 1 < n ? a + 1 : a;
		*out[i] = v[a] + (v[b] - v[a]) * (x - a);
	}
}

static void widen(struct attrib_row *r, double h)
{
	r->ci_low_j -= h;
	r->ci_high_j += h;
}

/*
 * A phase whose instances are shorter than the reading's averaging window
 * never appears alone in a reading: its power is known only through how
 * its share of each window varies.  When that leaves an interval wider
 * than the estimate itself, the point estimate is noise (measured,
 * BENCHMARKS.md section 11: 0.3 ms "iteration" rows at 110 kW, a 30 ms
 * 120 W phase at 266 W [9, 516]): say "unidentifiable" with [0, total]
 * rather than print a confident-looking number.  Sub-window phases the
 * data does pin down (0.3 s under a 1 s window, +-14 %) keep theirs.
 */
static void flag_sub_window(struct attrib_result *out, double window_s)
{
	for (size_t p = 0; p < out->n_phase; p++) {
		struct attrib_row *r = &out->row[p];
		if (r->method != ATTRIB_REGRESS || (r->flags & (ATTRIB_FLAG_NO_TIME | ATTRIB_FLAG_UNIDENTIFIABLE)) ||
		    !(r->typical_s < window_s) || !(r->ci_high_j - r->ci_low_j > r->energy_j))
			continue;
		r->flags |= ATTRIB_FLAG_UNIDENTIFIABLE;
		r->ci_low_j = 0;
		r->ci_high_j = out->total_j;
	}
}

/*
 * Regressed phase p: fitted power x time.  Intervals: bootstrap
 * percentiles, widened to at least +-1.96 analytic se (the percentile
 * interval of a few hundred replicates runs a little short, and the
 * analytic one is blind to autocorrelation: take the wider), then by the
 * timing shift shift_w (W).  rep is scratch; each replicate's joules are
 * taken off rem (the remainder per replicate).
 */
static void regress_row(const struct attrib_fit *f, size_t p, size_t k, double shift_w, double vif_max,
			double total_j, struct attrib_row *r, double *rep, double *rem)
{
	r->method = ATTRIB_REGRESS;
	r->energy_j = f->p_w[p] * r->time_s;
	for (unsigned b = 0; b < f->n_boot; b++) {
		rep[b] = f->boot_p_w[(size_t)b * k + p] * r->time_s;
		rem[b] -= rep[b];
	}
	if (r->flags & ATTRIB_FLAG_NO_TIME) {
		r->energy_j = r->ci_low_j = r->ci_high_j = r->power_w = 0;
		return;
	}
	if (f->p_w[p] == 0)
		r->flags |= ATTRIB_FLAG_AT_ZERO;
	pct95(rep, f->n_boot, &r->ci_low_j, &r->ci_high_j);
	double h = 1.96 * f->se_w[p] * r->time_s;
	if (r->energy_j - h < r->ci_low_j)
		r->ci_low_j = r->energy_j - h;
	if (r->energy_j + h > r->ci_high_j)
		r->ci_high_j = r->energy_j + h;
	widen(r, shift_w * r->time_s);
	if (r->ci_low_j < 0)
		r->ci_low_j = 0;
	if (!(f->vif[p] <= vif_max)) {
		r->flags |= ATTRIB_FLAG_UNIDENTIFIABLE;
		r->ci_low_j = 0;
		r->ci_high_j = total_j;
	}
	r->power_w = r->energy_j / r->time_s;
}

/* Unattributed = remainder, so the rows add up to the total; rem holds
 * the remainder per replicate less the regressed rows, fixed_j the
 * integrated rows' joules, shift_j the remainder's timing shift (J). */
static void remainder_row(const struct attrib_fit *f, double fixed_j, double shift_j, int unident,
			  double *rem, struct attrib_result *out)
{
	size_t np = out->n_phase;
	struct attrib_row *u = &out->row[np];
	double sum = 0;
	for (size_t p = 0; p < np; p++)
		sum += out->row[p].energy_j;
	u->method = ATTRIB_REGRESS;
	u->flags |= ATTRIB_FLAG_REMAINDER;
	u->energy_j = out->total_j - sum;
	out->closure_j = u->energy_j - f->p_w[np] * u->time_s;
	for (unsigned b = 0; b < f->n_boot; b++)
		rem[b] -= fixed_j;
	pct95(rem, f->n_boot, &u->ci_low_j, &u->ci_high_j);
	/* The remainder carries every other row's error (and, for instant
	 * reads, the error of the trapezoid total itself); the fitted
	 * unattributed power does not.  Cover both. */
	double fit_j = f->p_w[np] * u->time_s, h = 1.96 * f->se_w[np] * u->time_s;
	if (fit_j - h < u->ci_low_j)
		u->ci_low_j = fit_j - h;
	if (fit_j + h > u->ci_high_j)
		u->ci_high_j = fit_j + h;
	if (u->energy_j < u->ci_low_j)
		u->ci_low_j = u->energy_j;
	if (u->energy_j > u->ci_high_j)
		u->ci_high_j = u->energy_j;
	widen(u, shift_j);
	/* Not below 0 unless the remainder itself is (phases overshoot). */
	double floor_j = u->energy_j < 0 ? u->energy_j : 0;
	if (u->ci_low_j < floor_j)
		u->ci_low_j = floor_j;
	if (unident) {
		/* Its share of the energy is as undetermined as theirs. */
		if (!(u->flags & ATTRIB_FLAG_NO_TIME))
			u->flags |= ATTRIB_FLAG_UNIDENTIFIABLE;
		u->ci_low_j = 0;
		u->ci_high_j = out->total_j;
	}
	u->power_w = u->time_s > 0 ? u->energy_j / u->time_s : 0;
}

/*
 * Fill rows from the fit.  Rows whose method is ATTRIB_INTEGRATE are left
 * alone (already integrated); the unattributed row becomes the remainder.
 * shift_w[p]: the change of p_w[p] under a timing error (0 if none).
 */
static int fill_rows(const struct attrib_fit *f, const double *shift_w, const struct attrib_opts *o,
		     struct attrib_result *out)
{
	size_t np = out->n_phase, k = np + 1;
	double *rep = malloc(f->n_boot * sizeof *rep), *rem = malloc(f->n_boot * sizeof *rem);
	if (!rep || !rem) {
		free(rep);
		free(rem);
		return -ENOMEM;
	}
	int unident = 0;
	double fixed_j = 0;
	for (unsigned b = 0; b < f->n_boot; b++)
		rem[b] = out->total_j;
	for (size_t p = 0; p < k; p++) {
		struct attrib_row *r = &out->row[p];
		if (p < np && r->method == ATTRIB_INTEGRATE) {
			fixed_j += r->energy_j;
			continue;
		}
		r->vif = f->vif[p];
		if (r->flags & ATTRIB_FLAG_NO_TIME)
			r->vif = 0;
		else if (!(f->vif[p] <= o->vif_max))
			unident = 1; /* also the unattributed column */
		if (p < np)
			regress_row(f, p, k, shift_w[p], o->vif_max, out->total_j, r, rep, rem);
	}
	remainder_row(f, fixed_j, shift_w[np], unident, rem, out);
	free(rep);
	free(rem);
	return 0;
}

/*
 * Refit with the phases shifted by -sigma and +sigma; shift_w[p] is the
 * larger change of each regressed power, shift_w[n_phase] the larger
 * change of the unattributed remainder in J.  Where jitter of the phases
 * makes them separable this is tiny; where only the sensor's timestamp
 * jitter does, a sub-millisecond offset moves the answer by percents and
 * the interval must say so.  Overwrites share.
 */
static int timing_sensitivity(const struct attrib_win *w, const struct attrib_interval *iv,
			      size_t n_iv, const struct attrib_union *u, size_t n_phase,
			      const struct attrib_fit *f, double sigma_s,
			      const struct attrib_result *out, double *share, double *shift_w)
{
	for (int sgn = -1; sgn <= 1; sgn += 2) {
		struct attrib_fit g;
		attrib_shares(w, iv, n_iv, u, n_phase, sgn * sigma_s, share);
		int rc = attrib_fit_rows(share, w->y_w, w->n, n_phase + 1, 0, 0, 0, &g);
		if (rc)
			return rc;
		double drem = 0;
		for (size_t p = 0; p < n_phase; p++) {
			if (out->row[p].method != ATTRIB_REGRESS)
				continue;
			double d = g.p_w[p] - f->p_w[p];
			if (fabs(d) > shift_w[p])
				shift_w[p] = fabs(d);
			drem -= d * out->row[p].time_s;
		}
		if (fabs(drem) > shift_w[n_phase])
			shift_w[n_phase] = fabs(drem);
		attrib_fit_free(&g);
	}
	return 0;
}

/* The choice per phase (ATTRIB_INTEGRATE with auto_choose, else
 * ATTRIB_REGRESS): integrate when the typical interval spans enough sensor
 * periods for the edges to matter little.  Returns whether any phase with
 * time is left to regress. */
static int choose_methods(const struct attrib_series *s, const struct attrib_curve *c, const struct attrib_opts *o,
			  int auto_choose, struct attrib_result *out)
{
	int any_regress = 0;
	for (size_t p = 0; p < out->n_phase; p++) {
		struct attrib_row *r = &out->row[p];
		/* A reading that averages over a window blurs every edge by that
		 * window: integrating the readings is only fair for phases long
		 * against the window too (sensor_model.h). */
		double blur_s = s->kind == ATTRIB_INSTANT_W && s->avg_window_s > c->period_s ? s->avg_window_s : c->period_s;
		int integ = auto_choose && r->typical_s >= o->min_periods * blur_s;
		r->method = integ ? ATTRIB_INTEGRATE : ATTRIB_REGRESS;
		if (!integ && !(r->flags & ATTRIB_FLAG_NO_TIME))
			any_regress = 1;
	}
	return any_regress;
}

/* Readings that average over a window longer than the read period
 * share their errors with their neighbours (an NVML 1 s mean read
 * every 0.1 s: ten readings see the same sampled slices).  Bootstrap
 * blocks must span that memory, twice over, or the intervals claim
 * ten times the independent data there is (sensor_model.h).  0: the
 * fit's default. */
static size_t averaged_block_len(const struct attrib_series *s, const struct attrib_curve *c, size_t n_win)
{
	if (s->kind != ATTRIB_INSTANT_W || !(s->avg_window_s > 0) || !(c->period_s > 0))
		return 0;
	size_t mem = (size_t)ceil(2 * s->avg_window_s / c->period_s);
	size_t dflt = (size_t)ceil(cbrt((double)n_win));
	return mem > dflt ? mem : dflt;
}

/* The analytic standard errors assume independent readings; readings
 * averaging over W s read every period s carry about period/W of a
 * reading's information each: scale by sqrt(W / period). */
static void account_averaging(const struct attrib_series *s, const struct attrib_curve *c,
			      const struct attrib_result *out, struct attrib_fit *f)
{
	size_t k_eff = 0, n_phase = out->n_phase;
	double n_eff = (s->t_s[s->n - 1] - s->t_s[0]) / s->avg_window_s;
	for (size_t p = 0; p <= n_phase; p++) {
		f->se_w[p] *= sqrt(s->avg_window_s / c->period_s);
		k_eff += out->row[p].time_s > 0;
	}
	/* Too few independent windows per unknown: the bootstrap cannot
	 * see how wrong the fit may be (measured: 22 windows for 5
	 * unknowns left 2 of 4 intervals short of the truth).  Say
	 * "unidentifiable" ([0, total]) rather than a confident number. */
	if (n_eff < ATTRIB_MIN_WINDOWS_PER_UNKNOWN * (double)k_eff)
		for (size_t p = 0; p <= n_phase; p++)
			f->vif[p] = INFINITY;
}

/* use[p]: ATTRIB_REGRESS or ATTRIB_INTEGRATE per phase (NULL: regress all). */
static int run(const struct attrib_series *s, const struct attrib_interval *iv, size_t n_iv,
	       size_t n_phase, const struct attrib_opts *o_in, int auto_choose,
	       struct attrib_result *out)
{
	struct attrib_opts o;
	struct attrib_curve c;
	struct attrib_win w = {0};
	struct attrib_union u = {0};
	struct attrib_fit f = {0};
	double *share = NULL, *shift_w = NULL;
	if (!out)
		return -EINVAL;
	*out = (struct attrib_result){0};
	opts_defaults(o_in, &o);
	int rc = attrib_check_intervals(iv, n_iv, n_phase);
	if (rc)
		return rc;
	rc = attrib_curve_init(s, iv, n_iv, &c);
	if (rc)
		return rc;
	rc = attrib_result_setup(&c, iv, n_iv, n_phase, out);
	if (rc)
		goto done;
	if (!choose_methods(s, &c, &o, auto_choose, out)) {
		/* Nothing needs the fit: auto is plain integration. */
		attrib_curve_fini(&c);
		attrib_result_free(out);
		return attrib_integrate(s, iv, n_iv, n_phase, out);
	}
	if (auto_choose && (rc = attrib_integrate_rows(&c, iv, n_iv, n_phase, out)))
		goto done;
	rc = attrib_win_build(&c, &w);
	if (!rc)
		rc = attrib_union_build(iv, n_iv, &u);
	if (rc)
		goto done;
	rc = -ENODATA;
	if (w.n < n_phase + 2) /* fewer windows than unknowns */
		goto done;
	rc = -ENOMEM;
	share = malloc(w.n * (n_phase + 1) * sizeof *share);
	if (!share)
		goto done;
	attrib_shares(&w, iv, n_iv, &u, n_phase, 0, share);
	if (!o.block_len)
		o.block_len = averaged_block_len(s, &c, w.n);
	rc = attrib_fit_rows(share, w.y_w, w.n, n_phase + 1, o.n_boot, o.seed, o.block_len, &f);
	if (rc)
		goto done;
	if (s->kind == ATTRIB_INSTANT_W && s->avg_window_s > c.period_s && c.period_s > 0)
		account_averaging(s, &c, out, &f);
	out->n_windows = w.n;
	out->rms_resid_w = sqrt(f.rss / (double)w.n);
	out->cond = f.cond;
	out->n_boot = f.n_boot;
	out->block_len = f.block_len;
	rc = -ENOMEM;
	shift_w = calloc(n_phase + 1, sizeof *shift_w);
	if (!shift_w)
		goto done;
	if (o.offset_sigma_s > 0 && (rc = timing_sensitivity(&w, iv, n_iv, &u, n_phase, &f,
							     o.offset_sigma_s, out, share, shift_w)))
		goto done;
	rc = fill_rows(&f, shift_w, &o, out);
	if (!rc && s->kind == ATTRIB_INSTANT_W && s->avg_window_s > 0)
		flag_sub_window(out, s->avg_window_s);
done:
	if (rc)
		attrib_result_free(out);
	free(share);
	free(shift_w);
	attrib_fit_free(&f);
	attrib_union_free(&u);
	attrib_win_free(&w);
	attrib_curve_fini(&c);
	return rc;
}

int attrib_regress(const struct attrib_series *s, const struct attrib_interval *iv, size_t n_iv,
		   size_t n_phase, const struct attrib_opts *o, struct attrib_result *out)
{
	return run(s, iv, n_iv, n_phase, o, 0, out);
}

int attrib_auto(const struct attrib_series *s, const struct attrib_interval *iv, size_t n_iv,
		size_t n_phase, const struct attrib_opts *o, struct attrib_result *out)
{
	return run(s, iv, n_iv, n_phase, o, 1, out);
}
