/*
 * align_torch.h - put a torch.profiler / Kineto trace (input/torch_trace.c,
 * p->meta.torch) on the ring's timeline.  The result is a struct
 * align_pyspy with scale 1 and one offset for every thread (as py-spy's
 * chrometrace): timeline = offset_s + t_rel_s.  Methods and their
 * uncertainty: the opening comment of align_torch.c.
 */
#ifndef ANCHORPOST_ALIGN_TORCH_H
#define ANCHORPOST_ALIGN_TORCH_H

#include <stddef.h>
#include <stdint.h>

#include "align/align_pyspy.h"
#include "input/pyspy.h"
#include "input/ringload.h"
#include "phase/phase_set.h"

/* Align a loaded torch trace with the ring.  0, or -1 with a one-line
 * reason in *e, file NULL (no process of the trace in the ring, no clock
 * and no paired range), -ENOMEM. */
int align_torch_fit(const struct ringload *rl, const struct phase_set *ph, uint64_t base_ns,
		    const struct pyspy_profile *p, struct align_pyspy *a, struct em_error *e);

/* One line: method, offset, uncertainty, pairs, prior. */
void align_torch_describe(const struct align_pyspy *a, const struct pyspy_profile *p, char *buf, size_t cap);

/* align_pyspy_fit or align_torch_fit, by the profile's kind. */
static inline int align_profile_fit(const struct ringload *rl, const struct phase_set *ph, uint64_t base_ns,
				    const struct pyspy_profile *p, struct align_pyspy *a, struct em_error *e)
{
	return p->meta.torch ? align_torch_fit(rl, ph, base_ns, p, a, e) : align_pyspy_fit(rl, ph, base_ns, p, a, e);
}

#endif
