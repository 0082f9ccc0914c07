/*
 * no_energy_note.h - the lines on stderr that say why a run has no joules
 * (no perun file given or found) and what the ring saw of perun
 * (input/perun_absent.h): `phases`, `anchorpost` alone and `report` print
 * them before their tables, and before the error when the run cannot be
 * opened without a perun file.
 */
#ifndef ANCHORPOST_NO_ENERGY_NOTE_H
#define ANCHORPOST_NO_ENERGY_NOTE_H

#include "model/energy_model.h"

/* The why of a run found by run_find.h without a perun file. */
#define PHASES_NO_PERUN_HERE "no perun file (*.hdf5 or *.h5, here, in perun/ or in perun_results/) beside the ring"

/* Why there are no joules (why: "no --perun given", ...) and what the
 * ring says of perun. */
void no_energy_note(const struct energy_model *m, const char *why);

/* The same for a run of several rings: the first one's account of perun
 * (nothing more when it cannot be read: its own error follows). */
void no_energy_note_ring(const char *ring, const char *why);

/* Opening the run failed: without a perun file, a ring with no phases is
 * most often perun's own failure (it never ran the script), so what the
 * ring saw of perun, printed before the caller's error.  Nothing with a
 * perun file or an unreadable ring. */
void no_energy_note_open_failed(const struct em_opts *o);

#endif
