/*
 * ring_procs.h - the processes of a run, from PROC_START, FORK, EXEC,
 * PROC_EXIT and CHILD_EXIT records.  A forked child has no PROC_START of
 * its own and inherits its parent's host, rank and command line.
 */
#ifndef ANCHOR_RING_PROCS_H
#define ANCHOR_RING_PROCS_H

#include <stddef.h>
#include <stdint.h>

#include "ring_reader.h"

struct ring_proc {
	uint32_t pid, ppid;
	uint64_t start_ns, exit_ns;  /* 0 when not seen */
	int forked;                  /* started by fork, not exec */
	int execed;                  /* this image ended by exec'ing another */
	int exit_known;              /* status or signal known */
	int exit_signal;             /* 1: exit_value is a signal */
	int exit_value;
	int rank, local_rank;        /* -1 when absent */
	const char *rank_var;        /* the variable the rank came from (ring_rank.h), NULL */
	int slurm_procid;            /* SLURM_PROCID, -1 when absent */
	char job_id[24], step_id[16]; /* SLURM_JOB_ID, SLURM_STEP_ID; "" when absent */
	uint64_t events;             /* records of this pid */
	char host[64];
	char exe[256];
	char argv[512];
};

struct ring_procs {
	struct ring_proc *p;
	size_t n;
};

/* Build the table from sorted events.  0 or -ENOMEM. */
int ring_procs_build(const struct ring_event *ev, size_t n, const char *default_host, struct ring_procs *out);

/* The process with this pid (the latest if reused), or NULL. */
const struct ring_proc *ring_procs_find(const struct ring_procs *t, uint32_t pid);

void ring_procs_free(struct ring_procs *t);

#endif
