/*
 * ring_procstart.h - the PROC_START record's text, written by libanchor.so
 * (preload/lifecycle.c) and by the Python module when it owns the writer
 * (python_hooks/src/procstart.c): one encoder, compiled into both.
 *
 * Layout (ring_format.h): NUL-separated key=value, host and the rank
 * variables (ring_rank.h) first, then exe, then argv last because it is
 * the field that gets truncated.
 */
#ifndef ANCHOR_RING_PROCSTART_H
#define ANCHOR_RING_PROCSTART_H

#include <stddef.h>

/* Emit PROC_START through ring_writer_emit with argv given as one
 * space-separated string of args_len bytes. */
void ring_procstart_emit(const char *args, size_t args_len);

#endif
