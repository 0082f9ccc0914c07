/* occ_energy.c - each occurrence's own joules (see occ_energy.h). */
#include "model/occ_energy.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attrib/attrib.h"
#include "util/tunables.h"

/* The thread whose timeline group g's energy follows (phase_results.c's
 * rule for the "all" scope), or NULL. */
static const struct phase_thread *thread_of_group(const struct energy_model *m, size_t g)
{
	uint32_t pid = energy_model_own_pid(m);
	long dthr = phase_set_device_of(&m->ph, pid);
	if (!m->ph.nthr)
		return NULL;
	if (dthr >= 0 && phase_set_group_is_device(m->groups[g]))
		return &m->ph.thr[dthr];
	return &m->ph.thr[m->ph.primary];
}

static int on_thread(const struct phase_occ *o, const struct phase_thread *th)
{
	return th && o->pid == th->pid && o->tid == th->tid;
}

/* Sensor s over every occurrence of th still open in group g's cells
 * (attrib_occurrence), folded into those cells. */
static void one_sensor(const struct energy_model *m, const struct em_sensor *s, size_t g, const struct phase_thread *th,
		       struct occ_energy *oe)
{
	const struct attrib_series *ser = &s->ser;
	size_t ng = oe->ngroups, n = ser->n;
	double period = n > 1 ? (s->t_tl[n - 1] - s->t_tl[0]) / (double)(n - 1) : 0, min_s, timing_s;

	/* Readings (NVML) are power samples, not window energies: one
	 * occurrence would rest on interpolating them. */
	if (ser->kind == ATTRIB_INSTANT_W) {
		for (size_t i = 0; i < m->ph.nocc; i++)
			if (on_thread(&m->ph.occ[i], th) && oe->cell[i * ng + g].why == OCC_DECIDED)
				oe->cell[i * ng + g].why = OCC_READINGS;
		return;
	}
	min_s = ANCHOR_OCC_MIN_PERIODS * period;
	if (min_s > oe->min_s[g])
		oe->min_s[g] = min_s;
	/* perun's read lag, and the alignment's own 95 % interval when it
	 * has one (the fallback without perun's stamps).  A fitted lag
	 * (sensor_lag.h) leaves its own range plus what one read may differ
	 * from the mean lag (ANCHOR_OCC_READ_S): each edge of one occurrence
	 * meets one read, which a phase's many edges average out. */
	timing_s = (sensor_lag_timing_s(s) > 0 ? sensor_lag_timing_s(s) + ANCHOR_OCC_READ_S : ANCHOR_OCC_TIMING_S) +
		   (isfinite(m->align.ci95_ms) ? m->align.ci95_ms / 1e3 : 0);
	for (size_t i = 0; i < m->ph.nocc; i++) {
		const struct phase_occ *o = &m->ph.occ[i];
		struct occ_cell *c = &oe->cell[i * ng + g];
		double a = energy_model_tl(m, o->t0_ns), b = energy_model_tl(m, o->t1_ns);
		struct attrib_occ r;
		int rc;
		if (!on_thread(o, th) || c->why != OCC_DECIDED)
			continue;
		if (b - a < min_s) {
			c->why = OCC_SHORT;
			continue;
		}
		rc = attrib_occurrence(s->t_tl, s->cum_j, n, a, b, timing_s, &r);
		if (rc) {
			c->why = rc == -ERANGE ? OCC_OUTSIDE_SPAN : OCC_SHORT;
			continue;
		}
		/* A group's sensors add up, and their bounds with them (as
		 * phase_results.c adds the rows' intervals). */
		c->energy_j += r.energy_j;
		c->lo_j += r.lo_j;
		c->hi_j += r.hi_j;
	}
}

int occ_energy_build(const struct energy_model *m, struct occ_energy *oe, struct em_error *e)
{
	size_t no = m->ph.nocc, ng = m->ngroups;
	int rc = 0;

	memset(oe, 0, sizeof *oe);
	oe->nocc = no;
	oe->ngroups = ng;
	oe->no_energy = m->times_only ? "no perun file" : !m->nsen ? "the perun file holds no power sensor" : NULL;
	if (!ng)
		return 0;
	oe->cell = calloc(no ? no * ng : 1, sizeof *oe->cell);
	oe->min_s = calloc(ng, sizeof *oe->min_s);
	if (!oe->cell || !oe->min_s) {
		rc = diag_error(e, -ENOMEM, NULL, "out of memory");
		goto out;
	}
	for (size_t g = 0; g < ng; g++) {
		const struct phase_thread *th = thread_of_group(m, g);
		const struct phase_thread *host = m->ph.nthr ? &m->ph.thr[m->ph.primary] : NULL;
		for (size_t i = 0; i < no; i++) {
			const struct phase_occ *o = &m->ph.occ[i];
			struct occ_cell *c = &oe->cell[i * ng + g];
			c->why = phase_set_is_tool(&m->ph, o->phase) ? OCC_TOOL
				 : on_thread(o, th)                   ? OCC_DECIDED
				 : on_thread(o, host)                 ? OCC_ON_DEVICE
								      : OCC_OFF_PRIMARY;
		}
		for (size_t s = 0; s < m->nsen; s++)
			if (energy_model_group_of(m, &m->sen[s]) == g)
				one_sensor(m, &m->sen[s], g, th, oe);
	}
	for (size_t i = 0; i < no * ng; i++)
		if (oe->cell[i].why != OCC_DECIDED)
			oe->cell[i].energy_j = oe->cell[i].lo_j = oe->cell[i].hi_j = NAN;
out:
	if (rc)
		occ_energy_free(oe);
	return rc;
}

void occ_energy_free(struct occ_energy *oe)
{
	free(oe->cell);
	free(oe->min_s);
	memset(oe, 0, sizeof *oe);
}

void occ_energy_why(const struct occ_energy *oe, enum occ_why why, size_t g, char *buf, size_t cap)
{
	switch (why) {
	case OCC_DECIDED:
		snprintf(buf, cap, "%s", "");
		break;
	case OCC_NO_PERUN:
		snprintf(buf, cap, "no perun file");
		break;
	case OCC_NO_SENSOR:
		snprintf(buf, cap, "the perun file holds no power sensor");
		break;
	case OCC_TOOL:
		snprintf(buf, cap, "the tools' own activity: not attributed (as in phases.csv)");
		break;
	case OCC_OFF_PRIMARY:
		snprintf(buf, cap, "not on the thread whose timeline the energy is attributed on (phases.csv: off-primary)");
		break;
	case OCC_ON_DEVICE:
		snprintf(buf, cap, "attributed on the device-side timeline: see this phase's rows with timeline device");
		break;
	case OCC_OUTSIDE_SPAN:
		snprintf(buf, cap, "not wholly inside perun's span");
		break;
	case OCC_READINGS:
		snprintf(buf, cap, "the sensor's values are power readings, not window energies: one occurrence's joules "
				   "would rest on interpolating them; phases.csv has the phase's");
		break;
	case OCC_SHORT:
		snprintf(buf, cap, "shorter than %.0f ms (%.0f sensor periods), or no whole sensor window inside: one "
				   "occurrence's joules are not measurable; phases.csv has the phase's",
			 g < oe->ngroups ? oe->min_s[g] * 1e3 : 0.0, ANCHOR_OCC_MIN_PERIODS);
		break;
	}
}
