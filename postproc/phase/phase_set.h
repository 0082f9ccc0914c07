/*
 * phase_set.h - phases from a ring: ranges and mark segments, with the
 * exclusive (self) timeline energy attribution needs.
 *
 * Ranges: BEGIN/END records matched by name on the same thread (innermost
 * open range of that name); an END whose BEGIN is on another thread of the
 * same process closes that one (ranges may cross threads).  An END with a
 * value is a range id (`async with anchor.phase`: the asyncio task's
 * id): it closes the innermost open BEGIN of that name with the same value
 * first, so interleaved tasks on one thread each pair with their own.  A BEGIN still
 * open when its process ends is closed at the process's last record and
 * counted as unclosed; an END with no BEGIN is counted as unmatched.
 *
 * Names starting with "perun." are anchor's record of perun's sample clock
 * (align.h), not phases.
 *
 * Marks: `anchor.mark("x")` means "x starts now".  On a thread with no
 * ranges the timeline is cut into segments, each running from one mark to
 * the next (the last to the thread's last record).  On a thread that also
 * uses ranges, a mark outside every open range starts a segment that ends
 * at the thread's next mark or range begin (so `mark("data")` before
 * `with phase("forward")` gives data its row); a mark inside an open range,
 * or after the thread's last range with no mark or range following, stays
 * an instant (no row) and is counted in marks_in_range.
 *
 * Device-side edges (DEV_BEGIN/DEV_END, ring minor 1): the same phases as
 * an asynchronous device (GPU stream) reached them, at the calibrated
 * CLOCK_MONOTONIC time in the record's value.  They form one more thread
 * per process, tid PHASE_DEVICE_TID, never the primary thread;
 * phase_set_device_of() finds it so GPU device groups are attributed on
 * the device timeline and CPU/DRAM on the host's.
 *
 * Exclusive timeline: on each thread, every instant belongs to the
 * innermost open range there.  The primary thread (most time in the
 * user's phases: a launcher's perun spends seconds in its own MPI_Init,
 * which must not make it the run's primary) gives
 * the single timeline attributed against whole-machine power; other
 * threads' phases get time statistics, and with --by-process each process's
 * own primary thread gets its own attribution.
 */
#ifndef ANCHORPOST_PHASE_SET_H
#define ANCHORPOST_PHASE_SET_H

#include <stddef.h>
#include <stdint.h>

#include "anchors/ring_procs.h"
#include "anchors/ring_reader.h"

/* The pseudo-thread id of a process's device-side timeline. */
#define PHASE_DEVICE_TID 0xfffffff0u

/* One occurrence of a phase on one thread (inclusive: children inside). */
struct phase_occ {
	uint64_t t0_ns, t1_ns; /* ring CLOCK_MONOTONIC */
	uint64_t self_ns;      /* minus the time of ranges nested inside */
	uint32_t pid, tid;
	int phase;             /* index into phase_set.names */
	int depth;             /* 0 = outermost on its thread */
	uint8_t from_mark;     /* a mark segment, not a range */
	uint8_t unclosed;      /* closed at process end */
	uint8_t has_id;        /* BEGIN carried a value (range id for async) */
	uint64_t id;
};

/* A piece of the exclusive timeline: [t0, t1) belongs to `phase`. */
struct phase_seg {
	uint64_t t0_ns, t1_ns;
	int phase;
	int occ;               /* the innermost occurrence it belongs to */
};

/* A thread's exclusive timeline. */
struct phase_thread {
	uint32_t pid, tid;
	uint64_t phase_ns;     /* total time inside any phase */
	uint64_t user_ns;      /* of it, inside the user's phases (not phase_set_is_tool) */
	struct phase_seg *seg;
	size_t nseg;
};

struct phase_set {
	char **names;
	size_t nnames;
	struct phase_occ *occ;  /* sorted by (pid, tid, t0_ns), outer first */
	size_t nocc;
	struct phase_thread *thr;
	size_t nthr;
	size_t primary;         /* index into thr of the primary thread */
	uint64_t unmatched_end, unclosed_begin;
	uint64_t marks_in_range;  /* marks kept as instants (in a range, or trailing) */
	uint8_t *tool;            /* per name: the tools' own activity (phase_set_is_tool) */
	/* Device clock calibrations (DEV_CLOCK records). */
	uint64_t dev_calibrations;
	double dev_max_bracket_us, dev_drift_ppm, dev_max_resid_us;
};

/* Build from sorted ring events.  0 or -ENOMEM. */
int phase_set_build(const struct ring_event *ev, size_t n, const struct ring_procs *procs,
		    struct phase_set *ps);

void phase_set_free(struct phase_set *ps);

/* 1 when phase is the tools' own activity, not the user's: anchor's sync
 * aids ("anchor.*") and perun's MPI calls (MPI_* made by a perun process
 * only outside its user phases).  Hidden from the terminal table and the
 * pictures, kept in phases.csv with the flag "tool". */
int phase_set_is_tool(const struct phase_set *ps, int phase);

/* Index of a name, or -1. */
int phase_set_find(const struct phase_set *ps, const char *name);

/* The phase index of th's innermost segment holding ts (binary search
 * over its sorted segments), or -1 where none does. */
int phase_set_phase_at(const struct phase_thread *th, uint64_t ts);

/* The primary thread of process pid (most time in the user's phases, then
 * most phase time), or -1.  Never a device timeline. */
long phase_set_primary_of(const struct phase_set *ps, uint32_t pid);

/* The device timeline of process pid (pid 0: the one with most phase
 * time in the run), or -1 when the ring has no device-side edges. */
long phase_set_device_of(const struct phase_set *ps, uint32_t pid);

/* 1 if a device group (GPU) should be attributed on the device timeline. */
int phase_set_group_is_device(const char *group);

#endif
