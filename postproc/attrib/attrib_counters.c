/*
 * attrib_counters.c - per-phase energy from a cumulative energy counter
 * sampled at ~1 ms (libanchor's ANCHOR_SENSORS sampler): exact integrals,
 * with the one thing a counter cannot tell, how the energy of a tick that
 * holds phase edges divides among its pieces, estimated from the ticks on
 * either side.
 *
 * Each tick window [t_i, t_i+1] is cut at the phase edges inside it into
 * pieces (phases and the unattributed gaps between them).  A window inside
 * one piece gives it all its energy: exact.  A window holding edges is
 * split among its pieces in proportion to duration x the phase's mean power
 * over its whole windows (exact too when each phase's power is steady),
 * the window's energy kept exactly.  A gap between phases (unattributed
 * time) takes the power of the piece before it for up to one mean tick
 * period: between an end and the next begin the machine is still finishing
 * what came before (in the ground-truth workload the gaps averaged ~1 ms
 * under load and held the previous phase's power); beyond that, the power
 * of the unattributed time's own whole windows when there are any (a run's
 * last phase followed by idle, inside one 57 ms window of a descheduled
 * sampler, had lost 3 % of its energy to the gap carrying its power on).
 * Neighbour-power or uniform splits
 * went wrong here when the sampler was descheduled for tens of ms (one
 * window then holds several short phases) and on windows of a few µs
 * (mJ quantisation of NVML's counter).
 * The interval: per split window, the larger of the differences to a
 * uniform split and to the split with gaps at the previous power
 * throughout, added in quadrature, times 1.96: what the split could move,
 * not a statistical interval.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attrib/attrib.h"

#define MAX_PIECES 64

static int cmp_iv(const void *a, const void *b)
{
	const struct attrib_interval *x = a, *y = b;
	return x->t0_s < y->t0_s ? -1 : x->t0_s > y->t0_s;
}

struct piece {
	double d;  /* seconds */
	int phase; /* n_phase = unattributed */
};

/* Cut window [a, b] at the phase edges into pieces (gaps = unattributed).
 * *j0: first interval that may still overlap (sorted, non-overlapping). */
static size_t pieces(double a, double b, const struct attrib_interval *iv, size_t n_iv, size_t *j0, size_t n_phase,
		     struct piece *pc)
{
	double t = a;
	size_t np = 0;
	while (*j0 < n_iv && iv[*j0].t1_s <= a)
		(*j0)++;
	for (size_t j = *j0; j < n_iv && iv[j].t0_s < b && np + 2 < MAX_PIECES; j++) {
		double s0 = iv[j].t0_s > t ? iv[j].t0_s : t, s1 = iv[j].t1_s < b ? iv[j].t1_s : b;
		if (s1 <= s0)
			continue;
		if (s0 > t)
			pc[np++] = (struct piece){s0 - t, (int)n_phase};
		pc[np++] = (struct piece){s1 - s0, iv[j].phase};
		t = s1;
	}
	if (t < b)
		pc[np++] = (struct piece){b - t, (int)n_phase};
	return np;
}

/* Increasing time, non-decreasing finite energy, phases in range. */
static int check_inputs(const double *t_s, const double *cum_j, size_t n, const struct attrib_interval *iv,
			size_t n_iv, size_t n_phase)
{
	if (n < 2)
		return -EINVAL;
	for (size_t i = 1; i < n; i++)
		if (!(t_s[i] > t_s[i - 1]) || !(cum_j[i] >= cum_j[i - 1]) || !isfinite(cum_j[i]))
			return -EINVAL;
	for (size_t k = 0; k < n_iv; k++)
		if (iv[k].phase < 0 || (size_t)iv[k].phase >= n_phase || !(iv[k].t1_s >= iv[k].t0_s))
			return -EINVAL;
	return 0;
}

/* What the split of a window with edges goes by: per phase (and
 * unattributed, n_phase) the joules and seconds of the windows wholly
 * inside it, and how long a gap carries the power before it. */
struct pure_power {
	double *pure_j, *pure_s; /* n_phase + 1 each */
	double idle_j, idle_s, tail_s;
	size_t n_phase;
};

/* Pass 1: each phase's mean power over the windows that lie wholly
 * inside it (exact: a counter's window energy has no error). */
static void pure_windows(const double *t_s, const double *cum_j, size_t n, const struct attrib_interval *iv,
			 size_t n_iv, struct pure_power *pp)
{
	for (size_t i = 0, j0 = 0; i + 1 < n; i++) {
		struct piece pc[MAX_PIECES];
		size_t np = pieces(t_s[i], t_s[i + 1], iv, n_iv, &j0, pp->n_phase, pc);
		if (np == 1) {
			pp->pure_j[pc[0].phase] += cum_j[i + 1] - cum_j[i];
			pp->pure_s[pc[0].phase] += pc[0].d;
		}
	}
	/* Unattributed time's own power (its whole windows) and how long a
	 * gap carries the power before it: one mean tick. */
	pp->idle_j = pp->pure_j[pp->n_phase];
	pp->idle_s = pp->pure_s[pp->n_phase];
	pp->tail_s = (t_s[n - 1] - t_s[0]) / (double)(n - 1);
}

