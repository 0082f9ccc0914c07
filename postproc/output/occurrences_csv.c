/* occurrences_csv.c - occurrences.csv and its line (see occurrences_csv.h). */
#include "output/occurrences_csv.h"

#include "model/results.h"
#include "output/occurrence_table.h"

int occurrences_csv_write(const struct energy_model *m, const struct run_results *res, const char *out, FILE *tty,
			  struct em_error *e)
{
	const struct occ_energy *oe = &res->occ;
	size_t with = 0;
	int rc;
	if ((rc = occurrence_table_write(m, oe, out ? out : "-", e)))
		return rc;
	for (size_t i = 0; i < oe->nocc; i++) {
		int all = oe->ngroups > 0;
		for (size_t g = 0; g < oe->ngroups; g++)
			all &= oe->cell[i * oe->ngroups + g].why == OCC_DECIDED;
		with += all;
	}
	if (tty)
		fprintf(tty, "%s%s: %zu occurrence(s) of %zu phase(s), %zu with joules in every device group%s%s%s\n",
			out ? "wrote " : "", out ? out : "occurrences", oe->nocc, m->ph.nnames, with,
			oe->no_energy ? " (" : "", oe->no_energy ? oe->no_energy : "", oe->no_energy ? ")" : "");
	return 0;
}
