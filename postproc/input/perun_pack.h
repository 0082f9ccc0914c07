/*
 * perun_pack.h - struct perun_file as one flat byte string and back: how
 * the guard's child (perun_guard.c), which alone runs libhdf5, hands the
 * parsed file to its parent.
 *
 * Layout, little-endian as the host writes it (both ends are one binary
 * on one machine): "PPK1", then the tree depth first.  A string is a u64
 * length + 1 (0: NULL) and its bytes without the NUL; an array of doubles
 * or ints a u64 count (UINT64_MAX: NULL) and its elements; numbers are
 * u64, i64 or f64.  The reader checks every length against what is left.
 */
#ifndef ANCHORPOST_PERUN_PACK_H
#define ANCHORPOST_PERUN_PACK_H

#include <stddef.h>

#include "input/perun.h"

/* *buf (malloc'd, *len bytes) holds pf.  0 or -ENOMEM. */
int perun_pack(const struct perun_file *pf, char **buf, size_t *len);

/* Rebuild *pf (zeroed first) from buf.  0, -EINVAL for a malformed buffer
 * or -ENOMEM; *pf is empty on failure. */
int perun_unpack(const char *buf, size_t len, struct perun_file *pf);

#endif
