/*
 * internal.h - shared by the files of libanchor.so (not installed).
 */
#ifndef ANCHOR_PRELOAD_INTERNAL_H
#define ANCHOR_PRELOAD_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

/* Write "anchor[pid]: <parts...>\n" to stderr with one write(2): stack
 * buffer, no stdio, errno preserved (LTTng-UST style).  NULL ends parts.
 * 1 when the whole line was written. */
int anchor_log(const char *first, ...);

/* Disable anchoring for this process, saying why on stderr once per run
 * (ring_env.h, ring_env_say).  Not from a signal handler (setenv). */
void anchor_disable_once(const char *why, const char *detail);

/* 1 when ANCHOR_DEBUG is set. */
extern int anchor_debug;

/* Resolve the next definition of a libc symbol (RTLD_NEXT), cached by the
 * caller; NULL if none. */
void *anchor_next_sym(const char *name);

/* Record this process's exit once (status or signal). */
void anchor_record_exit(int status_or_sig, int is_signal, int known);

/* Install the native stack capture hook (ANCHOR_STACKS=1, libgcc). */
void anchor_stacks_enable(void);

/* ANCHOR_SENSORS=rapl,nvml: start the counter sampler thread if this
 * process is the run's sampler (sensors.c).  Never fails the host. */
void anchor_sensors_start(void);

/* Stop the sampler before exit tears libraries down; final: take one last
 * sample (not from a signal handler). */
void anchor_sensors_stop(int final);

/* Format "<key><decimal v>" (e.g. "status=3") into buf without stdio
 * (signal handlers use it); returns the length.  buf holds >= 24 bytes. */
int anchor_fmt_kv(char *buf, const char *key, unsigned v);

#endif
