/*
 * attrib_count.h - the test hook that proves the results stage attributes
 * each (scope, phase, group) once (issue 27): every attribution pass of one
 * sensor's power against one thread's timeline notes itself here.  A pass
 * gives every phase of the sensor's device group at once, and a scope's
 * rows are those of its primary thread's timeline (phase_results.h), so
 * one pass per (timeline, sensor) is one attribution per (scope, phase,
 * group); two scopes on one timeline ("all" and its process) attributed
 * twice show as 2.
 *
 * With ANCHORPOST_DEBUG_ATTRIB set, the command prints one stderr line per
 * (timeline, sensor) when it returns:
 *   anchorpost: debug: attributed the ring thread TID sensor ID: N time(s)
 *   anchorpost: debug: attributed rank R's ring thread TID sensor ID: N time(s)
 * Without it, nothing is kept or printed.
 */
#ifndef ANCHORPOST_ATTRIB_COUNT_H
#define ANCHORPOST_ATTRIB_COUNT_H

#include <stdio.h>

/* One pass: the ring ("the ring", or a rank's of several), the thread
 * whose timeline it attributes, the sensor's id. */
void attrib_count_note(const char *ring, unsigned tid, const char *sensor);

/* The lines above, to fp, when ANCHORPOST_DEBUG_ATTRIB is set. */
void attrib_count_print(FILE *fp);

#endif
