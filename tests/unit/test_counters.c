/*
 * test_counters.c - known answers for issue 14's attribution pieces:
 *   1. attrib_counters (ms energy counters): a simulated loop of steady-
 *      power phases with gaps between them, a counter read at ~1 ms with
 *      irregular ticks and a few long stalls (a descheduled sampler): every
 *      phase's energy within 0.1 % of the truth computed from the segments.
 *   2. the forward model for averaged power readings (attrib_regress with
 *      avg_window_s): readings that are exact 1 s means of the power, read
 *      every 0.1 s, of 0.3-1.5 s phases with jitter: the regression with the
 *      right window recovers each phase's power within 2 %, and treating the
 *      readings as point samples (window 0) is worse on the shortest phase.
 * Synthetic and exact: no sensor, no noise; the truth shares no code with
 * the library.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attrib/attrib.h"

#include "unit_check.h"

static uint64_t rs = 0x1234567;
static double urand(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return (double)(rs >> 11) / 9007199254740992.0;
}

#define NPH 4
struct seg {
	double t0, t1, p;
	int phase; /* -1: a gap (power carries on from the phase before) */
};

static struct seg *seg;
static size_t nseg, capseg;

static void push(double t0, double t1, double p, int phase)
{
	if (nseg == capseg) {
		capseg = capseg ? 2 * capseg : 1024;
		seg = realloc(seg, capseg * sizeof *seg);
	}
	seg[nseg++] = (struct seg){t0, t1, p, phase};
}

/* Cumulative energy up to x (segments cover [0, end) without holes). */
static double energy_upto(double x)
{
	double e = 0;
	for (size_t i = 0; i < nseg && seg[i].t0 < x; i++)
		e += seg[i].p * ((x < seg[i].t1 ? x : seg[i].t1) - seg[i].t0);
	return e;
}

static void build_loop(const double *ms, const double *w, int reps, double jitter, double gap_ms)
{
	double t = 0.5;
	nseg = 0;
	push(0, t, 0, -1);
	for (int r = 0; r < reps; r++)
		for (int k = 0; k < NPH; k++) {
			double d = ms[k] / 1e3 * (1 + jitter * (2 * urand() - 1));
			double g = gap_ms / 1e3 * urand();
			push(t, t + d, w[k], k);
			push(t + d, t + d + g, w[k], -1); /* the gap still draws the phase's power */
			t += d + g;
		}
	push(t, t + 0.5, 0, -1);
}

static void test_counters(void)
{
	static const double ms[NPH] = {30, 70, 150, 30}, w[NPH] = {60, 250, 300, 120};
	double end, truth[NPH] = {0};
	struct attrib_interval *iv;
	struct attrib_result r;
	size_t n = 0, niv = 0, cap;
	double *t, *c;
	int rc;

	build_loop(ms, w, 50, 0.3, 1.0);
	end = seg[nseg - 1].t1;
	cap = (size_t)(end * 1100) + 16;
	t = malloc(cap * sizeof *t);
	c = malloc(cap * sizeof *c);
	iv = malloc(nseg * sizeof *iv);
	for (double x = 0.0001; x < end && n < cap; n++) {
		t[n] = x;
		c[n] = floor(energy_upto(x) * 1e3) / 1e3; /* mJ, as NVML's counter */
		x += urand() < 0.005 ? 0.02 + 0.05 * urand() : 0.0008 + 0.0004 * urand();
	}
	for (size_t i = 0; i < nseg; i++)
		if (seg[i].phase >= 0) {
			iv[niv++] = (struct attrib_interval){seg[i].t0, seg[i].t1, seg[i].phase};
			truth[seg[i].phase] += seg[i].p * (seg[i].t1 - seg[i].t0);
		}
	rc = attrib_counters(t, c, n, iv, niv, NPH, &r);
	CHECK(rc == 0, "attrib_counters: %d", rc);
	for (int k = 0; !rc && k < NPH; k++) {
		double err = r.row[k].energy_j / truth[k] - 1;
		printf("counters  phase %d (%3.0f ms, %3.0f W): %9.4f J vs truth %9.4f J (%+.3f %%) CI [%.3f, %.3f]\n", k,
		       ms[k], w[k], r.row[k].energy_j, truth[k], 100 * err, r.row[k].ci_low_j, r.row[k].ci_high_j);
		CHECK(fabs(err) < 0.001, "counters phase %d off by %.3f %%", k, 100 * err);
	}
	attrib_result_free(&r);
	free(t);
	free(c);
	free(iv);
}

static double fit_power(const double *t, const double *y, size_t n, const struct attrib_interval *iv, size_t niv,
			double window_s, int phase, double *lo, double *hi)
{
	struct attrib_series s = {.t_s = t, .value = y, .n = n, .kind = ATTRIB_INSTANT_W, .avg_window_s = window_s};
	struct attrib_opts o = {.n_boot = 100};
	struct attrib_result r;
	double p;
	if (attrib_regress(&s, iv, niv, NPH, &o, &r))
		return NAN;
	p = r.row[phase].energy_j / r.row[phase].time_s;
	*lo = r.row[phase].ci_low_j / r.row[phase].time_s;
	*hi = r.row[phase].ci_high_j / r.row[phase].time_s;
	attrib_result_free(&r);
	return p;
}

static void test_forward_model(void)
{
	static const double ms[NPH] = {300, 700, 1500, 300}, w[NPH] = {60, 250, 300, 120};
	struct attrib_interval *iv;
	size_t n = 0, niv = 0;
	double *t, *y, end;

	build_loop(ms, w, 30, 0.5, 0.0);
	end = seg[nseg - 1].t1;
	t = malloc((size_t)(end * 10 + 4) * sizeof *t);
	y = malloc((size_t)(end * 10 + 4) * sizeof *y);
	iv = malloc(nseg * sizeof *iv);
	for (double x = 1.0; x < end; x += 0.1, n++) {
		t[n] = x;
		y[n] = (energy_upto(x) - energy_upto(x - 1.0)) / 1.0; /* exact 1 s mean */
	}
	for (size_t i = 0; i < nseg; i++)
		if (seg[i].phase >= 0)
			iv[niv++] = (struct attrib_interval){seg[i].t0, seg[i].t1, seg[i].phase};
	for (int k = 0; k < NPH; k++) {
		double lo, hi, lo0, hi0;
		double pm = fit_power(t, y, n, iv, niv, 1.0, k, &lo, &hi);
		double p0 = fit_power(t, y, n, iv, niv, 0.0, k, &lo0, &hi0);
		printf("1 s means phase %d (%4.0f ms, %3.0f W): model %7.2f W (%+.2f %%) [%.0f, %.0f]; as points %7.2f W "
		       "(%+.2f %%)\n", k, ms[k], w[k], pm, 100 * (pm / w[k] - 1), lo, hi, p0, 100 * (p0 / w[k] - 1));
		CHECK(fabs(pm / w[k] - 1) < 0.02, "forward model phase %d: %.2f W vs %.0f W", k, pm, w[k]);
		CHECK(lo <= w[k] && w[k] <= hi, "forward model phase %d: interval [%.1f, %.1f] misses %.0f W", k, lo, hi,
		      w[k]);
		if (k == 0)
			CHECK(fabs(p0 / w[k] - 1) > fabs(pm / w[k] - 1),
			      "points should be worse than the model on the shortest phase");
	}
	free(t);
	free(y);
	free(iv);
}

int main(void)
{
	test_counters();
	test_forward_model();
	free(seg);
	printf("%s\n", failures ? "FAILED" : "all passed");
	return failures ? 1 : 0;
}
