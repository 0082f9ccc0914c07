/*
 * attrib_nnls.c - non-negative least squares and the small dense algebra
 * around it.
 *
 * Why Lawson-Hanson on the normal equations: the problems here are tall and
 * thin (tens of thousands of windows, about ten phases).  Forming G = A'A
 * once costs O(n k^2); every NNLS solve afterwards is O(k^3) per active-set
 * change, independent of n, which is what makes 200 bootstrap refits (each a
 * sum of block Grams) cheap.  The price is squaring A's condition number;
 * columns are scaled to unit diagonal first, and a column set that is still
 * numerically singular is exactly the unidentifiable case we detect and
 * report separately (attrib_regress.c), so the tiny ridge added to the
 * Cholesky pivots below only has to keep the arithmetic finite.
 * Active-set finishes in finitely many steps (no step-size tuning as in a
 * projected gradient method) and gives exact zeros for powers held at 0.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attrib/attrib_internal.h"

/* Solve the sub-system G[P][P] z = g[P] by Cholesky; P lists np indices.
 * Pivots below rel_floor * max diagonal are lifted to it (see above). */
static void solve_passive(const double *gram, const double *g, size_t k, const size_t *P, size_t np,
			  double *z, double *work)
{
	double *l = work; /* np x np */
	double maxd = 0;
	for (size_t i = 0; i < np; i++)
		if (gram[P[i] * k + P[i]] > maxd)
			maxd = gram[P[i] * k + P[i]];
	double floor_ = 1e-12 * (maxd > 0 ? maxd : 1);
	for (size_t i = 0; i < np; i++) {
		for (size_t j = 0; j <= i; j++) {
			double s = gram[P[i] * k + P[j]];
			for (size_t m = 0; m < j; m++)
				s -= l[i * np + m] * l[j * np + m];
			if (i == j)
				l[i * np + i] = sqrt(s > floor_ ? s : floor_);
			else
				l[i * np + j] = s / l[j * np + j];
		}
	}
	for (size_t i = 0; i < np; i++) {
		double s = g[P[i]];
		for (size_t m = 0; m < i; m++)
			s -= l[i * np + m] * z[m];
		z[i] = s / l[i * np + i];
	}
	for (size_t i = np; i-- > 0;) {
		double s = z[i];
		for (size_t m = i + 1; m < np; m++)
			s -= l[m * np + i] * z[m];
		z[i] = s / l[i * np + i];
	}
}

/* Lawson-Hanson's outer step: the gradient of -1/2|Ax-y|^2, w = g - G x,
 * over the variables held at zero; the one most above tol (k: none, x is
 * optimal). */
static size_t most_violated(const double *gram, const double *g, size_t k, const double *x, const char *in_p,
			    double tol, double *w)
{
	size_t best = k;
	double wbest = tol;
	for (size_t i = 0; i < k; i++) {
		if (in_p[i])
			continue;
		double s = g[i];
		for (size_t j = 0; j < k; j++)
			s -= gram[i * k + j] * x[j];
		w[i] = s;
		if (s > wbest) {
			wbest = s;
			best = i;
		}
	}
	return best;
}

/* Lawson-Hanson's inner step, after the unconstrained solve z on the
 * passive set P: the largest step from x toward z that keeps every
 * variable >= 0 (above 1: z is feasible). */
static double step_to_boundary(const double *x, const double *z, const size_t *P, size_t np)
{
	double alpha = 2;
	for (size_t i = 0; i < np; i++) {
		if (z[i] > 0)
			continue;
		double d = x[P[i]] - z[i];
		double a = d > 0 ? x[P[i]] / d : 0;
		if (a < alpha)
			alpha = a;
	}
	return alpha;
}

/* Move x by alpha toward z and drop the variables that reached zero from
 * the passive set; returns its new size. */
