/*
 * phase_results.c - one scope's attribution (see phase_results.h).
 *
 * Energy is attributed on one thread's exclusive timeline per scope (the
 * thread with the most phase time): whole-machine power is explained by
 * what that thread was doing.  Phases only seen on other threads get their
 * time statistics and no joules.
 */
#include "model/phase_results.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attrib/sensor_model.h"
#include "model/attrib_count.h"
#include "util/diag.h"

/* Inclusive energy: the self energy of every segment inside each
 * outermost occurrence of the phase on the primary thread. */
static void inclusive_energy(const struct energy_model *m, struct phase_scope *sr, const struct phase_thread *host,
			     const struct phase_thread *dev)
{
	size_t ng = m->ngroups;
	for (size_t g = 0; g < ng; g++) {
		const struct phase_thread *th = dev && phase_set_group_is_device(m->groups[g]) ? dev : host;
		for (size_t i = 0; i < m->ph.nocc; i++) {
			const struct phase_occ *o = &m->ph.occ[i];
			int outer = 1;
			if (o->pid != th->pid || o->tid != th->tid)
				continue;
			for (size_t j = 0; j < m->ph.nocc && outer; j++) {
				const struct phase_occ *p = &m->ph.occ[j];
				if (j != i && p->pid == o->pid && p->tid == o->tid && p->phase == o->phase &&
				    p->t0_ns <= o->t0_ns && p->t1_ns >= o->t1_ns &&
				    (p->t0_ns < o->t0_ns || p->t1_ns > o->t1_ns || j < i))
					outer = 0;
			}
			if (!outer)
				continue;
			for (size_t k = 0; k < th->nseg; k++) {
				const struct phase_seg *sg = &th->seg[k];
				uint64_t a = sg->t0_ns > o->t0_ns ? sg->t0_ns : o->t0_ns;
				uint64_t b = sg->t1_ns < o->t1_ns ? sg->t1_ns : o->t1_ns;
				const struct phase_group_row *self = &sr->row[(size_t)sg->phase * ng + g];
				if (b <= a || self->time_s <= 0)
					continue;
				double a_s = energy_model_tl(m, a), b_s = energy_model_tl(m, b);
				if (a_s < m->span_t0_s)
					a_s = m->span_t0_s;
				if (b_s > m->span_t1_s)
					b_s = m->span_t1_s;
				if (b_s > a_s)
					sr->row[(size_t)o->phase * ng + g].incl_j += self->energy_j / self->time_s * (b_s - a_s);
			}
		}
	}
}

/* One sensor against thread th's segments (iv: scratch for them), added
 * to the scope's rows of its group. */
static int attribute_sensor(const struct energy_model *m, enum attrib_choice method, const struct attrib_opts *ao,
			    const struct em_sensor *es, const struct phase_thread *th, struct attrib_interval *iv,
			    struct phase_scope *sr, struct em_error *e)
{
	size_t np = m->ph.nnames, ng = m->ngroups, g = energy_model_group_of(m, es), niv = 0;
	struct attrib_result r;
	int rc;
	/* Sensor time = timeline - the sensor's offset (the alignment's,
	 * less its fitted lag).  The tools' own activity
	 * (perun's MPI set-up, sync pulses: a few ms, sometimes 0) is no
	 * phase to fit a power to: its time stays unattributed. */
	for (size_t i = 0; i < th->nseg; i++) {
		if (phase_set_is_tool(&m->ph, th->seg[i].phase))
			continue;
		iv[niv].t0_s = energy_model_tl(m, th->seg[i].t0_ns) - es->tl_offset_s;
		iv[niv].t1_s = energy_model_tl(m, th->seg[i].t1_ns) - es->tl_offset_s;
		iv[niv].phase = th->seg[i].phase;
		niv++;
	}
	memset(&r, 0, sizeof r);
	attrib_count_note("the ring", th->tid, es->ps->id);
	/* A fitted lag says how much timing error is left (sensor_lag.h);
	 * an alignment known less well than that still widens by its own. */
	struct attrib_opts ao_s = *ao;
	if (sensor_lag_timing_s(es) > ao_s.offset_sigma_s)
		ao_s.offset_sigma_s = sensor_lag_timing_s(es);
	ao_s.blur_s = sensor_lag_blur_s(es);
	rc = attrib_choose(method, &es->ser, iv, niv, np, &ao_s, &r);
	if (rc == -ENODATA)
		return diag_error(e, rc, m->rl.rf.path, "too few perun sample windows over the phases of "
				  "thread %u to attribute %zu phases (a run of a few sampling periods, or "
				  "files from different runs?)", th->tid, np);
	if (rc)
		return diag_error(e, rc, m->pf.app, "attribution failed on sensor %s (%s)", es->ps->id,
				  strerror(-rc));
	/* A GPU's absolute joules carry its board's gain error (±5 %, or
	 * the --gpu-gain calibration); its shares do not: every row and the
	 * total scale alike (sensor_model.h). */
	if (!strcmp(es->group, "gpu")) {
		double lo = NAN, hi = NAN;
		r.total_j = sensor_model_gpu_joules(r.total_j, &lo, &hi);
		for (size_t k = 0; k <= np; k++)
			r.row[k].energy_j = sensor_model_gpu_joules(r.row[k].energy_j, &r.row[k].ci_low_j, &r.row[k].ci_high_j);
	}
	sr->total_j[g] += r.total_j;
	for (size_t k = 0; k <= np; k++) {
		struct phase_group_row *gr = &sr->row[k * ng + g];
		const struct attrib_row *ar = &r.row[k];
		gr->energy_j += ar->energy_j;
		gr->lo_j += ar->ci_low_j;
		gr->hi_j += ar->ci_high_j;
		gr->time_s = ar->time_s;
		if (gr->method && gr->method != (int)ar->method)
			gr->mixed = 1;
		gr->method = (int)ar->method;
		gr->flags |= ar->flags;
	}
	attrib_result_free(&r);
	return 0;
}

