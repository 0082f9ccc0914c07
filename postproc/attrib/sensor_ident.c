/*
 * sensor_ident.c - update period and averaging window from the data (see
 * sensor_ident.h).
 */
#include "attrib/sensor_ident.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/tunables.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* Least squares of t_i = origin + step k_i; returns the residual rms. */
static double grid_ls(const double *t, const long *k, size_t n, double *step, double *origin, double *se)
{
	double mk = 0, mt = 0, skk = 0, skt = 0, rss = 0;
	for (size_t i = 0; i < n; i++) {
		mk += (double)k[i];
		mt += t[i];
	}
	mk /= (double)n;
	mt /= (double)n;
	for (size_t i = 0; i < n; i++) {
		skk += ((double)k[i] - mk) * ((double)k[i] - mk);
		skt += ((double)k[i] - mk) * (t[i] - mt);
	}
	*step = skk > 0 ? skt / skk : 0;
	*origin = mt - *step * mk;
	for (size_t i = 0; i < n; i++) {
		double r = t[i] - *origin - *step * (double)k[i];
		rss += r * r;
	}
	*se = n > 2 && skk > 0 ? sqrt(rss / (double)(n - 2) / skk) : INFINITY;
	return sqrt(rss / (double)n);
}

/* Events seen to within a few typical ticks only: a sampler descheduled
 * for 100 ms on a loaded host saw its update somewhere in those 100 ms,
 * which says nothing about the grid and would fail its check. */
#define GRID_H_FACTOR 4.0

static int grid_fit(const double *t_s, const double *h_s, size_t n, double hmed, struct sensor_grid *g,
		    const char **why);

int sensor_ident_grid(const double *t_s, const double *h_s, size_t n, struct sensor_grid *g, const char **why)
{
	double *hs, *tt, *hh, hmed;
	size_t m = 0;
	int rc;
	memset(g, 0, sizeof *g);
	g->events = n;
	if (n < SENSOR_IDENT_MIN_UPDATES) {
		*why = "too few updates of the reading to fit a period";
		return -ENODATA;
	}
	hs = malloc(n * sizeof *hs);
	tt = malloc(n * sizeof *tt);
	hh = malloc(n * sizeof *hh);
	if (!hs || !tt || !hh) {
		free(hs);
		free(tt);
		free(hh);
		return -ENOMEM;
	}
	memcpy(hs, h_s, n * sizeof *hs);
	qsort(hs, n, sizeof *hs, cmp_double);
	hmed = hs[n / 2];
	for (size_t i = 0; i < n; i++)
		if (h_s[i] <= GRID_H_FACTOR * hmed) {
			tt[m] = t_s[i];
			hh[m++] = h_s[i];
		}
	rc = grid_fit(tt, hh, m, hmed, g, why);
	g->events = n;
	free(hs);
	free(tt);
	free(hh);
	return rc;
}

