/*
 * plot_layers.h - the layer picture: joules per layer (anchor.torch.layers'
 * "PATH/forward", "PATH/backward" phases), forward and backward side by
 * side, 95 % intervals as error bars, from the "all" scope of the phase
 * table (plot_layers.c).
 */
#ifndef ANCHORPOST_PLOT_LAYERS_H
#define ANCHORPOST_PLOT_LAYERS_H

#include "output/plot.h"

/* 0, or a negative errno with *e filled. */
int plot_layers(const struct energy_model *m, const struct phase_scope *sr, const char *title, const char *path,
		enum plot_kind kind, struct em_error *e);

/* Phases named as layers (0: no layer picture to draw). */
int plot_layers_count(const struct energy_model *m);

#endif
