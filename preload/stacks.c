/*
 * stacks.c - native stacks for ANCHOR_STACKS=1 via libunwind.
 *
 * Local-only unwinding: libunwind allocates its caches with mmap, not
 * malloc, so unw_backtrace is safe here, signal handlers included.
 */
#define UNW_LOCAL_ONLY
#include <libunwind.h>

#include "internal.h"
#include "ring_writer.h"

static int capture(uint64_t *ips, int max)
{
	void *buf[ANCHOR_STACK_MAX + 2];
	int n = unw_backtrace(buf, max + 2 > (int)(sizeof buf / sizeof buf[0]) ? (int)(sizeof buf / sizeof buf[0]) : max + 2);
	int out = 0;
	/* Skip our own two frames (capture, ring_writer_event). */
	for (int i = 2; i < n && out < max; i++)
		ips[out++] = (uint64_t)(uintptr_t)buf[i];
	return out;
}

void anchor_stacks_enable(void)
{
	ring_writer_set_stack_hook(capture);
}
