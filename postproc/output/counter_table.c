/*
 * counter_table.c - phases from the ring's ms energy counters (see
 * counter_table.h).
 */
#include "counter_table.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attrib.h"
#include "diag.h"
#include "ring_sensors.h"

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

static size_t group_index(struct group_acc *g, size_t *ng, const char *name, size_t np)
{
	for (size_t i = 0; i < *ng; i++)
		if (!strcmp(g[i].name, name))
			return i;
	snprintf(g[*ng].name, sizeof g[*ng].name, "%s", name);
	g[*ng].e = calloc(np + 1, sizeof(double));
	g[*ng].lo = calloc(np + 1, sizeof(double));
	g[*ng].hi = calloc(np + 1, sizeof(double));
	g[*ng].time_s = calloc(np + 1, sizeof(double));
	if (!g[*ng].e || !g[*ng].lo || !g[*ng].hi || !g[*ng].time_s)
		diag_fatal(NULL, "out of memory");
	return (*ng)++;
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
	csv_str(c, "counters");
	/* The `row` column of phases.csv (phase_table.c): without it every
	 * counter row's fields sat one column left of the header. */
	csv_str(c, !strcmp(phase, "(total)") ? "total" : !strcmp(phase, "(unattributed)") ? "unattributed"
		   : !strcmp(phase, "(perun span)") ? "cross-check" : "phase");
	csv_str(c, phase);
	csv_str(c, group);
	if (count) {
		csv_u64(c, count);
		csv_f64(c, total_s, 9);
	} else {
		csv_empty(c);
		csv_empty(c);
	}
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

int counter_table_write(struct csv *c, const struct energy_model *m, FILE *tty)
{
	struct ring_counters rc;
	const struct phase_thread *th;
	struct attrib_interval *iv;
	struct group_acc *g;
	size_t np = m->ph.nnames, ng = 0;
	const char *note;
	int disagree = 0, rcode;

	rcode = ring_counters_build(m->rl.rf.ev, m->rl.rf.nev, &rc);
	if (rcode)
		diag_fatal(m->rl.rf.path, "reading the sensor records: %s", strerror(-rcode));
	if (!rc.n)
		return 0;
	if (m->rl.rf.stats.overwritten_slots)
		diag_warn(m->rl.rf.path, "the ring wrapped (%llu slots overwritten): the sensor sampler writes 64 bytes "
					 "per tick (230 MB an hour at 1 kHz); phases and counters of the start are lost, "
					 "raise ANCHOR_RING_SIZE",
			  (unsigned long long)m->rl.rf.stats.overwritten_slots);
	note = rc.emulated ? "emulated sensor, not a measurement (ms counters)" : "ms counters (ANCHOR_SENSORS)";
	g = calloc(rc.n, sizeof *g);
	if (!g)
		diag_fatal(NULL, "out of memory");
	th = m->ph.nthr ? &m->ph.thr[m->ph.primary] : NULL;
	iv = malloc((th && th->nseg ? th->nseg : 1) * sizeof *iv);
	if (!iv)
		diag_fatal(NULL, "out of memory");
	for (size_t i = 0; th && i < th->nseg; i++) {
		iv[i].t0_s = energy_model_tl(m, th->seg[i].t0_ns);
		iv[i].t1_s = energy_model_tl(m, th->seg[i].t1_ns);
		iv[i].phase = th->seg[i].phase;
	}
	for (size_t k = 0; k < rc.n; k++) {
		const struct ring_counter *ct = &rc.c[k];
		size_t gi = group_index(g, &ng, ct->group, np);
		double *t = malloc(ct->n * sizeof *t);
		struct attrib_result r;
		if (!t)
			diag_fatal(NULL, "out of memory");
		for (size_t i = 0; i < ct->n; i++)
			t[i] = energy_model_tl(m, ct->ts_ns[i]);
		memset(&r, 0, sizeof r);
		if (th && th->nseg) {
			int rc2 = attrib_counters(t, ct->cum_j, ct->n, iv, th->nseg, np, &r);
			if (rc2 && rc2 != -ENODATA)
				diag_fatal(m->rl.rf.path, "ms counter %s: attribution failed (%s)", ct->name,
					   strerror(-rc2));
			for (size_t p = 0; !rc2 && p <= np; p++) {
				g[gi].e[p] += r.row[p].energy_j;
				g[gi].lo[p] += r.row[p].ci_low_j;
				g[gi].hi[p] += r.row[p].ci_high_j;
				g[gi].time_s[p] = r.row[p].time_s;
			}
			attrib_result_free(&r);
		}
		g[gi].total_j += ct->cum_j[ct->n - 1] - ct->cum_j[0];
		if (m->span_t1_s > m->span_t0_s) {
			uint64_t a = m->base_ns + (uint64_t)(m->span_t0_s * 1e9 > 0 ? m->span_t0_s * 1e9 : 0);
			uint64_t b = m->base_ns + (uint64_t)(m->span_t1_s * 1e9 > 0 ? m->span_t1_s * 1e9 : 0);
			g[gi].span_j += ring_counter_at(ct, b) - ring_counter_at(ct, a);
		}
		free(t);
	}
	for (size_t s = 0; s < m->nsen; s++)
		for (size_t gi = 0; gi < ng; gi++)
			if (!strcmp(m->sen[s].group, g[gi].name)) {
				g[gi].perun_j += energy_model_slice_j(&m->sen[s], m->span_t0_s, m->span_t1_s);
				g[gi].has_perun = 1;
				if (m->sen[s].ser.kind == ATTRIB_INSTANT_W)
					g[gi].perun_readings = 1;
			}

	if (tty) {
		fprintf(tty, "\nms counters (ANCHOR_SENSORS): %zu counter(s) sampled by pid %u, %zu ticks, median %.3f ms, "
			     "longest gap %.1f ms; exact per-phase integrals on thread %u%s%s\n",
			rc.n, rc.pid, rc.ticks, rc.period_ms, rc.max_gap_ms, th ? th->tid : 0,
			rc.emulated ? "; " : "", rc.emulated ? "emulated sensor, not a measurement" : "");
		fprintf(tty, "%-22s", "phase");
		for (size_t gi = 0; gi < ng; gi++)
			fprintf(tty, "  %10s %8s %6s", g[gi].name, "W", "share");
		fprintf(tty, "\n");
	}
	for (size_t p = 0; p <= np; p++) {
		const char *name = p == np ? "(unattributed)" : m->ph.names[p];
		double total_s = 0;
		size_t cnt = p == np ? 0 : count_of(&m->ph, (int)p, &total_s);
		if (p < np && !(g[0].time_s[p] > 0))
			continue;
		if (tty)
			fprintf(tty, "%-22.22s", name);
		for (size_t gi = 0; gi < ng; gi++) {
			double ts = g[gi].time_s[p], e = g[gi].e[p];
			row(c, name, g[gi].name, cnt, total_s, ts, e, g[gi].total_j > 0 ? e / g[gi].total_j : NAN,
			    g[gi].lo[p], g[gi].hi[p], "counter-ms", "", rc.period_ms / 2, note);
			if (tty)
				fprintf(tty, "  %10.3f %8.2f %5.1f%%", e, ts > 0 ? e / ts : 0.0,
					g[gi].total_j > 0 ? 100 * e / g[gi].total_j : 0.0);
		}
		if (tty)
			fprintf(tty, "\n");
	}
	for (size_t gi = 0; gi < ng; gi++)
		row(c, "(total)", g[gi].name, 0, 0, NAN, g[gi].total_j, 1.0, g[gi].total_j, g[gi].total_j,
		    "counter-ms", "", rc.period_ms / 2, note);
	/* The cross-check: the same span, two instruments. */
	if (tty && m->span_t1_s > m->span_t0_s)
		fprintf(tty, "cross-check over perun's span (%.3f s):", m->span_t1_s - m->span_t0_s);
	for (size_t gi = 0; gi < ng; gi++) {
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
		    "counter-ms-vs-perun", fl, rc.period_ms / 2, note);
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
	for (size_t gi = 0; gi < ng; gi++) {
		free(g[gi].e);
		free(g[gi].lo);
		free(g[gi].hi);
		free(g[gi].time_s);
	}
	free(g);
	free(iv);
	ring_counters_free(&rc);
	return disagree;
}
