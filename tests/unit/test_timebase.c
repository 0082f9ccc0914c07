/*
 * test_timebase.c - model/timebase.c and output/timebase.c: timeline seconds to the unix_s text
 * every output with times writes.  Known answers to the nanosecond (9
 * decimals, leading zeros kept), exact for a base_ns a double cannot hold
 * (a machine up for months), negative t_s (before the ring's first
 * record: perun's first samples), the empty answers (NaN, before the
 * monotonic epoch, no SYNC, a too-small buffer), and the CSV field.
 * The clock is two hand-made SYNC points; ring_clock.c interpolates.
 * Exits non-zero when a check fails.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/timebase.h"

#include "unit_check.h"

/* Monotonic 1000 s .. 1100 s, realtime - monotonic = 1764600000 s - 1000 s
 * throughout: monotonic 1000 s is 2025-12-01T14:40:00Z. */
#define OFFSET_NS (1764600000000000000LL - 1000000000000LL)
static struct ring_clock_point pts[] = {
	{1000000000000ull, OFFSET_NS, 1000},
	{1100000000000ull, OFFSET_NS, 1000},
};
static const struct ring_clock clk = {pts, 2, 0, 0, 0, 0};
static const struct ring_clock none = {0};

static void expect_text(const struct ring_clock *c, uint64_t base_ns, double t_s, const char *want)
{
	char buf[48];
	size_t n = timebase_unix_text(c, base_ns, t_s, buf, sizeof buf);
	CHECK(n == strlen(want) && !strcmp(buf, want), "base %llu + %.17g s: got [%s] (%zu), want [%s]",
	      (unsigned long long)base_ns, t_s, buf, n, want);
}

static void test_known(void)
{
	/* The base itself and 9 decimals with their leading zeros. */
	expect_text(&clk, 1000000000000ull, 0, "1764600000.000000000");
	expect_text(&clk, 1000000000000ull, 1e-9, "1764600000.000000001");
	expect_text(&clk, 1000000000000ull, 0.123456789, "1764600000.123456789");
	expect_text(&clk, 1000000000000ull, 42.5, "1764600042.500000000");
	/* Rounded to the nearest ns, not truncated. */
	expect_text(&clk, 1000000000000ull, 0.6e-9, "1764600000.000000001");
	expect_text(&clk, 1000000000000ull, 0.4e-9, "1764600000.000000000");
	/* Negative: before the ring's first record. */
	expect_text(&clk, 1000000000000ull, -0.25, "1764599999.750000000");
	expect_text(&clk, 1000000000000ull, -1e-9, "1764599999.999999999");
	/* A base_ns with more digits than a double holds (2^53 ns is 104
	 * days): the odd last ns must survive. */
	uint64_t big = (1ull << 60) + 7; /* mono 36.5 years: outside the SYNCs, the nearest holds */
	int64_t want_ns = (int64_t)(big + 3) + OFFSET_NS;
	char want[48];
	snprintf(want, sizeof want, "%lld.%09lld", (long long)(want_ns / 1000000000), (long long)(want_ns % 1000000000));
	expect_text(&clk, big, 3e-9, want);
}

static void test_empty(void)
{
	char buf[48], small[8];
	expect_text(&clk, 1000000000000ull, NAN, "");
	expect_text(&none, 1000000000000ull, 1.0, ""); /* no SYNC: no UTC */
	/* Before the monotonic epoch. */
	expect_text(&clk, 1000000000ull, -2.0, "");
	/* A unix time <= 0 (a clock that maps there is no answer). */
	struct ring_clock_point back[] = {{1000000000000ull, -1000000000000LL - 5, 1}};
	struct ring_clock bad = {back, 1, 0, 0, 0, 0};
	expect_text(&bad, 1000000000000ull, 0, "");
	/* Too small a buffer: nothing rather than a cut number. */
	size_t n = timebase_unix_text(&clk, 1000000000000ull, 0, small, sizeof small);
	CHECK(n == 0, "8-byte buffer: length %zu", n);
	(void)buf;
}

static void test_field(void)
{
	char *text = NULL;
	size_t len = 0;
	FILE *fp = open_memstream(&text, &len);
	struct csv c;
	if (!fp) {
		perror("open_memstream");
		exit(2);
	}
	csv_init(&c, fp);
	timebase_unix_field(&c, &clk, 1000000000000ull, 1.5);
	timebase_unix_field(&c, &clk, 1000000000000ull, NAN);
	timebase_unix_field(&c, &none, 1000000000000ull, 1.5);
	csv_u64(&c, 9);
	csv_row_end(&c);
	fclose(fp);
	CHECK(!strcmp(text, "1764600001.500000000,,,9\n"), "CSV field: [%s]", text);
	free(text);
}

int main(void)
{
	test_known();
	test_empty();
	test_field();
	if (failures) {
		printf("test_timebase: %d check(s) failed\n", failures);
		return 1;
	}
	printf("test_timebase: all checks passed\n");
	return 0;
}
