/*
 * test_phase_set.c - known answers for phase_set_build (phase/phase_set.c):
 * the rules phase_set.h promises, each on a hand-written list of ring
 * events: nesting and self time, overlapping ranges, unmatched and
 * unclosed edges, ranges that cross threads, asyncio range ids, mark
 * segments (alone, before a range, inside one, trailing), perun's own
 * records, device-side edges and the primary thread, the tools' phases.
 * Exits non-zero when a check fails.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "anchors/ring_format.h"
#include "phase/phase_set.h"

#include "unit_check.h"

/* Events of one test, in ring order. */
static struct ring_event evs[64];
static size_t nev;

static void add(uint64_t ts, int kind, uint32_t pid, uint32_t tid, const char *text, int flags, uint64_t value)
{
	struct ring_event *e = &evs[nev++];
	memset(e, 0, sizeof *e);
	e->ts_ns = ts;
	e->ticket = nev;
	e->kind = (uint8_t)kind;
	e->pid = pid;
	e->tid = tid;
	e->text = text;
	e->text_len = (uint32_t)strlen(text);
	e->flags = (uint8_t)flags;
	e->value = value;
}

#define B(ts, tid, name) add(ts, ANCHOR_KIND_BEGIN, 100, tid, name, 0, 0)
#define E(ts, tid, name) add(ts, ANCHOR_KIND_END, 100, tid, name, 0, 0)
#define M(ts, tid, name) add(ts, ANCHOR_KIND_MARK, 100, tid, name, 0, 0)

static void build(struct phase_set *ps, const struct ring_procs *procs)
{
	int rc = phase_set_build(evs, nev, procs, ps);
	CHECK(rc == 0, "phase_set_build rc %d", rc);
}

/* The occurrence of name starting at t0 (thread tid), or NULL. */
static const struct phase_occ *occ_of(const struct phase_set *ps, const char *name, uint32_t tid, uint64_t t0)
{
	int ph = phase_set_find(ps, name);
	for (size_t i = 0; ph >= 0 && i < ps->nocc; i++)
		if (ps->occ[i].phase == ph && ps->occ[i].tid == tid && ps->occ[i].t0_ns == t0)
			return &ps->occ[i];
	return NULL;
}

/* Occurrence [t0, t1] of name on tid with depth, self time and flags. */
static void expect_occ(const struct phase_set *ps, const char *name, uint32_t tid, uint64_t t0, uint64_t t1,
		       int depth, uint64_t self_ns, int unclosed)
{
	const struct phase_occ *o = occ_of(ps, name, tid, t0);
	CHECK(o != NULL, "%s on %u from %" PRIu64 ": missing", name, tid, t0);
	if (!o)
		return;
	CHECK(o->t1_ns == t1, "%s from %" PRIu64 ": ends at %" PRIu64 ", expected %" PRIu64, name, t0, o->t1_ns, t1);
	CHECK(o->depth == depth, "%s from %" PRIu64 ": depth %d, expected %d", name, t0, o->depth, depth);
	CHECK(o->self_ns == self_ns, "%s from %" PRIu64 ": self %" PRIu64 " ns, expected %" PRIu64, name, t0,
	      o->self_ns, self_ns);
	CHECK(o->unclosed == unclosed, "%s from %" PRIu64 ": unclosed %d", name, t0, o->unclosed);
}

/* The exclusive timeline of thread tid: ordered, disjoint, adding up to
 * phase_ns, and equal to the expected "name@t0-t1" list. */
static void expect_segs(const struct phase_set *ps, uint32_t tid, const char *want)
{
	char got[512] = "";
	size_t len = 0;
	uint64_t sum = 0;
	const struct phase_thread *th = NULL;
	for (size_t i = 0; i < ps->nthr; i++)
		if (ps->thr[i].pid == 100 && ps->thr[i].tid == tid)
			th = &ps->thr[i];
	CHECK(th != NULL, "thread %u has no timeline", tid);
	if (!th)
		return;
	for (size_t s = 0; s < th->nseg; s++) {
		const struct phase_seg *g = &th->seg[s];
		CHECK(g->t1_ns > g->t0_ns, "empty segment %zu", s);
		CHECK(s == 0 || g->t0_ns >= th->seg[s - 1].t1_ns, "segments %zu and %zu overlap", s - 1, s);
		sum += g->t1_ns - g->t0_ns;
		len += (size_t)snprintf(got + len, sizeof got - len, "%s%s@%" PRIu64 "-%" PRIu64, s ? " " : "",
					ps->names[g->phase], g->t0_ns, g->t1_ns);
	}
	CHECK(sum == th->phase_ns, "thread %u: segments add to %" PRIu64 ", phase_ns %" PRIu64, tid, sum, th->phase_ns);
	CHECK(!strcmp(got, want), "thread %u timeline\n  got  %s\n  want %s", tid, got, want);
}

