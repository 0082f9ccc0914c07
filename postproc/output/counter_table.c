/*
 * counter_table.c - phases from the ring's ms energy counters (see
 * counter_table.h).
 */
#include "output/counter_table.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attrib/attrib.h"
#include "attrib/sensor_model.h"
#include "input/ring_sensors.h"
#include "util/diag.h"

/* Agreement asked of counters and perun over perun's span (issue 14). */
#define CROSSCHECK_REL 0.01

struct group_acc {
	char name[16];
	double *e, *lo, *hi, *time_s; /* n_phase + 1 */
	double total_j;               /* over the counters' span */
	double span_j;                /* over perun's span */
	double perun_j;               /* perun's sensors of this group over its span */
	int has_perun;
	int perun_readings;           /* perun integrates power readings (NVML): an estimate */
};

/* Index of group name in g, added when new; -ENOMEM. */
static long group_index(struct group_acc *g, size_t *ng, const char *name, size_t np)
{
	for (size_t i = 0; i < *ng; i++)
		if (!strcmp(g[i].name, name))
			return (long)i;
	snprintf(g[*ng].name, sizeof g[*ng].name, "%s", name);
	g[*ng].e = calloc(np + 1, sizeof(double));
	g[*ng].lo = calloc(np + 1, sizeof(double));
	g[*ng].hi = calloc(np + 1, sizeof(double));
	g[*ng].time_s = calloc(np + 1, sizeof(double));
	(*ng)++; /* counted even when short, so that free_groups frees it */
	if (!g[*ng - 1].e || !g[*ng - 1].lo || !g[*ng - 1].hi || !g[*ng - 1].time_s)
		return -ENOMEM;
	return (long)(*ng - 1);
}

static void free_groups(struct group_acc *g, size_t ng)
{
	for (size_t gi = 0; g && gi < ng; gi++) {
		free(g[gi].e);
		free(g[gi].lo);
		free(g[gi].hi);
		free(g[gi].time_s);
	}
	free(g);
}

static size_t count_of(const struct phase_set *ph, int phase, double *total_s)
{
	size_t n = 0;
	*total_s = 0;
	for (size_t i = 0; i < ph->nocc; i++)
		if (ph->occ[i].phase == phase) {
			n++;
			*total_s += (double)(ph->occ[i].t1_ns - ph->occ[i].t0_ns) / 1e9;
		}
	return n;
}

static void row(struct csv *c, const char *phase, const char *group, size_t count, double total_s,
		double self_s, double e, double share, double lo, double hi, const char *method,
		const char *flags, double uncert_ms, const char *note)
{
	/* Tidy like phase_table.c: a `row` kind, count an integer on every
	 * row, a summary row's seconds in total_s as in self_s. */
	const char *kind = !strcmp(phase, "(unattributed)") ? "unattributed"
			   : !strcmp(phase, "(total)")        ? "total"
			   : !strcmp(phase, "(perun span)")   ? "crosscheck"
							      : "phase";
	csv_str(c, "counters");
	csv_str(c, kind);
	csv_str(c, phase);
	csv_str(c, group);
	csv_u64(c, count);
	csv_f64(c, count ? total_s : self_s, 9);
	csv_f64(c, self_s, 9);
	csv_f64(c, count ? total_s / (double)count * 1e3 : NAN, 6);
	csv_f64(c, NAN, 6);
	csv_f64(c, NAN, 6);
	csv_f64(c, e, 9);
	csv_f64(c, self_s > 0 ? e / self_s : NAN, 6);
	csv_f64(c, share, 6);
	csv_f64(c, lo, 9);
	csv_f64(c, hi, 9);
	csv_f64(c, NAN, 9);
	csv_str(c, method);
	csv_str(c, flags);
	csv_str(c, "ring-clock");
	csv_f64(c, uncert_ms, 6);
	csv_str(c, note);
	csv_row_end(c);
}

/* What the counters and the primary thread's phases share. */
struct ct_ctx {
	const struct energy_model *m;
	struct ring_counters rc;
	const struct phase_thread *th;
	struct attrib_interval *iv; /* th's segments on the timeline */
	struct group_acc *g;
	size_t ng, np;
	const char *note;
};

/* One counter's exact per-phase integrals, its total and its energy over
 * perun's span, added to its group. */
