/*
 * fn_energy.h - joules per Python function (name, file) and per stack
 * node from each sample's energy (sample_energy.h): self (the leaf's),
 * total (each function once per stack), per phase at the slice's middle,
 * and the unplaced samples' apart.  Computed once by the results stage
 * (results.h) for functions.csv, its stacks file and its summary.
 */
#ifndef ANCHORPOST_FN_ENERGY_H
#define ANCHORPOST_FN_ENERGY_H

#include <stddef.h>
#include <stdint.h>

#include "model/run_model.h"

#define NO_FRAME "(no python frame)"

struct func {
	const char *name, *file;
	uint32_t best_frame;
	double best_self;
};

struct fn_energy {
	size_t nfunc;
	struct func *fn;
	uint32_t *func_of_frame;
	double *self_j, *total_j; /* nfunc+1 x (ngroups+1): [0] = all groups */
	double *self_s, *phase_j; /* nfunc+1; (nfunc+1) x (nphase+1) */
	double *unplaced_j;       /* nfunc+1: joules of samples the alignment could not place (in no phase) */
	uint64_t *samples;
	double *frame_self;       /* per frame */
	/* per stack node */
	double *node_j;           /* nodes x (ngroups+1) */
	double *node_s, *node_phase_j, *node_un_j;
	uint64_t *node_n;
};

/* From rm's profile and sample energies.  0 or -ENOMEM (g still to be
 * freed). */
int fn_energy_build(struct fn_energy *g, const struct run_model *rm);

void fn_energy_free(struct fn_energy *g);

#endif
