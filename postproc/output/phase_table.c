/*
 * phase_table.c - per-phase energy table (see phase_table.h).
 */
#include "output/phase_table.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/phase_flags.h"
#include "phase/phase_stats.h"
#include "util/diag.h"
#include "util/tunables.h"

void phase_table_csv_header(struct csv *c)
{
	static const char *const cols[] = {"scope", "row", "phase", "device_group", "count", "total_s", "self_s",
					   "mean_ms", "p50_ms", "p95_ms", "energy_j", "mean_power_w",
					   "share", "ci95_low_j", "ci95_high_j", "incl_energy_j", "method",
					   "flags", "alignment", "align_uncert_ms", "sensor_note", NULL};
	csv_header(c, cols);
}

static const char *method_name(const struct phase_group_row *r)
{
	if (r->mixed)
		return "mixed";
	return r->method == ATTRIB_INTEGRATE ? "integrate" : r->method == ATTRIB_REGRESS ? "regress"
	       : r->method == ATTRIB_SPLIT ? "split" : "";
}

/* What the sensors' impossible readings were and what replaced them
 * (sensor_glitch.h): the (total) rows include the repairs too. */
static void phase_table_glitch_notes(FILE *tty, const struct energy_model *m)
{
	char line[512];
	for (size_t s = 0; s < m->nsen; s++) {
		if (!m->sen[s].fix.g.nbad)
			continue;
		sensor_glitch_describe(m->sen[s].ps, &m->sen[s].fix, line, sizeof line);
		fprintf(tty, "  perun %s %s (rows flagged sensor-glitch; the (total) includes the repair)\n",
			m->sen[s].group, line);
	}
}

/* Under the table: what was hidden, and why each flagged row is suspect. */
static void phase_table_notes(FILE *tty, const struct energy_model *m, size_t np, size_t ng, const unsigned *pf,
			      const double *maxw, size_t nflagged, size_t nhidden)
{
	if (nhidden) {
		fprintf(tty, "hidden: %zu phase(s) of the tools' own activity (perun's MPI calls, anchor's sync pulses); "
			     "%stheir rows in phases.csv with flag 'tool'\n",
			nhidden, m->times_only ? "" : "their time is in (unattributed), ");
	}
	if (m->other_runs && m->ph.nthr) {
		/* The user's two concurrent runs sharing one ring: perun measured
		 * the machine while both ran, and a py-spy profile of the other
		 * run observed a different process than the one counted here. */
		fprintf(tty, "note: this ring holds %zu other run(s) of phases that perun did not start (pid %u%s): "
			     "counts and times above are pid %u's (this perun file's run) only; its joules are the "
			     "machine's, the other run's work included; a py-spy profile of pid %u observed a different "
			     "process than this energy file\n",
			m->other_runs, m->other_run_pid, m->other_runs > 1 ? ", ..." : "", m->ph.thr[m->ph.primary].pid,
			m->other_run_pid);
	}
	if (!nflagged)
		return;
	fprintf(tty, "(!) %zu value(s) flagged as physically implausible (flags column of phases.csv):\n", nflagged);
	for (size_t k = 0; k <= np; k++)
		for (size_t g = 0; g < ng; g++) {
			unsigned f = pf[k * ng + g] & ~PHASE_FLAG_TOOL;
			const char *name = k == np ? "(unattributed)" : m->ph.names[k];
			if (!f || (k < np && phase_set_is_tool(&m->ph, (int)k)))
				continue;
			if (f & PHASE_FLAG_ABOVE_MAX)
				fprintf(tty, "  %s %s: even its interval's low end is more power than the highest perun window "
					     "around it (%.2f W): the phase edges or the alignment are wrong\n",
					name, m->groups[g], maxw[k * ng + g]);
			if (f & PHASE_FLAG_POINT_ABOVE_MAX)
				fprintf(tty, "  %s %s: its power is above the highest perun window around it (%.2f W) "
					     "although it lasts a window or more; the interval reaches below\n",
					name, m->groups[g], maxw[k * ng + g]);
			if (f & PHASE_FLAG_ZERO_UNDER_LOAD)
				fprintf(tty, "  %s %s: no energy while every window around it shows power\n", name,
					m->groups[g]);
			if (f & PHASE_FLAG_WIDE)
				fprintf(tty, "  %s %s: the 95%% interval is wider than the total: this row says nothing\n",
					name, m->groups[g]);
			if (f & PHASE_FLAG_GLITCH)
				fprintf(tty, "  %s %s: overlaps a sensor window whose reading was impossible (repaired, "
					     "below)\n", name, m->groups[g]);
		}
	phase_table_glitch_notes(tty, m);
}