static int grid_fit(const double *t_s, const double *h_s, size_t n, double hmax, struct sensor_grid *g,
		    const char **why)
{
	double *gaps, p0, step = 0, origin = 0, se = INFINITY, rms = 0;
	long *k;
	int rc = 0;
	(void)h_s;
	if (n < SENSOR_IDENT_MIN_UPDATES) {
		*why = "too few updates of the reading to fit a period";
		return -ENODATA;
	}
	gaps = malloc((n - 1) * sizeof *gaps);
	k = malloc(n * sizeof *k);
	if (!gaps || !k) {
		free(gaps);
		free(k);
		return -ENOMEM;
	}
	/* The lower quartile gap: a reading that repeats hides an update and
	 * makes a gap of two or three periods, never one shorter than a period. */
	for (size_t i = 0; i + 1 < n; i++)
		gaps[i] = t_s[i + 1] - t_s[i];
	qsort(gaps, n - 1, sizeof *gaps, cmp_double);
	p0 = gaps[(n - 1) / 4];
	if (!(p0 > 4 * hmax)) {
		*why = "the reading changes about every sampler tick: sample faster than the sensor updates";
		rc = -ENODATA;
		goto out;
	}
	/* Unwrap gap by gap first (the rough step's error would add up over
	 * hundreds of periods), then refit against the whole grid. */
	step = p0;
	k[0] = 0;
	for (size_t i = 1; i < n; i++)
		k[i] = k[i - 1] + lround((t_s[i] - t_s[i - 1]) / step);
	grid_ls(t_s, k, n, &step, &origin, &se);
	for (int it = 0; it < 2; it++) {
		for (size_t i = 0; i < n; i++) {
			k[i] = lround((t_s[i] - origin) / step);
			if (i && k[i] <= k[i - 1]) {
				*why = "the reading changes more than once per period: no periodic update";
				rc = -ENODATA;
				goto out;
			}
		}
		rms = grid_ls(t_s, k, n, &step, &origin, &se);
	}
	for (size_t i = 0; i < n; i++)
		if (fabs(t_s[i] - origin - step * (double)k[i]) > SENSOR_IDENT_GRID_MAX_DEV * step) {
			*why = "the reading's updates do not sit on one periodic grid";
			rc = -ENODATA;
			goto out;
		}
	/* 95 %: 2 standard errors of the slope, plus what an error bounded by
	 * the typical tick half-width can do to a slope over the span when it
	 * is not independent from update to update (the ticks' phase against
	 * the updates drifts slowly: a sawtooth, not noise; 2 se alone missed
	 * by a microsecond in bench/gpu_sensor_ident.sh). */
	g->step_s = step;
	{
		double half = 2 * se + 2 * hmax / (double)(k[n - 1] - k[0]);
		g->lo_s = step - half;
		g->hi_s = step + half;
	}
	g->origin_s = origin + step * (double)k[0];
	{
		double mk = 0;
		for (size_t i = 0; i < n; i++)
			mk += (double)k[i];
		g->pivot_s = origin + step * mk / (double)n;
	}
	g->resid_rms_s = rms;
out:
	free(gaps);
	free(k);
	return rc;
}

/* The phases' time shares in [a, b] (b == a: the phase in force at a),
 * as (index, share) pairs; idle is index n_phase.  Returns the count. */
