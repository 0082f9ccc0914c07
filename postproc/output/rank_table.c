/* rank_table.c - the per-rank view of a distributed run (see rank_table.h). */
#include "output/rank_table.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "output/phase_flags.h"

/* ---- the ranks table ---------------------------------------------------------- */

void rank_table_print_ranks(FILE *tty, const struct mring *m)
{
	size_t abnormal = 0, hosts = 0;
	char job[24], step[16];
	for (size_t i = 0; i < m->nunits; i++) {
		int seen = 0;
		for (size_t k = 0; k < i; k++)
			seen |= !strcmp(m->units[k]->host, m->units[i]->host);
		hosts += !seen;
	}
	fprintf(tty, "%zu ring(s), %zu rank(s) on %zu host(s); timeline: UTC through each ring's own SYNC records\n",
		m->nrings, m->nunits, hosts);
	if (!mring_slurm_job(m, job, sizeof job, step, sizeof step))
		fprintf(tty, "Slurm job SLURM_JOB_ID=%s%s%s\n", job, step[0] ? ", step SLURM_STEP_ID=" : "", step);
	fprintf(tty, "%-16s %8s %-28s %6s %8s %8s %10s %10s  %s\n", "rank@host", "pid", "rank from", "steps", "coll_s",
		"events", "first_s", "last_s", "status");
	for (size_t i = 0; i < m->nunits; i++) {
		const struct mr_unit *u = m->units[i];
		const struct mr_ring *r = &m->rings[u->ring];
		char lab[96], from[64];
		mring_unit_label(u, lab, sizeof lab);
		if (u->rank >= 0 && u->slurm_procid >= 0 && strcmp(u->rank_var, "SLURM_PROCID"))
			snprintf(from, sizeof from, "%s, SLURM_PROCID=%d", u->rank_var, u->slurm_procid);
		else
			snprintf(from, sizeof from, "%s", u->rank >= 0 ? u->rank_var : "(no rank)");
		fprintf(tty, "%-16.16s %8u %-28s %6zu %8.3f %8llu %10.3f %10.3f  %s%s\n", lab, u->pid, from, u->nsteps,
			u->coll_s, (unsigned long long)r->nev, u->first_s, u->last_s, u->status,
			r->stats.torn ? " (torn records in ring)" : "");
		abnormal += (size_t)u->abnormal;
	}
	for (size_t i = 0; i < m->nunits; i++)
		if (m->units[i]->no_energy[0]) {
			char lab[96];
			mring_unit_label(m->units[i], lab, sizeof lab);
			fprintf(tty, "%s: no joules, times only: %s\n", lab, m->units[i]->no_energy);
		}
	for (size_t i = 0; i < m->nrings; i++)
		if (!m->rings[i].nunits)
			diag_warn(m->rings[i].path, "no training process with phases in this ring");
	if (abnormal)
		fprintf(tty, "%zu rank(s) ended abnormally: their rings are read up to their last committed record\n",
			abnormal);
	/* Hosts aligned without perun's stamps: the offset, its 95 % interval
	 * and the ring's hard bounds, as single-ring `phases` states them
	 * (hosts with stamps print nothing here: exact). */
	for (size_t h = 0; h < m->nhosts; h++) {
		const struct mr_host *mh = &m->hosts[h];
		if (!mh->bound_ring)
			continue;
		fprintf(tty, "perun host %s: offset %.6f s, alignment %s (+-%.3g ms), 95%% interval +-%.3g ms", mh->ph->name,
			mh->offset_s, mh->method, mh->uncert_ms, mh->ci95_ms);
		if (isfinite(mh->bound_lo_s) || isfinite(mh->bound_hi_s))
			fprintf(tty, "; bounded to [%.3f, %.3f] s by %s (%s)", mh->bound_lo_s, mh->bound_hi_s,
				mh->bound_ring, mh->bound_why);
		fprintf(tty, "\n");
	}
}