static void test_empty(void)
{
	struct phase_set ps;
	nev = 0;
	build(&ps, NULL);
	CHECK(ps.nocc == 0 && ps.nthr == 0 && ps.nnames == 0, "empty ring: %zu occ, %zu threads", ps.nocc, ps.nthr);
	CHECK(phase_set_primary_of(&ps, 100) == -1, "empty ring has no primary thread");
	CHECK(phase_set_device_of(&ps, 0) == -1, "empty ring has no device timeline");
	phase_set_free(&ps);
	/* Records that are no phase at all. */
	add(5, ANCHOR_KIND_PROC_START, 100, 100, "host=x", 0, 0);
	add(6, ANCHOR_KIND_BEGIN, 100, 100, "perun.sample", 0, 0);
	add(7, ANCHOR_KIND_END, 100, 100, "perun.sample", 0, 0);
	build(&ps, NULL);
	CHECK(ps.nocc == 0, "perun.* edges are no phase: %zu occ", ps.nocc);
	CHECK(ps.unmatched_end == 0, "perun.* END counted as unmatched");
	phase_set_free(&ps);
}

static void test_nested(void)
{
	struct phase_set ps;
	nev = 0;
	B(0, 1, "step");
	B(20, 1, "forward");
	B(25, 1, "matmul");
	E(35, 1, "matmul");
	E(50, 1, "forward");
	B(60, 1, "backward");
	E(90, 1, "backward");
	E(100, 1, "step");
	build(&ps, NULL);
	CHECK(ps.nocc == 4, "nested: %zu occurrences", ps.nocc);
	expect_occ(&ps, "step", 1, 0, 100, 0, 40, 0);
	expect_occ(&ps, "forward", 1, 20, 50, 1, 20, 0);
	expect_occ(&ps, "matmul", 1, 25, 35, 2, 10, 0);
	expect_occ(&ps, "backward", 1, 60, 90, 1, 30, 0);
	expect_segs(&ps, 1, "step@0-20 forward@20-25 matmul@25-35 forward@35-50 step@50-60 backward@60-90 step@90-100");
	CHECK(ps.unmatched_end == 0 && ps.unclosed_begin == 0, "nested: unmatched %" PRIu64 ", unclosed %" PRIu64,
	      ps.unmatched_end, ps.unclosed_begin);
	phase_set_free(&ps);
	/* Begun at the same instant: the one that ends later is outside. */
	nev = 0;
	B(0, 1, "epoch");
	B(0, 1, "step");
	E(5, 1, "step");
	E(10, 1, "epoch");
	build(&ps, NULL);
	expect_segs(&ps, 1, "step@0-5 epoch@5-10");
	/* occ[] is sorted outer first (trace.json nests slices by it). */
	CHECK(ps.nocc == 2 && occ_of(&ps, "epoch", 1, 0) == &ps.occ[0], "occ[] not outer first at equal t0");
	phase_set_free(&ps);
}

/* Ranges that overlap without nesting: every instant to the innermost
 * (latest begun) open range; no instant counted twice. */
static void test_overlap(void)
{
	struct phase_set ps;
	nev = 0;
	B(0, 1, "a");
	B(10, 1, "b");
	E(20, 1, "a");
	E(30, 1, "b");
	/* The same name twice: END closes the innermost of that name. */
	B(40, 1, "x");
	B(45, 1, "x");
	E(50, 1, "x");
	E(70, 1, "x");
	build(&ps, NULL);
	expect_occ(&ps, "a", 1, 0, 20, 0, 10, 0);
	expect_occ(&ps, "b", 1, 10, 30, 1, 20, 0);
	expect_occ(&ps, "x", 1, 40, 70, 0, 25, 0);
	expect_occ(&ps, "x", 1, 45, 50, 1, 5, 0);
	expect_segs(&ps, 1, "a@0-10 b@10-30 x@40-45 x@45-50 x@50-70");
	phase_set_free(&ps);
}

static void test_unmatched_unclosed(void)
{
	struct phase_set ps;
	struct ring_proc p = {.pid = 100, .exit_ns = 500};
	struct ring_procs procs = {&p, 1};
	nev = 0;
	E(5, 1, "ghost");
	B(10, 1, "open");
	M(40, 2, "other thread's last record");
	add(60, ANCHOR_KIND_THREAD, 100, 1, "t1", 0, 0);
	build(&ps, NULL);
	CHECK(ps.unmatched_end == 1, "END without BEGIN: unmatched %" PRIu64, ps.unmatched_end);
	CHECK(phase_set_find(&ps, "ghost") < 0 || !occ_of(&ps, "ghost", 1, 5), "unmatched END made an occurrence");
	CHECK(ps.unclosed_begin == 1, "BEGIN without END: unclosed %" PRIu64, ps.unclosed_begin);
	/* Closed at its thread's last record. */
	expect_occ(&ps, "open", 1, 10, 60, 0, 50, 1);
	phase_set_free(&ps);
	/* With the process's exit known: closed there. */
	build(&ps, &procs);
	expect_occ(&ps, "open", 1, 10, 500, 0, 490, 1);
	phase_set_free(&ps);
}