static size_t window_mix(const struct attrib_interval *iv, size_t n_iv, size_t n_phase, double a, double b,
			 size_t *idx, double *share)
{
	size_t lo = 0, hi = n_iv, m = 0;
	double busy = 0, len = b - a;
	/* First interval ending after a. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (iv[mid].t1_s <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (len <= 0) {
		idx[0] = lo < n_iv && iv[lo].t0_s <= a ? (size_t)iv[lo].phase : n_phase;
		share[0] = 1;
		return 1;
	}
	for (size_t i = lo; i < n_iv && iv[i].t0_s < b; i++) {
		double o = fmin(b, iv[i].t1_s) - fmax(a, iv[i].t0_s);
		size_t j;
		if (o <= 0)
			continue;
		for (j = 0; j < m && idx[j] != (size_t)iv[i].phase; j++)
			;
		if (j == m) {
			idx[m] = (size_t)iv[i].phase;
			share[m++] = 0;
		}
		share[j] += o / len;
		busy += o;
	}
	if (busy < len * (1 - 1e-12)) {
		idx[m] = n_phase;
		share[m++] = 1 - busy / len;
	}
	return m;
}

/* Cholesky solve of the q x q normal equations (ridge for a phase no
 * window saw); returns the residual sum of squares. */
static double solve_rss(double *ata, const double *atr, double rtr, size_t q, double *beta)
{
	double ssr = 0;
	for (size_t j = 0; j < q; j++)
		ata[j * q + j] += 1e-9 * (ata[j * q + j] + 1);
	for (size_t j = 0; j < q; j++) {
		double d = ata[j * q + j];
		for (size_t l = 0; l < j; l++)
			d -= ata[j * q + l] * ata[j * q + l];
		d = d > 0 ? sqrt(d) : 1e-300;
		ata[j * q + j] = d;
		for (size_t i = j + 1; i < q; i++) {
			double v = ata[i * q + j];
			for (size_t l = 0; l < j; l++)
				v -= ata[i * q + l] * ata[j * q + l];
			ata[i * q + j] = v / d;
		}
	}
	for (size_t i = 0; i < q; i++) { /* forward: L y = atr */
		double v = atr[i];
		for (size_t l = 0; l < i; l++)
			v -= ata[i * q + l] * beta[l];
		beta[i] = v / ata[i * q + i];
	}
	for (size_t i = q; i-- > 0;) { /* back: L' beta = y */
		double v = beta[i];
		for (size_t l = i + 1; l < q; l++)
			v -= ata[l * q + i] * beta[l];
		beta[i] = v / ata[i * q + i];
	}
	for (size_t i = 0; i < q; i++)
		ssr += beta[i] * atr[i];
	return rtr - ssr > 0 ? rtr - ssr : 0;
}

struct fit_ctx {
	const struct attrib_interval *iv;
	size_t n_iv, n_phase, q, nu;
	double *u, *r; /* update times, their readings */
	double *ata, *atr, *beta;
	double rtr;
};

static double rss_at(struct fit_ctx *c, double w, double d)
{
	size_t idx[SENSOR_IDENT_MAX_PHASES + 2];
	double share[SENSOR_IDENT_MAX_PHASES + 2];
	memset(c->ata, 0, c->q * c->q * sizeof *c->ata);
	memset(c->atr, 0, c->q * sizeof *c->atr);
	for (size_t k = 0; k < c->nu; k++) {
		size_t m = window_mix(c->iv, c->n_iv, c->n_phase, c->u[k] - d - w, c->u[k] - d, idx, share);
		for (size_t i = 0; i < m; i++) {
			c->atr[idx[i]] += share[i] * c->r[k];
			for (size_t j = 0; j < m; j++)
				c->ata[idx[i] * c->q + idx[j]] += share[i] * share[j];
		}
	}
	return solve_rss(c->ata, c->atr, c->rtr, c->q, c->beta);
}

/* Scan W in [w0, w1], d in [d0, d1] at step; the best pair into *bw, *bd,
 * its RSS returned; the region within bound into the ranges (bound < 0:
 * no region). */
struct region {
	double wlo, whi, dlo, dhi;
	int any, at_edge;
};

static double scan(struct fit_ctx *c, double w0, double w1, double d0, double d1, double step, double p,
		   double bound, double *bw, double *bd, struct region *reg)
{
	double best = INFINITY;
	for (double w = w0; w <= w1 + step / 2; w += step)
		for (double d = d0; d <= d1 + step / 2; d += step) {
			double s;
			/* A window shorter than the period lies inside the period
			 * before its update (A100/H100 instant power); a longer one
			 * is a moving average (the 1 s "average" field, which
			 * nvmlDeviceGetPowerUsage answers on Ampere and newer), its
			 * end at most a period before the update. */
			if (w < 0 || d < 0 || d > p + step / 2 || (w <= p && w + d > p + step / 2))
				continue;
			s = rss_at(c, w, d);
			if (s < best) {
				best = s;
				*bw = w;
				*bd = d;
			}
			if (reg && s <= bound) {
				if (!reg->any) {
					reg->wlo = reg->whi = w;
					reg->dlo = reg->dhi = d;
					reg->any = 1;
				}
				reg->wlo = fmin(reg->wlo, w);
				reg->whi = fmax(reg->whi, w);
				reg->dlo = fmin(reg->dlo, d);
				reg->dhi = fmax(reg->dhi, d);
				if (w - step < w0 - step / 2 || w + step > w1 + step / 2 || d - step < d0 - step / 2 ||
				    d + step > d1 + step / 2)
					reg->at_edge = 1;
			}
		}
	return best;
}

/* The gauge reading nearest time x (ticks sorted). */
static double reading_at(const double *t, const double *w, size_t n, double x)
{
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t[mid] < x)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == n)
		return w[n - 1];
	if (lo && x - t[lo - 1] < t[lo] - x)
		return w[lo - 1];
	return w[lo];
}

/* The updates of grid g with its step set to q, pivoting where g is known
 * best, and the reading each shows mid-period (read away from both of its
 * updates). */
static void updates_at(struct fit_ctx *c, const struct sensor_grid *g, double q, const double *t_s, const double *w_w,
		       size_t n)
{
	double kp = (g->pivot_s - g->origin_s) / g->step_s;
	c->rtr = 0;
	for (size_t k = 0; k < c->nu; k++) {
		c->u[k] = g->pivot_s + q * ((double)k - kp);
		c->r[k] = reading_at(t_s, w_w, n, c->u[k] + q / 2);
		c->rtr += c->r[k] * c->r[k];
	}
}

