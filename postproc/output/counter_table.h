/*
 * counter_table.h - `anchorpost phases` from libanchor's ms energy counters
 * (ANCHOR_SENSORS; postproc/input/ring_sensors.h), with perun's totals
 * beside them as a cross-check.
 *
 * Rows go into phases.csv with scope "counters" (method "counter-ms"), so
 * consumers of scope "all" see no change; "(perun span)" rows carry the
 * cross-check: the counters' energy over perun's span beside perun's own
 * total for the group, and whether they agree within 1 %.  The numbers
 * come from the results stage (model/counter_results.h).
 */
#ifndef ANCHORPOST_COUNTER_TABLE_H
#define ANCHORPOST_COUNTER_TABLE_H

#include <stdio.h>

#include "model/counter_results.h"
#include "model/energy_model.h"
#include "output/csv.h"

/* Rows for the ring's ms counters cr (none when it has no SENSOR records);
 * the readable block too when tty != NULL.  Returns the number of device
 * groups whose counters disagree with perun by more than 1 % over perun's
 * span (0 when all agree or there is nothing to compare). */
int counter_table_write(struct csv *c, const struct energy_model *m, const struct counter_results *cr, FILE *tty);

#endif
