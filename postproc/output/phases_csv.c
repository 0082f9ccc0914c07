/* phases_csv.c - phases.csv and its table (see phases_csv.h). */
#include "output/phases_csv.h"

#include "output/counter_table.h"
#include "output/csv.h"
#include "output/outfile.h"
#include "output/phase_table.h"

#include <errno.h>

int phases_csv_write(const struct energy_model *m, const struct run_results *res, const char *out, int by_process,
		     struct em_error *e)
{
	struct outfile of;
	struct csv c;
	/* The readable table goes to stdout unless the CSV does. */
	FILE *tty = out ? stdout : stderr;
	int rc;
	if ((rc = outfile_create(&of, out ? out : "-", e)))
		return rc;
	csv_init(&c, of.fp);
	phase_table_csv_header(&c);
	/* ANCHOR_SENSORS: the ring's ms counters, beside perun (scope "counters"). */
	if ((rc = phase_table_write(&c, m, res, by_process, tty, e))) {
		outfile_abort(&of);
		return rc;
	}
	counter_table_write(&c, m, &res->counters, tty);
	if ((rc = outfile_done(&of, e)))
		return rc;
	if (out)
		fprintf(tty, "\nwrote %s\n", out);
	return 0;
}

/* phases.csv at path with the table into *table: scope all (and with
 * by_process every process's), then the ms counters. */
static int write_to_table(const struct energy_model *m, const struct run_results *res, int by_process,
			  const char *path, char **table, struct em_error *e)
{
	struct outfile of;
	struct csv c;
	size_t table_len = 0;
	FILE *tty;
	int rc;
	if ((rc = outfile_create(&of, path, e)))
		return rc;
	csv_init(&c, of.fp);
	phase_table_csv_header(&c);
	if (!(tty = open_memstream(table, &table_len))) {
		outfile_abort(&of);
		return diag_error(e, -ENOMEM, NULL, "out of memory");
	}
	rc = phase_table_write(&c, m, res, by_process, tty, e);
	/* ANCHOR_SENSORS: the ring's ms counters beside perun (scope "counters"). */
	if (!rc && !by_process)
		counter_table_write(&c, m, &res->counters, tty);
	fclose(tty);
	if (rc) {
		outfile_abort(&of);
		return rc;
	}
	return outfile_done(&of, e);
}

int phases_csv_write_scope(const struct energy_model *m, const struct run_results *res, const char *path,
			   char **table, struct em_error *e)
{
	return write_to_table(m, res, 0, path, table, e);
}

int phases_csv_write_times(const struct energy_model *m, const struct run_results *res, const char *path,
			   char **table, struct em_error *e)
{
	return write_to_table(m, res, 1, path, table, e);
}
