/*
 * attrib_fit.c - the window regression: NNLS fit of per-phase power,
 * identifiability, analytic errors and the block bootstrap.
 *
 * Rows are windows in power units (share of the window per phase, mean
 * power), unweighted: perun's windows are all one sampling period long, so
 * this equals the energy formulation up to a constant.
 *
 * Identifiability: after scaling every column to unit norm, the variance
 * inflation factor VIF_k = (G_s^-1)_kk says how well column k can be told
 * from a combination of the others (1: orthogonal, infinite: a linear
 * combination).  When phases recur with a period that divides the window,
 * every row holds the same mix and the columns are proportional: the VIFs
 * explode and so does the analytic interval, while a bootstrap over
 * identical rows would show no spread at all.  That is why the caller flags
 * VIF > vif_max instead of trusting the bootstrap alone.
 *
 * Bootstrap: non-overlapping blocks of block_len consecutive windows
 * (Carlstein), so residual autocorrelation within a block (slowly drifting
 * power, phases spanning windows) survives resampling.  Every block's Gram
 * and A'y are summed once; a replicate draws blocks with replacement and
 * adds their small matrices, then one NNLS: O(blocks * k^2) per replicate,
 * independent of the window count inside a block.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attrib/attrib_internal.h"

static uint64_t splitmix64(uint64_t *s)
{
	uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

void attrib_fit_free(struct attrib_fit *f)
{
	free(f->p_w);
	free(f->boot_p_w);
	free(f->se_w);
	free(f->vif);
	memset(f, 0, sizeof *f);
}

static void gram_add(const double *row, double y, size_t k, double *gram, double *g)
{
	for (size_t a = 0; a < k; a++) {
		if (row[a] == 0)
			continue;
		g[a] += row[a] * y;
		for (size_t b = 0; b < k; b++)
			gram[a * k + b] += row[a] * row[b];
	}
}

/* NNLS on the column-scaled system; d[i] = 0 marks an empty column. */
static int solve_scaled(const double *gram, const double *g, const double *d, size_t k,
			double *gs, double *bs, double *xs, double *p)
{
	for (size_t a = 0; a < k; a++) {
		bs[a] = d[a] > 0 ? g[a] / d[a] : 0;
		for (size_t b = 0; b < k; b++)
			gs[a * k + b] = d[a] > 0 && d[b] > 0 ? gram[a * k + b] / (d[a] * d[b]) : 0;
		if (d[a] == 0)
			gs[a * k + a] = 1; /* decoupled: solves to 0 */
	}
	int rc = attrib_nnls(gs, bs, k, xs);
	if (rc < 0)
		return rc;
	for (size_t a = 0; a < k; a++)
		p[a] = d[a] > 0 ? xs[a] / d[a] : 0;
	return 0;
}

/* Eigen-analysis of the scaled Gram over the non-empty columns. */
static int identifiability(const double *gram, const double *d, size_t k, struct attrib_fit *f)
{
	size_t m = 0, *idx = malloc(k * sizeof *idx);
	double *a = malloc(k * k * sizeof *a), *v = malloc(k * k * sizeof *v);
	double *lam = malloc(k * sizeof *lam);
	if (!idx || !a || !v || !lam) {
		free(idx);
		free(a);
		free(v);
		free(lam);
		return -ENOMEM;
	}
	for (size_t i = 0; i < k; i++)
		if (d[i] > 0)
			idx[m++] = i;
	for (size_t i = 0; i < m; i++)
		for (size_t j = 0; j < m; j++)
			a[i * m + j] = gram[idx[i] * k + idx[j]] / (d[idx[i]] * d[idx[j]]);
	attrib_eig_sym(a, m, lam, v);
	double lmax = 0, lmin = INFINITY;
	for (size_t i = 0; i < m; i++) {
		if (lam[i] > lmax)
			lmax = lam[i];
		if (lam[i] < lmin)
			lmin = lam[i];
	}
	/* Below ~1e-13 of the largest the eigenvalue is rounding noise. */
	double lfloor = 1e-13 * lmax;
	f->cond = lmin > lfloor ? lmax / lmin : INFINITY;
	for (size_t i = 0; i < k; i++)
		f->vif[i] = 0;
	for (size_t i = 0; i < m; i++) {
		double s = 0;
		for (size_t e = 0; e < m; e++) {
			double ve = v[i * m + e];
			if (lam[e] > lfloor)
				s += ve * ve / lam[e];
			else if (ve * ve > 1e-12)
				s = INFINITY; /* column i takes part in a null direction */
		}
		f->vif[idx[i]] = s;
	}
	free(idx);
	free(a);
	free(v);
	free(lam);
	return 0;
}

/* Work space of one fit: the normal equations (gram, g), the column
 * norms d, and solve_scaled's and the bootstrap's scratch, all k or k*k. */
struct fit_work {
	double *gram, *g, *d, *gs, *bs, *xs, *db;
};

/* The residual from the rows themselves: y'y - 2p'g + p'Gp cancels
 * catastrophically when the fit is good. */
static double rows_rss(const double *share, const double *y, size_t n, size_t k, const double *p_w)
{
	double rss = 0;
	for (size_t j = 0; j < n; j++) {
		double r = y[j];
		for (size_t a = 0; a < k; a++)
			r -= share[j * k + a] * p_w[a];
		rss += r * r;
	}
	return rss;
}

/* Analytic standard errors: residual variance over the columns in use,
 * times each column's variance inflation. */