/* When perun's reads came after its stamps, where the hook timed them
 * (sensor_reads.h): the windows' edges are those reads. */
static void print_reads_line(FILE *tty, const struct energy_model *m)
{
	char one[160];
	int n = 0;
	for (size_t s = 0; s < m->nsen; s++) {
		sensor_reads_describe(&m->sen[s], one, sizeof one);
		if (!one[0])
			continue;
		fputs(n++ ? ", " : "perun read its sensors this long after its stamps (median; each window now ends at its read): ",
		      tty);
		fputs(one, tty);
	}
	if (n)
		fputc('\n', tty);
	n = 0;
	for (size_t s = 0; s < m->nsen; s++)
		if (m->sen[s].reads.state == SENSOR_READS_MISMATCH)
			fprintf(tty, "%s%s", n++ ? ", " : "perun's timed reads do not pair one to one with its stamps "
							  "(their windows keep the stamps): ",
				m->sen[s].ps->id);
	if (n)
		fputc('\n', tty);
}

/* How far the sensors' readings lag perun's exact stamps, or its timed
 * reads (sensor_lag.h): what moved the windows and narrowed the
 * intervals, or why it did not. */
static void print_lag_line(FILE *tty, const struct energy_model *m)
{
	char one[160];
	int n = 0, timed = 0;
	print_reads_line(tty, m);
	for (size_t s = 0; s < m->nsen; s++)
		timed |= m->sen[s].reads.state == SENSOR_READS_TIMED;
	for (size_t s = 0; s < m->nsen; s++) {
		sensor_lag_describe(&m->sen[s], one, sizeof one);
		if (!one[0])
			continue;
		if (!n++)
			fprintf(tty, "perun's readings lag its %s by (fitted: a decided lag moves its windows and the "
				     "intervals allow its 95 %% range, at least %g ms; else %g ms): ",
				timed ? "reads" : "stamps", ANCHOR_LAG_FLOOR_S * 1e3, ANCHOR_LAG_RANGE_S * 1e3);
		else
			fputs(", ", tty);
		fputs(one, tty);
	}
	if (n)
		fputc('\n', tty);
}

