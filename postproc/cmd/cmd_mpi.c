/*
 * cmd_mpi.c - several rings at once (one per rank or host):
 *
 *   anchorpost phases --rings DIR|GLOB|FILE [--rings ...] [--perun P]
 *                     [--by-rank] [-o phases.csv] [--stragglers S.csv]
 *   anchorpost stragglers --rings ... [--perun P] [-o stragglers.csv]
 *
 * (`phases` comes here when given --rings, --by-rank or --ring twice.)
 *
 * phases CSV, one row per (scope, phase, device_group):
 *   scope        all | host | rank
 *   host, rank   empty for "all"; rank empty for "host"
 *   phase, device_group, count, total_s, self_s, mean_ms, p50_ms, p95_ms
 *   energy_j, mean_power_w, share, ci95_low_j, ci95_high_j, method
 *   alignment, align_uncert_ms, sensor_note
 * A rank's joules are its host's power explained by the rank's primary
 * thread; a host's are those of its lowest rank (the one perun samples
 * from: two ranks of one host cannot both own the host's joules); "all"
 * sums the hosts.  Counts and times add up over the scope's ranks.
 *
 * stragglers CSV, one row per (step, rank), steps matched by index (the
 * k-th occurrence of the step phase on each rank's primary thread):
 *   step, rank, host, t0_utc, t0_unix_ns, dur_ms, compute_ms, wait_ms, wait_j,
 *   slowest (1 for the rank with the most compute time: the one the others
 *   waited for), behind_ms (slowest's compute_ms minus this rank's)
 * wait = time inside collectives (MPI_*, dist.*) within the step; wait_j =
 * joules spent in those intervals at the collective phase's attributed
 * power on that rank's host (every group; mring.c says why not a slice
 * of the power curve).
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>

#include "anchors/ring_clock.h"
#include "cmd/cmd_fatal.h"
#include "cmd/commands.h"
#include "cmd/options.h"
#include "model/mring.h"
#include "model/sensor_glitch.h"
#include "output/csv.h"
#include "output/outfile.h"
#include "util/diag.h"

#define MAX_INPUTS 4096

struct mpi_args {
	struct mring_opts o;
	const char *inputs[MAX_INPUTS];
	const char *out, *stragglers_out;
	int by_rank;
	long threads;
};

static const struct cmd_usage stragglers_usage = {
	.name = "stragglers",
	.usage = "--rings DIR|GLOB|RING [--rings ...] [--perun FILE.hdf5] [-o stragglers.csv] [options]",
	.about = "  per step: the slowest rank, the others' time waiting in collectives, its joules\n",
};
static const struct cmd_usage phases_mpi_usage = {
	.name = "phases",
	.usage = "--rings DIR|GLOB|RING [--rings ...] [--perun FILE.hdf5] [--by-rank] [-o phases.csv]\n"
		 "                         [--stragglers S.csv] [options]",
	.about = "  phases of many rings (ranks, hosts) on one UTC-based timeline\n",
};

/* --ring/--rings: one more input. */
static int add_input(const struct option *opt, const char *arg, char *err, size_t cap)
{
	struct mpi_args *a = opt->value;
	if (a->o.ninputs == MAX_INPUTS) {
		snprintf(err, cap, "more than %d of them (use a directory or a glob)", MAX_INPUTS);
		return -1;
	}
	a->inputs[a->o.ninputs++] = arg;
	return 0;
}

/* `phases` options that mean several rings. */
int phases_wants_mpi(int argc, char **argv)
{
	int rings = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = NULL;
		if (!strcmp(a, "--"))
			break;
		if (!strcmp(a, "--rings") || !strncmp(a, "--rings=", 8) || !strcmp(a, "--by-rank") ||
		    !strcmp(a, "--stragglers") || !strncmp(a, "--stragglers=", 13))
			return 1;
		if (!strcmp(a, "--ring") && i + 1 < argc)
			v = argv[i + 1];
		else if (!strncmp(a, "--ring=", 7))
			v = a + 7;
		if (v) {
			struct stat st;
			rings++;
			if (strpbrk(v, "*?[") || (stat(v, &st) == 0 && S_ISDIR(st.st_mode)))
				return 1;
		}
	}
	return rings > 1;
}