/* Pass 2, one window [a, b] of energy e cut into pieces pc: its energy to
 * the pieces in proportion to duration x that phase's pure power
 * (duration alone for a phase with no pure window: shorter than every
 * tick around it); prev_w is the window before's mean power.  Adds each
 * piece's squared deviation from the uniform or carried split to var. */
static void split_window(double a, double b, double e, double prev_w, const struct piece *pc, size_t np,
			 const struct pure_power *pp, struct attrib_result *out, double *var)
{
	double w[MAX_PIECES], w_carry[MAX_PIECES], pw[MAX_PIECES], sum = 0, sum_carry = 0, mean = e / (b - a);

	for (size_t k = 0; k < np; k++) {
		int ph = pc[k].phase;
		double d = pc[k].d;
		if (ph == (int)pp->n_phase) { /* a gap carries on the power before it */
			pw[k] = k ? pw[k - 1] : prev_w;
			w_carry[k] = pw[k] * d;
			w[k] = d > pp->tail_s && pp->idle_s > 0
				       ? pw[k] * pp->tail_s + pp->idle_j / pp->idle_s * (d - pp->tail_s)
				       : w_carry[k];
		} else {
			pw[k] = pp->pure_s[ph] > 0 ? pp->pure_j[ph] / pp->pure_s[ph] : mean;
			w[k] = w_carry[k] = pw[k] * d;
		}
		sum += w[k];
		sum_carry += w_carry[k];
	}
	for (size_t k = 0; k < np; k++) {
		double share = np == 1 ? e : sum > 0 ? e * w[k] / sum : e * pc[k].d / (b - a);
		double uniform = e * pc[k].d / (b - a);
		double carry = np == 1 ? e : sum_carry > 0 ? e * w_carry[k] / sum_carry : uniform;
		double dev = fabs(share - uniform) > fabs(share - carry) ? share - uniform : share - carry;
		out->row[pc[k].phase].energy_j += share;
		out->row[pc[k].phase].time_s += pc[k].d;
		var[pc[k].phase] += dev * dev;
	}
}

int attrib_counters(const double *t_s, const double *cum_j, size_t n, const struct attrib_interval *iv_in,
		    size_t n_iv, size_t n_phase, struct attrib_result *out)
{
	struct attrib_interval *iv;
	double *var;
	struct pure_power pp = {.n_phase = n_phase};
	int rc;

	memset(out, 0, sizeof *out);
	if ((rc = check_inputs(t_s, cum_j, n, iv_in, n_iv, n_phase)))
		return rc;
	iv = malloc((n_iv ? n_iv : 1) * sizeof *iv);
	var = calloc(3 * (n_phase + 1), sizeof *var);
	out->row = calloc(n_phase + 1, sizeof *out->row);
	if (!iv || !var || !out->row) {
		free(iv);
		free(var);
		attrib_result_free(out);
		return -ENOMEM;
	}
	if (n_iv)
		memcpy(iv, iv_in, n_iv * sizeof *iv);
	qsort(iv, n_iv, sizeof *iv, cmp_iv);
	pp.pure_j = var + (n_phase + 1);
	pp.pure_s = pp.pure_j + (n_phase + 1);
	out->n_phase = n_phase;
	out->span_t0_s = t_s[0];
	out->span_t1_s = t_s[n - 1];
	out->total_j = cum_j[n - 1] - cum_j[0];

	pure_windows(t_s, cum_j, n, iv, n_iv, &pp);
	for (size_t i = 0, j0 = 0; i + 1 < n; i++) {
		double a = t_s[i], b = t_s[i + 1], e = cum_j[i + 1] - cum_j[i];
		struct piece pc[MAX_PIECES];
		size_t np = pieces(a, b, iv, n_iv, &j0, n_phase, pc);
		double prev_w = i > 0 ? (cum_j[i] - cum_j[i - 1]) / (t_s[i] - t_s[i - 1]) : e / (b - a);
		split_window(a, b, e, prev_w, pc, np, &pp, out, var);
	}
	for (size_t p = 0; p <= n_phase; p++) {
		struct attrib_row *r = &out->row[p];
		double h = 1.96 * sqrt(var[p]);
		r->method = ATTRIB_INTEGRATE;
		r->ci_low_j = r->energy_j - h > 0 ? r->energy_j - h : 0;
		r->ci_high_j = r->energy_j + h;
		r->power_w = r->time_s > 0 ? r->energy_j / r->time_s : 0;
		if (r->time_s <= 0)
			r->flags |= ATTRIB_FLAG_NO_TIME;
	}
	out->period_s = (t_s[n - 1] - t_s[0]) / (double)(n - 1);
	free(iv);
	free(var);
	return 0;
}