/* The readable table's heading of one scope. */
static void print_scope_header(FILE *tty, const struct energy_model *m, const char *scope,
			       const struct phase_thread *th, const struct phase_thread *dev)
{
	if (m->times_only) {
		/* Every occurrence on every thread of the scope; self_s in the
		 * CSV is the scope's primary thread's. */
		fprintf(tty, "\nscope %s: phase times from the ring (no perun file: no energy); %.3f s of ring%s%s\n",
			scope, m->span_t1_s - m->span_t0_s, strcmp(scope, "all") ? "" : ", every process", "");
		fprintf(tty, "%-22s %6s %9s %9s %9s %9s\n", "phase", "count", "total_s", "mean_ms", "p50_ms", "p95_ms");
		return;
	}
	fprintf(tty, "\nscope %s: energy on thread %u of pid %u; perun %s over %.3f s; alignment %s (+-%.3g ms, "
		     "offset %.6f s)%s%s\n",
		scope, th ? th->tid : 0, th ? th->pid : 0, m->host->name, m->span_t1_s - m->span_t0_s,
		m->align.method, m->align.uncert_ms, m->align.offset_s, m->emulated ? "; " : "",
		energy_model_sensor_note(m));
	print_lag_line(tty, m);
	if (isfinite(m->align.bound_lo_s) || isfinite(m->align.bound_hi_s))
		fprintf(tty, "perun offset bounded to [%.3f, %.3f] s by the ring (%s); 95%% interval +-%.3g ms\n",
			m->align.bound_lo_s, m->align.bound_hi_s, m->align.bound_why, m->align.ci95_ms);
	if (dev)
		fprintf(tty, "GPU groups on the device-side timeline (%llu clock calibrations, drift %.1f ppm, "
			     "bracket <= %.1f us, fit residual <= %.1f us)\n",
			(unsigned long long)m->ph.dev_calibrations, m->ph.dev_drift_ppm,
			m->ph.dev_max_bracket_us, m->ph.dev_max_resid_us);
	fprintf(tty, "%-22s %6s %9s %9s", "phase", "count", "total_s", "mean_ms");
	for (size_t g = 0; g < m->ngroups; g++)
		fprintf(tty, "  %10s %8s %6s %-17s", m->groups[g], "W", "share", "95% CI (J)");
	fprintf(tty, " method\n");
}

/* What one row of a scope knows before its groups are written. */
struct scope_row {
	size_t k;                   /* phase; np: unattributed, np + 1: total */
	int unattr, total, hide;    /* hide: the tools' own activity (CSV only) */
	const char *name;
	struct phase_stats hst, dst; /* occurrences on host threads, on the device */
	int on_host, on_dev;        /* segments on the scope's thread / its device */
	double host_s, dev_s;       /* their self time */
};

/* Fill *r for phase k.  Returns 1 to write it, 0 to skip (no
 * occurrence), -ENOMEM. */
static int scope_row_times(const struct energy_model *m, const struct phase_scope *sr, const struct phase_thread *th,
			   const struct phase_thread *dev, size_t k, struct scope_row *r)
{
	size_t np = m->ph.nnames;
	memset(r, 0, sizeof *r);
	r->k = k;
	r->unattr = k == np;
	r->total = k == np + 1;
	r->hide = k < np && phase_set_is_tool(&m->ph, (int)k);
	r->name = r->total ? "(total)" : r->unattr ? "(unattributed)" : m->ph.names[k];
	if ((r->unattr || r->total) && m->times_only)
		return 0; /* both are about perun's span: there is none */
	if (r->unattr || r->total) {
		/* Summary rows: no occurrences (count 0, an integer like
		 * every row's), their seconds in total_s as in self_s. */
		r->hst.mean_ms = NAN;
		if (r->total)
			r->hst.total_s = m->span_t1_s - m->span_t0_s;
		else if (m->nsen)
			r->hst.total_s = sr->row[k * (m->ngroups ? m->ngroups : 1)].time_s;
		r->dst = r->hst;
		r->on_host = r->on_dev = 1;
		return 1;
	}
	if (phase_stats_of(&m->ph, (int)k, sr->pid, PHASE_STATS_HOST, &r->hst) ||
	    phase_stats_of(&m->ph, (int)k, sr->pid, PHASE_STATS_DEVICE, &r->dst))
		return -ENOMEM;
	if (!r->hst.count && !r->dst.count)
		return 0;
	for (size_t i = 0; th && i < th->nseg; i++)
		if (th->seg[i].phase == (int)k) {
			r->on_host = 1;
			r->host_s += (double)(th->seg[i].t1_ns - th->seg[i].t0_ns) / 1e9;
		}
	for (size_t i = 0; dev && i < dev->nseg; i++)
		if (dev->seg[i].phase == (int)k) {
			r->on_dev = 1;
			r->dev_s += (double)(dev->seg[i].t1_ns - dev->seg[i].t0_ns) / 1e9;
		}
	return 1;
}