static void standard_errors(const double *d, size_t n, size_t k, struct attrib_fit *f)
{
	size_t used = 0;
	for (size_t a = 0; a < k; a++)
		used += d[a] > 0;
	double sigma2 = n > used ? f->rss / (double)(n - used) : 0;
	for (size_t a = 0; a < k; a++)
		f->se_w[a] = d[a] > 0 ? sqrt(sigma2 * f->vif[a]) / d[a] : 0;
}

/* Moving-block bootstrap over the rows: blocks of block_len consecutive
 * rows (cube root of n by default) keep their autocorrelation; each
 * replicate draws nb blocks with replacement and refits.  Fills
 * f->boot_p_w and f->block_len; overwrites wk->gram and wk->g. */
static int block_bootstrap(const double *share, const double *y, size_t n, size_t k, unsigned n_boot,
			   uint64_t seed, size_t block_len, struct fit_work *wk, struct attrib_fit *f)
{
	double *gram = wk->gram, *g = wk->g;
	int rc = -ENOMEM;

	if (block_len == 0)
		block_len = (size_t)ceil(cbrt((double)n));
	if (block_len > n)
		block_len = n;
	size_t nb = (n + block_len - 1) / block_len;
	f->block_len = block_len;
	double *bgram = calloc(nb * k * k, sizeof *bgram);
	double *bg = calloc(nb * k, sizeof *bg);
	f->boot_p_w = malloc((size_t)n_boot * k * sizeof *f->boot_p_w);
	if (!bgram || !bg || !f->boot_p_w)
		goto out;
	for (size_t j = 0; j < n; j++)
		gram_add(share + j * k, y[j], k, bgram + (j / block_len) * k * k, bg + (j / block_len) * k);
	uint64_t st = seed;
	for (unsigned b = 0; b < n_boot; b++) {
		memset(gram, 0, k * k * sizeof *gram);
		memset(g, 0, k * sizeof *g);
		for (size_t i = 0; i < nb; i++) {
			size_t pick = (size_t)((double)(splitmix64(&st) >> 11) * 0x1p-53 * (double)nb);
			const double *bgp = bgram + pick * k * k, *bgv = bg + pick * k;
			for (size_t a = 0; a < k * k; a++)
				gram[a] += bgp[a];
			for (size_t a = 0; a < k; a++)
				g[a] += bgv[a];
		}
		/* Scale by the full-data norms: a replicate that misses a
		 * column entirely keeps it at 0 instead of dividing by 0. */
		for (size_t a = 0; a < k; a++)
			wk->db[a] = gram[a * k + a] > 0 ? wk->d[a] : 0;
		rc = solve_scaled(gram, g, wk->db, k, wk->gs, wk->bs, wk->xs, f->boot_p_w + (size_t)b * k);
		if (rc)
			goto out;
	}
	f->n_boot = n_boot;
	rc = 0;
out:
	free(bgram);
	free(bg);
	return rc;
}

int attrib_fit_rows(const double *share, const double *y, size_t n, size_t k, unsigned n_boot,
		    uint64_t seed, size_t block_len, struct attrib_fit *f)
{
	memset(f, 0, sizeof *f);
	f->k = k;
	f->n_rows = n;
	struct fit_work wk = {
		.gram = calloc(k * k, sizeof *wk.gram), .g = calloc(k, sizeof *wk.g),
		.d = malloc(k * sizeof *wk.d), .gs = malloc(k * k * sizeof *wk.gs),
		.bs = malloc(k * sizeof *wk.bs), .xs = malloc(k * sizeof *wk.xs),
		.db = malloc(k * sizeof *wk.db),
	};
	f->p_w = calloc(k, sizeof *f->p_w);
	f->se_w = calloc(k, sizeof *f->se_w);
	f->vif = calloc(k, sizeof *f->vif);
	int rc = -ENOMEM;
	if (!wk.gram || !wk.g || !wk.d || !wk.gs || !wk.bs || !wk.xs || !wk.db || !f->p_w || !f->se_w || !f->vif)
		goto out;
	for (size_t j = 0; j < n; j++)
		gram_add(share + j * k, y[j], k, wk.gram, wk.g);
	for (size_t a = 0; a < k; a++)
		wk.d[a] = sqrt(wk.gram[a * k + a]);
	rc = solve_scaled(wk.gram, wk.g, wk.d, k, wk.gs, wk.bs, wk.xs, f->p_w);
	if (rc)
		goto out;
	f->rss = rows_rss(share, y, n, k, f->p_w);
	if (n_boot == 0)
		goto out; /* a point fit: no intervals asked */
	rc = identifiability(wk.gram, wk.d, k, f);
	if (rc)
		goto out;
	standard_errors(wk.d, n, k, f);
	rc = block_bootstrap(share, y, n, k, n_boot, seed, block_len, &wk, f);
out:
	free(wk.gram);
	free(wk.g);
	free(wk.d);
	free(wk.gs);
	free(wk.bs);
	free(wk.xs);
	free(wk.db);
	if (rc)
		attrib_fit_free(f);
	return rc;
}

int attrib_rss_at(const struct attrib_win *w, const struct attrib_interval *iv, size_t n_iv,
		  const struct attrib_union *u, size_t n_phase, double shift_s, double *share,
		  double *rss)
{
	struct attrib_fit f;
	attrib_shares(w, iv, n_iv, u, n_phase, shift_s, share);
	int rc = attrib_fit_rows(share, w->y_w, w->n, n_phase + 1, 0, 0, 0, &f);
	if (rc)
		return rc;
	*rss = f.rss;
	attrib_fit_free(&f);
	return 0;
}
