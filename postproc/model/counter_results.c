/*
 * counter_results.c - the ms counters per phase (see counter_results.h).
 */
#include "model/counter_results.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attrib/attrib.h"
#include "attrib/sensor_model.h"
#include "input/ring_sensors.h"
#include "util/diag.h"

/* Index of group name in cr->g, added when new; -ENOMEM. */
static long group_index(struct counter_results *cr, const char *name, size_t np)
{
	struct counter_group *g = cr->g;
	for (size_t i = 0; i < cr->ng; i++)
		if (!strcmp(g[i].name, name))
			return (long)i;
	g = &cr->g[cr->ng++]; /* counted even when short, so that the free frees it */
	snprintf(g->name, sizeof g->name, "%s", name);
	g->e_j = calloc(np + 1, sizeof(double));
	g->lo_j = calloc(np + 1, sizeof(double));
	g->hi_j = calloc(np + 1, sizeof(double));
	g->time_s = calloc(np + 1, sizeof(double));
	g->share = calloc(np + 1, sizeof(double));
	if (!g->e_j || !g->lo_j || !g->hi_j || !g->time_s || !g->share)
		return -ENOMEM;
	return (long)(cr->ng - 1);
}

void counter_results_free(struct counter_results *cr)
{
	for (size_t gi = 0; cr->g && gi < cr->ng; gi++) {
		free(cr->g[gi].e_j);
		free(cr->g[gi].lo_j);
		free(cr->g[gi].hi_j);
		free(cr->g[gi].time_s);
		free(cr->g[gi].share);
	}
	free(cr->g);
	memset(cr, 0, sizeof *cr);
}

/* One counter's exact per-phase integrals, its total and its energy over
 * perun's span, added to its group. */
static int add_counter(struct counter_results *cr, const struct energy_model *m, const struct ring_counter *ct,
		       const struct attrib_interval *iv, size_t niv, struct em_error *e)
{
	size_t np = m->ph.nnames;
	long gl = group_index(cr, ct->group, np);
	struct counter_group *g;
	struct attrib_result r;
	double *t;
	if (gl < 0)
		return diag_error(e, -ENOMEM, NULL, "out of memory");
	g = &cr->g[gl];
	t = malloc(ct->n * sizeof *t);
	if (!t)
		return diag_error(e, -ENOMEM, NULL, "out of memory");
	for (size_t i = 0; i < ct->n; i++)
		t[i] = energy_model_tl(m, ct->ts_ns[i]);
	memset(&r, 0, sizeof r);
	if (niv) {
		int rc2 = attrib_counters(t, ct->cum_j, ct->n, iv, niv, np, &r);
		if (rc2 && rc2 != -ENODATA) {
			free(t);
			return diag_error(e, rc2, m->rl.rf.path, "ms counter %s: attribution failed (%s)", ct->name,
					  strerror(-rc2));
		}
		for (size_t p = 0; !rc2 && p <= np; p++) {
			g->e_j[p] += r.row[p].energy_j;
			g->lo_j[p] += r.row[p].ci_low_j;
			g->hi_j[p] += r.row[p].ci_high_j;
			g->time_s[p] = r.row[p].time_s;
		}
		attrib_result_free(&r);
	}
	g->total_raw_j += ct->cum_j[ct->n - 1] - ct->cum_j[0];
	if (m->span_t1_s > m->span_t0_s) {
		uint64_t a = m->base_ns + (uint64_t)(m->span_t0_s * 1e9 > 0 ? m->span_t0_s * 1e9 : 0);
		uint64_t b = m->base_ns + (uint64_t)(m->span_t1_s * 1e9 > 0 ? m->span_t1_s * 1e9 : 0);
		g->span_j += ring_counter_at(ct, b) - ring_counter_at(ct, a);
	}
	free(t);
	return 0;
}

/* perun's energy of each group over its own span, for the cross-check. */
static void add_perun(struct counter_results *cr, const struct energy_model *m)
{
	for (size_t s = 0; s < m->nsen; s++)
		for (size_t gi = 0; gi < cr->ng; gi++)
			if (!strcmp(m->sen[s].group, cr->g[gi].name)) {
				cr->g[gi].perun_j += energy_model_slice_j(&m->sen[s], m->span_t0_s, m->span_t1_s);
				cr->g[gi].has_perun = 1;
				if (m->sen[s].ser.kind == ATTRIB_INSTANT_W)
					cr->g[gi].perun_readings = 1;
			}
}