/* What a scope's rows share while they are written. */
struct scope_out {
	struct csv *c;
	const struct energy_model *m;
	const struct phase_scope *sr;
	const char *scope;
	const struct phase_thread *dev;
	unsigned *pf;  /* flags per (row, group) */
	double *maxw;
	size_t nflagged;
	unsigned flag_used; /* flag letters shown (phase_flags_legend) */
};

/* What row rw holds in group g: the stats, time and energy its cells show. */
struct cell {
	struct phase_stats st;
	int on_primary;
	double self_s;
	const struct phase_group_row *r; /* NULL: (total), or no power sensor */
	double e, gt, ts;
};

static void cell_of(const struct energy_model *m, const struct phase_scope *sr, const struct phase_thread *dev,
		    const struct scope_row *rw, size_t g, struct cell *x)
{
	size_t ng = m->ngroups ? m->ngroups : 1, k = rw->k;
	/* A GPU group reads the device timeline's time and stats. */
	int gdev = dev && m->ngroups && phase_set_group_is_device(m->groups[g]);
	x->st = rw->hst.count ? rw->hst : rw->dst;
	x->on_primary = rw->on_host;
	x->self_s = rw->host_s;
	if (!rw->unattr && !rw->total) {
		x->st = gdev ? rw->dst : rw->hst;
		x->on_primary = gdev ? rw->on_dev : rw->on_host;
		x->self_s = gdev ? rw->dev_s : rw->host_s;
	}
	x->r = rw->total || !m->nsen ? NULL : &sr->row[k * ng + g];
	x->e = rw->total ? (m->nsen ? sr->total_j[g] : NAN) : (x->r && x->on_primary && !rw->hide ? x->r->energy_j : NAN);
	x->gt = m->nsen ? sr->total_j[g] : NAN;
	x->ts = rw->total ? m->span_t1_s - m->span_t0_s : (rw->unattr && x->r ? x->r->time_s : x->self_s);
}

/* The flags cell of rw in group g: attrib's flags, then the plausibility
 * checks (*pf, *maxw: what phase_table_notes explains). */
static void cell_flags(const struct energy_model *m, const struct phase_scope *sr, const struct scope_row *rw,
		       const struct cell *x, size_t g, char *fl, size_t cap, unsigned *pf, double *maxw)
{
	*pf = 0;
	*maxw = NAN;
	phase_flags_attrib_text(x->r ? x->r->flags : 0, fl, cap);
	if (x->r && !rw->total && !rw->hide) {
		*pf = phase_flags_check(m, sr, rw->k, g, x->ts, rw->unattr ? 0 : x->st.mean_ms / 1e3, maxw);
		phase_flags_text(*pf, fl, cap);
	} else if (rw->hide) {
		phase_flags_text(PHASE_FLAG_TOOL, fl, cap);
	} else if (rw->total && m->nsen && phase_flags_group_glitched(m, g)) {
		/* the total holds the repaired windows' energy */
		*pf = PHASE_FLAG_GLITCH;
		phase_flags_text(PHASE_FLAG_GLITCH, fl, cap);
	}
}

/* Row r's CSV line of group g, and its cells in the readable table.
 * Returns the count the row has in that group. */
