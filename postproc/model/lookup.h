/*
 * lookup.h - the lookups a writer makes into the loaded inputs: a process
 * by pid, a stack's frames, the phases a stack's SITE labels allow, the
 * names of formats and events, what perun states of a sensor.  Each is a
 * read of data the model already holds, never a computation over a run:
 * the attributions, alignments and counters are the results stage's
 * (results.h).  With these and the model's tables a writer needs no
 * header of input/, align/, attrib/ or anchors/ (tests/cli/t_layers.sh
 * checks it).
 */
#ifndef ANCHORPOST_LOOKUP_H
#define ANCHORPOST_LOOKUP_H

#include <stddef.h>
#include <stdint.h>

#include "input/perun.h"
#include "input/pyspy.h"
#include "input/ringload.h"
#include "model/run_model.h"

/* The ring's record of process pid (its first), NULL none. */
const struct ring_proc *lookup_proc(const struct ring_procs *t, uint32_t pid);

/* The frames of stack node, root first, into out (cap); its depth. */
uint32_t lookup_stack_frames(const struct pyspy_profile *p, uint32_t node, uint32_t *out, uint32_t cap);

/* The set of phases (bit per phase) a stack's SITE labels allow, 0 none. */
uint64_t lookup_stack_phases(const struct run_model *rm, uint32_t stack);

/* The profile's distinct (name, file, line) frames into tab (zeroed by the
 * caller; py-spy's table can repeat one), canon[f] each frame's index in
 * it.  0 or -ENOMEM; lookup_frames_free frees tab either way. */
int lookup_distinct_frames(const struct pyspy_profile *p, struct pyspy_frames *tab, uint32_t *canon);
void lookup_frames_free(struct pyspy_frames *tab);

/* "speedscope", "chrometrace", "raw", "auto". */
const char *lookup_format_name(enum pyspy_format f);

/* A record kind's name ("MARK", ...), an event's name (its text, or what
 * it stands for). */
const char *lookup_kind_name(unsigned kind);
void lookup_event_name(const struct ring_event *e, char *buf, size_t cap);

/* perun's file: how many power sensors, the metric a unit names, whether
 * a sensor is a power one, and the total energy perun stored for it (0,
 * or -ENOENT: none). */
size_t lookup_perun_power_sensors(const struct perun_file *pf);
const char *lookup_perun_metric(const char *unit);
int lookup_perun_is_power(const struct perun_sensor *s);
int lookup_perun_energy_j(const struct perun_sensor *s, double *energy_j);

#endif
