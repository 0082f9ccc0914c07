/*
 * timebase.h - the run's unix time as a CSV field (model/timebase.h holds
 * the mapping).
 */
#ifndef ANCHORPOST_TIMEBASE_H
#define ANCHORPOST_TIMEBASE_H

#include <stdint.h>

#include "model/timebase.h"
#include "output/csv.h"

/* timebase_unix_text as a CSV field (empty when unknown). */
void timebase_unix_field(struct csv *c, const struct ring_clock *clk, uint64_t base_ns, double t_s);

#endif
