/*
 * attrib_internal.h - shared pieces of the attribution library (not API).
 */
#ifndef ANCHORPOST_ATTRIB_INTERNAL_H
#define ANCHORPOST_ATTRIB_INTERNAL_H

#include "attrib/attrib.h"

/* A validated sensor with its cumulative energy at every timestep.  With
 * intervals, segments holding exactly one phase edge use the edge-aware
 * model (attrib_series.c). */
struct attrib_curve {
	const struct attrib_series *s;
	double *cum_j;		/* n entries, cum_j[0] = 0 */
	unsigned char *n_edge;	/* per segment: distinct edges inside (capped 2) */
	double *edge_t_s;	/* per segment: the edge when n_edge == 1 */
	double period_s;
};

/* Regression rows: window [a_s, b_s] (a == b for point samples) and the
 * mean power y_w observed over it. */
struct attrib_win {
	size_t n;
	double *a_s, *b_s, *y_w;
	int point;
};

/* Validate s; iv may be NULL (no edge-aware model, e.g. while fitting an
 * offset, where the edges move). */
int attrib_curve_init(const struct attrib_series *s, const struct attrib_interval *iv, size_t n_iv,
		      struct attrib_curve *c);
void attrib_curve_fini(struct attrib_curve *c);
/* Cumulative energy at t, clamped to the span. */
double attrib_curve_energy_at(const struct attrib_curve *c, double t_s);
/* Error of the energy split at a phase edge at t_s (start: 1 for an
 * interval start, the phase after the edge; 0 for an end): *bound_j a
 * systematic bound (plain interpolation), *var_j2 a variance (edge-aware
 * split, whose errors are random). */
void attrib_curve_edge_err(const struct attrib_curve *c, double t_s, int start, double *bound_j,
			   double *var_j2);

/* Measurement noise of one window or read, W, from same-phase neighbours. */
double attrib_curve_noise_w(const struct attrib_curve *c);

int attrib_win_build(const struct attrib_curve *c, struct attrib_win *w);
void attrib_win_free(struct attrib_win *w);

/* Allocate out->row and fill span, total, period, times and NO_TIME flags;
 * -ENODATA when no phase has time inside the span. */
int attrib_result_setup(const struct attrib_curve *c, const struct attrib_interval *iv, size_t n_iv,
			size_t n_phase, struct attrib_result *out);
/* Integrate the rows among 0..n_phase-1 whose method is ATTRIB_INTEGRATE
 * (energy, interval from edge errors and sensor noise, power). */
int attrib_integrate_rows(const struct attrib_curve *c, const struct attrib_interval *iv,
			  size_t n_iv, size_t n_phase, struct attrib_result *out);

int attrib_check_intervals(const struct attrib_interval *iv, size_t n_iv, size_t n_phase);

/* The union of all intervals as sorted disjoint pieces. */
struct attrib_union {
	size_t n;
	double *t0_s, *t1_s;
};
int attrib_union_build(const struct attrib_interval *iv, size_t n_iv, struct attrib_union *u);
void attrib_union_free(struct attrib_union *u);

/* Fill share[j * (n_phase + 1) + k]: fraction of window j in phase k (the
 * indicator for point samples), column n_phase unattributed (outside the
 * union u), with the intervals shifted by shift_s. */
void attrib_shares(const struct attrib_win *w, const struct attrib_interval *iv, size_t n_iv,
		   const struct attrib_union *u, size_t n_phase, double shift_s, double *share);

/* gap[j]: fraction of window j in the gaps of u (between two of its pieces)
 * shorter than max_gap_s: the glue between phases, whose power the
 * unattributed column's one fitted power does not describe. */
void attrib_gap_shares(const struct attrib_win *w, const struct attrib_union *u, double max_gap_s, double *gap);

/* Per phase time inside [t0, t1] and median interval length; row n_phase is
 * the unattributed time (span minus the union of all intervals). */
int attrib_phase_times(const struct attrib_interval *iv, size_t n_iv, size_t n_phase, double t0_s,
		       double t1_s, double *time_s, double *typical_s);

/* Symmetric eigen-decomposition (cyclic Jacobi) of the k x k matrix a
 * (destroyed); eigenvalues in lam, eigenvectors in columns of v. */
void attrib_eig_sym(double *a, size_t k, double *lam, double *v);

/* Everything attrib_regress computes, for reuse by auto and the offset fit. */
struct attrib_fit {
	size_t k;	  /* columns = n_phase + 1 */
	double *p_w;	  /* k fitted powers */
	double *boot_p_w; /* n_boot x k replicates (NULL when n_boot = 0) */
	double *se_w;	  /* analytic standard errors */
	double *vif;
	double rss, cond;
	size_t n_rows, block_len;
	unsigned n_boot;
};

/* NNLS fit of the rows; n_boot = 0 skips the bootstrap and the analytics. */
int attrib_fit_rows(const double *share, const double *y, size_t n, size_t k, unsigned n_boot,
		    uint64_t seed, size_t block_len, struct attrib_fit *f);
void attrib_fit_free(struct attrib_fit *f);

/* Residual sum of squares of the NNLS fit with the intervals shifted. */
int attrib_rss_at(const struct attrib_win *w, const struct attrib_interval *iv, size_t n_iv,
		  const struct attrib_union *u, size_t n_phase, double shift_s, double *share,
		  double *rss);

#endif
