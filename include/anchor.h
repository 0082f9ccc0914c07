/*
 * anchor.h - the anchor C API: put high-resolution anchors into the run's
 * ring file from C, C++ or CUDA host code.
 *
 * Link with -lanchor, or call through a preloaded libanchor.so (declare the
 * functions weak and test for NULL if the library may be absent).  Every
 * function is thread-safe, async-signal-safe, allocation-free, preserves
 * errno, and costs about a nanosecond when no ring is attached
 * (ANCHOR_DISABLE=1, or attaching failed).  Names are copied; longer than
 * ANCHOR_NAME_MAX bytes are truncated.
 */
#ifndef ANCHOR_H
#define ANCHOR_H

#include <stddef.h>
#include <stdint.h>

/* ANCHOR_VERSION ("MAJOR.MINOR.PATCH") and ANCHOR_VERSION_{MAJOR,MINOR,PATCH}. */
#include "anchor_version.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ANCHOR_API __attribute__((visibility("default")))

/* An instant: "this happened now". */
ANCHOR_API void anchor_mark(const char *name);

/* An instant with an integer value (step number, batch size, ...). */
ANCHOR_API void anchor_mark_value(const char *name, int64_t value);

/* An instant with a floating-point value (loss, learning rate, ...). */
ANCHOR_API void anchor_mark_f64(const char *name, double value);

/* Open a range; ranges nest per thread and are matched by name. */
ANCHOR_API void anchor_begin(const char *name);

/* Close the innermost open range of this name (matched by anchorpost). */
ANCHOR_API void anchor_end(const char *name);

/* Low-level: write one record of kind 6 (mark), 7 (begin) or 8 (end) with
 * a name of len bytes and, if flags has bit 0, a 64-bit value (bit 1: the
 * value holds double bits).  Returns 0, or a negative errno (-ENODEV: no
 * ring attached).  Used by the Python module. */
ANCHOR_API int anchor_event(int kind, const char *name, size_t len, unsigned flags, uint64_t value);

/* Write a SYNC record (CLOCK_MONOTONIC <-> CLOCK_REALTIME pair) now. */
ANCHOR_API void anchor_sync(void);

/* 1 when a ring is attached. */
ANCHOR_API int anchor_enabled(void);

/* Path of the attached ring, "" when none. */
ANCHOR_API const char *anchor_ring_path(void);

#ifdef __cplusplus
}
#endif
#endif /* ANCHOR_H */
