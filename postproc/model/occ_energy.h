/*
 * occ_energy.h - each phase occurrence's own energy, where the data decide
 * it, with its 95 % interval; for occurrences.csv.
 *
 * phases.csv answers for a phase over all its occurrences: the split and
 * regression methods (attrib.h) fit one mean power per phase across many
 * sensor windows, which no single occurrence's energy follows from.  One
 * occurrence long against the sensor's period is measured by the windows
 * wholly inside it; its two partial windows get its own power there, with
 * bounds from the spread of its whole windows and a timing error at each
 * edge (attrib_occurrence).  So an occurrence gets joules when
 *   - a perun file with power sensors was given, whose values are window
 *     energies (RAPL: counters or window means; not NVML's readings);
 *   - it lies on the timeline the energy is attributed on (the run's
 *     primary thread, as phases.csv; GPU groups on the device-side
 *     timeline when the ring has one) and is not the tools' own activity;
 *   - it lies wholly inside perun's span;
 *   - it lasts ANCHOR_OCC_MIN_PERIODS sensor periods or more (tunables.h).
 * Otherwise its cell stays empty and `why` says which rule it missed.
 * Energy is inclusive: from its start to its end, nested phases included
 * (phases.csv's incl_energy_j is the per-phase sum of such spans).
 */
#ifndef ANCHORPOST_OCC_ENERGY_H
#define ANCHORPOST_OCC_ENERGY_H

#include <stddef.h>

#include "model/energy_model.h"
#include "util/diag.h"

enum occ_why {
	OCC_DECIDED = 0,
	OCC_NO_PERUN,      /* opened without a perun file */
	OCC_NO_SENSOR,     /* the perun file holds no power sensor */
	OCC_TOOL,          /* the tools' own activity: never attributed */
	OCC_OFF_PRIMARY,   /* on a thread whose time no joules follow */
	OCC_ON_DEVICE,     /* host side of a GPU group: its device row has them */
	OCC_OUTSIDE_SPAN,  /* not wholly inside perun's span */
	OCC_READINGS,      /* the sensor gives power readings, not window energies */
	OCC_SHORT,         /* shorter than the rule's minimum */
};

struct occ_cell {
	double energy_j, lo_j, hi_j; /* NAN unless why is OCC_DECIDED */
	enum occ_why why;
};

struct occ_energy {
	size_t nocc, ngroups;   /* m->ph.nocc, m->ngroups */
	struct occ_cell *cell;  /* [occ * ngroups + group], occ as m->ph.occ */
	double *min_s;          /* per group: the shortest occurrence given joules */
	const char *no_energy;  /* why no occurrence has joules (no file, no sensor), or NULL */
};

/* Every occurrence's cells.  0, or a negative errno with *e filled
 * (nothing left to free). */
int occ_energy_build(const struct energy_model *m, struct occ_energy *oe, struct em_error *e);

void occ_energy_free(struct occ_energy *oe);

/* The reason in words ("" for OCC_DECIDED); g's minimum for OCC_SHORT. */
void occ_energy_why(const struct occ_energy *oe, enum occ_why why, size_t g, char *buf, size_t cap);

#endif
