/*
 * writer.c - the module's own copy of THE ring writer.
 *
 * Included rather than listed as a second source so that `make` and
 * `pip install .` (setup.py at the root) compile the same file list:
 * every .c file in python_hooks/src with -I../anchors.  Its symbols stay hidden
 * (-fvisibility=hidden), so they never clash with libanchor.so's copy.
 */
#include "ring_writer.c"

#include "pyanchor.h"

/* The own-writer backend's event function lives here, in the writer's
 * translation unit, so the compiler can inline ring_writer_event and
 * emit_at into it: the Python mark path makes one call, not three. */
int pya_own_event(int kind, const char *name, size_t len, unsigned flags, uint64_t value)
{
	/* One acquire load when no ring is attached: the cheap no-op. */
	if (!ring_writer_attached()) {
		pya_own_detached();
		return -ENODEV;
	}
	return ring_writer_event((uint8_t)kind, name, len,
				 (uint8_t)(flags & (ANCHOR_FLAG_VALUE | ANCHOR_FLAG_F64)), value);
}
