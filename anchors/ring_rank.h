/*
 * ring_rank.h - the environment variables that name a process's place in
 * an MPI or torch.distributed job, in one place: the writers record them in
 * PROC_START (preload/lifecycle.c, python_hooks/src/procstart.c), the
 * reader takes the rank from them (ring_procs.c) and %r in ANCHOR_FILE
 * names the file by the same one (ring_path.c).  The first one set wins.
 */
#ifndef ANCHOR_RING_RANK_H
#define ANCHOR_RING_RANK_H

/* Open MPI, PMIx launchers (Open MPI 5 prterun, srun --mpi=pmix), MPICH's
 * PMI, Slurm tasks, torchrun. */
#define ANCHOR_RANK_VARS "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK", "SLURM_PROCID", "RANK"

/* The rank within a node. */
#define ANCHOR_LOCAL_RANK_VARS "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "LOCAL_RANK"

/* The job's size. */
#define ANCHOR_WORLD_SIZE_VARS "WORLD_SIZE", "OMPI_COMM_WORLD_SIZE", "SLURM_NTASKS"

/* The batch job and job step: what the scheduler's accounting (sacct -j
 * JOB.STEP) knows the run by.  (Every rank variable that is set is
 * written, not only the first: under srun --mpi=pmix the rank comes from
 * PMIX_RANK and SLURM_PROCID is there too, for the report to name.) */
#define ANCHOR_JOB_VARS "SLURM_JOB_ID", "SLURM_STEP_ID"

#endif