void rank_table_write_ranks_csv(const struct mring *m, struct csv *c)
{
	static const char *const cols[] = {"rank", "host", "pid", "rank_from", "slurm_procid", "slurm_job_id",
					   "slurm_step_id", "status", "first_s", "last_s", "steps", "coll_s", NULL};
	for (const char *const *k = cols; *k; k++)
		csv_str(c, *k);
	for (size_t g = 0; g < m->ngroups; g++) {
		char name[96];
		snprintf(name, sizeof name, "energy_j_%s", m->groups[g]);
		csv_str(c, name);
	}
	csv_row_end(c);
	for (size_t i = 0; i < m->nunits; i++) {
		const struct mr_unit *u = m->units[i];
		if (u->rank >= 0)
			csv_i64(c, u->rank);
		else
			csv_empty(c);
		csv_str(c, u->host);
		csv_u64(c, u->pid);
		csv_str(c, u->rank_var);
		if (u->slurm_procid >= 0)
			csv_i64(c, u->slurm_procid);
		else
			csv_empty(c);
		csv_str(c, u->job_id);
		csv_str(c, u->step_id);
		csv_str(c, u->status);
		csv_f64(c, u->first_s, 9);
		csv_f64(c, u->last_s, 9);
		csv_u64(c, u->nsteps);
		csv_f64(c, u->coll_s, 9);
		for (size_t g = 0; g < m->ngroups; g++)
			csv_f64(c, u->host_idx >= 0 ? u->total_j[g] : NAN, 9);
		csv_row_end(c);
	}
}

/* ---- phases ------------------------------------------------------------------ */

/* Phase names over every unit, in order of first appearance. */
struct names {
	const char **v;
	size_t n;
};

static long name_index(const struct names *nm, const char *s)
{
	for (size_t i = 0; i < nm->n; i++)
		if (!strcmp(nm->v[i], s))
			return (long)i;
	return -1;
}

/* One phase's sums over a scope's members. */
struct agg {
	size_t count;
	double total_s, self_s;
	double p50_ms, p95_ms;           /* a one-rank scope only */
	double *energy_j, *lo_j, *hi_j;  /* per group, NAN: no member attributed it */
	double *node_j;                  /* per group: one-rank scopes, before the split */
	unsigned *flags;                 /* per group: ATTRIB_FLAG_* | PHASE_FLAG_* */
	double split;                    /* one-rank scopes */
	int method;                      /* -1: mixed */
	int tool;
};

/* One scope while its rows are written. */
struct scope {
	const struct mring *m;
	const struct names *nm;
	size_t ng, np, nmem, nen;        /* members; those with energy */
	size_t nfew;                     /* members perun's data gave no joules (no_energy) */
	struct agg *a;                   /* per phase name */
	double *unattr, *un_lo, *un_hi, *total; /* per group */
	double span_s;                   /* perun's span, summed over the scope's hosts */
	char kind[8], host[64], rank[16], pid[16];
	char align[96], unc[32];
};

static int scope_alloc(struct scope *s, const struct mring *m, const struct names *nm)
{
	memset(s, 0, sizeof *s);
	s->m = m;
	s->nm = nm;
	s->ng = m->ngroups ? m->ngroups : 1;
	s->np = nm->n;
	s->a = calloc(s->np ? s->np : 1, sizeof *s->a);
	s->unattr = calloc(s->ng, sizeof(double));
	s->un_lo = calloc(s->ng, sizeof(double));
	s->un_hi = calloc(s->ng, sizeof(double));
	s->total = calloc(s->ng, sizeof(double));
	if (!s->a || !s->unattr || !s->un_lo || !s->un_hi || !s->total)
		return -ENOMEM;
	for (size_t k = 0; k < s->np; k++) {
		struct agg *x = &s->a[k];
		x->energy_j = calloc(s->ng, sizeof(double));
		x->lo_j = calloc(s->ng, sizeof(double));
		x->hi_j = calloc(s->ng, sizeof(double));
		x->node_j = calloc(s->ng, sizeof(double));
		x->flags = calloc(s->ng, sizeof(unsigned));
		if (!x->energy_j || !x->lo_j || !x->hi_j || !x->node_j || !x->flags)
			return -ENOMEM;
		for (size_t g = 0; g < s->ng; g++)
			x->energy_j[g] = x->node_j[g] = NAN;
		x->p50_ms = x->p95_ms = x->split = NAN;
	}
	return 0;
}

static void scope_free(struct scope *s)
{
	for (size_t k = 0; s->a && k < s->np; k++) {
		free(s->a[k].energy_j);
		free(s->a[k].lo_j);
		free(s->a[k].hi_j);
		free(s->a[k].node_j);
		free(s->a[k].flags);
	}
	free(s->a);
	free(s->unattr);
	free(s->un_lo);
	free(s->un_hi);
	free(s->total);
}

/* The power checks of one rank's row, on the node's joules before the
 * split (the physical question: could the node have drawn that much). */
