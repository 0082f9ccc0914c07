/*
 * timebase.c - the run's unix time as a CSV field (see timebase.h).
 */
#include "output/timebase.h"

void timebase_unix_field(struct csv *c, const struct ring_clock *clk, uint64_t base_ns, double t_s)
{
	char buf[48];
	if (timebase_unix_text(clk, base_ns, t_s, buf, sizeof buf))
		csv_str(c, buf);
	else
		csv_empty(c);
}
