/*
 * run_warnings.h - what `phases`, `anchorpost` alone and `report` say once
 * on stderr about the run before their tables: no power sensors, ranges
 * without an end or a begin, marks kept as instants, a run perun saved as
 * failed, and what perun's command line or config spell the old way.
 */
#ifndef ANCHORPOST_RUN_WARNINGS_H
#define ANCHORPOST_RUN_WARNINGS_H

#include "model/energy_model.h"

void run_warnings(const struct energy_model *m, const struct em_opts *o);

#endif
