/*
 * test_perun_reads.c - align_perun_reads (postproc/align/perun_reads.c):
 * the perun hook's read marks of a round (python_hooks/anchor/
 * _perun_hook.py: the round mark, every stamp, then per sensor
 * "perun.read.n/.p50/.max <id>" and "perun.read <id>" = index << 40 |
 * delay for each read more than 0.5 ms off the median).  A listed read at
 * its own delay exactly, the others at the median (within 0.5 ms of
 * theirs); other sampler processes' and rounds' marks not taken; a count
 * that does not match, a hook that said its reads did not pair, a listed
 * read out of range, past the next stamp or beyond the stated max:
 * refused (then the stamps stay).
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "align/align.h"
#include "unit_check.h"

#define MAXEV 64
#define NS 4

struct evs {
	struct ring_event e[MAXEV];
	char txt[MAXEV][48];
	size_t n;
};

static void add(struct evs *v, uint32_t pid, const char *text, uint64_t value)
{
	struct ring_event *e = &v->e[v->n];
	memset(e, 0, sizeof *e);
	snprintf(v->txt[v->n], sizeof v->txt[v->n], "%s", text);
	e->pid = pid;
	e->tid = pid;
	e->kind = ANCHOR_KIND_MARK;
	e->flags = ANCHOR_FLAG_VALUE;
	e->text = v->txt[v->n];
	e->text_len = (uint32_t)strlen(text);
	e->value = value;
	v->n++;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

/* One round of pid, stamps 100 ms apart from t0, sensor "pkg" read at
 * delay_ns, its marks as the hook writes them; count_override >= 0 puts
 * that in perun.read.n instead. */
static void round_of(struct evs *v, uint32_t pid, uint64_t t0, const uint64_t *delay_ns, long count_override)
{
	uint64_t s[NS];
	memcpy(s, delay_ns, sizeof s);
	qsort(s, NS, sizeof *s, cmp_u64);
	add(v, pid, "perun.round", 0);
	for (int i = 0; i < NS; i++)
		add(v, pid, "perun.sample", t0 + (uint64_t)i * 100000000u);
	add(v, pid, "perun.read.n pkg", count_override >= 0 ? (uint64_t)count_override : NS);
	add(v, pid, "perun.read.p50 pkg", s[(NS - 1) / 2]);
	add(v, pid, "perun.read.max pkg", s[NS - 1]);
	for (uint64_t i = 0; i < NS; i++)
		if (llabs((long long)delay_ns[i] - (long long)s[(NS - 1) / 2]) > 500000)
			add(v, pid, "perun.read pkg", i << 40 | delay_ns[i]);
}

int main(void)
{
	const uint64_t good[NS] = {11000, 4200000, 131000, 0};
	const double gap[NS] = {0, 0.1, 0.2, 0.3}; /* the stamps' times, s */
	double d[NS];
	struct align_reads ar;
	struct evs v = {0};
	int rc;

	/* Another sampler first (a second perun run in the ring), then ours
	 * with two rounds: the second is asked for. */
	round_of(&v, 77, 5000000000u, (const uint64_t[NS]){1, 1, 1, 1}, -1);
	round_of(&v, 42, 1000000000u, (const uint64_t[NS]){2, 2, 2, 2}, -1);
	round_of(&v, 42, 3000000000u, good, -1);
	add(&v, 42, "perun.read.n dram", NS); /* another sensor's */
	rc = align_perun_reads(v.e, v.n, 42, 1, "pkg", gap, NS, d, &ar);
	CHECK(rc == 0, "paired reads refused: %d", rc);
	CHECK(fabs(d[1] - 4.2e-3) < 1e-12, "the late read at %.9f s, want its own 0.0042", d[1]);
	for (int i = 0; !rc && i < NS; i++)
		CHECK(i == 1 || (fabs(d[i] - 11e-6) < 1e-12 && fabs(d[i] - good[i] / 1e9) <= 0.5e-3),
		      "read %d: %.9f s, want the median 11 us (truth %.6f ms)", i, d[i], good[i] / 1e6);
	CHECK(!rc && ar.n_late == 1 && fabs(ar.p50_s - 11e-6) < 1e-12 && fabs(ar.max_s - 4.2e-3) < 1e-12,
	      "summary: %zu late, p50 %.9f, max %.9f", ar.n_late, ar.p50_s, ar.max_s);
	rc = align_perun_reads(v.e, v.n, 42, 0, "pkg", gap, NS, d, &ar);
	CHECK(rc == 0 && fabs(d[0] - 2e-9) < 1e-15 && ar.n_late == 0, "round 0: rc %d, delay %.3g", rc, d[0]);
	CHECK(align_perun_reads(v.e, v.n, 42, 1, "gpu", gap, NS, d, &ar) == -ENODATA, "a sensor never read: not ENODATA");
	CHECK(align_perun_reads(v.e, v.n, 42, 1, "pk", gap, NS, d, &ar) == -ENODATA, "a prefix of an id taken for it");
	CHECK(align_perun_reads(v.e, v.n, 42, 1, "pkg", gap, NS + 1, d, &ar) == -EINVAL, "4 reads for 5 stamps accepted");
	CHECK(align_perun_reads(v.e, v.n, 42, 2, "pkg", gap, NS, d, &ar) == -ENODATA, "a round not there: not ENODATA");

	/* The hook found its reads did not pair (it writes n = 0). */
	v.n = 0;
	round_of(&v, 42, 1000000000u, good, 0);
	CHECK(align_perun_reads(v.e, v.n, 42, 0, "pkg", gap, NS, d, &ar) == -EINVAL, "n = 0 accepted");
	/* A listed read past the next stamp. */
	v.n = 0;
	round_of(&v, 42, 1000000000u, (const uint64_t[NS]){10, 100000001, 10, 10}, -1);
	CHECK(align_perun_reads(v.e, v.n, 42, 0, "pkg", gap, NS, d, &ar) == -EINVAL, "a read past the next stamp accepted");
	/* A listed read beyond the stated max, and one out of range. */
	v.n = 0;
	round_of(&v, 42, 1000000000u, good, -1);
	add(&v, 42, "perun.read pkg", 2ull << 40 | 9000000);
	CHECK(align_perun_reads(v.e, v.n, 42, 0, "pkg", gap, NS, d, &ar) == -EINVAL, "a read beyond max accepted");
	v.n = 0;
	round_of(&v, 42, 1000000000u, good, -1);
	add(&v, 42, "perun.read pkg", (uint64_t)NS << 40 | 1000000);
	CHECK(align_perun_reads(v.e, v.n, 42, 0, "pkg", gap, NS, d, &ar) == -EINVAL, "index out of range accepted");

	/* The last read, which no next stamp bounds, later than any round. */
	v.n = 0;
	round_of(&v, 42, 1000000000u, (const uint64_t[NS]){10, 10, 10, 150000000}, -1);
	CHECK(align_perun_reads(v.e, v.n, 42, 0, "pkg", gap, NS, d, &ar) == -EINVAL, "a last read 150 ms late accepted");

	if (failures) {
		printf("%d check(s) failed\n", failures);
		return 1;
	}
	printf("perun reads: all checks passed\n");
	return 0;
}
