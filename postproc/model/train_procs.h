/*
 * train_procs.h - which processes of a ring did the training: what a
 * report attributes energy to and shows per rank.
 *
 * A recording of a launcher holds many processes that are not the
 * training: `anchorpost record` runs the command under perun (whose own
 * process makes MPI calls through mpi4py: seconds of MPI_Init), py-spy,
 * torchrun's agent, mpirun and its orted, srun.  A training process is one
 *   - whose primary thread spent time in the user's phases (not the
 *     tools' own: phase_set_is_tool), and
 *   - that is not a tool or launcher by its command line (train_procs_tool:
 *     py-spy, perun running `record`'s launcher script, torchrun /
 *     torch.distributed.run, mpirun/mpiexec/orterun/orted/prterun/prted,
 *     hydra_pmi_proxy, srun, slurmstepd): a launcher anchored with
 *     ANCHOR_AUTO may have phases of its own, and they are not training;
 *   - and that was not forked by another training process (DataLoader
 *     workers belong to the rank that forked them).
 * When some of them carry a rank variable (ring_rank.h), only those count:
 * the run is a distributed job and its ranks are its units.  Without any,
 * every such process counts (a shell script that starts several Python
 * processes), labelled by its pid.
 *
 * Order: ranked processes by rank, then the others by start time; the
 * first is the run's lead (where the single-timeline outputs attribute:
 * rank 0 is the rank perun samples on its host).
 */
#ifndef ANCHORPOST_TRAIN_PROCS_H
#define ANCHORPOST_TRAIN_PROCS_H

#include <stddef.h>
#include <stdint.h>

#include "anchors/ring_procs.h"
#include "phase/phase_set.h"

struct train_proc {
	const struct ring_proc *proc; /* into the ring_procs given */
	long thr;                     /* its primary thread in the phase_set */
};

struct train_procs {
	struct train_proc *p;
	size_t n;
	int ranked;                   /* the units are ranks */
};

/* The training processes of the ring, below (and including) root_pid when
 * it is not 0 (the perun run whose sampler stamped the perun file, when a
 * ring holds several runs).  0 (t->n may be 0) or -ENOMEM. */
int train_procs_find(const struct ring_procs *procs, const struct phase_set *ps, uint32_t root_pid,
		     struct train_procs *t);

void train_procs_free(struct train_procs *t);

/* 1 when the process is a tool or a launcher by its command line. */
int train_procs_tool(const struct ring_proc *p);

#endif
