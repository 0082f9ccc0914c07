/*
 * test_slurm_acct.c - input/slurm_acct.c: reading sacct's
 * `-n -P --format=JobID,ConsumedEnergyRaw,ElapsedRaw` lines (the step
 * perun ran in before the whole job, a job without energy, a job sacct
 * does not list), and the query's answers that need no Slurm: a job id
 * that is not one is refused before anything runs, and a machine without
 * sacct (PATH emptied) is told as such, not as "0 J".  The readable path
 * against a live slurmdbd is not here: no machine of this project has one
 * (t_slurm_slow checks the "not configured" answer on a real cluster).
 * Exits non-zero when a check fails.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "input/slurm_acct.h"

#include "unit_check.h"

/* What Slurm 22.05 prints for a 2-task batch job with the energy plugin
 * on: the job, its batch and extern steps, step 0 (srun). */
static const char with_energy[] = "12|5230|62\n12.batch|4100|62\n12.extern|5230|62\n12.0|3900|58\n";

int main(void)
{
	struct slurm_acct a;
	int rc;

	memset(&a, 0, sizeof a);
	rc = slurm_acct_parse(with_energy, "12", "0", &a);
	CHECK(rc == 0 && a.state == SLURM_ACCT_ENERGY, "step 0: rc %d state %d", rc, a.state);
	CHECK(!strcmp(a.jobstep, "12.0") && a.energy_j == 3900 && a.elapsed_s == 58, "step 0: %s %g J %g s",
	      a.jobstep, a.energy_j, a.elapsed_s);

	memset(&a, 0, sizeof a);
	rc = slurm_acct_parse(with_energy, "12", "", &a);
	CHECK(rc == 0 && !strcmp(a.jobstep, "12") && a.energy_j == 5230, "no step: the job's line, got %s %g J",
	      a.jobstep, a.energy_j);

	/* A step sacct does not list: the whole job, said so by jobstep. */
	memset(&a, 0, sizeof a);
	rc = slurm_acct_parse(with_energy, "12", "7", &a);
	CHECK(rc == 0 && !strcmp(a.jobstep, "12") && a.energy_j == 5230, "unknown step: got %s %g J", a.jobstep,
	      a.energy_j);

	/* Accounted, no energy plugin: ConsumedEnergyRaw 0 or empty. */
	memset(&a, 0, sizeof a);
	rc = slurm_acct_parse("13|0|40\n13.0||39\n", "13", "0", &a);
	CHECK(rc == 0 && a.state == SLURM_ACCT_NO_ENERGY && strstr(a.why, "ConsumedEnergy 0"),
	      "no energy: rc %d state %d why '%s'", rc, a.state, a.why);

	/* Another job's lines only, and text that is no sacct line. */
	memset(&a, 0, sizeof a);
	CHECK(slurm_acct_parse(with_energy, "121", "0", &a) == -ENOENT, "job 121 matched job 12's lines");
	CHECK(slurm_acct_parse("sacct: error: Problem talking to the database\n", "12", "0", &a) == -ENOENT,
	      "an error message read as a job line");

	/* Refused before anything runs: not a job id. */
	CHECK(slurm_acct_query("12; rm -rf /", "0", &a) == -EINVAL && a.state == SLURM_ACCT_UNREADABLE,
	      "a shell word as job id: state %d", a.state);

	/* No sacct on this machine. */
	setenv("PATH", "/nonexistent-dir", 1);
	rc = slurm_acct_query("12", "0", &a);
	CHECK(rc == 0 && a.state == SLURM_ACCT_UNREADABLE && strstr(a.why, "not installed"),
	      "without sacct: rc %d state %d why '%s'", rc, a.state, a.why);

	if (failures)
		printf("%d check(s) failed\n", failures);
	else
		printf("test_slurm_acct: all checks passed\n");
	return failures != 0;
}
