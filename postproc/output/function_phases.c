/*
 * function_phases.c - functions.phases.csv from the results stage's rows
 * (see function_phases.h).
 */
#include "output/function_phases.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/csv.h"
#include "output/outfile.h"

int function_phases_write(const struct run_model *rm, const struct run_results *res, const char *path,
			  struct em_error *e)
{
	static const char *const cols[] = {"function", "file", "phase", "lo_j", "hi_j", "placed_j",
					   "placed_samples", "unplaced_samples", "decided", NULL};
	const struct fn_phases *fp = &res->fn_phases;
	struct outfile of;
	struct csv cv;
	int rc;
	if ((rc = outfile_create(&of, path, e)))
		return rc;
	csv_init(&cv, of.fp);
	csv_header(&cv, cols);
	for (size_t r = 0; r < fp->nrows; r++) {
		const struct fn_phase_row *w = &fp->rows[r];
		csv_str(&cv, w->name);
		csv_str(&cv, w->file);
		csv_str(&cv, rm->m.ph.names[w->phase]);
		csv_f64(&cv, w->lo_j, 9);
		csv_f64(&cv, w->hi_j, 9);
		csv_f64(&cv, w->placed_j, 9);
		csv_u64(&cv, w->n_placed);
		csv_u64(&cv, w->n_un);
		csv_u64(&cv, w->n_un ? 0 : 1);
		csv_row_end(&cv);
	}
	return outfile_finish(&of, path, e);
}

char *function_phases_path(const char *out)
{
	size_t n = strlen(out);
	char *s;
	if (n > 4 && !strcmp(out + n - 4, ".csv"))
		n -= 4;
	if (asprintf(&s, "%.*s.phases.csv", (int)n, out) < 0)
		return NULL;
	return s;
}
