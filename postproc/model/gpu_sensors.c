/* gpu_sensors.c - a run's GPU sensors from its own data (see gpu_sensors.h). */
#include "model/gpu_sensors.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attrib/sensor_model.h"

/* The counter at its update points: the first sample, then each tick
 * whose value changed, placed mid-way between that tick and the one
 * before (the update happened in between). */
struct upd {
	double *t, *e;
	size_t n;
};

static int counter_updates(const struct ring_counter *c, uint64_t base, struct upd *u, double *h)
{
	u->t = malloc(c->n * sizeof *u->t);
	u->e = malloc(c->n * sizeof *u->e);
	u->n = 0;
	if (!u->t || !u->e)
		return -ENOMEM;
	for (size_t i = 0; i < c->n; i++) {
		if (i && c->cum_j[i] == c->cum_j[i - 1])
			continue;
		u->t[u->n] = i ? ((double)(c->ts_ns[i] - base) + (double)(c->ts_ns[i - 1] - base)) / 2e9
			       : (double)(c->ts_ns[0] - base) / 1e9;
		if (h)
			h[u->n] = i ? (double)(c->ts_ns[i] - c->ts_ns[i - 1]) / 2e9 : 0;
		u->e[u->n++] = c->cum_j[i];
	}
	return 0;
}

static double tl(uint64_t ts, uint64_t base)
{
	return ((double)ts - (double)base) / 1e9;
}

/* A thread's exclusive timeline on this timeline's seconds. */
static struct attrib_interval *segs(const struct phase_thread *th, uint64_t base)
{
	struct attrib_interval *iv = malloc((th->nseg ? th->nseg : 1) * sizeof *iv);
	for (size_t i = 0; iv && i < th->nseg; i++) {
		iv[i].t0_s = tl(th->seg[i].t0_ns, base);
		iv[i].t1_s = tl(th->seg[i].t1_ns, base);
		iv[i].phase = th->seg[i].phase;
	}
	return iv;
}

/* The counter's energy per phase on one timeline (attrib_split over its
 * update windows); -ENODATA when it cannot say. */
static int split_on(const struct upd *u, const struct phase_set *ph, long thr, uint64_t base,
		    struct attrib_result *r)
{
	struct attrib_series s = {.t_s = u->t, .value = u->e, .n = u->n, .kind = ATTRIB_COUNTER_J};
	struct attrib_interval *iv;
	int rc;
	if (thr < 0 || !ph->thr[thr].nseg || u->n < 3)
		return -ENODATA;
	if (!(iv = segs(&ph->thr[thr], base)))
		return -ENOMEM;
	rc = attrib_choose(ATTRIB_CHOICE_AUTO, &s, iv, ph->thr[thr].nseg, ph->nnames, NULL, r);
	free(iv);
	return rc;
}

/* Per phase: occurrences on the host thread and on the device timeline. */
static int phase_rows(struct gpu_sensor *g, const struct upd *u, const struct phase_set *ph, uint64_t base,
		      long host, long dev)
{
	struct attrib_result rh, rd;
	int ch, cd;
	g->rows = calloc(ph->nnames ? ph->nnames : 1, sizeof *g->rows);
	if (!g->rows)
		return -ENOMEM;
	for (size_t p = 0; p < ph->nnames; p++)
		g->rows[p].phase = (int)p;
	for (size_t i = 0; i < ph->nocc; i++) {
		const struct phase_occ *o = &ph->occ[i];
		struct gpu_phase_row *r = &g->rows[o->phase];
		double d = tl(o->t1_ns, base) - tl(o->t0_ns, base);
		if (host >= 0 && o->pid == ph->thr[host].pid && o->tid == ph->thr[host].tid) {
			r->count++;
			r->host_s += d;
		} else if (dev >= 0 && o->pid == ph->thr[dev].pid && o->tid == ph->thr[dev].tid) {
			r->dev_s += d;
		}
	}
	memset(&rh, 0, sizeof rh);
	memset(&rd, 0, sizeof rd);
	ch = split_on(u, ph, host, base, &rh);
	cd = split_on(u, ph, dev, base, &rd);
	if (ch == -ENOMEM || cd == -ENOMEM) {
		attrib_result_free(&rh);
		attrib_result_free(&rd);
		return -ENOMEM;
	}
	for (size_t p = 0; p < ph->nnames; p++) {
		struct gpu_phase_row *r = &g->rows[p];
		r->host_j = r->host_lo = r->host_hi = r->dev_j = r->dev_lo = r->dev_hi = NAN;
		if (!ch) {
			r->host_j = rh.row[p].energy_j;
			r->host_lo = rh.row[p].ci_low_j;
			r->host_hi = rh.row[p].ci_high_j;
		}
		if (!cd) {
			r->dev_j = rd.row[p].energy_j;
			r->dev_lo = rd.row[p].ci_low_j;
			r->dev_hi = rd.row[p].ci_high_j;
		}
		r->host_glo = r->host_lo, r->host_ghi = r->host_hi, r->dev_glo = r->dev_lo, r->dev_ghi = r->dev_hi;
		r->host_gj = sensor_model_gpu_joules(r->host_j, &r->host_glo, &r->host_ghi);
		r->dev_gj = sensor_model_gpu_joules(r->dev_j, &r->dev_glo, &r->dev_ghi);
	}
	if (!ch)
		attrib_result_free(&rh);
	if (!cd)
		attrib_result_free(&rd);
	g->nrows = ph->nnames;
	return 0;
}

