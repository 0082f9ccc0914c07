/*
 * test_oom.c - out-of-memory fault injection for the readers and the run
 * model, as SQLite's tests do it: run the operation with allocation N
 * failing, for N = 0, 1, 2, ... until it runs with no failure injected.
 * Every injected failure must come back as a negative errno with a
 * message (never an exit, a crash or a success that ignored it).
 *
 *   test_oom RING PERUN PROFILE
 *
 * Only anchorpost's own allocations fail (the link wraps malloc, calloc,
 * realloc and strdup of our objects: tests/t_oom_inject.sh, Makefile);
 * libhdf5's and libc's internal ones are not ours to test.  The perun
 * file is read through the guard (a forked child), whose allocations fail
 * on the same count.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "perun.h"
#include "pyspy.h"
#include "ringload.h"
#include "run_model.h"

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
};
static struct counter *cnt;

static int fail_now(void *caller)
{
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
	int rc = ringload_load(&rl, ring, msg, cap);
	if (!rc)
		ringload_close(&rl);
	return rc;
}

static int op_perun(char *msg, size_t cap)
{
	struct perun_file pf;
	int rc = perun_load_guarded(perun, &pf, msg, cap);
	if (!rc)
		perun_free(&pf);
	return rc;
}

static int op_profile(char *msg, size_t cap)
{
	struct pyspy_profile p;
	struct pyspy_error err;
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

/* Fail allocation 0, 1, 2, ... of op; 0 when every one was handled.
 * Past the first 1000, every 7th only (TEST_OOM_FULL=1: every one): the
 * model's ~5000 allocations each fork the perun guard, minutes in all,
 * and past the loaders they repeat the same few sites (the offset fit's
 * candidates). */
static int sweep(const char *name, op_fn op)
{
	char msg[1024];
	long n, bad = 0, nomem = 0, tried = 0;
	int full = getenv("TEST_OOM_FULL") && !strcmp(getenv("TEST_OOM_FULL"), "1");
	for (n = 0;; n += (full || n < 1000) ? 1 : 7) {
		int rc;
		msg[0] = '\0';
		cnt->nalloc = 0;
		cnt->injected = 0;
		cnt->fail_at = n;
		rc = op(msg, sizeof msg);
		cnt->fail_at = -1;
		tried++;
		if (!cnt->injected) {
			if (rc) {
				fprintf(stderr, "%s: fails with no failure injected: %d %s\n", name, rc, msg);
				return 1;
			}
			break;
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
	printf("%-8s %6ld allocations, %ld of them failed in turn: %ld returned -ENOMEM, %ld another error "
	       "with a message, %ld wrong\n",
	       name, n, tried - 1, nomem, tried - 1 - nomem - bad, bad);
	fflush(stdout);
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
	if (cnt == MAP_FAILED)
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
