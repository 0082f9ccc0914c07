/* phases_csv.c - phases.csv and its table (see phases_csv.h). */
#include "output/phases_csv.h"

#include "output/counter_table.h"
#include "output/csv.h"
#include "output/outfile.h"
#include "output/phase_table.h"

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
