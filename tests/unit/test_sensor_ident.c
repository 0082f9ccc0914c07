/*
 * test_sensor_ident.c - known answers for the GPU sensor identification
 * (postproc/attrib/sensor_ident.c): a simulated sensor of known update
 * period P, window W and delay d, read at 1 kHz with jittered ticks, under
 * a square wave at several periods; the fit must recover P, W and d within
 * 2 ms (the bar) with intervals that hold the truth, also with
 * reading noise; and refuse to decide on a run of one long phase, or on a
 * reading that changes every tick.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "attrib/sensor_ident.h"
#include "unit_check.h"

#define HI_W 300.0
#define LO_W 80.0
#define MAXIV 4000

static struct attrib_interval iv[MAXIV];
static size_t niv;

static double lcg_state = 12345;
static double uniform(void) /* [0, 1), deterministic */
{
	lcg_state = fmod(lcg_state * 16807.0, 2147483647.0);
	return lcg_state / 2147483647.0;
}

static double gauss(void)
{
	double u1 = uniform() + 1e-12, u2 = uniform();
	return sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
}

/* Square waves of half-periods hp_ms[] (high = phase 0), each for 2 s,
 * with a little jitter on every edge as a host's timing has. */
static double build_square(const double *hp_ms, size_t nhp, double t0)
{
	double t = t0;
	niv = 0;
	for (size_t k = 0; k < nhp; k++) {
		double end = t + 2.0, h = hp_ms[k] / 1e3;
		while (t < end && niv < MAXIV) {
			double a = t + 0.0002 * uniform(), b = t + h + 0.0002 * uniform();
			iv[niv].t0_s = a;
			iv[niv].t1_s = b;
			iv[niv].phase = 0;
			niv++;
			t += 2 * h;
		}
	}
	return t;
}

static double power_at(double x)
{
	for (size_t i = 0; i < niv; i++)
		if (iv[i].t0_s <= x && x < iv[i].t1_s)
			return HI_W;
	return LO_W;
}

static double mean_power(double a, double b)
{
	double e = LO_W * (b - a);
	if (b <= a)
		return power_at(a);
	for (size_t i = 0; i < niv; i++) {
		double o = fmin(b, iv[i].t1_s) - fmax(a, iv[i].t0_s);
		if (o > 0)
			e += (HI_W - LO_W) * o;
	}
	return e / (b - a);
}

/* Ticks at ~1 kHz from 0 to t_end; the reading of a sensor (P, W, d,
 * grid phase g0) with gaussian noise sd_w. */
static size_t simulate(double p, double w, double d, double g0, double sd_w, double t_end, double *t, double *r,
		       size_t cap)
{
	size_t n = 0;
	double last_u = -1, val = LO_W;
	for (double x = 0.0005; x < t_end && n < cap; x += 0.001 + 0.0001 * uniform()) {
		double u = g0 + floor((x - g0) / p) * p;
		if (u != last_u) {
			val = mean_power(u - d - w, u - d) + sd_w * gauss();
			val = round(val * 1e3) / 1e3; /* mW, as NVML answers */
			last_u = u;
		}
		t[n] = x;
		r[n++] = val;
	}
	return n;
}

static void one(const char *label, double p_ms, double w_ms, double d_ms, double sd_w, int expect_decided)
{
	static double t[40000], r[40000];
	static const double hp[] = {7, 13, 31, 55, 120};
	double end = build_square(hp, sizeof hp / sizeof hp[0], 0.3);
	size_t n = simulate(p_ms / 1e3, w_ms / 1e3, d_ms / 1e3, 0.0123, sd_w, end + 0.3, t, r, 40000);
	struct sensor_ident id;
	int rc = sensor_ident_fit(t, r, n, iv, niv, 1, &id);
	double p = id.grid.step_s * 1e3, w = id.window_s * 1e3, d = id.delay_s * 1e3;
	printf("%-28s P %.3f [%.3f, %.3f]  W %.2f [%.2f, %.2f]  d %.2f [%.2f, %.2f]  r2 %.4f  %s\n", label, p,
	       id.grid.lo_s * 1e3, id.grid.hi_s * 1e3, w, id.window_lo_s * 1e3, id.window_hi_s * 1e3, d,
	       id.delay_lo_s * 1e3, id.delay_hi_s * 1e3, id.r2, id.decided ? "decided" : id.why);
	CHECK(rc == 0, "%s: rc %d", label, rc);
	CHECK(id.decided == expect_decided, "%s: decided %d, expected %d (%s)", label, id.decided, expect_decided,
	      id.why ? id.why : "");
	if (!expect_decided)
		return;
	CHECK(fabs(p - p_ms) <= 2 && fabs(w - w_ms) <= 2 && fabs(d - d_ms) <= 2, "%s: off by more than 2 ms", label);
	CHECK(id.grid.lo_s * 1e3 <= p_ms && p_ms <= id.grid.hi_s * 1e3, "%s: period interval misses %.1f", label, p_ms);
	CHECK(id.window_lo_s * 1e3 <= w_ms + 1e-9 && w_ms - 1e-9 <= id.window_hi_s * 1e3,
	      "%s: window interval misses %.1f", label, w_ms);
	CHECK(id.delay_lo_s * 1e3 <= d_ms + 1e-9 && d_ms - 1e-9 <= id.delay_hi_s * 1e3,
	      "%s: delay interval misses %.1f", label, d_ms);
	CHECK(id.window_hi_s - id.window_lo_s < 0.006, "%s: window interval uselessly wide", label);
}

int main(void)
{
	static double t[20000], r[20000];
	struct sensor_ident id;
	size_t n;

	one("H100 100/25 d=40", 100, 25, 40, 0, 1);
	one("Turing 100/100", 100, 100, 0, 0, 1);
	one("Volta 20/10 d=3", 20, 10, 3, 0, 1);
	one("GH200 100/20 d=70", 100, 20, 70, 0, 1);
	one("H100 100/25 noise 2 W", 100, 25, 10, 2.0, 1);
	/* nvmlDeviceGetPowerUsage on Ampere and newer: a 1 s average,
	 * updated every 100 ms. */
	one("1 s average every 100 ms", 100, 1000, 0, 0, 1);

	/* One long phase: the readings are one value, nothing to fit. */
	niv = 1;
	iv[0].t0_s = 0.1;
	iv[0].t1_s = 9.0;
	iv[0].phase = 0;
	n = simulate(0.1, 0.025, 0.01, 0.01, 0.5, 9.5, t, r, 20000);
	CHECK(sensor_ident_fit(t, r, n, iv, niv, 1, &id) == 0 && !id.decided, "one long phase decided");
	printf("%-28s %s\n", "one long phase", id.why ? id.why : "decided");

	/* A reading that changes at every tick (no update grid to see). */
	for (size_t i = 0; i < 5000; i++) {
		t[i] = 0.001 * (double)i;
		r[i] = (double)(i % 7);
	}
	CHECK(sensor_ident_fit(t, r, 5000, iv, niv, 1, &id) == 0 && !id.decided && !id.grid.step_s,
	      "reading changing every tick decided");
	printf("%-28s %s\n", "changes every tick", id.why ? id.why : "decided");
	printf("%s\n", failures ? "FAILED" : "ok");
	return failures != 0;
}