static int add_counter(struct ct_ctx *x, const struct ring_counter *ct, struct em_error *e)
{
	const struct energy_model *m = x->m;
	long gl = group_index(x->g, &x->ng, ct->group, x->np);
	struct group_acc *g;
	struct attrib_result r;
	double *t;
	if (gl < 0)
		return diag_error(e, -ENOMEM, NULL, "out of memory");
	g = &x->g[gl];
	t = malloc(ct->n * sizeof *t);
	if (!t)
		return diag_error(e, -ENOMEM, NULL, "out of memory");
	for (size_t i = 0; i < ct->n; i++)
		t[i] = energy_model_tl(m, ct->ts_ns[i]);
	memset(&r, 0, sizeof r);
	if (x->th && x->th->nseg) {
		int rc2 = attrib_counters(t, ct->cum_j, ct->n, x->iv, x->th->nseg, x->np, &r);
		if (rc2 && rc2 != -ENODATA) {
			free(t);
			return diag_error(e, rc2, m->rl.rf.path, "ms counter %s: attribution failed (%s)", ct->name,
					  strerror(-rc2));
		}
		for (size_t p = 0; !rc2 && p <= x->np; p++) {
			g->e[p] += r.row[p].energy_j;
			g->lo[p] += r.row[p].ci_low_j;
			g->hi[p] += r.row[p].ci_high_j;
			g->time_s[p] = r.row[p].time_s;
		}
		attrib_result_free(&r);
	}
	g->total_j += ct->cum_j[ct->n - 1] - ct->cum_j[0];
	if (m->span_t1_s > m->span_t0_s) {
		uint64_t a = m->base_ns + (uint64_t)(m->span_t0_s * 1e9 > 0 ? m->span_t0_s * 1e9 : 0);
		uint64_t b = m->base_ns + (uint64_t)(m->span_t1_s * 1e9 > 0 ? m->span_t1_s * 1e9 : 0);
		g->span_j += ring_counter_at(ct, b) - ring_counter_at(ct, a);
	}
	free(t);
	return 0;
}

/* perun's energy of each group over its own span, for the cross-check. */
static void add_perun(struct ct_ctx *x)
{
	const struct energy_model *m = x->m;
	for (size_t s = 0; s < m->nsen; s++)
		for (size_t gi = 0; gi < x->ng; gi++)
			if (!strcmp(m->sen[s].group, x->g[gi].name)) {
				x->g[gi].perun_j += energy_model_slice_j(&m->sen[s], m->span_t0_s, m->span_t1_s);
				x->g[gi].has_perun = 1;
				if (m->sen[s].ser.kind == ATTRIB_INSTANT_W)
					x->g[gi].perun_readings = 1;
			}
}

/* The phase rows, the unattributed row and the totals. */
static void write_phase_rows(struct csv *c, const struct ct_ctx *x, FILE *tty)
{
	const struct energy_model *m = x->m;
	const struct group_acc *g = x->g;
	if (tty) {
		size_t nc = 0, ngauge = 0;
		for (size_t k = 0; k < x->rc.n; k++)
			*(x->rc.c[k].gauge ? &ngauge : &nc) += 1;
		fprintf(tty, "\nms counters (ANCHOR_SENSORS): %zu counter(s)", nc);
		if (ngauge)
			fprintf(tty, " and %zu GPU power reading(s) (anchorpost sensors)", ngauge);
		fprintf(tty, " sampled by pid %u, %zu ticks, median %.3f ms, "
			     "longest gap %.1f ms; exact per-phase integrals on thread %u%s%s\n",
			x->rc.pid, x->rc.ticks, x->rc.period_ms, x->rc.max_gap_ms, x->th ? x->th->tid : 0,
			x->rc.emulated ? "; " : "", x->rc.emulated ? "emulated sensor, not a measurement" : "");
		fprintf(tty, "%-22s", "phase");
		for (size_t gi = 0; gi < x->ng; gi++)
			fprintf(tty, "  %10s %8s %6s", g[gi].name, "W", "share");
		fprintf(tty, "\n");
	}
	for (size_t p = 0; p <= x->np; p++) {
		const char *name = p == x->np ? "(unattributed)" : m->ph.names[p];
		double total_s = 0;
		size_t cnt = p == x->np ? 0 : count_of(&m->ph, (int)p, &total_s);
		if (p < x->np && !(g[0].time_s[p] > 0))
			continue;
		if (tty)
			fprintf(tty, "%-22.22s", name);
		for (size_t gi = 0; gi < x->ng; gi++) {
			double ts = g[gi].time_s[p], e = g[gi].e[p], lo = g[gi].lo[p], hi = g[gi].hi[p];
			double share = g[gi].total_j > 0 ? e / g[gi].total_j : NAN;
			/* GPU joules: the board's gain floor (sensor_model.h); the share is gain-free. */
			if (!strcmp(g[gi].name, "gpu"))
				e = sensor_model_gpu_joules(e, &lo, &hi);
			row(c, name, g[gi].name, cnt, total_s, ts, e, share, lo, hi, "counter-ms", "", x->rc.period_ms / 2,
			    x->note);
			if (tty)
				fprintf(tty, "  %10.3f %8.2f %5.1f%%", e, ts > 0 ? e / ts : 0.0,
					g[gi].total_j > 0 ? 100 * e / g[gi].total_j : 0.0);
		}
		if (tty)
			fprintf(tty, "\n");
	}
	for (size_t gi = 0; gi < x->ng; gi++) {
		double lo = NAN, hi = NAN, e = g[gi].total_j;
		if (!strcmp(g[gi].name, "gpu"))
			e = sensor_model_gpu_joules(e, &lo, &hi);
		row(c, "(total)", g[gi].name, 0, 0, NAN, e, 1.0, isnan(lo) ? e : lo, isnan(hi) ? e : hi, "counter-ms", "",
		    x->rc.period_ms / 2, x->note);
	}
}

