/*
 * dump_csv.h - the ring as one CSV row per event (`anchorpost dump`).
 *
 * Columns: utc_iso, unix_ns, mono_ns, pid, tid, kind, name, value, host,
 * rank (and stack with stacks).  value: the mark's value (integer or
 * float), SYNC's realtime ns, FORK's parent pid, PROC_EXIT's status or
 * signal, empty when there is none.  utc_iso and unix_ns are empty when
 * the ring holds no clock pair to place the event on the wall clock.
 * stack: native return addresses (ANCHOR_STACKS=1), innermost first, hex,
 * ';'-separated.
 */
#ifndef ANCHORPOST_DUMP_CSV_H
#define ANCHORPOST_DUMP_CSV_H

#include "model/lookup.h"
#include "util/diag.h"

/* Write rl's events to out ("-": stdout), all or nothing.  0, or a
 * negative errno with *e filled and no file left. */
int dump_csv_write(const struct ringload *rl, const char *out, int stacks, struct em_error *e);

#endif