/* One gauge's identification against the phases th (NULL: none). */
static int fit_gauge(const struct ring_counter *gauge, const struct phase_thread *th, size_t n_phase, uint64_t base,
		     struct sensor_ident *id)
{
	size_t niv = th ? th->nseg : 0;
	double *t = malloc(gauge->n * sizeof *t);
	struct attrib_interval *iv = malloc((niv ? niv : 1) * sizeof *iv);
	int rc = -ENOMEM;
	if (t && iv) {
		for (size_t i = 0; i < gauge->n; i++)
			t[i] = tl(gauge->ts_ns[i], base);
		for (size_t i = 0; i < niv; i++) {
			iv[i].t0_s = tl(th->seg[i].t0_ns, base);
			iv[i].t1_s = tl(th->seg[i].t1_ns, base);
			iv[i].phase = th->seg[i].phase;
		}
		rc = sensor_ident_fit(t, gauge->value_w, gauge->n, iv, niv, n_phase, id);
	}
	free(t);
	free(iv);
	return rc;
}

static int one_gpu(struct gpu_sensor *g, const struct ring_counter *ctr, const struct ring_counter *gauge,
		   const struct ring_counter *ginst, const struct phase_set *ph, uint64_t base, long host, long dev)
{
	const struct phase_thread *th = dev >= 0 ? &ph->thr[dev] : host >= 0 ? &ph->thr[host] : NULL;
	struct upd u = {0};
	double *h = malloc(ctr->n * sizeof *h);
	int rc;
	snprintf(g->name, sizeof g->name, "%s", ctr->name);
	if (!h)
		return -ENOMEM;
	if ((rc = counter_updates(ctr, base, &u, h)))
		goto out;
	/* The first point is the first sample, not an update: left out of
	 * the interval's fit. */
	rc = u.n > 1 ? sensor_ident_grid(u.t + 1, h + 1, u.n - 1, &g->counter, &g->counter_why)
		     : (g->counter_why = "the counter never changed", -ENODATA);
	if (rc == -ENOMEM)
		goto out;
	if ((rc = phase_rows(g, &u, ph, base, host, dev)))
		goto out;
	if (ginst) {
		g->has_instant = 1;
		if ((rc = fit_gauge(ginst, th, ph->nnames, base, &g->inst)))
			goto out;
	}
	if (gauge) {
		g->has_power = 1;
		if ((rc = fit_gauge(gauge, th, ph->nnames, base, &g->id)))
			goto out;
	}
	/* Counter against the readings between its first and last update
	 * (both exact there). */
	if (u.n > 2 && (gauge || ginst)) {
		double a = u.t[1], b = u.t[u.n - 1];
		uint64_t ta = base + (uint64_t)(a * 1e9), tb = base + (uint64_t)(b * 1e9);
		g->cmp_span_s = b - a;
		g->cmp_counter_j = u.e[u.n - 1] - u.e[1];
		g->cmp_power_j = gauge ? ring_counter_at(gauge, tb) - ring_counter_at(gauge, ta) : NAN;
		g->cmp_instant_j = ginst ? ring_counter_at(ginst, tb) - ring_counter_at(ginst, ta) : NAN;
	}
	rc = 0;
out:
	free(u.t);
	free(u.e);
	free(h);
	return rc;
}

int gpu_sensors_build(const struct ring_event *ev, size_t nev, const struct phase_set *ph, struct gpu_sensors *out)
{
	struct ring_counters rc;
	long dev = phase_set_device_of(ph, 0), host;
	uint64_t base;
	int r = 0;
	memset(out, 0, sizeof *out);
	if ((r = ring_counters_build(ev, nev, &rc)))
		return r;
	host = dev >= 0 ? phase_set_primary_of(ph, ph->thr[dev].pid) : ph->nthr ? (long)ph->primary : -1;
	out->emulated = rc.emulated;
	out->device_timeline = dev >= 0;
	out->tick_ms = rc.period_ms;
	out->gain_calibrated = sensor_model_gpu_gain > 0;
	out->g = calloc(rc.n ? rc.n : 1, sizeof *out->g);
	if (!out->g) {
		ring_counters_free(&rc);
		return -ENOMEM;
	}
	base = rc.n ? rc.c[0].ts_ns[0] : 0;
	for (size_t k = 0; k < rc.n && !r; k++) {
		const struct ring_counter *gauge = NULL, *ginst = NULL;
		char iname[48];
		if (strcmp(rc.c[k].group, "gpu") || rc.c[k].n < 2)
			continue;
		snprintf(iname, sizeof iname, "%s.instant", rc.c[k].name);
		for (size_t j = 0; j < rc.n; j++) {
			if (rc.c[j].gauge && !strcmp(rc.c[j].name, rc.c[k].name))
				gauge = &rc.c[j];
			if (rc.c[j].gauge && !strcmp(rc.c[j].name, iname))
				ginst = &rc.c[j];
		}
		r = one_gpu(&out->g[out->n++], &rc.c[k], gauge, ginst, ph, base, host, dev);
	}
	ring_counters_free(&rc);
	if (r)
		gpu_sensors_free(out);
	return r;
}

void gpu_sensors_free(struct gpu_sensors *gs)
{
	for (size_t i = 0; gs->g && i < gs->n; i++)
		free(gs->g[i].rows);
	free(gs->g);
	memset(gs, 0, sizeof *gs);
}