static size_t step_back(double *x, const double *z, size_t *P, size_t np, char *in_p, double alpha)
{
	size_t keep = 0;
	for (size_t i = 0; i < np; i++) {
		size_t c = P[i];
		x[c] += alpha * (z[i] - x[c]);
		if (x[c] <= 1e-15 * (1 + fabs(z[i]))) {
			x[c] = 0;
			in_p[c] = 0;
		} else {
			P[keep++] = c;
		}
	}
	return keep;
}

int attrib_nnls(const double *gram, const double *g, size_t k, double *x)
{
	if (!gram || !g || !x || k == 0)
		return -EINVAL;
	char *in_p = calloc(k, 1);
	size_t *P = malloc(k * sizeof *P);
	double *z = malloc(k * sizeof *z), *w = malloc(k * sizeof *w);
	double *work = malloc(k * k * sizeof *work);
	int rc = -ENOMEM;
	if (!in_p || !P || !z || !w || !work)
		goto out;
	memset(x, 0, k * sizeof *x);
	double gmax = 0;
	for (size_t i = 0; i < k; i++)
		if (fabs(g[i]) > gmax)
			gmax = fabs(g[i]);
	/* Dual feasibility tolerance relative to the data scale. */
	double tol = 1e-10 * (gmax > 0 ? gmax : 1);
	size_t np = 0;
	int iter = 0, max_iter = 30 * (int)k + 30;
	rc = -ERANGE;
	for (;;) {
		size_t best = most_violated(gram, g, k, x, in_p, tol, w);
		if (best == k || np == k)
			break;
		in_p[best] = 1;
		P[np++] = best;
		for (;;) {
			if (++iter > max_iter)
				goto out;
			solve_passive(gram, g, k, P, np, z, work);
			double alpha = step_to_boundary(x, z, P, np);
			if (alpha > 1) { /* all positive: accept */
				for (size_t i = 0; i < np; i++)
					x[P[i]] = z[i];
				break;
			}
			if ((np = step_back(x, z, P, np, in_p, alpha)) == 0)
				break;
		}
	}
	rc = iter;
out:
	free(in_p);
	free(P);
	free(z);
	free(w);
	free(work);
	return rc;
}

void attrib_eig_sym(double *a, size_t k, double *lam, double *v)
{
	for (size_t i = 0; i < k; i++)
		for (size_t j = 0; j < k; j++)
			v[i * k + j] = i == j;
	/* Cyclic Jacobi: for k ~ 10 it converges in a handful of sweeps and
	 * is accurate for tiny eigenvalues, which is what identifiability
	 * needs. */
	for (int sweep = 0; sweep < 60; sweep++) {
		double off = 0, diag = 0;
		for (size_t i = 0; i < k; i++) {
			diag += a[i * k + i] * a[i * k + i];
			for (size_t j = i + 1; j < k; j++)
				off += a[i * k + j] * a[i * k + j];
		}
		if (off <= 1e-30 * diag || off == 0)
			break;
		for (size_t p = 0; p < k; p++) {
			for (size_t q = p + 1; q < k; q++) {
				double apq = a[p * k + q];
				if (apq == 0)
					continue;
				double theta = (a[q * k + q] - a[p * k + p]) / (2 * apq);
				double t = (theta >= 0 ? 1 : -1) / (fabs(theta) + sqrt(theta * theta + 1));
				double c = 1 / sqrt(t * t + 1), s = t * c;
				for (size_t r = 0; r < k; r++) {
					double arp = a[r * k + p], arq = a[r * k + q];
					a[r * k + p] = c * arp - s * arq;
					a[r * k + q] = s * arp + c * arq;
				}
				for (size_t r = 0; r < k; r++) {
					double apr = a[p * k + r], aqr = a[q * k + r];
					a[p * k + r] = c * apr - s * aqr;
					a[q * k + r] = s * apr + c * aqr;
				}
				for (size_t r = 0; r < k; r++) {
					double vrp = v[r * k + p], vrq = v[r * k + q];
					v[r * k + p] = c * vrp - s * vrq;
					v[r * k + q] = s * vrp + c * vrq;
				}
			}
		}
	}
	for (size_t i = 0; i < k; i++)
		lam[i] = a[i * k + i];
}
