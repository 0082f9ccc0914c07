/*
 * test_oom.c - out-of-memory fault injection for the readers and the run
 * model, as SQLite's tests do it: run the operation with allocation N
 * failing, one N at a time.  Every injected failure must come back as a
 * negative errno with a message (never an exit, a crash or a success that
 * ignored it).
 *
 * Which N: a dry run notes each allocation's call stack (8 return
 * addresses); each distinct stack fails at its first two occurrences and
 * its last (TEST_OOM_FULL=1: every N).  The model's ~14000 allocations
 * are mostly the offset fit repeating the same ~300 stacks, each N costs
 * a fork of the perun guard, and what a failure does depends on where it
 * happens (the stack), not on how often that stack ran before: the first
 * (nothing built yet), the second (one element to undo) and the last
 * (everything to undo) are the distinct cases.  This fails ~500 of the
 * model's allocations in ~10 s, where the former rule (every N below
 * 1000, every 7th above) failed 2883 in ~80 s yet never reached 40
 * allocations' call sites (measured: tests/cli/t_oom_inject_slow.sh).  Tried
 * on a planted bug (attrib_offset.c going on with cut = INFINITY when its
 * sort buffer's malloc fails, allocation 14134 of the model): this rule
 * reports it, the former one did not.
 *
 *   test_oom RING PERUN PROFILE
 *
 * Only anchorpost's own allocations fail (the link wraps malloc, calloc,
 * realloc and strdup of our objects: tests/cli/t_oom_inject_slow.sh, Makefile);
 * libhdf5's and libc's internal ones are not ours to test.  The perun
 * file is read through the guard (a forked child), whose allocations fail
 * on the same count.
 */
#include <errno.h>
#include <execinfo.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "input/perun.h"
#include "input/pyspy.h"
#include "input/ringload.h"
#include "model/run_model.h"

void *__real_malloc(size_t n);
void *__real_calloc(size_t n, size_t sz);
void *__real_realloc(void *p, size_t n);
char *__real_strdup(const char *s);

/* Shared with the perun guard's forked child, so that its allocations
 * count (and fail) in the same sequence as the parent's. */
struct counter {
	long fail_at; /* the allocation that fails, -1: none */
	long nalloc;  /* allocations since the last reset */
	int injected;
	void *where; /* caller of the allocation that failed */
	int record;  /* dry run: note each allocation's call stack in site[] */
};
static struct counter *cnt;

/* The dry run's call stack of allocation n (a hash of the return
 * addresses), shared with the perun guard's child like the counter. */
#define MAX_ALLOCS (1L << 20)
#define STACK_DEPTH 8
static uint64_t *site;

/* noinline: backtrace's first three frames are then always stack_hash,
 * fail_now and the __wrap_ function. */
__attribute__((noinline)) static uint64_t stack_hash(void)
{
	void *pc[STACK_DEPTH + 3];
	int n = backtrace(pc, STACK_DEPTH + 3), i;
	uint64_t h = 1469598103934665603ull;
	/* pc[0..2]: stack_hash, fail_now, __wrap_*: the same for all. */
	for (i = 3; i < n; i++)
		h = (h ^ (uint64_t)(uintptr_t)pc[i]) * 1099511628211ull;
	return h;
}

__attribute__((noinline)) static int fail_now(void *caller)
{
	if (cnt && cnt->record) {
		long n = __atomic_fetch_add(&cnt->nalloc, 1, __ATOMIC_SEQ_CST);
		if (n < MAX_ALLOCS)
			site[n] = stack_hash();
		return 0;
	}
	if (cnt && cnt->fail_at >= 0 && __atomic_fetch_add(&cnt->nalloc, 1, __ATOMIC_SEQ_CST) == cnt->fail_at) {
		cnt->injected = 1;
		cnt->where = caller;
		errno = ENOMEM;
		return 1;
	}
	return 0;
}

void *__wrap_malloc(size_t n)
{
	return fail_now(__builtin_return_address(0)) ? NULL : __real_malloc(n);
}

void *__wrap_calloc(size_t n, size_t sz)
{
	return fail_now(__builtin_return_address(0)) ? NULL : __real_calloc(n, sz);
}

void *__wrap_realloc(void *p, size_t n)
{
	return fail_now(__builtin_return_address(0)) ? NULL : __real_realloc(p, n);
}

char *__wrap_strdup(const char *s)
{
	return fail_now(__builtin_return_address(0)) ? NULL : __real_strdup(s);
}

int main(int argc, char **argv);

static const char *ring, *perun, *profile;

/* One operation with the allocation `at` failing: its return code and
 * message. */
typedef int (*op_fn)(char *msg, size_t cap);

static int op_ring(char *msg, size_t cap)
{
	struct ringload rl;
	struct em_error e;
	int rc = ringload_load(&rl, ring, &e);
	snprintf(msg, cap, "%s", rc ? e.msg : "");
	if (!rc)
		ringload_close(&rl);
	return rc;
}

static int op_perun(char *msg, size_t cap)
{
	struct perun_file pf;
	struct em_error e;
	int rc = perun_load_guarded(perun, &pf, &e);
	snprintf(msg, cap, "%s", rc ? e.msg : "");
	if (!rc)
		perun_free(&pf);
	return rc;
}