/* Shares (gain-free), the GPU's gain floor, the cross-check's verdict. */
static void finish(struct counter_results *cr, size_t np)
{
	for (size_t gi = 0; gi < cr->ng; gi++) {
		struct counter_group *g = &cr->g[gi];
		int gpu = !strcmp(g->name, "gpu");
		for (size_t p = 0; p <= np; p++) {
			g->share[p] = g->total_raw_j > 0 ? g->e_j[p] / g->total_raw_j : NAN;
			if (gpu)
				g->e_j[p] = sensor_model_gpu_joules(g->e_j[p], &g->lo_j[p], &g->hi_j[p]);
		}
		g->total_lo_j = g->total_hi_j = NAN;
		g->total_j = g->total_raw_j;
		if (gpu)
			g->total_j = sensor_model_gpu_joules(g->total_j, &g->total_lo_j, &g->total_hi_j);
		if (isnan(g->total_lo_j))
			g->total_lo_j = g->total_j;
		if (isnan(g->total_hi_j))
			g->total_hi_j = g->total_j;
		g->diff = g->has_perun && g->perun_j > 0 ? (g->span_j - g->perun_j) / g->perun_j : NAN;
		g->agree = !isnan(g->diff) && fabs(g->diff) <= COUNTER_CROSSCHECK_REL;
		/* perun's GPU energy is a trapezoid over power readings, not a
		 * counter: a difference there is perun's estimate. */
		if (!isnan(g->diff) && !g->agree && !g->perun_readings)
			cr->disagree++;
	}
}

int counter_results_build(struct counter_results *cr, const struct energy_model *m, struct em_error *e)
{
	const struct phase_thread *th = m->ph.nthr ? &m->ph.thr[m->ph.primary] : NULL;
	struct attrib_interval *iv = NULL;
	struct ring_counters rc;
	size_t np = m->ph.nnames;
	int ret = 0, rcode;

	memset(cr, 0, sizeof *cr);
	rcode = ring_counters_build(m->rl.rf.ev, m->rl.rf.nev, &rc);
	if (rcode)
		return diag_error(e, rcode, m->rl.rf.path, "reading the sensor records: %s", strerror(-rcode));
	for (size_t k = 0; k < rc.n; k++)
		*(rc.c[k].gauge ? &cr->n_gauges : &cr->n_counters) += 1;
	if (!cr->n_counters && !cr->n_gauges) {
		ring_counters_free(&rc);
		return 0;
	}
	if (m->rl.rf.stats.overwritten_slots)
		diag_warn(m->rl.rf.path, "the ring wrapped (%llu slots overwritten): the sensor sampler writes 64 bytes "
					 "per tick (230 MB an hour at 1 kHz); phases and counters of the start are lost, "
					 "raise ANCHOR_RING_SIZE",
			  (unsigned long long)m->rl.rf.stats.overwritten_slots);
	cr->pid = rc.pid;
	cr->ticks = rc.ticks;
	cr->period_ms = rc.period_ms;
	cr->max_gap_ms = rc.max_gap_ms;
	cr->emulated = rc.emulated;
	cr->tid = th ? th->tid : 0;
	cr->has_thread = th && th->nseg;
	cr->g = calloc(rc.n, sizeof *cr->g);
	iv = malloc((th && th->nseg ? th->nseg : 1) * sizeof *iv);
	if (!cr->g || !iv) {
		ret = diag_error(e, -ENOMEM, NULL, "out of memory");
		goto out;
	}
	for (size_t i = 0; th && i < th->nseg; i++) {
		iv[i].t0_s = energy_model_tl(m, th->seg[i].t0_ns);
		iv[i].t1_s = energy_model_tl(m, th->seg[i].t1_ns);
		iv[i].phase = th->seg[i].phase;
	}
	for (size_t k = 0; k < rc.n; k++)
		if (!rc.c[k].gauge && (ret = add_counter(cr, m, &rc.c[k], iv, th ? th->nseg : 0, e)))
			goto out;
	add_perun(cr, m);
	finish(cr, np);
out:
	free(iv);
	ring_counters_free(&rc);
	return ret;
}
