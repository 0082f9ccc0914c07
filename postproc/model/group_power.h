/*
 * group_power.h - power per device group as one step series: the sum of
 * the group's sensors, one step per perun window of its first sensor.
 * What the timeline picture, the trace's counter tracks and timeline.csv
 * style outputs draw.
 *
 * Each step is the window's energy divided by its length
 * (energy_model_slice_j), which is what a window-averaging sensor (RAPL as
 * perun stores it) knows; for instantaneous sensors (NVML) it is the
 * trapezoid mean.  Sensors with other windows contribute their energy
 * over each window by interpolating their cumulative curve.
 */
#ifndef ANCHORPOST_GROUP_POWER_H
#define ANCHORPOST_GROUP_POWER_H

#include <stddef.h>

#include "model/energy_model.h"

struct group_power {
	double *t_s;     /* n window edges, timeline seconds */
	double *power_w; /* power_w[i]: mean over (t_s[i-1], t_s[i]]; [0] = 0 */
	size_t n;        /* 0: the group has no sensor */
};

/* Build the series of group g (index into m->groups).  0, or -ENOMEM. */
int group_power_build(const struct energy_model *m, size_t g, struct group_power *gp);

void group_power_free(struct group_power *gp);

#endif
