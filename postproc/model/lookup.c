/*
 * lookup.c - the writers' lookups into a loaded profile (see lookup.h);
 * lookup_run.c holds those into the ring, the run and perun's file, so a
 * reader of profiles alone (tests/fuzz) links this one.
 */
#include "model/lookup.h"

uint32_t lookup_stack_frames(const struct pyspy_profile *p, uint32_t node, uint32_t *out, uint32_t cap)
{
	return pyspy_stack_frames(&p->stacks, node, out, cap);
}

const char *lookup_format_name(enum pyspy_format f)
{
	return pyspy_format_name(f);
}