static unsigned judge(const struct mr_host *h, const struct mr_phase *p, size_t g)
{
	double c = p->split > 0 ? p->split : 1;
	struct phase_flag_facts f = {
		.energy_j = p->node_j[g], .lo_j = p->lo_j[g] / c, .hi_j = p->hi_j[g] / c,
		.self_s = p->self_s, .mean_s = p->mean_ms / 1e3,
		.maxw_w = p->maxw_w[g], .minw_w = p->minw_w[g], .period_s = h->period_s,
	};
	return phase_flags_judge(&f);
}

/* Add one member: its times, and its joules when it has energy. */
static void scope_add(struct scope *s, const struct mr_unit *u, int one)
{
	const struct mring *m = s->m;
	int en = u->host_idx >= 0;
	s->nmem++;
	s->nfew += u->no_energy[0] != '\0';
	for (size_t p = 0; p < u->nph; p++) {
		const struct mr_phase *ph = &u->ph[p];
		struct agg *x = &s->a[name_index(s->nm, ph->name)];
		x->count += ph->count;
		x->total_s += ph->total_s;
		x->self_s += ph->self_s;
		x->tool |= ph->tool;
		/* Quantiles do not add up: only a one-rank scope has them. */
		if (one) {
			x->p50_ms = ph->p50_ms;
			x->p95_ms = ph->p95_ms;
			x->split = ph->split;
		}
		if (!en)
			continue;
		for (size_t g = 0; g < s->ng; g++) {
			if (isnan(ph->energy_j[g]))
				continue;
			if (isnan(x->energy_j[g]))
				x->energy_j[g] = 0;
			x->energy_j[g] += ph->energy_j[g];
			x->lo_j[g] += ph->lo_j[g];
			x->hi_j[g] += ph->hi_j[g];
			if (one)
				x->node_j[g] = ph->node_j[g];
			x->flags[g] |= ph->flags[g] | judge(&m->hosts[u->host_idx], ph, g);
		}
		if (!x->method)
			x->method = ph->method;
		else if (ph->method && x->method != ph->method)
			x->method = -1;
	}
	if (!en)
		return;
	s->nen++;
	for (size_t g = 0; g < s->ng; g++) {
		s->unattr[g] += u->unattr_j[g];
		s->un_lo[g] += u->unattr_lo_j[g];
		s->un_hi[g] += u->unattr_hi_j[g];
		s->total[g] += u->total_j[g];
	}
}

/* The scope's hosts: their perun span (each once) and alignments. */
static void scope_hosts(struct scope *s, const struct mr_unit *const *mem, size_t nmem)
{
	double unc = NAN;
	for (size_t i = 0; i < nmem; i++) {
		long h = mem[i]->host_idx;
		int seen = 0;
		if (h < 0)
			continue;
		for (size_t k = 0; k < i; k++)
			seen |= mem[k]->host_idx == h;
		if (seen)
			continue;
		const struct mr_host *mh = &s->m->hosts[h];
		if (mh->nsen)
			s->span_s += mh->sen[0].t_tl[mh->sen[0].ser.n - 1] - mh->sen[0].t_tl[0];
		if (!s->align[0] || strcmp(s->align, mh->method))
			snprintf(s->align, sizeof s->align, "%s%s", s->align[0] ? "mixed:" : "", mh->method);
		if (isnan(unc) || mh->uncert_ms > unc)
			unc = mh->uncert_ms;
	}
	if (!isnan(unc))
		snprintf(s->unc, sizeof s->unc, "%g", unc);
}

static const char *method_name(int m)
{
	return m < 0 ? "mixed" : m == ATTRIB_INTEGRATE ? "integrate" : m == ATTRIB_REGRESS ? "regress"
	       : m == ATTRIB_SPLIT ? "split" : "";
}

/* What one row shows in group g. */
struct cell {
	double e, lo, hi, w, share, node_j, split;
	const char *method;
	char flags[160];
};

