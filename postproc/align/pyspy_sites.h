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
 *
 * One site may open several phases (a generic helper, `with
 * anchor.phase(name)` for every name; a computed name): its frames are
 * labelled with the *set* of them (issue 21), and an outer frame whose
 * set meets it narrows it (the helper's caller's line, anchor/_body_sites.py:
 * run("fwd", ...) at line 12 is the set {fwd}).  Only phases 0..63 go into
 * a set; a label with more than one phase has no single phase
 * (pyspy_sites_of is -1) and says only "in one of these".
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
	int32_t *node_phase; /* per stack node: index into ph->names (| PYSPY_SITE_SOFT), -1 none or a set */
	uint64_t *node_set;  /* per stack node: the phases it may be in (bit q: ph->names[q]), 0 none */
	size_t nnodes;
	size_t nsites;       /* usable sites (phase in ph; one site with several names counts once) */
	size_t nset_sites;   /* of those, sites with more than one phase */
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

/* The set of phases a stack may be in (a single label's bit included),
 * 0 unlabelled. */
static inline uint64_t pyspy_sites_set(const struct pyspy_sites *s, uint32_t stack)
{
	return s->node_set && stack < s->nnodes ? s->node_set[stack] : 0;
}

/* 1 when the stack's label comes from a mark (PYSPY_SITE_SOFT). */
static inline int pyspy_sites_soft(const struct pyspy_sites *s, uint32_t stack)
{
	int32_t q = s->node_phase && stack < s->nnodes ? s->node_phase[stack] : -1;
	return q >= 0 && (q & PYSPY_SITE_SOFT);
}

void pyspy_sites_free(struct pyspy_sites *s);

#endif
