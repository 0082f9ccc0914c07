/*
 * sensor_glitch.h - a perun sensor's impossible readings, found and
 * repaired before anything is attributed (attrib.h, "Impossible
 * readings"; the bounds and why: util/tunables.h).
 *
 * RAPL with its counter (alt_values in J and a known range, or a counter
 * that never went down): the counter is repaired and is what attribution
 * reads; perun's own power series, with the glitch in it, is not used.
 * Otherwise (NVML power reads, RAPL window means without the counter):
 * the power series is repaired.  The result carries, per window, whether a
 * repaired value touched it, so that every row built on such a window is
 * flagged (phase_flags.h) and the tables say what was done.
 */
#ifndef ANCHORPOST_SENSOR_GLITCH_H
#define ANCHORPOST_SENSOR_GLITCH_H

#include "attrib/attrib.h"
#include "input/perun.h"

struct sensor_glitch {
	enum attrib_kind kind; /* what value holds */
	double *value;         /* n: the repaired series attrib reads (malloc'd) */
	unsigned char *bad;    /* n: 1 for windows (t[i-1], t[i]] a repair touched; NULL when none */
	double ceiling_w;      /* the bound applied */
	int from_counter;      /* 1: RAPL's counter, 0: the power series */
	struct attrib_glitch g;
};

/* The bound for sensor ps of device group `group` ("cpu", "ram", "gpu"). */
double sensor_glitch_ceiling_w(const struct perun_sensor *ps, const char *group);

/* Repair ps (n >= 2) into *out; kind_power: what ps->values are
 * (ATTRIB_WINDOW_AVG_W for RAPL, ATTRIB_INSTANT_W for NVML).  0, -ENOMEM,
 * or -EINVAL when the timesteps do not increase (then *out holds a copy of
 * the values unrepaired: attribution refuses such a series itself). */
int sensor_glitch_repair(const struct perun_sensor *ps, const char *group, enum attrib_kind kind_power,
			 struct sensor_glitch *out);

void sensor_glitch_free(struct sensor_glitch *sg);

/* One line saying what was found and done, for the tables ("" when
 * nothing): "cpu_0_package-0: 1 impossible reading (2.62e+06 W at
 * 3.100 s; ceiling 1500 W): 1 window estimated from its neighbours, 5.9 J
 * used instead of 262143.3 J". */
void sensor_glitch_describe(const struct perun_sensor *ps, const struct sensor_glitch *sg, char *buf, size_t cap);

#endif
