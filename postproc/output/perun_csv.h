/*
 * perun_csv.h - perun.csv: perun's HDF5 as tidy long CSV (`perun` and
 * `report` write it).
 *
 * Default: one row per sample, columns
 *   multirun,round,host,device_group,sensor,metric,unit,t_rel_s,value
 * value is the stored value times its @mag (NVML mW become W); metric names
 * what it measures (perun_metric_name).  A sensor with a cumulative counter
 * (RAPL energy, perun 1.0 disk/net bytes) adds rows with metric
 * "<metric>_counter" after its own rows.  Then a table of each power
 * sensor's total energy as perun computed it goes to stdout (stderr when
 * the CSV goes to stdout) and, with -o FILE, to FILE.energy.csv
 * (multirun,round,host,device_group,sensor,energy_j).
 *
 * --regions: one row per region call instead,
 *   multirun,round,region,rank,start_s,stop_s
 *
 * --ring RING adds t_s and unix_s after t_rel_s: the sample on the run's
 * timeline as energy_model.h aligns it (the offset phases, timeline and
 * trace.json use: t_s = t_rel_s + offset) and in UTC (timebase.h).  Only
 * the aligned multirun, round and host have them; other rows leave them
 * empty.
 */
#ifndef ANCHORPOST_PERUN_CSV_H
#define ANCHORPOST_PERUN_CSV_H

#include <stdio.h>

#include "model/energy_model.h"
#include "model/lookup.h"
#include "util/diag.h"

/* perun's samples (or regions) as long CSV to out ("-": stdout), of one
 * multirun (only, NULL: all); the energy table goes to table (NULL: none)
 * and, when out is a file, to OUT.energy.csv.  in names the file.
 * aligned (NULL: none; pf must then be aligned->pf): the t_s,unix_s
 * columns of `perun --ring` for its run, round and host.  0, or a
 * negative errno with *e filled and no file left. */
int perun_csv_write(const struct perun_file *pf, const char *in, const char *out, const struct perun_multirun *only,
		    int regions, FILE *table, const struct energy_model *aligned, struct em_error *e);

#endif