static void parse(int argc, char **argv, struct mpi_args *a, int stragglers)
{
	const struct cmd_usage *u = stragglers ? &stragglers_usage : &phases_mpi_usage;
	const struct option opts[] = {
		OPT_CALLBACK(0, "rings", a, "DIR", add_input, "a ring, a directory of *.ring, or a glob (repeatable)"),
		OPT_CALLBACK(0, "ring", a, "RING", add_input, "the same as --rings"),
		OPT_STRING(0, "perun", &a->o.perun, "FILE", "perun's HDF5 output (none: times only)"),
		OPT_STRING('o', "out", &a->out, "FILE", "the CSV (default -: stdout; the tables then go to stderr)"),
		OPT_BOOL(0, "by-rank", &a->by_rank, "one block of rows per rank"),
		/* phases only: stragglers writes its table to -o. */
		OPT_STRING(0, "stragglers", &a->stragglers_out, "FILE", stragglers ? NULL : "also the stragglers CSV"),
		OPT_STRING(0, "step", &a->o.step, "NAME",
			   "the step phase (default: first of train_step, optimizer_step, optimizer.step, step, "
			   "iteration)"),
		OPTS_ATTRIB(&a->o.method, &a->o.ao),
		OPT_STRING(0, "run", &a->o.run, "ID", "perun multirun (default: the last)"),
		OPT_LONG(0, "round", &a->o.round, "N", 0, 1e6, 0, "perun round"),
		OPT_STRING(0, "tz", &a->o.tz, "+HH:MM", "zone of perun's execution_dt (default: this machine's)"),
		OPTS_ALIGN(&a->o),
		OPT_NO_HOOK(&a->o),
		OPT_LONG(0, "threads", &a->threads, "N", 1, 1024, 2, "rings loaded in parallel"),
		OPT_END(),
	};
	memset(a, 0, sizeof *a);
	a->o.inputs = a->inputs;
	if (options_parse(argc, argv, opts, u, 0))
		options_usage_error(u, "unexpected argument '%s'", argv[1]);
	if (stragglers && a->stragglers_out)
		options_usage_error(u, "unknown option '--stragglers'");
	a->o.threads = (int)a->threads;
	if (a->out && !strcmp(a->out, "-"))
		a->out = NULL;
	if (!a->o.ninputs)
		options_usage_error(u, "needs --rings (or --ring)");
}

/* ---- the ranks table (always: who ran, who died) ------------------------ */

static void print_ranks(FILE *tty, const struct mring *m)
{
	size_t abnormal = 0;
	fprintf(tty, "%zu ring(s), %zu rank(s); timeline: UTC through each ring's own SYNC records\n", m->nrings,
		m->nunits);
	fprintf(tty, "%-16s %6s %8s %8s %10s %10s  %s\n", "rank@host", "steps", "coll_s", "events", "first_s",
		"last_s", "status");
	for (size_t i = 0; i < m->nunits; i++) {
		const struct mr_unit *u = m->units[i];
		const struct mr_ring *r = &m->rings[u->ring];
		char lab[96];
		mring_unit_label(u, lab, sizeof lab);
		fprintf(tty, "%-16.16s %6zu %8.3f %8llu %10.3f %10.3f  %s%s\n", lab, u->nsteps, u->coll_s,
			(unsigned long long)r->nev, u->first_s, u->last_s, u->status,
			r->stats.torn ? " (torn records in ring)" : "");
		abnormal += (size_t)u->abnormal;
	}
	for (size_t i = 0; i < m->nrings; i++)
		if (!m->rings[i].nunits)
			diag_warn(m->rings[i].path, "no process with phases in this ring");
	if (abnormal)
		fprintf(tty, "%zu rank(s) ended abnormally: their rings are read up to their last committed record\n",
			abnormal);
}

