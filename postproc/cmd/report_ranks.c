/* report_ranks.c - the per-rank part of report (see report_ranks.h). */
#include "cmd/report_ranks.h"

#include <stdlib.h>

#include "cmd/cmd_fatal.h"
#include "input/slurm_acct.h"
#include "output/csv.h"
#include "output/outfile.h"
#include "output/rank_table.h"
#include "output/straggler_table.h"
#include "util/diag.h"

/* Blocks per host and per rank on the terminal up to this many ranks, as
 * `phases --rings` (cmd_mpi.c): beyond, the CSV has them. */
#define REPORT_TTY_RANKS 16

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

enum which { PHASES, STRAGGLERS, RANKS };

static void write_one(const struct mring *mr, const char *path, enum which w, FILE *tty)
{
	struct outfile of;
	struct csv c;
	struct em_error e;
	int rc = 0;
	if (!path)
		return;
	outfile_open(&of, path);
	csv_init(&c, of.fp);
	if (w == PHASES)
		rc = rank_table_write(mr, &c, tty, 1, REPORT_TTY_RANKS, &e);
	else if (w == STRAGGLERS)
		rc = straggler_table_write(mr, &c, tty, NULL, &e);
	else
		rank_table_write_ranks_csv(mr, &c);
	if (rc) {
		outfile_abort(&of);
		diag_fatal(e.file, "%s", e.msg);
	}
	outfile_commit(&of);
}

void report_ranks_write(const struct mring *mr, const char *phases, const char *stragglers, const char *ranks,
			FILE *tty)
{
	char job[24], step[16];
	rank_table_print_ranks(tty, mr);
	write_one(mr, phases, PHASES, tty);
	write_one(mr, stragglers, STRAGGLERS, tty);
	write_one(mr, ranks, RANKS, NULL);
	/* A Slurm job: what Slurm's accounting says, beside perun. */
	if (!mring_slurm_job(mr, job, sizeof job, step, sizeof step)) {
		struct slurm_acct a;
		slurm_acct_query(job, step, &a);
		rank_table_print_acct(tty, mr, &a);
	}
}
