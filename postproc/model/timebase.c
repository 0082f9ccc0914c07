/*
 * timebase.c - timeline seconds to unix seconds (see timebase.h).
 */
#include "model/timebase.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

size_t timebase_unix_text(const struct ring_clock *clk, uint64_t base_ns, double t_s, char *buf, size_t cap)
{
	double mono = (double)base_ns + t_s * 1e9;
	int64_t ns;
	int n;
	buf[0] = '\0';
	if (isnan(t_s) || !clk->n || !(mono >= 0) || mono >= 1.8e19)
		return 0;
	/* base_ns + the rounded offset: t_s * 1e9 is exact to well under a
	 * ns for runs of days, base_ns as a double is not. */
	if (t_s >= 0)
		ns = ring_clock_unix_ns(clk, base_ns + (uint64_t)llround(t_s * 1e9));
	else
		ns = ring_clock_unix_ns(clk, base_ns - (uint64_t)llround(-t_s * 1e9));
	if (ns <= 0)
		return 0;
	n = snprintf(buf, cap, "%" PRId64 ".%09" PRId64, ns / 1000000000, ns % 1000000000);
	return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

int64_t timebase_unix_ns(const struct ring_clock *clk, uint64_t mono_ns)
{
	return ring_clock_unix_ns(clk, mono_ns);
}

void timebase_iso(int64_t unix_ns, char *buf, size_t cap)
{
	ring_clock_iso(unix_ns, buf, cap);
}
