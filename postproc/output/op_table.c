/*
 * op_table.c - ops.csv: the results stage's joules per operator
 * (model/op_energy.h), sorted by total.
 */
#include "output/op_table.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/csv.h"
#include "output/outfile.h"

static double sum_g(const double *v, size_t f, size_t ng)
{
	double s = 0;
	for (size_t g = 0; g < ng; g++)
		s += v[f * ng + g];
	return s;
}

static int by_total(const void *x, const void *y, void *ctx)
{
	const struct op_energy *g = ctx;
	double a = sum_g(g->total_j, *(const uint32_t *)x, g->ng), b = sum_g(g->total_j, *(const uint32_t *)y, g->ng);
	if (a != b)
		return a > b ? -1 : 1;
	return *(const uint32_t *)x < *(const uint32_t *)y ? -1 : 1;
}

static void write_rows(struct csv *c, const struct run_model *rm, const struct op_energy *g)
{
	const struct energy_model *m = &rm->m;
	const struct pyspy_profile *p = &rm->p;
	size_t ng = g->ng, np = g->np;
	const char *base[] = {"op", "category", "rows", "self_s", "total_s", "self_j", "self_lo_j", "self_hi_j",
			      "total_j", "total_lo_j", "total_hi_j", "top_phase"};
	size_t nb = sizeof base / sizeof *base, nc = 0;
	const char **cols = calloc(nb + 2 * ng + 1, sizeof *cols);
	char **own = calloc(2 * ng + 1, sizeof *own);
	uint32_t *order = calloc(g->nf + 1, sizeof *order);
	size_t n = 0;
	if (!cols || !own || !order)
		goto out;
	for (size_t i = 0; i < nb; i++)
		cols[nc++] = base[i];
	for (size_t k = 0; ng > 1 && k < ng; k++) {
		if (asprintf(&own[2 * k], "self_j_%s", m->groups[k]) < 0 ||
		    asprintf(&own[2 * k + 1], "total_j_%s", m->groups[k]) < 0)
			goto out;
		cols[nc++] = own[2 * k];
		cols[nc++] = own[2 * k + 1];
	}
	csv_header(c, cols);
	for (uint32_t f = 0; f < g->nf; f++)
		if (g->total_s[f] > 0)
			order[n++] = f;
	qsort_r(order, n, sizeof *order, by_total, (void *)g);
	for (size_t r = 0; r < n; r++) {
		uint32_t f = order[r];
		const struct pyspy_frame *fr = &p->frames.v[f];
		csv_str(c, fr->name);
		csv_str(c, fr->file ? fr->file : "");
		csv_u64(c, g->rows[f]);
		csv_f64(c, g->self_s[f], 9);
		csv_f64(c, g->total_s[f], 9);
		csv_f64(c, sum_g(g->self_j, f, ng), 9);
		csv_f64(c, sum_g(g->self_lo, f, ng), 9);
		csv_f64(c, sum_g(g->self_hi, f, ng), 9);
		csv_f64(c, sum_g(g->total_j, f, ng), 9);
		csv_f64(c, sum_g(g->total_lo, f, ng), 9);
		csv_f64(c, sum_g(g->total_hi, f, ng), 9);
		size_t best = np;
		double bt = 0;
		for (size_t k = 0; k <= np; k++)
			if (g->phase_s[(size_t)f * (np + 1) + k] > bt) {
				bt = g->phase_s[(size_t)f * (np + 1) + k];
				best = k;
			}
		csv_str(c, bt > 0 && best < np ? m->ph.names[best] : "");
		for (size_t k = 0; ng > 1 && k < ng; k++) {
			csv_f64(c, g->self_j[f * ng + k], 9);
			csv_f64(c, g->total_j[f * ng + k], 9);
		}
		csv_row_end(c);
	}
out:
	for (size_t k = 0; own && k < 2 * ng; k++)
		free(own[k]);
	free(own);
	free(cols);
	free(order);
}

int op_table_write(const struct run_model *rm, const struct op_energy *ops, const char *path, struct em_error *e)
{
	struct outfile of;
	struct csv c;
	int rc;
	if ((rc = outfile_create(&of, path, e)))
		return rc;
	csv_init(&c, of.fp);
	write_rows(&c, rm, ops);
	if ((rc = outfile_error(&of, path, e))) {
		outfile_abort(&of);
		return rc;
	}
	return outfile_finish(&of, path, e);
}
