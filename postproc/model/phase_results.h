/*
 * phase_results.h - joules per phase and device group of one scope, the
 * attribution every writer shows (phase_table.h formats it).
 *
 * A scope is one exclusive timeline attributed against whole-machine power:
 * "all" (the run's primary thread) or one process (its primary thread).
 * Rows are indexed [phase * ngroups + group]; phase index nnames is
 * "(unattributed)" (time inside perun's span outside every phase).
 */
#ifndef ANCHORPOST_PHASE_RESULTS_H
#define ANCHORPOST_PHASE_RESULTS_H

#include <stdint.h>

#include "model/energy_model.h"

struct phase_group_row {
	double energy_j, lo_j, hi_j, incl_j; /* self energy, its 95 % interval, inclusive */
	double time_s;   /* exclusive seconds the attribution saw */
	int method;      /* attrib_method of the last sensor, 0 = none */
	int mixed;       /* sensors disagree on the method */
	unsigned flags;  /* ATTRIB_FLAG_* of every sensor */
};

struct phase_scope {
	long thr;                      /* primary thread index, -1 none */
	uint32_t pid;                  /* 0 = all */
	struct phase_group_row *row;   /* (nnames + 1) x ngroups */
	double *total_j;               /* per group, perun over its span */
};

/* Attribute one scope (thr, pid set by the caller) by the chosen method
 * (enum attrib_choice).  0, or a negative errno with *e filled (sr still
 * to be freed). */
int phase_scope_attribute(const struct energy_model *m, enum attrib_choice method, const struct attrib_opts *ao,
			  struct phase_scope *sr, struct em_error *e);

void phase_scope_free(struct phase_scope *sr);

/* Seconds of `phase` on the scope's primary thread's exclusive timeline
 * (0: the phase is not there, so it got no joules). */
double phase_scope_self_s(const struct energy_model *m, const struct phase_scope *sr, int phase);

#endif