int sensor_ident_fit(const double *t_s, const double *w_w, size_t n, const struct attrib_interval *iv,
		     size_t n_iv, size_t n_phase, struct sensor_ident *out)
{
	struct fit_ctx c = {.iv = iv, .n_iv = n_iv, .n_phase = n_phase, .q = n_phase + 1};
	double *ev = NULL, *eh = NULL, *u = NULL, *r = NULL, p, coarse, fine, bw = 0, bd = 0, best, bound, mean = 0,
	       tss = 0, tick_h = 0, gstep;
	size_t ne = 0, nu = 0;
	struct region reg = {0}, creg = {0};
	int rc = 0;

	memset(out, 0, sizeof *out);
	out->readings = n;
	if (n_phase > SENSOR_IDENT_MAX_PHASES) {
		out->why = "more phases than the window fit solves for";
		return 0;
	}
	ev = malloc((n ? n : 1) * sizeof *ev);
	eh = malloc((n ? n : 1) * sizeof *eh);
	if (!ev || !eh) {
		rc = -ENOMEM;
		goto out;
	}
	/* An update shows as the first tick with a new reading: it happened
	 * between that tick and the one before. */
	if (n > 1)
		tick_h = (t_s[n - 1] - t_s[0]) / (double)(n - 1) / 2;
	for (size_t i = 1; i < n; i++) {
		if (w_w[i] != w_w[i - 1]) {
			ev[ne] = (t_s[i] + t_s[i - 1]) / 2;
			eh[ne++] = (t_s[i] - t_s[i - 1]) / 2;
		}
	}
	out->updates = ne;
	rc = sensor_ident_grid(ev, eh, ne, &out->grid, &out->why);
	if (rc == -ENOMEM)
		goto out;
	rc = 0;
	if (!out->grid.step_s)
		goto out;
	p = out->grid.step_s;
	/* Every update in the span, also those whose reading repeated; each
	 * read mid-period, away from both of its updates. */
	nu = (size_t)floor((t_s[n - 1] - out->grid.origin_s) / p);
	if (nu < SENSOR_IDENT_MIN_UPDATES) {
		out->why = "too few updates of the reading to fit a window";
		goto out;
	}
	u = malloc((nu ? nu : 1) * sizeof *u);
	r = malloc((nu ? nu : 1) * sizeof *r);
	c.ata = malloc(c.q * c.q * sizeof *c.ata);
	c.atr = malloc(c.q * sizeof *c.atr);
	c.beta = malloc(c.q * sizeof *c.beta);
	if (!u || !r || !c.ata || !c.atr || !c.beta) {
		rc = -ENOMEM;
		goto out;
	}
	c.u = u;
	c.r = r;
	c.nu = nu;
	updates_at(&c, &out->grid, p, t_s, w_w, n);
	for (size_t i = 0; i < n_iv; i++) {
		if (iv[i].t0_s > u[0] - p && iv[i].t0_s < u[nu - 1])
			out->edges++;
		if (iv[i].t1_s > u[0] - p && iv[i].t1_s < u[nu - 1] && (i + 1 == n_iv || iv[i + 1].t0_s != iv[i].t1_s))
			out->edges++;
	}
	if (out->edges < SENSOR_IDENT_MIN_EDGES) {
		out->why = "too few phase edges during the readings to tell the window";
		goto out;
	}
	coarse = fmax(p / SENSOR_IDENT_COARSE_STEPS, SENSOR_IDENT_COARSE_MIN_S);
	best = scan(&c, 0, p, 0, p, coarse, p, -1, &bw, &bd, NULL);
	/* Windows longer than the period, on a coarser grid of their own. */
	{
		double lw = 0, ld = 0, lstep = fmax(coarse, SENSOR_IDENT_MAX_WINDOW_S / SENSOR_IDENT_COARSE_STEPS);
		double lbest = p < SENSOR_IDENT_MAX_WINDOW_S
				       ? scan(&c, p + lstep, SENSOR_IDENT_MAX_WINDOW_S, 0, p, lstep, p, -1, &lw, &ld, NULL)
				       : INFINITY;
		if (lbest < best) {
			best = lbest;
			bw = lw;
			bd = ld;
			coarse = lstep;
		}
	}
	fine = coarse / 10;
	/* Finer, at update periods across P's interval: the fit's (W, d) at
	 * each (a period off by its interval's half width moved a 22 s
	 * stand-in run's window by 0.1-0.2 ms on the 0.1 ms grid, outside a
	 * region one grid point wide: 25.20 [25.10, 25.30] for 25.000). */
	double qs[SENSOR_IDENT_PERIODS], qw[SENSOR_IDENT_PERIODS], qd[SENSOR_IDENT_PERIODS], qbest = p;
	{
		/* (the middle one is P itself, its grid holding the coarse
		 * best: never worse than that) */
		double cw = bw, cd = bd;
		best = INFINITY;
		for (int j = 0; j < SENSOR_IDENT_PERIODS; j++) {
			double s;
			qs[j] = out->grid.lo_s + (out->grid.hi_s - out->grid.lo_s) * j / (SENSOR_IDENT_PERIODS - 1);
			updates_at(&c, &out->grid, qs[j], t_s, w_w, n);
			qw[j] = cw;
			qd[j] = cd;
			s = scan(&c, cw - 2 * coarse, cw + 2 * coarse, cd - 2 * coarse, cd + 2 * coarse, fine, p, -1,
				 &qw[j], &qd[j], NULL);
			if (s < best) {
				best = s;
				bw = qw[j];
				bd = qd[j];
				qbest = qs[j];
			}
		}
	}
	bound = best * (1 + SENSOR_IDENT_CHI2_2 / (double)(nu > c.q + 2 ? nu - c.q - 2 : 1));
	/* The region: on the fine grid around each period's best when it
	 * closes there, joined; else on the coarse grid over the whole plane. */
	{
		double dummy_w, dummy_d;
		for (int j = 0; j < SENSOR_IDENT_PERIODS; j++) {
			updates_at(&c, &out->grid, qs[j], t_s, w_w, n);
			scan(&c, qw[j] - 2 * coarse, qw[j] + 2 * coarse, qd[j] - 2 * coarse, qd[j] + 2 * coarse, fine, p,
			     bound, &dummy_w, &dummy_d, &reg);
		}
		updates_at(&c, &out->grid, p, t_s, w_w, n);
		gstep = fine;
		if (!reg.any || reg.at_edge) {
			scan(&c, 0, bw > p ? SENSOR_IDENT_MAX_WINDOW_S : p, 0, p, coarse, p, bound, &dummy_w, &dummy_d, &creg);
			if (creg.any) {
				reg = creg;
				gstep = coarse;
			}
			reg.wlo = fmin(reg.wlo, bw);
			reg.whi = fmax(reg.whi, bw);
			reg.dlo = fmin(reg.dlo, bd);
			reg.dhi = fmax(reg.dhi, bd);
		}
	}
	/* how much of the readings' spread the window model explains, at the
	 * period it fitted best */
	updates_at(&c, &out->grid, qbest, t_s, w_w, n);
	for (size_t k = 0; k < nu; k++)
		mean += r[k];
	mean /= (double)nu;
	for (size_t k = 0; k < nu; k++)
		tss += (r[k] - mean) * (r[k] - mean);
	out->window_s = bw;
	out->window_lo_s = fmax(0, reg.wlo - gstep);
	out->window_hi_s = fmin(bw > p ? SENSOR_IDENT_MAX_WINDOW_S : out->grid.hi_s + fine, reg.whi + gstep);
	out->delay_s = bd;
	out->delay_lo_s = fmax(0, reg.dlo - gstep - tick_h);
	out->delay_hi_s = reg.dhi + gstep + tick_h;
	out->resid_w = sqrt(best / (double)nu);
	out->r2 = tss > 0 ? 1 - best / tss : 0;
	if (out->r2 < SENSOR_IDENT_MIN_R2)
		out->why = "the window model explains too little of the readings";
	else if (out->window_hi_s - out->window_lo_s > fmax(fmax(SENSOR_IDENT_DECIDED_SHARE * p, SENSOR_IDENT_DECIDED_MIN_S),
							    SENSOR_IDENT_DECIDED_WINDOW_SHARE * out->window_s))
		out->why = "the phase edges leave the window undecided (interval too wide)";
	else
		out->decided = 1;
out:
	free(ev);
	free(eh);
	free(u);
	free(r);
	free(c.ata);
	free(c.atr);
	free(c.beta);
	return rc;
}
