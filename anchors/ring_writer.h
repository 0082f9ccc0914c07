/*
 * ring_writer.h - the one writer of anchor ring files.
 *
 * Compiled into libanchor.so and, separately, into the `anchor` Python
 * module (which uses the preloaded copy when there is one).  State is one
 * process-wide mapping plus a per-thread ticket chunk.  Everything called
 * after ring_writer_open() is lock-free, allocation-free, stdio-free and
 * async-signal-safe; every function preserves errno.
 */
#ifndef ANCHOR_RING_WRITER_H
#define ANCHOR_RING_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "ring_format.h"

struct ring_writer_opts {
	const char *path;     /* ring file; created if absent */
	uint64_t size_bytes;  /* data area size for a new ring (0: default) */
	uint32_t mode;        /* enum anchor_ring_mode for a new ring */
};

#define RING_WRITER_DEFAULT_BYTES (32ull << 20)

/* Open or create the ring and map it.  0, or -errno with `err` filled with
 * a one-line reason.  Never blocks for long (a ring is published only once
 * complete; a never-finished one is refused after ~2 ms).  Installs a
 * SIGBUS guard: a fault in the ring's mapping (file truncated, disk full)
 * detaches with one stderr line instead of killing the host; other SIGBUS
 * go to the previous handler. */
int ring_writer_open(const struct ring_writer_opts *o, char *err, size_t errlen);

/* 1 when the last successful ring_writer_open created the ring. */
int ring_writer_created(void);

/* Called by the SIGBUS guard for a SIGBUS that is not the ring's and
 * would kill the process (default action), just before it does: lets
 * libanchor record the fatal signal.  Must be async-signal-safe. */
void ring_writer_set_bus_crash_hook(void (*fn)(int));

/* While the SIGBUS guard is installed, the program's own SIGBUS action
 * is kept as the one the guard chains to: store act (if any), return the
 * previous one in old (if any), and return 1.  0 when no guard is
 * installed (the caller then uses the real sigaction). */
struct sigaction;
int ring_writer_bus_chain(const struct sigaction *act, struct sigaction *old);

/* 1 when this process's SIGBUS guard detached the ring (its file lost
 * its pages) and said so on stderr. */
int ring_writer_lost(void);

/* 1 when a ring is mapped and writes go to it. */
int ring_writer_attached(void);

/* Path of the mapped ring ("" when none). */
const char *ring_writer_path(void);

/* Stop writing (records after this are silently skipped). */
void ring_writer_disable(void);

/* Write one record.  `text` (len bytes, need not be NUL-terminated) goes
 * into the name bytes and continuation slots, truncated to fit (flag
 * TRUNC).  `stack`/`nstack` add native return addresses.  0 or -errno. */
int ring_writer_emit(uint8_t kind, uint8_t flags, uint64_t value, const char *text, size_t len,
		     const uint64_t *stack, unsigned nstack);

/* ring_writer_emit with a timestamp taken by the caller (CLOCK_MONOTONIC
 * ns): a sampler stamps the midpoint of its reads, not the write. */
int ring_writer_emit_at(uint64_t ts_ns, uint8_t kind, uint8_t flags, uint64_t value, const char *text,
			size_t len);

/* MARK/BEGIN/END fast path: NUL-terminated name, optional value, stack
 * captured through the hook when one is set. */
int ring_writer_event(uint8_t kind, const char *name, size_t len, uint8_t flags, uint64_t value);

/* ring_writer_event for a NUL-terminated name (the C API): the length is
 * found while the name is loaded.  0, or -ENODEV with no ring (or no
 * name). */
int ring_writer_mark(uint8_t kind, const char *name, uint8_t flags, uint64_t value);

/* SYNC: narrowest of several bracketed CLOCK_MONOTONIC/CLOCK_REALTIME reads. */
int ring_writer_sync(void);

/* Capture hook for native stacks (set by libanchor.so when ANCHOR_STACKS=1):
 * fills up to max return addresses, returns how many.  Must be
 * async-signal-safe and allocation-free. */
typedef int (*ring_writer_stack_fn)(uint64_t *ips, int max);
void ring_writer_set_stack_hook(ring_writer_stack_fn fn);

/* Call in a forked child before it writes: new pid, fresh thread chunk,
 * FORK + SYNC records.  Registered with pthread_atfork by ring_writer_open;
 * exported for callers that fork by other means. */
void ring_writer_after_fork_child(void);

/* The pid records are stamped with (differs from getpid() only in a
 * vfork child, which shares the parent's memory). */
uint32_t ring_writer_pid(void);

/* CLOCK_MONOTONIC now, in ns. */
uint64_t ring_writer_now_ns(void);

#endif /* ANCHOR_RING_WRITER_H */