/* The cross-check: the same span, two instruments.  Returns how many
 * groups disagree by more than CROSSCHECK_REL. */
static int write_crosscheck(struct csv *c, const struct ct_ctx *x, FILE *tty)
{
	const struct energy_model *m = x->m;
	const struct group_acc *g = x->g;
	int disagree = 0;
	if (tty && m->span_t1_s > m->span_t0_s)
		fprintf(tty, "cross-check over perun's span (%.3f s):", m->span_t1_s - m->span_t0_s);
	for (size_t gi = 0; gi < x->ng; gi++) {
		char fl[160];
		double d = g[gi].has_perun && g[gi].perun_j > 0 ? (g[gi].span_j - g[gi].perun_j) / g[gi].perun_j : NAN;
		int ok = !isnan(d) && fabs(d) <= CROSSCHECK_REL;
		/* perun's GPU energy is a trapezoid over power readings, not a
		 * counter: a difference there is perun's estimate, said so. */
		if (!isnan(d) && !ok && !g[gi].perun_readings)
			disagree++;
		if (isnan(d))
			snprintf(fl, sizeof fl, "perun_j=;diff_pct=;agree_1pct=no-perun-sensor");
		else
			snprintf(fl, sizeof fl, "perun_j=%.6f;diff_pct=%.3f;agree_1pct=%s%s", g[gi].perun_j, 100 * d,
				 ok ? "yes" : "NO", g[gi].perun_readings ? ";perun=power-readings-estimate" : "");
		row(c, "(perun span)", g[gi].name, 0, 0, m->span_t1_s - m->span_t0_s, g[gi].span_j, NAN, NAN, NAN,
		    "counter-ms-vs-perun", fl, x->rc.period_ms / 2, x->note);
		if (tty && m->span_t1_s > m->span_t0_s) {
			if (isnan(d))
				fprintf(tty, "  %s: counters %.3f J, perun has no %s sensor;", g[gi].name, g[gi].span_j,
					g[gi].name);
			else
				fprintf(tty, "  %s: counters %.3f J, perun %.3f J (%+.2f %%, %s%s);", g[gi].name,
					g[gi].span_j, g[gi].perun_j, 100 * d,
					ok ? "agree within 1 %" : "DISAGREE by more than 1 %",
					g[gi].perun_readings ? "; perun's figure integrates power readings: an estimate" : "");
		}
	}
	if (tty)
		fprintf(tty, "\n");
	return disagree;
}

int counter_table_write(struct csv *c, const struct energy_model *m, FILE *tty, struct em_error *e)
{
	struct ct_ctx x = {.m = m, .np = m->ph.nnames};
	int ret, rcode;

	rcode = ring_counters_build(m->rl.rf.ev, m->rl.rf.nev, &x.rc);
	if (rcode)
		return diag_error(e, rcode, m->rl.rf.path, "reading the sensor records: %s", strerror(-rcode));
	if (!x.rc.n) {
		ring_counters_free(&x.rc);
		return 0;
	}
	if (m->rl.rf.stats.overwritten_slots)
		diag_warn(m->rl.rf.path, "the ring wrapped (%llu slots overwritten): the sensor sampler writes 64 bytes "
					 "per tick (230 MB an hour at 1 kHz); phases and counters of the start are lost, "
					 "raise ANCHOR_RING_SIZE",
			  (unsigned long long)m->rl.rf.stats.overwritten_slots);
	x.note = x.rc.emulated ? "emulated sensor, not a measurement (ms counters)" : "ms counters (ANCHOR_SENSORS)";
	x.g = calloc(x.rc.n, sizeof *x.g);
	x.th = m->ph.nthr ? &m->ph.thr[m->ph.primary] : NULL;
	x.iv = malloc((x.th && x.th->nseg ? x.th->nseg : 1) * sizeof *x.iv);
	if (!x.g || !x.iv) {
		ret = diag_error(e, -ENOMEM, NULL, "out of memory");
		goto out;
	}
	for (size_t i = 0; x.th && i < x.th->nseg; i++) {
		x.iv[i].t0_s = energy_model_tl(m, x.th->seg[i].t0_ns);
		x.iv[i].t1_s = energy_model_tl(m, x.th->seg[i].t1_ns);
		x.iv[i].phase = x.th->seg[i].phase;
	}
	/* Gauges (GPU power readings) are no energy counter: they describe
	 * the sensor (anchorpost sensors), the counters give the joules. */
	for (size_t k = 0; k < x.rc.n; k++)
		if (!x.rc.c[k].gauge && (ret = add_counter(&x, &x.rc.c[k], e)))
			goto out;
	add_perun(&x);
	write_phase_rows(c, &x, tty);
	ret = write_crosscheck(c, &x, tty);
out:
	free_groups(x.g, x.ng);
	free(x.iv);
	ring_counters_free(&x.rc);
	return ret;
}
