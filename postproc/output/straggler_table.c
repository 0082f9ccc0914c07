/* straggler_table.c - per step, per rank: who was slowest, who waited (see
 * straggler_table.h). */
#include "output/straggler_table.h"

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "model/timebase.h"

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
		timebase_iso(sec * 1000000000, iso, sizeof iso);
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
		fprintf(tty, "(wait_J: joules at the collective phases' attributed power while this rank waited%s)\n",
			m->split ? ",\n its share of its node's by the node split" : "");
	if (out)
		fprintf(tty, "wrote %s\n", out);
}

int straggler_table_write(const struct mring *m, struct csv *c, FILE *tty, const char *shown, struct em_error *e)
{
	static const char *const cols[] = {"step", "rank", "host", "t0_utc", "t0_unix_ns", "dur_ms", "compute_ms",
					   "wait_ms", "wait_j", "slowest", "behind_ms", "pid", NULL};
	size_t nmax = 0, matched = 0;
	int64_t last_sec = INT64_MIN;
	char iso_prefix[48] = "";
	size_t *slow_count = calloc(m->nunits + 1, sizeof *slow_count);
	double *wait_s = calloc(m->nunits + 1, sizeof *wait_s), *wait_j = calloc(m->nunits + 1, sizeof *wait_j);
	if (!slow_count || !wait_s || !wait_j) {
		free(slow_count);
		free(wait_s);
		free(wait_j);
		return diag_error(e, -ENOMEM, NULL, "out of memory");
	}
	for (size_t i = 0; i < m->nunits; i++)
		if (m->units[i]->nsteps > nmax)
			nmax = m->units[i]->nsteps;
	csv_header(c, cols);
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
			/* A process without a rank: empty, its pid in the last column. */
			snprintf(rk, sizeof rk, u->rank >= 0 ? "%d" : "", u->rank);
			put_u64(c, k);
			csv_str(c, rk);
			csv_str(c, u->host);
			put_iso(c, t0_ns, &last_sec, iso_prefix, sizeof iso_prefix);
			csv_i64(c, t0_ns);
			put_fixed(c, dur * 1e3, 6, 1e6);
			put_fixed(c, comp * 1e3, 6, 1e6);
			put_fixed(c, s->wait_s * 1e3, 6, 1e6);
			put_fixed(c, s->wait_j, 9, 1e9);
			put_u64(c, (size_t)slow == i);
			put_fixed(c, (slow_compute - comp) * 1e3, 6, 1e6);
			put_u64(c, u->pid);
			csv_row_end(c);
		}
	}
	if (tty)
		print_stragglers(tty, m, shown, matched, slow_count, wait_s, wait_j);
	free(slow_count);
	free(wait_s);
	free(wait_j);
	return 0;
}

