/*
 * run_model.h - one run, opened once: the ring and perun file on one
 * timeline (energy_model.h) and, optionally, the py-spy profile aligned
 * with the ring (align_pyspy.h) and each sample's energy (sample_energy.h).
 *
 * Every command that reads a run opens it here and then writes over it;
 * `report` opens it once and calls the same writers, so each input is read
 * once and report and the single commands cannot disagree.
 */
#ifndef ANCHORPOST_RUN_MODEL_H
#define ANCHORPOST_RUN_MODEL_H

#include "align/align_pyspy.h"
#include "align/align_torch.h"
#include "align/pyspy_sites.h"
#include "input/pyspy.h"
#include "model/energy_model.h"
#include "model/sample_energy.h"

struct run_model {
	struct energy_model m;
	const char *profile;       /* NULL: opened without a profile */
	struct pyspy_profile p;    /* with a profile: loaded ... */
	struct align_pyspy al;     /* ... aligned with the ring ... */
	struct sample_energy se;   /* ... and each sample's energy */
	int have_profile;
	char script[1024];         /* perun's script: frames named "<string>" point here */
	/* Once per run, for every consumer: */
	struct pyspy_sites sites;  /* the stacks' SITE labels (pyspy_sites.h) */
	uint32_t *fn_of_frame;     /* frames.n: the function (name, file) of a frame */
	uint32_t *fn_first;        /* nfn: each function's first frame */
	uint32_t nfn;
	char align_text[3072];     /* the alignment in one line (align_pyspy_describe) */
};

/* What to open: the ring and perun options, the profile (NULL: none). */
struct run_opts {
	struct em_opts em;
	const char *profile;
	/* Refuse a perun file without power sensors (the commands that give
	 * energy to samples: nothing to give). */
	int need_power;
};

/* Open, align, and (with a profile) give each sample its energy.  Returns
 * 0, or a negative errno with *e naming the file and saying why; nothing
 * is left to close then.  Prints nothing but the readers' warnings. */
int run_model_open(struct run_model *rm, const struct run_opts *o, struct em_error *e);

void run_model_close(struct run_model *rm);

#endif
