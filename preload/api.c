/*
 * api.c - the public C API (anchor.h), thin wrappers over ring_writer.
 * A mark is one call into the writer (ring_writer_mark), whose first
 * thing is one load of the writer's live pointer, so with no ring
 * attached a call costs a call and a load.
 */
#include <string.h>

#include "anchor.h"
#include "ring_writer.h"

static void event(int kind, const char *name, unsigned flags, uint64_t value)
{
	ring_writer_mark((uint8_t)kind, name, (uint8_t)flags, value);
}

void anchor_mark(const char *name)
{
	event(ANCHOR_KIND_MARK, name, 0, 0);
}

void anchor_mark_value(const char *name, int64_t value)
{
	event(ANCHOR_KIND_MARK, name, ANCHOR_FLAG_VALUE, (uint64_t)value);
}

void anchor_mark_f64(const char *name, double value)
{
	uint64_t bits;
	memcpy(&bits, &value, sizeof bits);
	event(ANCHOR_KIND_MARK, name, ANCHOR_FLAG_VALUE | ANCHOR_FLAG_F64, bits);
}

void anchor_begin(const char *name)
{
	event(ANCHOR_KIND_BEGIN, name, 0, 0);
}

void anchor_end(const char *name)
{
	event(ANCHOR_KIND_END, name, 0, 0);
}

int anchor_event(int kind, const char *name, size_t len, unsigned flags, uint64_t value)
{
	/* DEV_*: device-side edges the Python module resolves (ring_format.h). */
	if (kind != ANCHOR_KIND_MARK && kind != ANCHOR_KIND_BEGIN && kind != ANCHOR_KIND_END &&
	    kind != ANCHOR_KIND_DEV_BEGIN && kind != ANCHOR_KIND_DEV_END && kind != ANCHOR_KIND_DEV_CLOCK &&
	    kind != ANCHOR_KIND_SITE)
		return -22; /* -EINVAL */
	if (!ring_writer_attached())
		return -19; /* -ENODEV */
	return ring_writer_event((uint8_t)kind, name ? name : "", name ? len : 0,
				 (uint8_t)(flags & (ANCHOR_FLAG_VALUE | ANCHOR_FLAG_F64)), value);
}

void anchor_sync(void)
{
	ring_writer_sync();
}

int anchor_enabled(void)
{
	return ring_writer_attached();
}

const char *anchor_ring_path(void)
{
	return ring_writer_path();
}
