/*
 * phase_flags.h - physically implausible rows of the phase table, flagged
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
#ifndef ANCHORPOST_PHASE_FLAGS_H
#define ANCHORPOST_PHASE_FLAGS_H

#include <stdio.h>

#include "output/phase_table.h"

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

/* The attribution's own flags (ATTRIB_FLAG_*: unidentifiable, at-zero,
 * no-time-in-span, remainder) as "a;b" into buf (replacing it). */
void phase_flags_attrib_text(unsigned attrib_flags, char *buf, size_t cap);

/* Append the flags' names ("a;b") to buf. */
void phase_flags_text(unsigned f, char *buf, size_t cap);

/*
 * The terminal table's marks.  Every name the flags column of phases.csv
 * can hold (attrib's and the ones above) has a one-letter code; a cell
 * shows the codes of its CSV flags, so that no flagged number is printed
 * without its mark, and one legend line under the table explains the
 * codes it used.  Read from the CSV text itself, so the two cannot differ.
 */

/* The codes of a flags cell ("unidentifiable;at-zero" -> "UZ") into buf
 * (at least 16 bytes; '?' for a name without a code); *used gets one bit
 * per code (phase_flags_legend).  "tool" has no code: those rows are
 * hidden from the table. */
void phase_flags_codes(const char *flags, char *buf, size_t cap, unsigned *used);

/* "flags (column flags of phases.csv): U unidentifiable = ...; ..." for
 * the codes in used, one line (with its newline); nothing when used is 0. */
void phase_flags_legend(FILE *tty, unsigned used);

/* The same legend with short explanations ("U unidentifiable, Z at-zero"),
 * into buf without a newline ("" when used is 0): for the pictures. */
void phase_flags_legend_short(unsigned used, char *buf, size_t cap);

#endif
