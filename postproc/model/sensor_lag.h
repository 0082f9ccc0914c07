/*
 * sensor_lag.h - how far a sensor's readings lag perun's exact stamps.
 *
 * Under the perun hook (align.h, "perun-hook") the ring holds perun's own
 * clock reading of every sample: the stamps are exact to a microsecond.
 * The energy a reading holds is not the energy up to its stamp: perun
 * stamps a round, then reads its sensors one after another (measured here:
 * the RAPL reads 10-480 us after the stamp), and a RAPL counter holds the
 * energy up to its last update (about every ms), so a reading stands for
 * an instant some tenths of a ms before its stamp.  On phases of 1-10 ms (a
 * network's layers) that lag is most of the error: fitting it took the
 * worst layer of a 200-step run from -33 % to -10 % (BENCHMARKS.md
 * section 20).
 *
 * sensor_lag_fit finds, per sensor that gives window energies (RAPL; not
 * NVML's power reads, whose response sensor_model.h describes), the lag
 * that best explains the windows with the phases of the run's primary
 * thread (attrib_fit_lag), within ANCHOR_LAG_RANGE_S.  Decided (its 95 %
 * set inside the range): the sensor's windows move by it on the timeline
 * (em_sensor.tl_offset_s) and every interval built on it allows the set's
 * half width, at least ANCHOR_LAG_FLOOR_S, of timing error instead of the
 * 3 ms assumed otherwise.  Not decided (flat or several valleys): nothing
 * moves and the 3 ms stay.  Best at the range's edge (the residual still
 * falling there): a response slower than a read lag, which a wider search
 * (ANCHOR_LAG_SLOW_RANGE_S) measures; decided, it moves the windows like
 * a lag and the intervals allow at least half of it (tunables.h).  Without exact stamps (the fallback alignment)
 * the offset fit already takes the lag in, and nothing here runs.
 */
#ifndef ANCHORPOST_SENSOR_LAG_H
#define ANCHORPOST_SENSOR_LAG_H

#include <stddef.h>

#include "attrib/attrib.h"

enum sensor_lag_state {
	SENSOR_LAG_NONE = 0,  /* not fitted: stamps not exact, a power read, too few windows */
	SENSOR_LAG_FITTED,    /* lag_s applied, timing_s from its set */
	SENSOR_LAG_UNDECIDED, /* the set reaches the range's edge: nothing applied */
	SENSOR_LAG_SLOW,      /* best at the edge, decided by the wide search: lag_s applied, timing_s >= lag_s / 2 */
};

struct sensor_lag {
	enum sensor_lag_state state;
	double lag_s;        /* sensor t = phase t + lag_s (0 unless FITTED or SLOW) */
	double lo_s, hi_s;   /* its 95 % set (FITTED, UNDECIDED) */
	double timing_s;     /* timing error the intervals allow, s; 0: the default */
};

struct em_sensor;

/* Fit sensor s's lag against the intervals iv (n_iv, on the timeline,
 * phases < n_phase; one thread's exclusive timeline) given the alignment's
 * offset (timeline = perun t + offset_s), and place the sensor on the
 * timeline accordingly (energy_model_place_sensor).  0, or -ENOMEM;
 * anything else the data cannot decide leaves s->lag saying why. */
int sensor_lag_fit(struct em_sensor *s, const struct attrib_interval *iv, size_t n_iv, size_t n_phase,
		   double offset_s);

/* The timing error attribution should allow for sensor s, s: its fitted
 * lag's, else 0 (the method's default). */
double sensor_lag_timing_s(const struct em_sensor *s);

/* The response width attribution should allow for (attrib_opts.blur_s):
 * a slow response is taken for an average over twice its lag (a box whose
 * mean delay is the lag); else 0. */
double sensor_lag_blur_s(const struct em_sensor *s);

/* One line's worth on s's lag ("cpu_0_package-0 0.275 ms (95 %: 0.175 ..
 * 0.400)", "... not decided within +-3 ms"); "" when it was not fitted. */
void sensor_lag_describe(const struct em_sensor *s, char *buf, size_t cap);

#endif
