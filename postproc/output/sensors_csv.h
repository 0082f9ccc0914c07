/*
 * sensors_csv.h - what the run's own data say about each GPU's sensors
 * (model/gpu_sensors.h) as a long CSV and a summary: the power reading's
 * update period, averaging window and window delay with 95 % intervals,
 * the energy counter's update interval, the counter against the
 * integrated readings, and each phase's time and GPU energy on the host's
 * and the device's timeline (`anchorpost sensors`).
 *
 * CSV (long): gpu, quantity, phase, value, lo, hi, unit, note.
 */
#ifndef ANCHORPOST_SENSORS_CSV_H
#define ANCHORPOST_SENSORS_CSV_H

#include <stdio.h>

#include "model/gpu_sensors.h"
#include "phase/phase_set.h"
#include "util/diag.h"

/* The CSV to out (NULL: none, the summary alone), the summary into tty
 * (NULL: none).  0, or a negative errno with *e filled and no file left. */
int sensors_csv_write(const struct gpu_sensors *gs, const struct phase_set *ph, const char *out, FILE *tty,
		      struct em_error *e);

#endif
