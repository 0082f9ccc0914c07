/*
 * pyspy_sites.h - which phase a py-spy stack was taken in, read from the
 * stack itself (structure), not from the sample's time (issue 12 point 3).
 *
 * The Python module writes a SITE record (ring_format.h) per call site of
 * `with anchor.phase(name)` / `@anchor.phase(name)`: the file, function
 * and lines of code that run only while that phase is open.  py-spy
 * records, for every frame, the function and its current line, so a stack
 * holding a frame at a site's lines was taken inside the site's phase; the
 * innermost such frame names the innermost phase.  Nothing else is
 * inferred: a stack with no frame at a site stays unlabelled.
 */
#ifndef ANCHORPOST_PYSPY_SITES_H
#define ANCHORPOST_PYSPY_SITES_H

#include <stddef.h>
#include <stdint.h>

#include "anchors/ring_reader.h"
#include "input/pyspy.h"
#include "phase/phase_set.h"

/* anchor.sync_pulse(): the ring's range, and the function py-spy sees
 * running inside it.  With SITE records present, a stack holding that
 * function is labelled with the range too (it runs only inside it). */
#define PYSPY_PULSE_RANGE "anchor.sync_pulse"
#define PYSPY_PULSE_FRAME "_anchor_sync_pulse_busy"

/* In node_phase: the label comes from a mark's lines only (a guess from
 * the source order: a mark in a function called from those lines ends
 * the segment early), so a placement should prefer it, not insist. */
#define PYSPY_SITE_SOFT 0x40000000

struct pyspy_sites {
	int32_t *node_phase; /* per stack node: index into ph->names (| PYSPY_SITE_SOFT), -1 none */
	size_t nnodes;
	size_t nsites;       /* usable SITE records (phase in ph, unambiguous) */
	size_t nframes;      /* frames of the profile at a site */
};

/* Label every stack node of p.  0 (nsites may be 0: the ring has no SITE
 * record, e.g. written before ring format 1.2) or -ENOMEM. */
int pyspy_sites_label(const struct ring_file *rf, const struct phase_set *ph, const struct pyspy_profile *p,
		      struct pyspy_sites *out);

/* The phase of a stack, or -1. */
static inline int32_t pyspy_sites_of(const struct pyspy_sites *s, uint32_t stack)
{
	int32_t q = s->node_phase && stack < s->nnodes ? s->node_phase[stack] : -1;
	return q < 0 ? -1 : q & ~PYSPY_SITE_SOFT;
}

/* 1 when the stack's label comes from a mark (PYSPY_SITE_SOFT). */
static inline int pyspy_sites_soft(const struct pyspy_sites *s, uint32_t stack)
{
	int32_t q = s->node_phase && stack < s->nnodes ? s->node_phase[stack] : -1;
	return q >= 0 && (q & PYSPY_SITE_SOFT);
}

void pyspy_sites_free(struct pyspy_sites *s);

#endif
