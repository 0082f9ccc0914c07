/*
 * pyspy_energy.h - the energy-weighted speedscope: py-spy's stacks with
 * one weight in joules per sample (functions' --speedscope-out, report's
 * energy.speedscope.json).
 */
#ifndef ANCHORPOST_PYSPY_ENERGY_H
#define ANCHORPOST_PYSPY_ENERGY_H

#include <stdio.h>

#include "model/lookup.h"

/* Write an energy-weighted speedscope file from the model: one sampled
 * profile per thread, the model's stacks, weight_j[i] (joules, >= 0, NaN
 * written as 0) for sample i, unit "none", profile names end in
 * "(joules)".  0 or -errno. */
int pyspy_write_energy_speedscope(const struct pyspy_profile *p, const double *weight_j, FILE *fp,
				  const char *name);

#endif