static size_t write_group_cells(struct scope_out *o, const struct scope_row *rw, size_t g, FILE *tty)
{
	const struct energy_model *m = o->m;
	const struct phase_scope *sr = o->sr;
	struct csv *c = o->c;
	size_t ng = m->ngroups ? m->ngroups : 1, k = rw->k;
	int unattr = rw->unattr, total = rw->total, hide = rw->hide;
	char fl[192];
	struct cell x;
	unsigned f;
	cell_of(m, sr, o->dev, rw, g, &x);
	const struct phase_group_row *r = x.r;
	struct phase_stats st = x.st;
	int on_primary = x.on_primary;
	double e = x.e, gt = x.gt, ts = x.ts;
	csv_str(c, o->scope);
	csv_str(c, total ? "total" : unattr ? "unattributed" : "phase");
	csv_str(c, rw->name);
	csv_str(c, m->ngroups ? m->groups[g] : "");
	csv_u64(c, st.count);
	csv_f64(c, unattr || total ? ts : st.total_s, 9);
	csv_f64(c, ts, 9);
	csv_f64(c, unattr || total ? NAN : st.mean_ms, 6);
	csv_f64(c, unattr || total ? NAN : st.p50_ms, 6);
	csv_f64(c, unattr || total ? NAN : st.p95_ms, 6);
	csv_f64(c, e, 9);
	csv_f64(c, ts > 0 ? e / ts : NAN, 6);
	csv_f64(c, gt > 0 ? e / gt : NAN, 6);
	csv_f64(c, r && on_primary && !total && !hide ? r->lo_j : (total ? e : NAN), 9);
	csv_f64(c, r && on_primary && !total && !hide ? r->hi_j : (total ? e : NAN), 9);
	csv_f64(c, r && on_primary && !unattr && !total && !hide ? r->incl_j : (total || unattr ? e : NAN), 9);
	csv_str(c, m->times_only ? "no-energy-file" : !m->nsen ? "no-power-sensor" : total ? "perun" : hide ? "not-attributed"
		   : on_primary ? method_name(r) : "off-primary");
	cell_flags(m, sr, rw, &x, g, fl, sizeof fl, &f, &o->maxw[k * ng + g]);
	o->pf[k * ng + g] = f;
	if (f & ~PHASE_FLAG_TOOL)
		o->nflagged++;
	csv_str(c, fl);
	csv_str(c, m->align.method);
	csv_f64(c, m->times_only ? NAN : m->align.uncert_ms, 6);
	csv_str(c, energy_model_sensor_note(m));
	csv_row_end(c);
	if (tty && m->ngroups) {
		char ci[64] = "", codes[16];
		size_t len;
		if (r && on_primary && !total)
			snprintf(ci, sizeof ci, "[%.1f, %.1f]", r->lo_j, r->hi_j);
		/* The CSV's flags, every one, as letters beside the number they
		 * qualify (legend under the table). */
		phase_flags_codes(fl, codes, sizeof codes, &o->flag_used);
		len = strlen(ci);
		if (codes[0])
			snprintf(ci + len, sizeof ci - len, "%s%s", len ? " " : "", codes);
		if (isnan(e))
			fprintf(tty, "  %10s %8s %6s %-17s", "-", "-", "-", ci);
		else
			fprintf(tty, "  %10.2f %8.2f %6.3f %-17s", e, ts > 0 ? e / ts : 0.0,
				gt > 0 ? e / gt : 0.0, ci); /* share: a fraction, as in the CSV */
	}
	return st.count;
}

int phase_table_flags_text(const struct energy_model *m, const struct phase_scope *sr, size_t k, size_t g, char *buf,
			   size_t cap)
{
	const struct phase_thread *th = sr->thr >= 0 ? &m->ph.thr[sr->thr] : NULL;
	long dthr = phase_set_device_of(&m->ph, sr->pid);
	const struct phase_thread *dev = dthr >= 0 && th ? &m->ph.thr[dthr] : NULL;
	struct scope_row rw;
	struct cell x;
	unsigned f;
	double maxw;
	int rc;
	buf[0] = '\0';
	if ((rc = scope_row_times(m, sr, th, dev, k, &rw)) <= 0)
		return rc;
	cell_of(m, sr, dev, &rw, g, &x);
	cell_flags(m, sr, &rw, &x, g, buf, cap, &f, &maxw);
	return 0;
}

/* One row in every group, with its readable line.  Returns the count in
 * the last group (what the hidden-rows note counts). */
