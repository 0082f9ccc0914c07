/*
 * lookup.c - the writers' lookups into a loaded profile (see lookup.h);
 * lookup_run.c holds those into the ring, the run and perun's file, so a
 * reader of profiles alone (tests/fuzz) links this one.
 */
#include "model/lookup.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

uint32_t lookup_stack_frames(const struct pyspy_profile *p, uint32_t node, uint32_t *out, uint32_t cap)
{
	return pyspy_stack_frames(&p->stacks, node, out, cap);
}

const char *lookup_format_name(enum pyspy_format f)
{
	return pyspy_format_name(f);
}

int lookup_distinct_frames(const struct pyspy_profile *p, struct pyspy_frames *tab, uint32_t *canon)
{
	for (uint32_t f = 0; f < p->frames.n; f++) {
		const struct pyspy_frame *fr = &p->frames.v[f];
		if (pyspy_frames_intern(tab, fr->name, strlen(fr->name), fr->file, fr->file ? strlen(fr->file) : 0,
					fr->line, &canon[f]))
			return -ENOMEM;
	}
	return 0;
}

void lookup_frames_free(struct pyspy_frames *tab)
{
	for (size_t i = 0; i < tab->nblocks; i++)
		free(tab->blocks[i]);
	free(tab->blocks);
	free(tab->v);
	free(tab->hash);
	memset(tab, 0, sizeof *tab);
}
