/*
 * attrib_count.h - the test hook that proves the results stage attributes
 * each (scope, sensor) once (issue 27): every attribution pass over one
 * sensor's power against one scope's timeline notes itself here.  A pass
 * gives every phase of the sensor's device group at once, so one pass per
 * (scope, sensor) is one attribution per (scope, phase, group).
 *
 * With ANCHORPOST_DEBUG_ATTRIB set, the command prints one stderr line per
 * (scope, sensor) when it returns:
 *   anchorpost: debug: attributed scope SCOPE thread TID sensor ID: N time(s)
 * Without it, nothing is kept or printed.
 */
#ifndef ANCHORPOST_ATTRIB_COUNT_H
#define ANCHORPOST_ATTRIB_COUNT_H

#include <stdio.h>

/* One pass: scope "all", a pid, or "rank N"; the thread whose timeline it
 * attributes; the sensor's id. */
void attrib_count_note(const char *scope, unsigned tid, const char *sensor);

/* The lines above, to fp, when ANCHORPOST_DEBUG_ATTRIB is set. */
void attrib_count_print(FILE *fp);

#endif
