/* occurrences_csv.c - occurrences.csv and its line (see occurrences_csv.h). */
#include "output/occurrences_csv.h"

#include "model/occ_energy.h"
#include "output/occurrence_table.h"

int occurrences_csv_write(const struct energy_model *m, const char *out, FILE *tty, struct em_error *e)
{
	struct occ_energy oe;
	size_t with = 0;
	int rc;
	if ((rc = occ_energy_build(m, &oe, e)))
		return rc;
	if ((rc = occurrence_table_write(m, &oe, out ? out : "-", e))) {
		occ_energy_free(&oe);
		return rc;
	}
	for (size_t i = 0; i < oe.nocc; i++) {
		int all = oe.ngroups > 0;
		for (size_t g = 0; g < oe.ngroups; g++)
			all &= oe.cell[i * oe.ngroups + g].why == OCC_DECIDED;
		with += all;
	}
	if (tty)
		fprintf(tty, "%s%s: %zu occurrence(s) of %zu phase(s), %zu with joules in every device group%s%s%s\n",
			out ? "wrote " : "", out ? out : "occurrences", oe.nocc, m->ph.nnames, with,
			oe.no_energy ? " (" : "", oe.no_energy ? oe.no_energy : "", oe.no_energy ? ")" : "");
	occ_energy_free(&oe);
	return 0;
}
