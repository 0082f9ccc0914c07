/*
 * counter_table.c - phases from the ring's ms energy counters (see
 * counter_table.h).
 */
#include "output/counter_table.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/diag.h"

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

/* What the rows share while they are written. */
struct ct_ctx {
	const struct energy_model *m;
	const struct counter_results *cr;
	size_t np;
	const char *note;
};

/* The phase rows, the unattributed row and the totals. */
static void write_phase_rows(struct csv *c, const struct ct_ctx *x, FILE *tty)
{
	const struct energy_model *m = x->m;
	const struct counter_results *cr = x->cr;
	const struct counter_group *g = cr->g;
	if (tty) {
		fprintf(tty, "\nms counters (ANCHOR_SENSORS): %zu counter(s)", cr->n_counters);
		if (cr->n_gauges)
			fprintf(tty, " and %zu GPU power reading(s) (anchorpost sensors)", cr->n_gauges);
		fprintf(tty, " sampled by pid %u, %zu ticks, median %.3f ms, "
			     "longest gap %.1f ms; exact per-phase integrals on thread %u%s%s\n",
			cr->pid, cr->ticks, cr->period_ms, cr->max_gap_ms, cr->tid,
			cr->emulated ? "; " : "", cr->emulated ? "emulated sensor, not a measurement" : "");
		fprintf(tty, "%-22s", "phase");
		for (size_t gi = 0; gi < cr->ng; gi++)
			fprintf(tty, "  %10s %8s %6s", g[gi].name, "W", "share");
		fprintf(tty, "\n");
	}
	for (size_t p = 0; cr->ng && p <= x->np; p++) {
		const char *name = p == x->np ? "(unattributed)" : m->ph.names[p];
		double total_s = 0;
		size_t cnt = p == x->np ? 0 : count_of(&m->ph, (int)p, &total_s);
		if (p < x->np && !(g[0].time_s[p] > 0))
			continue;
		if (tty)
			fprintf(tty, "%-22.22s", name);
		for (size_t gi = 0; gi < cr->ng; gi++) {
			double ts = g[gi].time_s[p], e = g[gi].e_j[p];
			row(c, name, g[gi].name, cnt, total_s, ts, e, g[gi].share[p], g[gi].lo_j[p], g[gi].hi_j[p],
			    "counter-ms", "", cr->period_ms / 2, x->note);
			if (tty)
				fprintf(tty, "  %10.3f %8.2f %5.1f%%", e, ts > 0 ? e / ts : 0.0,
					g[gi].total_raw_j > 0 ? 100 * e / g[gi].total_raw_j : 0.0);
		}
		if (tty)
			fprintf(tty, "\n");
	}
	for (size_t gi = 0; gi < cr->ng; gi++)
		row(c, "(total)", g[gi].name, 0, 0, NAN, g[gi].total_j, 1.0, g[gi].total_lo_j, g[gi].total_hi_j,
		    "counter-ms", "", cr->period_ms / 2, x->note);
}

/* The cross-check: the same span, two instruments. */
static void write_crosscheck(struct csv *c, const struct ct_ctx *x, FILE *tty)
{
	const struct energy_model *m = x->m;
	const struct counter_results *cr = x->cr;
	const struct counter_group *g = cr->g;
	if (tty && m->span_t1_s > m->span_t0_s)
		fprintf(tty, "cross-check over perun's span (%.3f s):", m->span_t1_s - m->span_t0_s);
	for (size_t gi = 0; gi < cr->ng; gi++) {
		char fl[160];
		double d = g[gi].diff;
		int ok = g[gi].agree;
		if (isnan(d))
			snprintf(fl, sizeof fl, "perun_j=;diff_pct=;agree_1pct=no-perun-sensor");
		else
			snprintf(fl, sizeof fl, "perun_j=%.6f;diff_pct=%.3f;agree_1pct=%s%s", g[gi].perun_j, 100 * d,
				 ok ? "yes" : "NO", g[gi].perun_readings ? ";perun=power-readings-estimate" : "");
		row(c, "(perun span)", g[gi].name, 0, 0, m->span_t1_s - m->span_t0_s, g[gi].span_j, NAN, NAN, NAN,
		    "counter-ms-vs-perun", fl, cr->period_ms / 2, x->note);
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
}

int counter_table_write(struct csv *c, const struct energy_model *m, const struct counter_results *cr, FILE *tty)
{
	struct ct_ctx x = {.m = m, .cr = cr, .np = m->ph.nnames};
	if (!cr->n_counters && !cr->n_gauges)
		return 0;
	x.note = cr->emulated ? "emulated sensor, not a measurement (ms counters)" : "ms counters (ANCHOR_SENSORS)";
	write_phase_rows(c, &x, tty);
	write_crosscheck(c, &x, tty);
	return cr->disagree;
}
