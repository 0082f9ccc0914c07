/*
 * sample_labels.h - what the structure says about a py-spy sample's phase,
 * for the device rule (sample_energy.c): the phase a SITE record places
 * its stack in (pyspy_sites.h), and whether its stamped instant agrees.
 *
 * Only hard labels count: a stack holding a frame at the lines of a
 * `with anchor.phase(name)` body or of a decorated function (auto mode's
 * optimizer step, forward and backward) ran that phase's code.  A mark's
 * guessed segment (PYSPY_SITE_SOFT) and a set of phases ("one of these")
 * say too little to overrule a time.
 *
 * A labelled sample whose instant lies in no occurrence of its phase on
 * the launching thread was stamped at the wrong time: under load py-spy's
 * chrometrace stamps a sample up to tens of ms after it read the stack
 * (docs/functions.md, Alignment), so backward's last samples land in the
 * optimizer's 9 ms step.  The device rule then trusts the stack, not the
 * stamp.
 */
#ifndef ANCHORPOST_SAMPLE_LABELS_H
#define ANCHORPOST_SAMPLE_LABELS_H

#include <stddef.h>
#include <stdint.h>

#include "align/align_pyspy.h"
#include "align/pyspy_sites.h"
#include "input/pyspy.h"
#include "model/energy_model.h"

struct label_occ {
	int32_t phase;
	uint64_t t0_ns, t1_ns; /* ring CLOCK_MONOTONIC, as x_ns */
};

struct sample_labels {
	int32_t *lab;          /* per sample: index into ph.names, -1 no hard label */
	uint64_t *x_ns;        /* per sample: its instant on the ring's clock */
	struct label_occ *occ; /* the thread's occurrences, by (phase, t0) */
	size_t nocc, nlabelled;
};

/* Label every sample of p; the occurrences are those of (pid, tid).
 * 0 (nlabelled 0 when the ring has no SITE record) or -ENOMEM. */
int sample_labels_build(const struct energy_model *m, const struct pyspy_profile *p, const struct align_pyspy *a,
			const struct pyspy_sites *sites, uint32_t pid, uint32_t tid, struct sample_labels *out);

/* 1 when sample i is labelled and its instant lies in no occurrence of
 * its label's phase on the thread: the stack is right, the stamp wrong. */
int sample_labels_misstamped(const struct sample_labels *l, size_t i);

void sample_labels_free(struct sample_labels *l);

#endif
