/*
 * sensor_ident.h - a GPU power sensor's update period and averaging
 * window, identified from one run's own readings and phase edges.
 *
 * The published sensors (arXiv 2312.02741, SC24): the reading changes only
 * every update period P (A100/H100 100 ms, Pascal/Volta 20 ms), and each
 * update publishes the mean power over only a window W of that period
 * (A100/H100 25 ms, GH200 20 ms, Turing 100 ms), ending some delay d
 * before the update (where in the period the window sits, fixed per board
 * as far as the data here show).  No figure is published for the H200;
 * a table can only ever be a guess for a board it has not seen.
 *
 * Model: reading k, published at u_k = u_0 + k P, is
 *     r_k = sum_p beta_p * f_p(u_k - d - W, u_k - d)
 * where f_p is the fraction of that window spent in phase p (or idle) and
 * beta_p the phase's mean power, unknown.  With libanchor sampling the
 * reading at 1 kHz (group gpu_power in the ring), the updates show as the
 * ticks where the reading changes; P comes from fitting them to a grid.
 * (W, d) are the pair whose windows' phase mixes explain the readings best
 * (least squares over beta for each candidate on a grid, then finer).  A
 * run with phase edges at varied positions against the grid (a square wave
 * at several periods, or a training loop's natural jitter) decides them;
 * a run of one long phase does not, and says so.
 *
 * Intervals (95 %): P from the grid fit's residual scatter (each update is
 * seen only to within a tick, the scatter shows it); (W, d) the region of
 * the grid whose residual sum of squares stays within the F bound of the
 * best (two parameters, chi2_2 = 5.99), joined over update periods across
 * P's interval (pivoting where the grid is known best: a period 2 us off
 * moves the ends of a 22 s run's grid by 0.2 ms, and the window with
 * them), widened by the grid step and, for d, by half a tick (the
 * update's position inside its tick is unseen).
 */
#ifndef ANCHORPOST_SENSOR_IDENT_H
#define ANCHORPOST_SENSOR_IDENT_H

#include <stddef.h>

#include "attrib/attrib.h"

/* A strictly increasing grid of events (updates) seen at t_s[i] with
 * half-width h_s[i]: its step and origin, and the step's 95 % interval.
 * 0, or -ENODATA when fewer than SENSOR_IDENT_MIN_UPDATES events or
 * they do not sit on one grid (then *why says so). */
struct sensor_grid {
	double step_s, lo_s, hi_s; /* the step and its interval */
	double origin_s;           /* the grid point nearest the first event */
	double pivot_s;            /* where the grid is known best (the events' mean) */
	double resid_rms_s;        /* scatter of the events about the grid */
	size_t events;
};
int sensor_ident_grid(const double *t_s, const double *h_s, size_t n, struct sensor_grid *g, const char **why);

struct sensor_ident {
	int decided;               /* 1: period and window identified */
	const char *why;           /* when not decided: why not */
	size_t readings, updates;  /* gauge readings, updates seen (changes) */
	size_t edges;              /* phase edges inside the fitted updates' span */
	struct sensor_grid grid;   /* the update period P */
	double window_s, window_lo_s, window_hi_s;
	double delay_s, delay_lo_s, delay_hi_s;
	double r2;                 /* share of the readings' variance the model explains */
	double resid_w;            /* rms residual of the readings (W) */
};

/* Identify from readings w_w[i] at t_s[i] (increasing, the sampler's
 * ticks) and the phases iv (sorted, not overlapping; gaps are idle) with
 * phase indexes < n_phase.  0 (out->decided says whether it is decided),
 * or -ENOMEM. */
int sensor_ident_fit(const double *t_s, const double *w_w, size_t n, const struct attrib_interval *iv,
		     size_t n_iv, size_t n_phase, struct sensor_ident *out);

#endif
