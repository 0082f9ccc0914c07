/*
 * phase_checks.h - physically implausible rows of the phase table, flagged
 * instead of printed as silent numbers.
 *
 * Checks, per phase and device group, on the scope's primary thread:
 *   power-above-window-max   a phase lasting a sensor window or more (mean
 *                            occurrence), so holding whole windows: even its
 *                            interval's low end, over its exclusive time, is
 *                            more power than the highest window perun
 *                            recorded around any of its occurrences (sum
 *                            over the group's sensors);
 *   point-above-window-max   the estimate is, the interval reaches below
 *                            (shorter bursts may legitimately draw more than
 *                            any window's mean: not flagged);
 *   zero-power-under-load    0 J (or less) while every window around it
 *                            shows power, and even the interval's top is
 *                            below half the lowest of them over its time;
 *   interval-wider-than-total  the 95 % interval is wider than the group's
 *                            total energy: the row says nothing;
 *   tool                     the tools' own activity (phase_set_is_tool),
 *                            hidden from the terminal table and pictures;
 *   sensor-glitch            its time overlaps a sensor window whose
 *                            reading was impossible and was repaired
 *                            (sensor_glitch.h): part of its energy is the
 *                            repair's, not a measurement.
 */
#ifndef ANCHORPOST_PHASE_CHECKS_H
#define ANCHORPOST_PHASE_CHECKS_H

#include <stddef.h>

#include "model/phase_results.h"

#define PHASE_FLAG_ABOVE_MAX 0x100u
#define PHASE_FLAG_POINT_ABOVE_MAX 0x200u
#define PHASE_FLAG_ZERO_UNDER_LOAD 0x400u
#define PHASE_FLAG_WIDE 0x800u
#define PHASE_FLAG_TOOL 0x1000u
#define PHASE_FLAG_GLITCH 0x2000u

/* 1 when some sensor of group g had a reading repaired (the total row's
 * flag). */
int phase_flags_group_glitched(const struct energy_model *m, size_t g);

/* Flags of row k (a phase, or nnames for unattributed) in group g of the
 * scope; *maxw_out: the highest window power around it (NAN if none). */
unsigned phase_flags_check(const struct energy_model *m, const struct phase_scope *sr, size_t k, size_t g,
			   double self_s, double mean_s, double *maxw_out);

/* What the power checks (above-window-max, zero-power-under-load) look at:
 * a row's self energy and interval, its exclusive and mean occurrence
 * seconds, the highest and lowest window power around its occurrences
 * (summed over its group's sensors; NAN: none) and the sensors' period. */
struct phase_flag_facts {
	double energy_j, lo_j, hi_j;
	double self_s, mean_s;
	double maxw_w, minw_w;
	double period_s;
};

/* The power checks' flags of one row (phase_flags_check's rule, for a
 * caller holding the facts without an energy_model: several rings). */
unsigned phase_flags_judge(const struct phase_flag_facts *x);

#endif