/* Row k (np: unattributed, np + 1: total) in group g. */
static void cell_of(const struct scope *s, size_t k, size_t g, struct cell *c)
{
	int un = k == s->np, tot = k == s->np + 1;
	const struct agg *x = k < s->np ? &s->a[k] : NULL;
	int one_rank = !strcmp(s->kind, "rank") || !strcmp(s->kind, "process");
	double total = s->total[g];
	memset(c, 0, sizeof *c);
	c->node_j = c->split = NAN;
	c->lo = c->hi = NAN;
	if (!s->nen) {
		c->e = c->w = c->share = NAN;
		c->method = s->nfew ? "too-few-windows" : "no-power-sensor";
		if (x && x->tool)
			phase_flags_text(PHASE_FLAG_TOOL, c->flags, sizeof c->flags);
		return;
	}
	if (x) {
		c->e = x->tool ? NAN : x->energy_j[g];
		c->w = x->self_s > 0 ? c->e / x->self_s : NAN;
		if (!isnan(c->e)) {
			c->lo = x->lo_j[g];
			c->hi = x->hi_j[g];
		}
		c->method = x->tool ? "not-attributed" : method_name(x->method);
		if (one_rank) {
			c->node_j = x->node_j[g];
			c->split = x->split;
		}
		unsigned f = x->tool ? PHASE_FLAG_TOOL : x->flags[g];
		/* The attribution's flags, then the power checks'; an interval
		 * wider than the scope's total says nothing. */
		phase_flags_attrib_text(f & 0xffu, c->flags, sizeof c->flags);
		if (!isnan(c->e) && total > 0 && c->hi - c->lo > total)
			f |= PHASE_FLAG_WIDE;
		phase_flags_text(f & ~0xffu, c->flags, sizeof c->flags);
	} else if (un) {
		c->e = s->unattr[g];
		c->lo = s->un_lo[g];
		c->hi = s->un_hi[g];
		c->method = s->m->split ? "remainder" : "";
	} else {
		c->e = total;
		/* A rank's total is its share by the node split: a rule, no
		 * interval; a host's or all hosts' is perun's measurement. */
		if (!one_rank || !s->m->split)
			c->lo = c->hi = total;
		c->method = one_rank && s->m->split ? "node-split" : "perun";
	}
	if (un || tot)
		c->w = s->span_s > 0 && tot ? c->e / s->span_s : NAN;
	c->share = total > 0 ? c->e / total : NAN;
}

static void csv_row(struct csv *c, const struct scope *s, size_t k, size_t g, const struct cell *cl)
{
	const struct mring *m = s->m;
	int un = k == s->np, tot = k == s->np + 1;
	const struct agg *x = k < s->np ? &s->a[k] : NULL;
	csv_str(c, s->kind);
	csv_str(c, s->host);
	csv_str(c, s->rank);
	csv_str(c, tot ? "total" : un ? "unattributed" : "phase");
	csv_str(c, tot ? "(total)" : un ? "(unattributed)" : s->nm->v[k]);
	csv_str(c, m->ngroups ? m->groups[g] : "");
	/* summary rows: count 0 (an integer column), their seconds */
	csv_u64(c, x ? x->count : 0);
	csv_f64(c, x ? x->total_s : (tot ? s->span_s : NAN), 9);
	csv_f64(c, x ? x->self_s : (tot ? s->span_s : NAN), 9);
	csv_f64(c, x && x->count ? x->total_s / (double)x->count * 1e3 : NAN, 6);
	csv_f64(c, x ? x->p50_ms : NAN, 6);
	csv_f64(c, x ? x->p95_ms : NAN, 6);
	csv_f64(c, cl->e, 9);
	csv_f64(c, cl->w, 6);
	csv_f64(c, cl->share, 6);
	csv_f64(c, cl->lo, 9);
	csv_f64(c, cl->hi, 9);
	csv_str(c, cl->method);
	csv_str(c, cl->flags);
	csv_str(c, s->nen ? s->align : "");
	csv_str(c, s->unc);
	csv_str(c, s->nen && m->emulated ? "emulated sensor, not a measurement" : "");
	csv_f64(c, cl->node_j, 9);
	csv_f64(c, cl->split, 6);
	csv_str(c, s->pid);
	csv_row_end(c);
}

static void tty_header(FILE *tty, const struct scope *s)
{
	const struct mring *m = s->m;
	fprintf(tty, "\nscope %s%s%s%s%s%s%s: %zu rank(s)", s->kind, s->host[0] ? " " : "", s->host,
		s->rank[0] ? " rank " : "", s->rank, !s->rank[0] && s->pid[0] ? " pid " : "", !s->rank[0] ? s->pid : "",
		s->nmem);
	if (s->nen)
		fprintf(tty, ", energy: %s%s%s", s->align, m->split ? ", node split" : "",
			m->emulated ? "; emulated sensor, not a measurement" : "");
	else if (s->nfew)
		fprintf(tty, ", no energy (too few perun sample windows over the phases: see above)");
	else
		fprintf(tty, ", no energy (no perun host data)");
	fprintf(tty, "\n%-22s %7s %10s %9s", "phase", "count", "total_s", "mean_ms");
	for (size_t g = 0; g < m->ngroups && s->nen; g++)
		fprintf(tty, "  %10s %8s %6s %-19s", m->groups[g], "W", "share", "95% CI (J)");
	fprintf(tty, " method / flags\n");
}

