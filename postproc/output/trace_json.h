/*
 * trace_json.h - a Chrome / Perfetto trace of a run (trace.json), for
 * ui.perfetto.dev and chrome://tracing:
 *
 *   {"traceEvents":[...],"displayTimeUnit":"ms","otherData":{...}}
 *
 *   - anchors: every phase occurrence as a complete slice ("X") on its
 *     process/thread (one that does not nest inside its thread's open
 *     slices, a range ended on another thread, becomes an async "b"/"e"
 *     pair instead); marks as thread-scoped instants ("i"); process exits
 *     as process-scoped instants;
 *   - power per device group as counter tracks ("C", watts) on a "perun"
 *     pseudo-process;
 *   - py-spy stacks, when a profile is given, as "B"/"E" slices on a
 *     "py-spy" track beside each sampled thread (tid | 2^30: OS tids stay
 *     below 2^22), one slice per frame while the frame stayed on the stack;
 *   - process_name / thread_name metadata ("M").
 * All timestamps are µs on the ring's CLOCK_MONOTONIC, from the earliest
 * thing in the trace; every track's events are written in time order.
 */
#ifndef ANCHORPOST_TRACE_JSON_H
#define ANCHORPOST_TRACE_JSON_H

#include <stddef.h>

#include "align_pyspy.h"
#include "energy_model.h"
#include "pyspy.h"

struct trace_pyspy {
	const struct pyspy_profile *p; /* NULL: no stacks */
	const struct align_pyspy *al;  /* places every sample on the timeline */
	int all_processes;             /* else only processes with phases */
};

struct trace_stats {
	size_t slices, instants, counters, stack_events;
};

/* Write path (temp + rename).  0, or -ENOMEM / -EIO with one line in err
 * (and no file). */
int trace_json_write(const struct energy_model *m, const struct trace_pyspy *ps, const char *title,
		     const char *path, struct trace_stats *st, char *err, size_t errlen);

#endif
