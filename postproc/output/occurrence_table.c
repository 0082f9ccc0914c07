/* occurrence_table.c - occurrences.csv (see occurrence_table.h). */
#include "output/occurrence_table.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/lookup.h"
#include "output/csv.h"
#include "output/outfile.h"
#include "output/timebase.h"

static int by_start(const void *a, const void *b, void *ctx)
{
	const struct phase_occ *occ = ctx;
	const struct phase_occ *x = &occ[*(const size_t *)a], *y = &occ[*(const size_t *)b];
	if (x->t0_ns != y->t0_ns)
		return x->t0_ns < y->t0_ns ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->depth > y->depth) - (x->depth < y->depth);
}

static void header(struct csv *c, const struct energy_model *m)
{
	static const char *const lead[] = {"pid", "rank", "tid", "timeline", "phase", "depth", "kind", "start_t_s",
					   "end_t_s", "start_unix_s", "end_unix_s", "duration_s", "self_s", "flags"};
	static const char *const per_group[] = {"_energy_j", "_ci95_low_j", "_ci95_high_j"};
	char name[128];
	for (size_t i = 0; i < sizeof lead / sizeof *lead; i++)
		csv_str(c, lead[i]);
	for (size_t g = 0; g < m->ngroups; g++)
		for (size_t k = 0; k < 3; k++) {
			snprintf(name, sizeof name, "%s%s", m->groups[g], per_group[k]);
			csv_str(c, name);
		}
	csv_str(c, "energy_note");
	csv_row_end(c);
}

/* The note of occurrence i: one reason when the groups share it, else
 * "group: reason" for each group without joules. */
static void note_of(const struct energy_model *m, const struct occ_energy *oe, size_t i, char *buf, size_t cap)
{
	size_t ng = oe->ngroups, len = 0;
	int same = 1, any = 0;
	char why[256];
	buf[0] = '\0';
	if (oe->no_energy) {
		snprintf(buf, cap, "%s", oe->no_energy);
		return;
	}
	for (size_t g = 0; g < ng; g++) {
		enum occ_why w = oe->cell[i * ng + g].why;
		any |= w != OCC_DECIDED;
		same &= w == oe->cell[i * ng].why && (w != OCC_SHORT || oe->min_s[g] == oe->min_s[0]);
	}
	if (!any)
		return;
	if (same) {
		occ_energy_why(oe, oe->cell[i * ng].why, 0, buf, cap);
		return;
	}
	for (size_t g = 0; g < ng && len < cap; g++) {
		enum occ_why w = oe->cell[i * ng + g].why;
		int n;
		if (w == OCC_DECIDED)
			continue;
		occ_energy_why(oe, w, g, why, sizeof why);
		n = snprintf(buf + len, cap - len, "%s%s: %s", len ? "; " : "", m->groups[g], why);
		len += n > 0 ? (size_t)n : 0;
	}
}

static void row(struct csv *c, const struct energy_model *m, const struct occ_energy *oe, size_t i)
{
	const struct phase_occ *o = &m->ph.occ[i];
	const struct ring_proc *p = lookup_proc(&m->rl.procs, o->pid);
	double a = energy_model_tl(m, o->t0_ns), b = energy_model_tl(m, o->t1_ns);
	char flags[32] = "", note[1024];
	int dev = o->tid == PHASE_DEVICE_TID;

	csv_u64(c, o->pid);
	if (p && p->rank >= 0)
		csv_i64(c, p->rank);
	else
		csv_empty(c);
	if (dev)
		csv_empty(c);
	else
		csv_u64(c, o->tid);
	csv_str(c, dev ? "device" : "host");
	csv_str(c, m->ph.names[o->phase]);
	csv_i64(c, o->depth);
	csv_str(c, o->from_mark ? "mark" : "range");
	csv_fixed(c, a, 9);
	csv_fixed(c, b, 9);
	timebase_unix_field(c, &m->rl.clock, m->base_ns, a);
	timebase_unix_field(c, &m->rl.clock, m->base_ns, b);
	csv_fixed(c, (double)(o->t1_ns - o->t0_ns) / 1e9, 9);
	csv_fixed(c, (double)o->self_ns / 1e9, 9);
	if (o->unclosed)
		strcat(flags, "unclosed");
	if (phase_set_is_tool(&m->ph, o->phase))
		strcat(flags, flags[0] ? ";tool" : "tool");
	csv_str(c, flags);
	for (size_t g = 0; g < oe->ngroups; g++) {
		const struct occ_cell *x = &oe->cell[i * oe->ngroups + g];
		csv_f64(c, x->energy_j, 9);
		csv_f64(c, x->lo_j, 9);
		csv_f64(c, x->hi_j, 9);
	}
	note_of(m, oe, i, note, sizeof note);
	csv_str(c, note);
	csv_row_end(c);
}

int occurrence_table_write(const struct energy_model *m, const struct occ_energy *oe, const char *path,
			   struct em_error *e)
{
	struct outfile of;
	struct csv c;
	size_t *order = malloc((m->ph.nocc ? m->ph.nocc : 1) * sizeof *order);
	int rc;
	if (!order)
		return diag_error(e, -ENOMEM, NULL, "out of memory");
	if ((rc = outfile_create(&of, path, e))) {
		free(order);
		return rc;
	}
	for (size_t i = 0; i < m->ph.nocc; i++)
		order[i] = i;
	qsort_r(order, m->ph.nocc, sizeof *order, by_start, m->ph.occ);
	csv_init(&c, of.fp);
	header(&c, m);
	for (size_t k = 0; k < m->ph.nocc; k++)
		row(&c, m, oe, order[k]);
	free(order);
	/* The write's own reason (a full disk, ulimit -f), as every writer says it. */
	if ((rc = outfile_error(&of, path, e))) {
		outfile_abort(&of);
		return rc;
	}
	return outfile_finish(&of, path, e);
}