static void test_cross_thread(void)
{
	struct phase_set ps;
	nev = 0;
	B(0, 1, "load");
	E(30, 2, "load"); /* ended by a worker thread of the same process */
	add(35, ANCHOR_KIND_END, 200, 3, "load", 0, 0); /* another process: no */
	build(&ps, NULL);
	expect_occ(&ps, "load", 1, 0, 30, 0, 30, 0);
	CHECK(ps.unmatched_end == 1, "an END in another process closed a range (unmatched %" PRIu64 ")",
	      ps.unmatched_end);
	phase_set_free(&ps);
}

/* asyncio: two tasks interleave one name on one thread; the END's value
 * names its BEGIN. */
static void test_async_ids(void)
{
	struct phase_set ps;
	nev = 0;
	add(0, ANCHOR_KIND_BEGIN, 100, 1, "fetch", ANCHOR_FLAG_VALUE, 11);
	add(10, ANCHOR_KIND_BEGIN, 100, 1, "fetch", ANCHOR_FLAG_VALUE, 22);
	add(20, ANCHOR_KIND_END, 100, 1, "fetch", ANCHOR_FLAG_VALUE, 11);
	add(50, ANCHOR_KIND_END, 100, 1, "fetch", ANCHOR_FLAG_VALUE, 22);
	build(&ps, NULL);
	const struct phase_occ *a = occ_of(&ps, "fetch", 1, 0), *b = occ_of(&ps, "fetch", 1, 10);
	CHECK(a && a->has_id && a->id == 11 && a->t1_ns == 20, "task 11's range: [0, %" PRIu64 "]", a ? a->t1_ns : 0);
	CHECK(b && b->has_id && b->id == 22 && b->t1_ns == 50, "task 22's range: [10, %" PRIu64 "]", b ? b->t1_ns : 0);
	phase_set_free(&ps);
	/* An id no BEGIN carries: closes by name, as any END. */
	nev = 0;
	add(0, ANCHOR_KIND_BEGIN, 100, 1, "fetch", 0, 0);
	add(20, ANCHOR_KIND_END, 100, 1, "fetch", ANCHOR_FLAG_VALUE, 99);
	build(&ps, NULL);
	a = occ_of(&ps, "fetch", 1, 0);
	CHECK(a && a->t1_ns == 20 && ps.unmatched_end == 0, "END with an unknown id did not close by name");
	phase_set_free(&ps);
}

static void test_marks(void)
{
	struct phase_set ps;
	/* A thread with marks only: each runs to the next, the last to the
	 * thread's last record. */
	nev = 0;
	M(0, 1, "load");
	M(10, 1, "train");
	M(40, 1, "eval");
	add(55, ANCHOR_KIND_THREAD, 100, 1, "t", 0, 0);
	build(&ps, NULL);
	expect_segs(&ps, 1, "load@0-10 train@10-40 eval@40-55");
	CHECK(occ_of(&ps, "train", 1, 10) && occ_of(&ps, "train", 1, 10)->from_mark, "mark segment not from_mark");
	phase_set_free(&ps);

	/* Marks beside ranges: before a range it runs to the range's begin;
	 * inside one it is an instant; after the last range too. */
	nev = 0;
	M(0, 1, "data");
	B(10, 1, "forward");
	M(15, 1, "inside");
	E(20, 1, "forward");
	M(30, 1, "done");
	add(80, ANCHOR_KIND_THREAD, 100, 1, "t", 0, 0);
	build(&ps, NULL);
	expect_segs(&ps, 1, "data@0-10 forward@10-20");
	CHECK(ps.marks_in_range == 2, "marks kept as instants: %" PRIu64 ", expected 2 (inside, done)",
	      ps.marks_in_range);
	CHECK(!occ_of(&ps, "inside", 1, 15) && !occ_of(&ps, "done", 1, 30), "an instant mark became a phase");
	phase_set_free(&ps);
}

/* Device edges: their own timeline per process (time in value), never the
 * primary thread even with more phase time. */
