/* phases_csv.c - phases.csv and its table (see phases_csv.h). */
#include "output/phases_csv.h"

#include "output/counter_table.h"
#include "output/csv.h"
#include "output/outfile.h"
#include "output/phase_table.h"

#include <errno.h>

int phases_csv_write(const struct energy_model *m, const char *out, enum attrib_choice method,
		     const struct attrib_opts *ao, int by_process, struct em_error *e)
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
	if ((rc = phase_table_write(&c, m, method, ao, by_process, tty, e)) ||
	    (rc = counter_table_write(&c, m, tty, e)) < 0) {
		outfile_abort(&of);
		return rc;
	}
	if ((rc = outfile_done(&of, e)))
		return rc;
	if (out)
		fprintf(tty, "\nwrote %s\n", out);
	return 0;
}

/* phases.csv at path with the table into *table: write(c, tty) fills
 * both. */
static int write_to_table(const struct energy_model *m, const char *path, char **table, struct em_error *e,
			  int (*write)(struct csv *c, const struct energy_model *m, const void *arg, FILE *tty,
				       struct em_error *e),
			  const void *arg)
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
	rc = write(&c, m, arg, tty, e);
	fclose(tty);
	if (rc) {
		outfile_abort(&of);
		return rc;
	}
	return outfile_done(&of, e);
}

static int scope_rows(struct csv *c, const struct energy_model *m, const void *arg, FILE *tty, struct em_error *e)
{
	int rc = phase_table_write_scope(c, m, arg, tty, e);
	/* ANCHOR_SENSORS: the ring's ms counters beside perun (scope "counters"). */
	if (!rc && (rc = counter_table_write(c, m, tty, e)) > 0)
		rc = 0;
	return rc;
}

int phases_csv_write_scope(const struct energy_model *m, const struct phase_scope *all, const char *path,
			   char **table, struct em_error *e)
{
	return write_to_table(m, path, table, e, scope_rows, all);
}

struct times_arg {
	enum attrib_choice method;
	const struct attrib_opts *ao;
};

static int time_rows(struct csv *c, const struct energy_model *m, const void *arg, FILE *tty, struct em_error *e)
{
	const struct times_arg *t = arg;
	return phase_table_write(c, m, t->method, t->ao, 1, tty, e);
}

int phases_csv_write_times(const struct energy_model *m, enum attrib_choice method, const struct attrib_opts *ao,
			   const char *path, char **table, struct em_error *e)
{
	struct times_arg t = {method, ao};
	return write_to_table(m, path, table, e, time_rows, &t);
}
