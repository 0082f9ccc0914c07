/*
 * slurm_acct.h - what Slurm's own accounting says a job consumed, to set
 * beside perun's total.
 *
 * Slurm measures energy only when its acct_gather_energy plugin is
 * configured (AcctGatherEnergyType in slurm.conf: rapl, ipmi, gpu, ...)
 * and stores it only with accounting storage (slurmdbd); then
 *   sacct -j JOB -n -P --noconvert --format=JobID,ConsumedEnergyRaw,ElapsedRaw
 * prints one line per job and step, "12|5230|62" (joules, seconds).  The
 * step perun ran in (SLURM_STEP_ID, recorded in each rank's PROC_START)
 * is the one compared; the whole job when the step has no line.  Where
 * either is missing (no sacct, storage disabled, plugin none, 0 J) the
 * answer says which, from sacct's own message and `scontrol show config`.
 * Both run with a time limit: a login node whose slurmdbd does not answer
 * must not hang a report.
 */
#ifndef ANCHORPOST_SLURM_ACCT_H
#define ANCHORPOST_SLURM_ACCT_H

#include <stddef.h>

enum slurm_acct_state {
	SLURM_ACCT_ENERGY,      /* energy_j is Slurm's ConsumedEnergy */
	SLURM_ACCT_NO_ENERGY,   /* the job is accounted, its energy not (plugin not configured) */
	SLURM_ACCT_UNREADABLE,  /* no sacct, or sacct failed (storage disabled, no slurmdbd) */
};

struct slurm_acct {
	enum slurm_acct_state state;
	double energy_j, elapsed_s;
	char jobstep[48];       /* the sacct line used: "12.0" or "12" */
	char why[320];          /* not ENERGY: what sacct / scontrol said */
};

/* Ask sacct about job (and step, "" for the job), then scontrol for the
 * energy plugin when there is no energy.  Always fills *a; returns 0, or
 * -EINVAL for a job id that is not a Slurm job id (digits, '_', '+'). */
int slurm_acct_query(const char *job, const char *step, struct slurm_acct *a);

/* Read sacct's -n -P output (JobID|ConsumedEnergyRaw|ElapsedRaw lines) for
 * job and step into *a (the state ENERGY or NO_ENERGY); 0, or -ENOENT when
 * no line names the job. */
int slurm_acct_parse(const char *text, const char *job, const char *step, struct slurm_acct *a);

#endif
