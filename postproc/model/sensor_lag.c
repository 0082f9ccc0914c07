/* sensor_lag.c - a sensor's own lag behind perun's exact stamps (see sensor_lag.h). */
#include "model/sensor_lag.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "model/energy_model.h"
#include "util/tunables.h"

/* The 95 % set reaches the search's edge. */
static int undecided(const struct attrib_lag *f, double range_s)
{
	return f->lo_s <= -range_s || f->hi_s >= range_s;
}

/* The best lag lies in the search's outermost cell and the set stays
 * clear of the other edge: the residual still falls towards one edge, so
 * the sensor trails (or leads) by more than the search allowed.  A set
 * spanning the whole range is flat, wherever its best happens to be. */
static int pinned(const struct attrib_lag *f, double range_s, double step_s)
{
	if (f->best_s >= range_s - step_s * 1.5)
		return f->lo_s > -range_s;
	if (f->best_s <= -range_s + step_s * 1.5)
		return f->hi_s < range_s;
	return 0;
}

/* The wide search (ANCHOR_LAG_SLOW_RANGE_S) after a pinned one: decided,
 * s->lag says SLOW; else it stays as the narrow search left it.  0 or the
 * fit's error. */
static int slow_response(struct em_sensor *s, const struct attrib_interval *sv, size_t n_iv, size_t n_phase)
{
	struct attrib_lag w;
	int rc = attrib_fit_lag(&s->ser, sv, n_iv, n_phase, ANCHOR_LAG_SLOW_RANGE_S, ANCHOR_LAG_SLOW_COARSE_S,
				ANCHOR_LAG_FINE_S * 4, 3.84, &w);
	if (rc || undecided(&w, ANCHOR_LAG_SLOW_RANGE_S) || pinned(&w, ANCHOR_LAG_SLOW_RANGE_S, ANCHOR_LAG_SLOW_COARSE_S))
		return rc == -ENOMEM ? rc : 0;
	s->lag.state = SENSOR_LAG_SLOW;
	s->lag.lag_s = w.best_s;
	s->lag.lo_s = w.lo_s;
	s->lag.hi_s = w.hi_s;
	s->lag.timing_s = fmax(fmax(fmax(w.best_s - w.lo_s, w.hi_s - w.best_s), fabs(w.best_s) / 2), ANCHOR_LAG_FLOOR_S);
	return 0;
}

int sensor_lag_fit(struct em_sensor *s, const struct attrib_interval *iv, size_t n_iv, size_t n_phase,
		   double offset_s)
{
	struct attrib_interval *sv;
	struct attrib_lag fit;
	int rc;

	s->lag = (struct sensor_lag){0};
	energy_model_place_sensor(s, offset_s);
	/* A power read (NVML) stands for a window the GPU's response model
	 * describes (sensor_model.h); only window energies are fitted here. */
	if (s->ser.kind == ATTRIB_INSTANT_W || !n_iv)
		return 0;
	if (!(sv = malloc(n_iv * sizeof *sv)))
		return -ENOMEM;
	for (size_t i = 0; i < n_iv; i++) {
		sv[i] = iv[i];
		sv[i].t0_s -= offset_s;
		sv[i].t1_s -= offset_s;
	}
	rc = attrib_fit_lag(&s->ser, sv, n_iv, n_phase, ANCHOR_LAG_RANGE_S, ANCHOR_LAG_COARSE_S, ANCHOR_LAG_FINE_S,
			    3.84, &fit);
	if (rc == 0 && undecided(&fit, ANCHOR_LAG_RANGE_S) && pinned(&fit, ANCHOR_LAG_RANGE_S, ANCHOR_LAG_COARSE_S))
		rc = slow_response(s, sv, n_iv, n_phase);
	free(sv);
	if (rc == -ENOMEM)
		return rc;
	if (rc)
		return 0; /* too few windows, no interval inside them: nothing to fit */
	if (s->lag.state == SENSOR_LAG_SLOW) {
		energy_model_place_sensor(s, offset_s);
		return 0;
	}
	s->lag.lo_s = fit.lo_s;
	s->lag.hi_s = fit.hi_s;
	if (undecided(&fit, ANCHOR_LAG_RANGE_S)) {
		s->lag.state = SENSOR_LAG_UNDECIDED;
		return 0;
	}
	s->lag.state = SENSOR_LAG_FITTED;
	s->lag.lag_s = fit.best_s;
	s->lag.timing_s = fmax(fmax(fit.best_s - fit.lo_s, fit.hi_s - fit.best_s), ANCHOR_LAG_FLOOR_S);
	energy_model_place_sensor(s, offset_s);
	return 0;
}

double sensor_lag_timing_s(const struct em_sensor *s)
{
	return s->lag.state == SENSOR_LAG_FITTED || s->lag.state == SENSOR_LAG_SLOW ? s->lag.timing_s : 0;
}

double sensor_lag_blur_s(const struct em_sensor *s)
{
	return s->lag.state == SENSOR_LAG_SLOW ? 2 * fabs(s->lag.lag_s) : 0;
}

void sensor_lag_describe(const struct em_sensor *s, char *buf, size_t cap)
{
	if (s->lag.state == SENSOR_LAG_FITTED)
		snprintf(buf, cap, "%s %.3f ms (95 %%: %.3f .. %.3f)", s->ps->id, s->lag.lag_s * 1e3, s->lag.lo_s * 1e3,
			 s->lag.hi_s * 1e3);
	else if (s->lag.state == SENSOR_LAG_SLOW)
		snprintf(buf, cap,
			 "%s %.1f ms (95 %%: %.1f .. %.1f), a slow response rather than a read lag: intervals allow %.1f ms",
			 s->ps->id, s->lag.lag_s * 1e3, s->lag.lo_s * 1e3, s->lag.hi_s * 1e3, s->lag.timing_s * 1e3);
	else if (s->lag.state == SENSOR_LAG_UNDECIDED)
		snprintf(buf, cap, "%s not decided within +-%g ms", s->ps->id, ANCHOR_LAG_RANGE_S * 1e3);
	else if (cap)
		buf[0] = '\0';
}
