/* report_ranks.c - the per-rank part of report (see report_ranks.h). */
#include "cmd/report_ranks.h"

#include <stdlib.h>

#include "cmd/cmd_fatal.h"
#include "util/diag.h"

int report_ranks_wanted(size_t nrings, const struct energy_model *m)
{
	return nrings > 1 || (m && m->train.n > 1);
}

void report_ranks_open(struct mring *mr, const char *const *rings, size_t nrings, const struct em_opts *o,
		       enum attrib_choice method, const struct attrib_opts *ao)
{
	struct em_error e;
	if (mring_open_run(mr, rings, nrings, o, method, ao, &e))
		diag_fatal(e.file, "%s", e.msg); /* e.file may be mr's: printed before any close */
	if (!mr->nunits)
		diag_fatal(nrings == 1 ? rings[0] : NULL, "no ring holds a training process with phases");
}
