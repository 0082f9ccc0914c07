/* ranks_csv.c - the files of a run of several ranks (see ranks_csv.h). */
#include "output/ranks_csv.h"

#include "output/csv.h"
#include "output/outfile.h"
#include "output/rank_table.h"
#include "output/straggler_table.h"

enum which { PHASES, STRAGGLERS, RANKS };

/* One CSV from its table writer; shown: the path straggler_table names. */
static int write_one(const struct mring *mr, const char *path, enum which w, FILE *tty, int by_rank,
		     const char *shown, struct em_error *e)
{
	struct outfile of;
	struct csv c;
	int rc;
	if ((rc = outfile_create(&of, path ? path : "-", e)))
		return rc;
	csv_init(&c, of.fp);
	if (w == PHASES)
		rc = rank_table_write(mr, &c, tty, by_rank, RANKS_TTY_MAX, e);
	else if (w == STRAGGLERS)
		rc = straggler_table_write(mr, &c, tty, shown, e);
	else
		rank_table_write_ranks_csv(mr, &c);
	if (rc) {
		outfile_abort(&of);
		return rc;
	}
	return outfile_done(&of, e);
}

int ranks_csv_write_phases(const struct mring *mr, const char *path, FILE *tty, int by_rank, struct em_error *e)
{
	return write_one(mr, path, PHASES, tty, by_rank, NULL, e);
}

int ranks_csv_write_stragglers(const struct mring *mr, const char *path, FILE *tty, struct em_error *e)
{
	return write_one(mr, path, STRAGGLERS, tty, 0, path, e);
}

int ranks_csv_write_all(const struct mring *mr, const char *phases, const char *stragglers, const char *ranks,
			FILE *tty, struct em_error *e)
{
	struct slurm_acct a;
	int rc;
	rank_table_print_ranks(tty, mr);
	if ((phases && (rc = write_one(mr, phases, PHASES, tty, 1, NULL, e))) ||
	    (stragglers && (rc = write_one(mr, stragglers, STRAGGLERS, tty, 0, NULL, e))) ||
	    (ranks && (rc = write_one(mr, ranks, RANKS, NULL, 0, NULL, e))))
		return rc;
	/* A Slurm job: what Slurm's accounting says, beside perun. */
	if (!mring_slurm_acct(mr, &a))
		rank_table_print_acct(tty, mr, &a);
	return 0;
}