static void test_device(void)
{
	struct phase_set ps;
	nev = 0;
	B(0, 1, "step");
	add(1, ANCHOR_KIND_DEV_BEGIN, 100, 1, "step", ANCHOR_FLAG_VALUE, 5);
	E(10, 1, "step");
	add(11, ANCHOR_KIND_DEV_END, 100, 1, "step", ANCHOR_FLAG_VALUE, 1000);
	B(20, 2, "io");
	E(25, 2, "io");
	add(30, ANCHOR_KIND_DEV_CLOCK, 100, 1, "dev=cuda:0 bracket_ns=4000 drift_ppm=1.5 resid_ns=-700", 0, 0);
	build(&ps, NULL);
	long dev = phase_set_device_of(&ps, 100), prim = phase_set_primary_of(&ps, 100);
	CHECK(dev >= 0 && ps.thr[dev].tid == PHASE_DEVICE_TID, "no device timeline");
	expect_occ(&ps, "step", PHASE_DEVICE_TID, 5, 1000, 0, 995, 0);
	CHECK(prim >= 0 && ps.thr[prim].tid == 1, "primary of pid 100 is tid %ld's thread, expected 1",
	      prim >= 0 ? (long)ps.thr[prim].tid : -1L);
	CHECK(ps.thr[ps.primary].tid == 1, "run's primary thread is tid %u", ps.thr[ps.primary].tid);
	CHECK(ps.dev_calibrations == 1 && ps.dev_max_bracket_us == 4.0 && ps.dev_max_resid_us == 0.7 &&
		      ps.dev_drift_ppm == 1.5,
	      "DEV_CLOCK: %" PRIu64 " calibrations, bracket %g us, resid %g us, drift %g ppm", ps.dev_calibrations,
	      ps.dev_max_bracket_us, ps.dev_max_resid_us, ps.dev_drift_ppm);
	phase_set_free(&ps);
	/* A device timeline sorted first (lower pid) with the most phase time
	 * is still not the run's primary: the host thread of pid 300 is. */
	nev = 0;
	add(1, ANCHOR_KIND_DEV_BEGIN, 100, 1, "kernel", ANCHOR_FLAG_VALUE, 0);
	add(2, ANCHOR_KIND_DEV_END, 100, 1, "kernel", ANCHOR_FLAG_VALUE, 1000);
	add(3, ANCHOR_KIND_BEGIN, 300, 7, "host", 0, 0);
	add(13, ANCHOR_KIND_END, 300, 7, "host", 0, 0);
	build(&ps, NULL);
	CHECK(ps.nthr == 2 && ps.thr[ps.primary].tid == 7, "run's primary thread is tid %u, expected 7 (host)",
	      ps.nthr ? ps.thr[ps.primary].tid : 0);
	CHECK(phase_set_device_of(&ps, 0) >= 0 && phase_set_device_of(&ps, 300) == -1, "device_of by pid");
	phase_set_free(&ps);
}

/* anchor.* is always the tools'; MPI_* only when a perun process calls it
 * outside its user phases. */
static void test_tool(void)
{
	struct phase_set ps;
	struct ring_proc p[2] = {{.pid = 100}, {.pid = 200}};
	snprintf(p[0].argv, sizeof p[0].argv, "python3 -m perun monitor train.py");
	snprintf(p[1].argv, sizeof p[1].argv, "python3 user_mpi.py");
	struct ring_procs procs = {p, 2};
	nev = 0;
	B(0, 1, "anchor.sync");
	E(1, 1, "anchor.sync");
	B(2, 1, "MPI_Init_thread");
	E(3, 1, "MPI_Init_thread");
	B(10, 1, "train");
	B(12, 1, "MPI_Allreduce");
	E(14, 1, "MPI_Allreduce");
	E(20, 1, "train");
	add(30, ANCHOR_KIND_BEGIN, 200, 5, "MPI_Bcast", 0, 0);
	add(31, ANCHOR_KIND_END, 200, 5, "MPI_Bcast", 0, 0);
	build(&ps, &procs);
	CHECK(phase_set_is_tool(&ps, phase_set_find(&ps, "anchor.sync")), "anchor.sync not a tool phase");
	CHECK(phase_set_is_tool(&ps, phase_set_find(&ps, "MPI_Init_thread")), "perun's MPI_Init_thread not a tool phase");
	CHECK(!phase_set_is_tool(&ps, phase_set_find(&ps, "MPI_Allreduce")), "MPI inside the user's phase is the user's");
	CHECK(!phase_set_is_tool(&ps, phase_set_find(&ps, "MPI_Bcast")), "MPI of a non-perun process is the user's");
	CHECK(!phase_set_is_tool(&ps, phase_set_find(&ps, "train")), "train marked as a tool phase");
	CHECK(!phase_set_is_tool(&ps, -1) && !phase_set_is_tool(&ps, 99), "out-of-range phase is a tool phase");
	phase_set_free(&ps);
}

int main(void)
{
	test_empty();
	test_nested();
	test_overlap();
	test_unmatched_unclosed();
	test_cross_thread();
	test_async_ids();
	test_marks();
	test_device();
	test_tool();
	if (failures) {
		printf("test_phase_set: %d check(s) failed\n", failures);
		return 1;
	}
	printf("test_phase_set: all checks passed\n");
	return 0;
}