static int op_profile(char *msg, size_t cap)
{
	struct pyspy_profile p;
	struct em_error err;
	int rc;
	pyspy_profile_init(&p);
	rc = pyspy_load(profile, PYSPY_FMT_AUTO, &p, &err);
	snprintf(msg, cap, "%s", rc ? err.msg : "");
	pyspy_profile_free(&p);
	return rc;
}

static int op_model(char *msg, size_t cap)
{
	struct run_opts o = {0};
	struct run_model rm;
	struct em_error e;
	int rc;
	o.em.ring = ring;
	o.em.perun = perun;
	o.em.fit_range_s = 3.0;
	o.profile = profile;
	rc = run_model_open(&rm, &o, &e);
	snprintf(msg, cap, "%s", rc ? e.msg : "");
	if (!rc)
		run_model_close(&rm);
	return rc;
}

/* Which allocations of the dry run to fail: for each call stack, its
 * first FIRST_PER_STACK occurrences and its last one (set in want[]). */
#define FIRST_PER_STACK 2
static int by_site(const void *a, const void *b)
{
	long i = *(const long *)a, j = *(const long *)b;
	if (site[i] != site[j])
		return site[i] < site[j] ? -1 : 1;
	return (i > j) - (i < j);
}

static long choose(long total, char *want, long *distinct)
{
	long *ix = malloc((size_t)total * sizeof *ix), i, k, chosen = 0;
	if (!ix)
		return -1;
	for (i = 0; i < total; i++)
		ix[i] = i;
	qsort(ix, (size_t)total, sizeof *ix, by_site);
	*distinct = 0;
	for (i = 0; i < total; i = k) {
		++*distinct;
		for (k = i; k < total && site[ix[k]] == site[ix[i]]; k++)
			want[ix[k]] = k - i < FIRST_PER_STACK || k + 1 == total || site[ix[k + 1]] != site[ix[i]];
	}
	for (i = 0; i < total; i++)
		chosen += want[i];
	free(ix);
	return chosen;
}

/* Run op once with nothing failing, noting every allocation's call stack;
 * then fail the chosen allocations one at a time (TEST_OOM_FULL=1: all of
 * them).  0 when every failure was handled. */
static int sweep(const char *name, op_fn op)
{
	char msg[1024], *want;
	long n, total, bad = 0, nomem = 0, tried = 0, distinct = 0;
	int rc, full = getenv("TEST_OOM_FULL") && !strcmp(getenv("TEST_OOM_FULL"), "1");

	msg[0] = '\0';
	cnt->nalloc = 0;
	cnt->record = 1;
	rc = op(msg, sizeof msg);
	cnt->record = 0;
	total = cnt->nalloc;
	if (rc) {
		fprintf(stderr, "%s: fails with no failure injected: %d %s\n", name, rc, msg);
		return 1;
	}
	if (total > MAX_ALLOCS) {
		fprintf(stderr, "%s: %ld allocations, more than test_oom notes (%ld)\n", name, total, MAX_ALLOCS);
		return 1;
	}
	want = calloc((size_t)total + 1, 1);
	if (!want || choose(total, want, &distinct) < 0) {
		fprintf(stderr, "%s: out of memory\n", name);
		return 1;
	}
	for (n = 0; n < total; n++) {
		if (!full && !want[n])
			continue;
		msg[0] = '\0';
		cnt->nalloc = 0;
		cnt->injected = 0;
		cnt->fail_at = n;
		rc = op(msg, sizeof msg);
		cnt->fail_at = -1;
		tried++;
		if (!cnt->injected) {
			/* Allocations 0..n-1 succeeded as in the dry run, so
			 * allocation n must have come. */
			fprintf(stderr, "%s: allocation %ld never came (the dry run made %ld): rc %d %s\n", name, n,
				total, rc, msg);
			bad++;
			continue;
		}
		/* Every failed allocation must come back as an error with a
		 * message: a success after one means a result was computed
		 * without it (e.g. a fit that silently kept its prior). */
		if (rc >= 0 || !msg[0]) {
			fprintf(stderr, "%s: allocation %ld failed: returned %d with message '%s'\n", name, n, rc,
				msg);
			bad++;
		}
		if (getenv("TEST_OOM_VERBOSE") && rc != -ENOMEM)
			fprintf(stderr, "%s: allocation %ld at main%+ld: rc %d '%s'\n", name, n, (long)((char *)cnt->where - (char *)main), rc, msg);
		nomem += rc == -ENOMEM;
	}
	printf("%-8s %6ld allocations from %ld call stacks, %ld of them failed in turn: %ld returned -ENOMEM, %ld another error "
	       "with a message, %ld wrong\n",
	       name, total, distinct, tried, nomem, tried - nomem - bad, bad);
	fflush(stdout);
	free(want);
	return bad != 0;
}

int main(int argc, char **argv)
{
	int bad = 0;
	if (argc != 4) {
		fprintf(stderr, "usage: test_oom RING PERUN PROFILE\n");
		return 2;
	}
	cnt = mmap(NULL, sizeof *cnt, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	site = mmap(NULL, MAX_ALLOCS * sizeof *site, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (cnt == MAP_FAILED || site == MAP_FAILED)
		return 2;
	cnt->fail_at = -1;
	ring = argv[1];
	perun = argv[2];
	profile = argv[3];
	bad |= sweep("ring", op_ring);
	bad |= sweep("perun", op_perun);
	bad |= sweep("profile", op_profile);
	bad |= sweep("model", op_model);
	return bad;
}