/* Hosts aligned without perun's stamps: the offset, its 95 % interval and
 * the ring's hard bounds, as single-ring `phases` states them (hosts with
 * stamps print nothing here: exact). */
static void print_fallback(FILE *tty, const struct mring *m)
{
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

/* ---- phases ------------------------------------------------------------------ */

struct agg {
	size_t count;
	double total_s, self_s;
	double p50_ms, p95_ms;          /* a one-rank scope only */
	double *energy_j, *lo_j, *hi_j; /* per group */
	int method;
};

struct names {
	char **v;
	size_t n;
};

static long name_index(struct names *nm, const char *s, int add)
{
	for (size_t i = 0; i < nm->n; i++)
		if (!strcmp(nm->v[i], s))
			return (long)i;
	if (!add)
		return -1;
	char **nv = realloc(nm->v, (nm->n + 1) * sizeof *nv);
	if (!nv)
		diag_fatal(NULL, "out of memory");
	nm->v = nv;
	nm->v[nm->n] = (char *)s;
	return (long)nm->n++;
}

static const char *method_name(int m)
{
	return m == ATTRIB_INTEGRATE ? "integrate" : m == ATTRIB_REGRESS ? "regress" : m == ATTRIB_SPLIT ? "split" : "";
}

/* One scope's sums while its rows are written. */
struct scope_sum {
	const struct mring *m;
	const struct names *nm;
	size_t ng, np;
	struct agg *a;          /* per phase name */
	double *unattr, *total; /* per group */
	double span;
	char align[96], unc[32];
};

static void scope_alloc(struct scope_sum *s, const struct mring *m, const struct names *nm)
{
	memset(s, 0, sizeof *s);
	s->m = m;
	s->nm = nm;
	s->ng = m->ngroups ? m->ngroups : 1;
	s->np = nm->n;
	s->a = calloc(s->np ? s->np : 1, sizeof *s->a);
	s->unattr = calloc(s->ng, sizeof *s->unattr);
	s->total = calloc(s->ng, sizeof *s->total);
	if (!s->a || !s->unattr || !s->total)
		diag_fatal(NULL, "out of memory");
	for (size_t k = 0; k < s->np; k++) {
		s->a[k].energy_j = calloc(s->ng, sizeof(double));
		s->a[k].lo_j = calloc(s->ng, sizeof(double));
		s->a[k].hi_j = calloc(s->ng, sizeof(double));
		if (!s->a[k].energy_j || !s->a[k].lo_j || !s->a[k].hi_j)
			diag_fatal(NULL, "out of memory");
		for (size_t g = 0; g < s->ng; g++)
			s->a[k].energy_j[g] = NAN;
		s->a[k].p50_ms = s->a[k].p95_ms = NAN;
	}
}

static void scope_free(struct scope_sum *s)
{
	for (size_t k = 0; k < s->np; k++) {
		free(s->a[k].energy_j);
		free(s->a[k].lo_j);
		free(s->a[k].hi_j);
	}
	free(s->a);
	free(s->unattr);
	free(s->total);
}

/* The members' times. */
static void scope_add_times(struct scope_sum *s, const struct mr_unit *const *members, size_t nmem)
{
	for (size_t i = 0; i < nmem; i++)
		for (size_t p = 0; p < members[i]->nph; p++) {
			const struct mr_phase *ph = &members[i]->ph[p];
			struct agg *x = &s->a[name_index((struct names *)s->nm, ph->name, 0)];
			x->count += ph->count;
			x->total_s += ph->total_s;
			x->self_s += ph->self_s;
			/* Quantiles do not add up: only a one-rank scope has them. */
			if (nmem == 1) {
				x->p50_ms = ph->p50_ms;
				x->p95_ms = ph->p95_ms;
			}
		}
}

/* One energy unit's joules (its host's, explained by it), and its host's
 * span and alignment. */
static void scope_add_energy(struct scope_sum *s, const struct mr_unit *u, double *unc_ms)
{
	const struct mr_host *h = &s->m->hosts[u->host_idx];
	for (size_t g = 0; g < s->ng; g++) {
		s->unattr[g] += u->unattr_j[g];
		s->total[g] += u->total_j[g];
	}
	for (size_t p = 0; p < u->nph; p++) {
		const struct mr_phase *ph = &u->ph[p];
		struct agg *x = &s->a[name_index((struct names *)s->nm, ph->name, 0)];
		for (size_t g = 0; g < s->ng; g++) {
			if (isnan(ph->energy_j[g]))
				continue;
			if (isnan(x->energy_j[g]))
				x->energy_j[g] = 0;
			x->energy_j[g] += ph->energy_j[g];
			x->lo_j[g] += ph->lo_j[g];
			x->hi_j[g] += ph->hi_j[g];
		}
		if (!x->method)
			x->method = ph->method;
		else if (ph->method && x->method != ph->method)
			x->method = -1;
	}
	if (h->nsen)
		s->span += h->sen[0].t_tl[h->sen[0].ser.n - 1] - h->sen[0].t_tl[0];
	if (!s->align[0] || strcmp(s->align, h->method))
		snprintf(s->align, sizeof s->align, "%s%s", s->align[0] ? "mixed:" : "", h->method);
	if (isnan(*unc_ms) || h->uncert_ms > *unc_ms)
		*unc_ms = h->uncert_ms;
}

/* The CSV row of phase k (np: unattributed, np + 1: total) in group g. */
static void scope_row(struct csv *c, const struct scope_sum *s, const char *scope, const char *host, const char *rk,
		      size_t k, size_t g, size_t nen, double *e_out)
{
	const struct mring *m = s->m;
	int un = k == s->np, tot = k == s->np + 1;
	const struct agg *x = k < s->np ? &s->a[k] : NULL;
	const char *name = tot ? "(total)" : un ? "(unattributed)" : s->nm->v[k];
	double e = x ? x->energy_j[g] : un ? (nen ? s->unattr[g] : NAN) : (nen ? s->total[g] : NAN);
	double ts = x ? x->self_s : (tot ? s->span : NAN);
	csv_str(c, scope);
	csv_str(c, host ? host : "");
	csv_str(c, rk);
	csv_str(c, tot ? "total" : un ? "unattributed" : "phase");
	csv_str(c, name);
	csv_str(c, m->ngroups ? m->groups[g] : "");
	/* summary rows: count 0 (an integer column), their seconds */
	csv_u64(c, x ? x->count : 0);
	csv_f64(c, x ? x->total_s : ts, 9);
	csv_f64(c, ts, 9);
	csv_f64(c, x ? x->total_s / (double)x->count * 1e3 : NAN, 6);
	csv_f64(c, x ? x->p50_ms : NAN, 6);
	csv_f64(c, x ? x->p95_ms : NAN, 6);
	csv_f64(c, e, 9);
	csv_f64(c, x && ts > 0 ? e / ts : NAN, 6);
	csv_f64(c, s->total[g] > 0 ? e / s->total[g] : NAN, 6);
	csv_f64(c, x ? (isnan(e) ? NAN : x->lo_j[g]) : (tot ? e : NAN), 9);
	csv_f64(c, x ? (isnan(e) ? NAN : x->hi_j[g]) : (tot ? e : NAN), 9);
	csv_str(c, !nen ? "no-power-sensor" : tot ? "perun" : x ? (x->method < 0 ? "mixed" : method_name(x->method)) : "");
	csv_str(c, nen ? s->align : "");
	csv_str(c, s->unc);
	csv_str(c, nen && m->emulated ? "emulated sensor, not a measurement" : "");
	csv_row_end(c);
	*e_out = e;
}

/* Scope rows: `members` units add their times; `energy_from` units (one per
 * host) add their joules. */
static void write_scope(struct csv *c, FILE *tty, const struct mring *m, const struct names *nm,
			const char *scope, const char *host, int rank, const struct mr_unit *const *members,
			size_t nmem, const struct mr_unit *const *energy_from, size_t nen)
{
	struct scope_sum s;
	char rk[16] = "";
	double unc_ms = NAN;
	scope_alloc(&s, m, nm);
	if (rank >= 0)
		snprintf(rk, sizeof rk, "%d", rank);
	scope_add_times(&s, members, nmem);
	for (size_t i = 0; i < nen; i++)
		scope_add_energy(&s, energy_from[i], &unc_ms);
	if (!isnan(unc_ms))
		snprintf(s.unc, sizeof s.unc, "%g", unc_ms);
	if (tty) {
		fprintf(tty, "\nscope %s%s%s%s%s: %zu rank(s)%s%s\n", scope, host ? " " : "", host ? host : "",
			rk[0] ? " rank " : "", rk, nmem, nen ? ", energy: " : ", no energy (no perun host data)",
			nen ? s.align : "");
		fprintf(tty, "%-22s %7s %10s %9s", "phase", "count", "total_s", "mean_ms");
		for (size_t g = 0; g < m->ngroups; g++)
			fprintf(tty, " %10s %6s", m->groups[g], "share");
		fprintf(tty, "\n");
	}
	for (size_t k = 0; k <= s.np + 1; k++) {
		const struct agg *x = k < s.np ? &s.a[k] : NULL;
		const char *name = k == s.np + 1 ? "(total)" : k == s.np ? "(unattributed)" : nm->v[k];
		if ((x && !x->count) || (!x && !nen))
			continue;
		if (tty) {
			if (x)
				fprintf(tty, "%-22.22s %7zu %10.3f %9.3f", name, x->count, x->total_s,
					x->total_s / (double)x->count * 1e3);
			else
				fprintf(tty, "%-22.22s %7s %10s %9s", name, "", "", "");
		}
		for (size_t g = 0; g < s.ng; g++) {
			double e;
			scope_row(c, &s, scope, host, rk, k, g, nen, &e);
			if (tty && g < m->ngroups) {
				if (isnan(e))
					fprintf(tty, " %10s %6s", "-", "-");
				else /* a fraction, as in the CSV */
					fprintf(tty, " %10.2f %6.3f", e, s.total[g] > 0 ? e / s.total[g] : 0.0);
			}
		}
		if (tty)
			fprintf(tty, "\n");
	}
	scope_free(&s);
}

static void write_phases(const struct mring *m, const struct mpi_args *a, FILE *tty)
{
	static const char *const cols[] = {"scope", "host", "rank", "row", "phase", "device_group", "count", "total_s",
					   "self_s", "mean_ms", "p50_ms", "p95_ms", "energy_j", "mean_power_w",
					   "share", "ci95_low_j", "ci95_high_j", "method", "alignment",
					   "align_uncert_ms", "sensor_note", NULL};
	struct names nm = {0};
	const struct mr_unit **lead = calloc(m->nunits + 1, sizeof *lead);
	size_t nlead = 0;
	struct outfile of;
	struct csv c;
	if (!lead)
		diag_fatal(NULL, "out of memory");
	for (size_t i = 0; i < m->nunits; i++)
		for (size_t p = 0; p < m->units[i]->nph; p++)
			name_index(&nm, m->units[i]->ph[p].name, 1);
	/* Lead unit per perun host: the lowest rank there (units are sorted
	 * by rank, so the first seen). */
	for (size_t i = 0; i < m->nunits; i++) {
		const struct mr_unit *u = m->units[i];
		int seen = 0;
		if (u->host_idx < 0)
			continue;
		for (size_t k = 0; k < nlead; k++)
			seen |= lead[k]->host_idx == u->host_idx;
		if (!seen)
			lead[nlead++] = u;
	}
	outfile_open(&of, a->out ? a->out : "-");
	csv_init(&c, of.fp);
	csv_header(&c, cols);
	write_scope(&c, tty, m, &nm, "all", NULL, -1, (const struct mr_unit *const *)m->units, m->nunits, lead,
		    nlead);
	if (a->by_rank) {
		/* Hosts, in order of first appearance among the sorted units. */
		for (size_t i = 0; i < m->nunits; i++) {
			const char *h = m->units[i]->host;
			int seen = 0;
			size_t nmem = 0;
			const struct mr_unit **mem;
			const struct mr_unit *en = NULL;
			for (size_t k = 0; k < i; k++)
				seen |= !strcmp(m->units[k]->host, h);
			if (seen)
				continue;
			mem = calloc(m->nunits, sizeof *mem);
			if (!mem)
				diag_fatal(NULL, "out of memory");
			for (size_t k = i; k < m->nunits; k++)
				if (!strcmp(m->units[k]->host, h)) {
					mem[nmem++] = m->units[k];
					if (!en && m->units[k]->host_idx >= 0)
						en = m->units[k];
				}
			write_scope(&c, m->nunits <= 16 ? tty : NULL, m, &nm, "host", h, -1, mem, nmem, &en, en ? 1 : 0);
			free(mem);
		}
		for (size_t i = 0; i < m->nunits; i++) {
			const struct mr_unit *u = m->units[i];
			int has = u->host_idx >= 0;
			const struct mr_unit *one[1] = {u};
			write_scope(&c, m->nunits <= 16 ? tty : NULL, m, &nm, "rank", u->host, u->rank, one, 1, one,
				    has ? 1 : 0);
		}
		if (m->nunits > 16 && tty)
			fprintf(tty, "\n(%zu ranks: per-host and per-rank rows are in the CSV only)\n", m->nunits);
	}
	outfile_commit(&of);
	if (a->out && tty)
		fprintf(tty, "\nwrote %s\n", a->out);
	free(nm.v);
	free(lead);
}

/* ---- stragglers ---------------------------------------------------------------- */

/*
 * One row per (step, rank): a million rows for 64 ranks x 16 k steps, where
 * printf's float formatting was about a tenth of the whole run (perf).  Values are
 * written as fixed-point decimals from integers instead (ms with 6
 * decimals = ns; J with 9 decimals = nJ).
 */
static void put_fixed(struct csv *c, double v, int dec, double scale)
{
	char buf[48], *p = buf + sizeof buf;
	int neg = v < 0;
	uint64_t x;
	if (isnan(v) || fabs(v) * scale > 9e18) {
		if (isnan(v))
			csv_empty(c);
		else
			csv_f64(c, v, 9);
		return;
	}
	x = (uint64_t)llround(fabs(v) * scale);
	for (int i = 0; i < dec; i++) {
		*--p = (char)('0' + x % 10);
		x /= 10;
	}
	*--p = '.';
	do {
		*--p = (char)('0' + x % 10);
		x /= 10;
	} while (x);
	if (neg)
		*--p = '-';
	csv_strn(c, p, (size_t)(buf + sizeof buf - p));
}

static void put_u64(struct csv *c, uint64_t x)
{
	char buf[24], *p = buf + sizeof buf;
	do {
		*--p = (char)('0' + x % 10);
		x /= 10;
	} while (x);
	csv_strn(c, p, (size_t)(buf + sizeof buf - p));
}

/* ISO UTC with ns; strftime only when the second changes. */
static void put_iso(struct csv *c, int64_t ns, int64_t *last_sec, char *prefix, size_t cap)
{
	int64_t sec = ns >= 0 ? ns / 1000000000 : (ns - 999999999) / 1000000000;
	int64_t frac = ns - sec * 1000000000;
	char buf[64];
	size_t n;
	if (sec != *last_sec) {
		char iso[48];
		ring_clock_iso(sec * 1000000000, iso, sizeof iso);
		snprintf(prefix, cap, "%.*s", (int)strcspn(iso, "."), iso);
		*last_sec = sec;
	}
	n = strlen(prefix);
	memcpy(buf, prefix, n);
	buf[n++] = '.';
	for (int i = 8; i >= 0; i--) {
		buf[n + (size_t)i] = (char)('0' + frac % 10);
		frac /= 10;
	}
	n += 9;
	buf[n++] = 'Z';
	csv_strn(c, buf, n);
}

/* The per-rank summary of the straggler table. */
static void print_stragglers(FILE *tty, const struct mring *m, const char *out, size_t matched,
			     const size_t *slow_count, const double *wait_s, const double *wait_j)
{
	int energy = m->have_perun;
	fprintf(tty, "\nstragglers: step phase '%s', %zu step(s) seen on >= 2 ranks\n", m->step[0] ? m->step : "(none)",
		matched);
	fprintf(tty, "%-16s %8s %8s %12s %12s%s\n", "rank@host", "steps", "slowest", "wait_s", "wait_ms/step",
		energy ? "     wait_J" : "");
	for (size_t i = 0; i < m->nunits; i++) {
		const struct mr_unit *u = m->units[i];
		char lab[96];
		mring_unit_label(u, lab, sizeof lab);
		fprintf(tty, "%-16.16s %8zu %8zu %12.3f %12.3f", lab, u->nsteps, slow_count[i], wait_s[i],
			u->nsteps ? wait_s[i] / (double)u->nsteps * 1e3 : 0.0);
		if (energy)
			fprintf(tty, " %10.3f", u->host_idx >= 0 ? wait_j[i] : NAN);
		fprintf(tty, "\n");
	}
	if (energy)
		fprintf(tty, "(wait_J: joules at the collective phases' attributed host power while this rank waited;\n ranks sharing a host each see the whole host)\n");
	if (out)
		fprintf(tty, "wrote %s\n", out);
}

static void write_stragglers(const struct mring *m, const char *out, FILE *tty)
{
	static const char *const cols[] = {"step", "rank", "host", "t0_utc", "t0_unix_ns", "dur_ms", "compute_ms",
					   "wait_ms", "wait_j", "slowest", "behind_ms", NULL};
	size_t nmax = 0, matched = 0;
	int64_t last_sec = INT64_MIN;
	char iso_prefix[48] = "";
	size_t *slow_count = calloc(m->nunits + 1, sizeof *slow_count);
	double *wait_s = calloc(m->nunits + 1, sizeof *wait_s), *wait_j = calloc(m->nunits + 1, sizeof *wait_j);
	struct outfile of;
	struct csv c;
	if (!slow_count || !wait_s || !wait_j)
		diag_fatal(NULL, "out of memory");
	for (size_t i = 0; i < m->nunits; i++)
		if (m->units[i]->nsteps > nmax)
			nmax = m->units[i]->nsteps;
	outfile_open(&of, out ? out : "-");
	csv_init(&c, of.fp);
	csv_header(&c, cols);
	for (size_t k = 0; k < nmax; k++) {
		long slow = -1, have = 0;
		double slow_compute = -1;
		for (size_t i = 0; i < m->nunits; i++) {
			const struct mr_unit *u = m->units[i];
			if (k >= u->nsteps)
				continue;
			have++;
			double comp = u->steps[k].t1_s - u->steps[k].t0_s - u->steps[k].wait_s;
			if (comp > slow_compute) {
				slow_compute = comp;
				slow = (long)i;
			}
		}
		if (have < 2)
			continue;
		matched++;
		slow_count[slow]++;
		for (size_t i = 0; i < m->nunits; i++) {
			const struct mr_unit *u = m->units[i];
			const struct mr_step *s;
			char rk[16];
			if (k >= u->nsteps)
				continue;
			s = &u->steps[k];
			double dur = s->t1_s - s->t0_s, comp = dur - s->wait_s;
			wait_s[i] += s->wait_s;
			if (!isnan(s->wait_j))
				wait_j[i] += s->wait_j;
			int64_t t0_ns = m->t0_unix_ns + (int64_t)llround(s->t0_s * 1e9);
			snprintf(rk, sizeof rk, "%d", u->rank);
			put_u64(&c, k);
			csv_str(&c, rk);
			csv_str(&c, u->host);
			put_iso(&c, t0_ns, &last_sec, iso_prefix, sizeof iso_prefix);
			csv_i64(&c, t0_ns);
			put_fixed(&c, dur * 1e3, 6, 1e6);
			put_fixed(&c, comp * 1e3, 6, 1e6);
			put_fixed(&c, s->wait_s * 1e3, 6, 1e6);
			put_fixed(&c, s->wait_j, 9, 1e9);
			put_u64(&c, (size_t)slow == i);
			put_fixed(&c, (slow_compute - comp) * 1e3, 6, 1e6);
			csv_row_end(&c);
		}
	}
	outfile_commit(&of);
	if (tty)
		print_stragglers(tty, m, out, matched, slow_count, wait_s, wait_j);
	free(slow_count);
	free(wait_s);
	free(wait_j);
}

static void report_resources(FILE *tty, const struct timespec *t0)
{
	struct timespec t1;
	struct rusage ru;
	if (!getenv("ANCHORPOST_STATS"))
		return;
	clock_gettime(CLOCK_MONOTONIC, &t1);
	getrusage(RUSAGE_SELF, &ru);
	fprintf(tty, "anchorpost: %.3f s wall, %.3f s cpu, peak RSS %.1f MB\n",
		(double)(t1.tv_sec - t0->tv_sec) + (double)(t1.tv_nsec - t0->tv_nsec) / 1e9,
		(double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
			(double)ru.ru_stime.tv_usec / 1e6,
		(double)ru.ru_maxrss / 1024.0);
}

static int run(int argc, char **argv, int stragglers)
{
	struct mpi_args a;
	struct mring m;
	struct em_error e;
	struct timespec t0;
	FILE *tty;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	parse(argc, argv, &a, stragglers);
	if (mring_open(&m, &a.o, &e))
		diag_fatal(e.file, "%s", e.msg); /* e.file may be m's: printed before any close */
	tty = a.out ? stdout : stderr;
	print_ranks(tty, &m);
	print_fallback(tty, &m);
	if (!m.nunits)
		diag_fatal(NULL, "no ring holds a process with phases");
	if (m.have_perun) {
		size_t nsen = 0;
		for (size_t h = 0; h < m.nhosts; h++)
			nsen += m.hosts[h].nsen;
		if (!nsen)
			diag_warn(a.o.perun, "the file holds no power sensors (psutil only: no RAPL or GPU was "
					     "readable), so no energy can be attributed; reporting times only");
		/* Impossible readings were repaired (sensor_glitch.h); these
		 * tables have no flags column, so say it here. */
		for (size_t h = 0; h < m.nhosts; h++)
			for (size_t s = 0; s < m.hosts[h].nsen; s++)
				if (m.hosts[h].sen[s].fix.g.nbad) {
					char line[512];
					sensor_glitch_describe(m.hosts[h].sen[s].ps, &m.hosts[h].sen[s].fix, line,
							       sizeof line);
					diag_warn(a.o.perun, "host %s %s; every energy of that host's ranks over "
							     "that time includes the repair", m.hosts[h].ph->name, line);
				}
	}
	if (stragglers) {
		write_stragglers(&m, a.out, tty);
	} else {
		write_phases(&m, &a, tty);
		if (a.stragglers_out)
			write_stragglers(&m, a.stragglers_out, tty);
	}
	report_resources(tty, &t0);
	mring_close(&m);
	return 0;
}

int cmd_phases_mpi(int argc, char **argv)
{
	return run(argc, argv, 0);
}

int cmd_stragglers(int argc, char **argv)
{
	return run(argc, argv, 1);
}