/* Attribute one scope: its primary thread's segments against every sensor. */
int phase_scope_attribute(const struct energy_model *m, enum attrib_choice method, const struct attrib_opts *ao,
			  struct phase_scope *sr, struct em_error *e)
{
	size_t np = m->ph.nnames, ng = m->ngroups;
	const struct phase_thread *host, *dev = NULL;
	struct attrib_interval *iv;
	long dthr = phase_set_device_of(&m->ph, sr->pid);

	sr->row = calloc((np + 1) * (ng ? ng : 1), sizeof *sr->row);
	sr->total_j = calloc(ng ? ng : 1, sizeof *sr->total_j);
	if (!sr->row || !sr->total_j)
		return diag_error(e, -ENOMEM, NULL, "out of memory");
	if (sr->thr < 0 || !m->nsen)
		return 0;
	host = &m->ph.thr[sr->thr];
	/* GPU groups on the device timeline when the ring has one. */
	if (dthr >= 0)
		dev = &m->ph.thr[dthr];
	iv = malloc((host->nseg > (dev ? dev->nseg : 0) ? host->nseg + 1 : dev->nseg + 1) * sizeof *iv);
	if (!iv)
		return diag_error(e, -ENOMEM, NULL, "out of memory");
	/* An alignment known only to within its 95 % interval (the fallback
	 * without perun's stamps) moves every phase by up to that much: the
	 * intervals are widened by the change such a shift makes. */
	struct attrib_opts ao_al = ao ? *ao : (struct attrib_opts){0};
	if (m->align.ci95_ms / 1e3 > ao_al.offset_sigma_s && m->align.ci95_ms > 3.0)
		ao_al.offset_sigma_s = m->align.ci95_ms / 1e3;
	for (size_t s = 0; s < m->nsen; s++) {
		const struct em_sensor *es = &m->sen[s];
		const struct phase_thread *th = dev && phase_set_group_is_device(es->group) ? dev : host;
		int rc = attribute_sensor(m, method, &ao_al, es, th, iv, sr, e);
		if (rc) {
			free(iv);
			return rc;
		}
	}
	free(iv);
	inclusive_energy(m, sr, host, dev);
	return 0;
}

void phase_scope_free(struct phase_scope *sr)
{
	free(sr->row);
	free(sr->total_j);
	sr->row = NULL;
	sr->total_j = NULL;
}

double phase_scope_self_s(const struct energy_model *m, const struct phase_scope *sr, int phase)
{
	const struct phase_thread *th;
	double s = 0;
	if (sr->thr < 0)
		return 0;
	th = &m->ph.thr[sr->thr];
	for (size_t i = 0; i < th->nseg; i++)
		if (th->seg[i].phase == phase)
			s += (double)(th->seg[i].t1_ns - th->seg[i].t0_ns) / 1e9;
	return s;
}