/* The rows of one scope; *nhidden: the tools' own rows, CSV only. */
static void scope_rows(struct csv *c, FILE *tty, const struct scope *s, size_t *nhidden)
{
	const struct mring *m = s->m;
	for (size_t k = 0; k <= s->np + 1; k++) {
		const struct agg *x = k < s->np ? &s->a[k] : NULL;
		const char *name = k == s->np + 1 ? "(total)" : k == s->np ? "(unattributed)" : s->nm->v[k];
		FILE *out = x && x->tool ? NULL : tty; /* the tools' own: CSV only */
		char flags[200] = "";
		const char *method = "";
		if ((x && !x->count) || (!x && !s->nen))
			continue;
		*nhidden += x && x->tool;
		if (out && x)
			fprintf(out, "%-22.22s %7zu %10.3f %9.3f", name, x->count, x->total_s,
				x->total_s / (double)x->count * 1e3);
		else if (out)
			fprintf(out, "%-22.22s %7s %10s %9s", name, "", "", "");
		for (size_t g = 0; g < s->ng; g++) {
			struct cell cl;
			cell_of(s, k, g, &cl);
			csv_row(c, s, k, g, &cl);
			method = cl.method;
			if (cl.flags[0] && !strstr(flags, cl.flags))
				snprintf(flags + strlen(flags), sizeof flags - strlen(flags), "%s%s", flags[0] ? ";" : "",
					 cl.flags);
			if (!out || g >= m->ngroups || !s->nen)
				continue;
			char ci[48] = "";
			if (!isnan(cl.lo) && !isnan(cl.hi) && k != s->np + 1)
				snprintf(ci, sizeof ci, "[%.2f, %.2f]", cl.lo, cl.hi);
			char w[16] = "-";
			if (!isnan(cl.w))
				snprintf(w, sizeof w, "%.2f", cl.w);
			if (isnan(cl.e))
				fprintf(out, "  %10s %8s %6s %-19s", "-", "-", "-", "");
			else
				fprintf(out, "  %10.2f %8s %6.3f %-19s", cl.e, w, cl.share, ci);
		}
		if (out)
			fprintf(out, " %s%s%s\n", method, flags[0] ? " (!) " : "", flags);
	}
}

/* Write one scope: members add their times and (with energy) joules. */
static int write_scope(struct csv *c, FILE *tty, const struct mring *m, const struct names *nm, const char *kind,
		       const char *host, int rank, const struct mr_unit *const *mem, size_t nmem)
{
	struct scope s;
	size_t nhidden = 0;
	if (scope_alloc(&s, m, nm)) {
		scope_free(&s);
		return -ENOMEM;
	}
	snprintf(s.kind, sizeof s.kind, "%s", kind);
	snprintf(s.host, sizeof s.host, "%s", host ? host : "");
	if (rank >= 0)
		snprintf(s.rank, sizeof s.rank, "%d", rank);
	if (!strcmp(kind, "rank") || !strcmp(kind, "process"))
		snprintf(s.pid, sizeof s.pid, "%u", mem[0]->pid);
	for (size_t i = 0; i < nmem; i++)
		scope_add(&s, mem[i], nmem == 1 && (!strcmp(kind, "rank") || !strcmp(kind, "process")));
	scope_hosts(&s, mem, nmem);
	if (tty)
		tty_header(tty, &s);
	scope_rows(c, tty, &s, &nhidden);
	if (tty && nhidden)
		fprintf(tty, "hidden: %zu phase(s) of the tools' own activity (perun's MPI calls, anchor's sync pulses); "
			     "their rows in the CSV with flag 'tool'\n",
			nhidden);
	scope_free(&s);
	return 0;
}

