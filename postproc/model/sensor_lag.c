/* sensor_lag.c - a sensor's own lag behind perun's exact stamps (see sensor_lag.h). */
#include "model/sensor_lag.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "model/energy_model.h"
#include "util/tunables.h"

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
	free(sv);
	if (rc == -ENOMEM)
		return rc;
	if (rc)
		return 0; /* too few windows, no interval inside them: nothing to fit */
	s->lag.lo_s = fit.lo_s;
	s->lag.hi_s = fit.hi_s;
	if (fit.lo_s <= -ANCHOR_LAG_RANGE_S || fit.hi_s >= ANCHOR_LAG_RANGE_S) {
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
	return s->lag.state == SENSOR_LAG_FITTED ? s->lag.timing_s : 0;
}

void sensor_lag_describe(const struct em_sensor *s, char *buf, size_t cap)
{
	if (s->lag.state == SENSOR_LAG_FITTED)
		snprintf(buf, cap, "%s %.3f ms (95 %%: %.3f .. %.3f)", s->ps->id, s->lag.lag_s * 1e3, s->lag.lo_s * 1e3,
			 s->lag.hi_s * 1e3);
	else if (s->lag.state == SENSOR_LAG_UNDECIDED)
		snprintf(buf, cap, "%s not decided within +-%g ms", s->ps->id, ANCHOR_LAG_RANGE_S * 1e3);
	else if (cap)
		buf[0] = '\0';
}