static size_t write_row(struct scope_out *o, const struct scope_row *rw, FILE *tty)
{
	const struct energy_model *m = o->m;
	size_t ng = m->ngroups ? m->ngroups : 1, count = 0;
	if (tty && m->times_only) {
		struct phase_stats st = rw->hst.count ? rw->hst : rw->dst;
		fprintf(tty, "%-22.22s %6zu %9.3f %9.2f %9.2f %9.2f\n", rw->name, st.count, st.total_s, st.mean_ms,
			st.p50_ms, st.p95_ms);
		tty = NULL; /* no energy cells, no method */
	}
	if (tty) {
		struct phase_stats st = rw->hst.count ? rw->hst : rw->dst;
		if (isnan(st.mean_ms))
			fprintf(tty, "%-22.22s %6zu %9.3f %9s", rw->name, st.count, st.total_s, "-");
		else
			fprintf(tty, "%-22.22s %6zu %9.3f %9.2f", rw->name, st.count, st.total_s, st.mean_ms);
	}
	for (size_t g = 0; g < ng; g++)
		count = write_group_cells(o, rw, g, tty);
	if (tty) {
		int on_primary = rw->on_host || rw->on_dev, any = 0;
		const struct phase_group_row *r0 = m->nsen && !rw->total ? &o->sr->row[rw->k * ng] : NULL;
		for (size_t g = 0; g < ng; g++)
			any |= (o->pf[rw->k * ng + g] & ~PHASE_FLAG_TOOL) != 0;
		fprintf(tty, " %s%s\n", !m->nsen ? "" : rw->total ? "perun" : on_primary ? method_name(r0) : "off-primary",
			any ? " (!)" : "");
	}
	return count;
}

int phase_table_write_scope(struct csv *c, const struct energy_model *m, const struct phase_scope *sr, FILE *tty,
			    struct em_error *err)
{
	size_t np = m->ph.nnames, ng = m->ngroups ? m->ngroups : 1, nhidden = 0;
	char scope[32];
	const struct phase_thread *th = sr->thr >= 0 ? &m->ph.thr[sr->thr] : NULL;
	long dthr = phase_set_device_of(&m->ph, sr->pid);
	struct scope_out o = {.c = c, .m = m, .sr = sr, .scope = scope};
	int rc = 0;

	o.dev = dthr >= 0 && th ? &m->ph.thr[dthr] : NULL;
	if (sr->pid)
		snprintf(scope, sizeof scope, "%u", sr->pid);
	else
		snprintf(scope, sizeof scope, "all");
	if (tty)
		print_scope_header(tty, m, scope, th, o.dev);
	o.pf = calloc((np + 2) * ng, sizeof *o.pf);
	o.maxw = calloc((np + 2) * ng, sizeof *o.maxw);
	if (!o.pf || !o.maxw) {
		rc = diag_error(err, -ENOMEM, NULL, "out of memory");
		goto out;
	}
	for (size_t k = 0; k <= np + 1; k++) {
		struct scope_row rw;
		int want = scope_row_times(m, sr, th, o.dev, k, &rw);
		if (want < 0) {
			rc = diag_error(err, -ENOMEM, NULL, "out of memory");
			goto out;
		}
		if (!want)
			continue;
		size_t count = write_row(&o, &rw, rw.hide ? NULL : tty);
		nhidden += rw.hide && count;
	}
	if (tty) {
		phase_flags_legend(tty, o.flag_used);
		phase_table_notes(tty, m, np, ng, o.pf, o.maxw, o.nflagged, nhidden);
	}
out:
	free(o.pf);
	free(o.maxw);
	return rc;
}

int phase_table_write(struct csv *c, const struct energy_model *m, const struct run_results *res, int by_process,
		      FILE *tty, struct em_error *e)
{
	size_t with = 0;
	int rc = phase_table_write_scope(c, m, &res->all, tty, e);
	if (rc || !by_process)
		return rc;
	for (size_t i = 0; i < res->nproc; i++)
		with += res->proc[i].sr.thr >= 0;
	/* Times only, one process with phases: its block would repeat "all". */
	if (m->times_only && with < 2)
		return 0;
	for (size_t i = 0; i < res->nproc; i++) {
		if (res->proc[i].sr.thr < 0)
			continue;
		if ((rc = phase_table_write_scope(c, m, &res->proc[i].sr, tty, e)))
			return rc;
	}
	return 0;
}