int rank_table_write(const struct mring *m, struct csv *c, FILE *tty, int by_rank, size_t max_tty_units,
		     struct em_error *e)
{
	static const char *const cols[] = {"scope", "host", "rank", "row", "phase", "device_group", "count", "total_s",
					   "self_s", "mean_ms", "p50_ms", "p95_ms", "energy_j", "mean_power_w",
					   "share", "ci95_low_j", "ci95_high_j", "method", "flags", "alignment",
					   "align_uncert_ms", "sensor_note", "node_energy_j", "node_share", "pid", NULL};
	struct names nm = {0};
	const struct mr_unit **mem = calloc(m->nunits + 1, sizeof *mem);
	FILE *each = m->nunits <= max_tty_units ? tty : NULL;
	int rc = 0;
	if (!mem)
		return diag_error(e, -ENOMEM, NULL, "out of memory");
	for (size_t i = 0; i < m->nunits && !rc; i++)
		for (size_t p = 0; p < m->units[i]->nph; p++)
			if (name_index(&nm, m->units[i]->ph[p].name) < 0) {
				const char **nv = realloc(nm.v, (nm.n + 1) * sizeof *nv);
				if (!nv) {
					rc = -ENOMEM;
					break;
				}
				nm.v = nv;
				nm.v[nm.n++] = m->units[i]->ph[p].name;
			}
	csv_header(c, cols);
	if (!rc)
		rc = write_scope(c, tty, m, &nm, "all", NULL, -1, (const struct mr_unit *const *)m->units, m->nunits);
	/* Hosts, in order of first appearance among the sorted units. */
	for (size_t i = 0; by_rank && !rc && i < m->nunits; i++) {
		const char *h = m->units[i]->host;
		size_t nmem = 0;
		int seen = 0;
		for (size_t k = 0; k < i; k++)
			seen |= !strcmp(m->units[k]->host, h);
		if (seen)
			continue;
		for (size_t k = i; k < m->nunits; k++)
			if (!strcmp(m->units[k]->host, h))
				mem[nmem++] = m->units[k];
		/* One host: its block would repeat "all" (CSV only). */
		rc = write_scope(c, nmem < m->nunits ? each : NULL, m, &nm, "host", h, -1, mem, nmem);
	}
	for (size_t i = 0; by_rank && !rc && i < m->nunits; i++) {
		const struct mr_unit *one[1] = {m->units[i]};
		/* A training process without a rank variable: scope "process". */
		rc = write_scope(c, each, m, &nm, m->units[i]->rank >= 0 ? "rank" : "process", m->units[i]->host,
				 m->units[i]->rank, one, 1);
	}
	if (!rc && tty && by_rank && !each)
		fprintf(tty, "\n(%zu ranks: per-host and per-rank rows are in the CSV only)\n", m->nunits);
	if (!rc && tty && m->split)
		fprintf(tty, "\nper-rank joules: %s (node_share and node_energy_j in the CSV; docs/mpi.md)\n",
			mring_split_rule);
	free(nm.v);
	free(mem);
	return rc ? diag_error(e, rc, NULL, "out of memory") : 0;
}

/* perun's joules over every host's span, all groups: what Slurm's
 * ConsumedEnergy (packages, DRAM, GPUs by plugin) is set beside. */
static double perun_total_j(const struct mring *m, double *span_s)
{
	double sum = 0;
	*span_s = 0;
	for (size_t h = 0; h < m->nhosts; h++) {
		const struct mr_host *mh = &m->hosts[h];
		for (size_t s = 0; s < mh->nsen; s++)
			sum += energy_model_slice_j(&mh->sen[s], mh->sen[s].t_tl[0], mh->sen[s].t_tl[mh->sen[s].ser.n - 1]);
		if (mh->nsen)
			*span_s = fmax(*span_s, mh->sen[0].t_tl[mh->sen[0].ser.n - 1] - mh->sen[0].t_tl[0]);
	}
	return sum;
}

void rank_table_print_acct(FILE *tty, const struct mring *m, const struct slurm_acct *a)
{
	double span_s, perun = m->have_perun ? perun_total_j(m, &span_s) : NAN;
	if (a->state == SLURM_ACCT_ENERGY) {
		fprintf(tty, "\nSlurm accounting: ConsumedEnergy %.1f J for %s over %.0f s (sacct)", a->energy_j, a->jobstep,
			a->elapsed_s);
		if (perun > 0)
			fprintf(tty, "; perun %.1f J over %.1f s on %zu node(s); ratio sacct/perun %.3f (the spans differ: "
				     "Slurm counts the whole step, perun its sampling; plugins differ in what they meter)",
				perun, span_s, m->nhosts, a->energy_j / perun);
		fprintf(tty, "\n");
		return;
	}
	fprintf(tty, "\nSlurm accounting: %s: %s; perun's %.1f J is the only energy measurement of this job\n",
		a->state == SLURM_ACCT_NO_ENERGY ? "Slurm's energy accounting is not configured"
						 : "Slurm's job accounting is not readable (not configured here)",
		a->why, perun);
}
