/*
 * phase_flags.h - the flags of the phase table as text: the names in
 * phases.csv's flags column and the terminal table's codes and legend.
 * The checks behind them are the model's (model/phase_checks.h).
 */
#ifndef ANCHORPOST_PHASE_FLAGS_H
#define ANCHORPOST_PHASE_FLAGS_H

#include <stdio.h>

#include "model/phase_checks.h"

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
