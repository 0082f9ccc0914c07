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
  *   - power per device group as counter tracks ("C", name = group, arg
 *     "power (W)": Perfetto shows "cpu power (W)") on the primary thread's
 *     process (a "perun" pseudo-process when no phase ran): the Perfetto
 *     UI lists processes by their slices, so that is the group on top;
 *   - py-spy stacks, when a profile is given, as "B"/"E" slices on a
 *     "py-spy" track beside each sampled thread (tid | 2^30: OS tids stay
 *     below 2^22), one slice per frame while the frame stayed on the stack;
 *   - process_name / thread_name metadata ("M"), only for processes that
 *     carry a phase, a mark or a py-spy track.
 * All timestamps are µs on the ring's CLOCK_MONOTONIC, from the earliest
 * thing in the trace; every track's events are written in time order.
 * Strict JSON: a number that is not finite is written null.  "E" events
 * name the slice they close.  otherData holds "clock_domain"
 * ("CLOCK_MONOTONIC"), "ts0_monotonic_ns" and "ts0_unix_ns"/"ts0_unix_s"/
 * "ts0_utc" (ts 0 in UTC via the ring's SYNC records, null without) so
 * that the trace can be merged with torch.profiler or Nsight traces.
 */
#ifndef ANCHORPOST_TRACE_JSON_H
#define ANCHORPOST_TRACE_JSON_H

#include <stddef.h>

#include "model/energy_model.h"
#include "model/lookup.h"

struct trace_pyspy {
	const struct pyspy_profile *p; /* NULL: no stacks */
	const struct align_pyspy *al;  /* the threads' ring pids and tids, the uncertainty */
	const double *t0_s, *t1_s;     /* each sample's aligned slice (sample_energy.h) */
	const char *align_text;        /* the alignment in one line (run_model.h) */
	int all_processes;             /* else only processes with phases */
	/* joules of each sample (p->nsamples, all groups; NULL: none): every
	 * stack slice then carries args.energy_j, the sum over the samples it
	 * spans (on its E event: Chrome's format merges B and E args) */
	const double *row_j;
};

struct trace_stats {
	size_t slices, instants, counters, stack_events;
};

/* Write path (temp + rename).  0, or -ENOMEM / -EIO with *e filled, its
 * file path (and no file left). */
int trace_json_write(const struct energy_model *m, const struct trace_pyspy *ps, const char *title,
		     const char *path, struct trace_stats *st, struct em_error *e);

#endif
