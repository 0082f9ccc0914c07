/*
 * mring.h - many rings (one per rank, or per host) and a multi-host perun
 * file on one timeline: what `phases --by-rank` and `stragglers` share.
 *
 * Timeline.  Every ring is mapped through its OWN SYNC records (each host
 * has its own CLOCK_MONOTONIC origin; only CLOCK_REALTIME is shared, via
 * NTP) to unix time, then to seconds since `t0_unix_ns` (the earliest ring
 * creation).  A double holds unix-relative seconds to well under 1 us.
 *
 * perun.  Each perun host's sensors go onto the timeline with that host's
 * own offset: from perun.sample anchors in a ring of that host (exact,
 * "perun-hook"), else execution_dt refined by fitting the host's first
 * power sensor to the phases of the host's lowest rank ("execution_dt+fit",
 * the single-ring method), else execution_dt alone (+-2 s, --no-fit).
 *
 * Energy per rank: the node split.  perun measures a node, not a rank:
 * every rank of a node draws from the same CPU packages and memory.  Each
 * rank's phases are first attributed against its node's power on that
 * rank's own timeline (the single-ring method: E[r,p], the node's joules
 * while rank r was in phase p).  Then the node's joules are shared out:
 * at every instant the node's power goes in equal parts to those of its
 * ranks that are inside one of their phases then (collectives included:
 * a rank spinning in MPI_Allreduce draws power), so rank r's row for p is
 *     E'[r,p] = E[r,p] * c[r,p],  c[r,p] = mean over r's time in p of
 *                                          1 / (ranks of the node in a phase)
 * (c = 1 for a rank alone on its node, 1/2 for two ranks in lock step),
 * its interval scaled alike.  What no phase explains (time when no rank
 * is in a phase, and the fits' remainder) is the node's total minus every
 * rank's phase joules, split equally over the node's ranks as their
 * (unattributed).  So a node's ranks add up to its perun total exactly,
 * hosts add up to the run's, and a host's phase row is the sum of its
 * ranks'.  The rule assumes a node's power during a rank's phase does not
 * depend on which other rank is busy; the data (one meter per node)
 * cannot tell ranks apart any better.
 *
 * Units: the training processes of each ring (train_procs.h): its ranks,
 * else its processes with phases of their own, labelled by pid (rank -1);
 * never a tool's or a launcher's process.
 *
 * Memory stays bounded by two loaded rings at a time: pass 1 loads each
 * ring for its clock, host and perun anchors; pass 2 loads it again and
 * keeps only per-unit summaries (phase rows, steps, the unit's busy time
 * as merged intervals); pass 3, only for rings with a rank on a node of
 * several ranks, loads it once more for the node split (it needs every
 * rank of the node's busy time).  Each pass runs on `threads` threads,
 * one ring per task.
 */
#ifndef ANCHORPOST_MRING_H
#define ANCHORPOST_MRING_H

#include <stddef.h>
#include <stdint.h>

#include "anchors/ring_reader.h"
#include "attrib/attrib.h"
#include "input/perun.h"
#include "input/slurm_acct.h"
#include "model/energy_model.h"

struct mr_phase {
	char *name;
	size_t count;
	double total_s, self_s, mean_ms, p50_ms, p95_ms;
	double *energy_j, *lo_j, *hi_j; /* per group, after the node split; NAN when not attributed */
	double *node_j;                 /* per group: E[r,p] before the split (the node's joules) */
	unsigned *flags;                /* per group: ATTRIB_FLAG_* of the attribution */
	double *maxw_w, *minw_w;        /* per group: highest / lowest window power around its
					 * occurrences, sensors of the group summed (NAN: none) */
	double split;                   /* c[r,p] of the node split (1: alone on the node) */
	int method;                     /* attrib_method of the first group */
	int tool;                       /* the tools' own activity (phase_set_is_tool): no joules */
};

/* One occurrence of the step phase on a unit's primary thread. */
struct mr_step {
	double t0_s, t1_s;  /* timeline */
	double wait_s;      /* inside collectives (union of MPI_* / dist.* ranges) */
	double wait_j;      /* joules over those intervals, all groups: the collective
			     * phase's attributed power x time (mring.c says why) */
};

struct mr_unit {
	size_t ring;
	uint32_t pid;
	int rank;
	char rank_var[24];         /* the variable the rank came from ("" none) */
	int slurm_procid;          /* -1: not a Slurm task */
	char job_id[24], step_id[16]; /* SLURM_JOB_ID, SLURM_STEP_ID ("" none) */
	char host[64];
	long host_idx;             /* into mring.hosts, -1 without perun data */
	struct mr_phase *ph;
	size_t nph;
	double *unattr_j, *total_j; /* per group: the unit's share of its node (node split) */
	double *unattr_lo_j, *unattr_hi_j; /* per group: 95 % interval of unattr_j */
	double *node_total_j;      /* per group: the node's joules over perun's span */
	double (*busy)[2];         /* timeline intervals inside its user phases, merged */
	size_t nbusy;
	struct mr_step *steps;
	size_t nsteps;
	double coll_s;             /* all time in collectives */
	double first_s, last_s;    /* the process's first and last record */
	char status[64];           /* "exit 0", "signal 9", "no exit record" */
	char no_energy[256];       /* why perun's data gave it no joules ("" it has them) */
	int abnormal;              /* killed, crashed or vanished */
};

struct mr_ring {
	char *path;
	char host[64];
	uint64_t nev;
	struct ring_stats stats;
	double first_s, last_s;    /* timeline */
	double mono_to_unix_s;     /* realtime - monotonic at its first SYNC */
	unsigned clock_steps;
	double hook_offset_s;      /* perun t=0 on the timeline from its marks, NAN */
	size_t hook_samples;
	double prior_offset_s;     /* the same from execution_dt, NAN */
	double fit_offset_s;       /* without stamps: the prior bounded by this ring and
				    * refined by fitting its lowest rank's phases to
				    * its host's power (align_perun_fallback), NAN */
	double fit_uncert_ms, fit_ci95_ms;
	double bound_lo_s, bound_hi_s; /* its hard bounds on the timeline (+-INFINITY) */
	char bound_why[192];
	char fit_method[64];
	int min_rank;              /* lowest rank in the ring, -1 none */
	struct mr_unit *units;
	size_t nunits;
};

struct mr_host {
	const struct perun_host *ph;
	struct em_sensor *sen;     /* power sensors, t_tl on the timeline */
	size_t nsen;
	double period_s;           /* the sensors' shortest mean sampling period */
	size_t nunits;             /* training processes on this node */
	double *busy_t;            /* with nunits > 1: how many of them are in a phase, */
	unsigned *busy_n;          /* busy_n[k] on [busy_t[k], busy_t[k+1]) (the node split) */
	size_t nbusy;
	double offset_s;           /* timeline = perun t + offset_s */
	double uncert_ms;
	double ci95_ms;            /* without stamps: 95 % half width of offset_s, else 0 */
	double bound_lo_s, bound_hi_s; /* without stamps: hard bounds (+-INFINITY), else 0 */
	const char *bound_ring;    /* the ring they came from, NULL with stamps */
	char bound_why[192];
	char method[64];
};

struct mring_opts {
	const char *const *inputs; /* files, directories, globs */
	size_t ninputs;
	const char *perun;         /* NULL: times only */
	const char *run;
	long round;
	const char *tz;
	const char *step;          /* step phase; NULL: first of a default list */
	enum attrib_choice method; /* as `phases` */
	struct attrib_opts ao;
	int threads;               /* 0: 2 */
	int no_fit;                /* keep the execution_dt prior */
	int no_hook;               /* ignore perun's stamps (shows the fallback) */
	double fit_range_s;        /* 0: 3 s */
};

struct mring {
	struct mr_ring *rings;
	size_t nrings;
	struct mr_unit **units;    /* every unit, sorted by (rank, host, pid) */
	size_t nunits;
	struct mr_host *hosts;
	size_t nhosts;
	char **groups;             /* device groups over all hosts */
	size_t ngroups;
	int64_t t0_unix_ns;
	char step[80];             /* step phase used ("" none found) */
	struct perun_file pf;
	const struct perun_multirun *run;
	int have_perun, emulated;
	int split;                 /* some node has several ranks (the node split applied) */
};

/* Expand inputs and load everything.  Returns 0, or a negative errno with
 * *e filled; e->file may point into *m: print it, then mring_close(m)
 * (which is safe on a half-opened model). */
int mring_open(struct mring *m, const struct mring_opts *o, struct em_error *e);

void mring_close(struct mring *m);

/* mring_open over the rings of one run with the single-ring options
 * (perun file, its run and round, alignment) and attribution method of
 * `report`: what a distributed recording's per-rank view is built from. */
int mring_open_run(struct mring *m, const char *const *rings, size_t nrings, const struct em_opts *o,
		   enum attrib_choice method, const struct attrib_opts *ao, struct em_error *e);

/* The Slurm job (SLURM_JOB_ID) every unit shares into job, and the step
 * (SLURM_STEP_ID) when they share that too ("" else); 0, or -1 when the
 * units are not all tasks of one Slurm job. */
int mring_slurm_job(const struct mring *m, char *job, size_t jcap, char *step, size_t scap);

/* What Slurm's accounting says of that job (slurm_acct.h: sacct, once).
 * 0 with *a filled, -ENOENT when the run is no Slurm job. */
int mring_slurm_acct(const struct mring *m, struct slurm_acct *a);

/* The ring of the lowest rank (the rank perun samples on its node; the
 * first unit), or NULL without units. */
const char *mring_lead_ring(const struct mring *m);

/* 1 for a collective/wait range name: MPI_* (not MPI_Init*, MPI_Finalize)
 * and dist.* (torch.distributed). */
int mring_is_collective(const char *name);

/* "r3@node7" style label of a unit into buf. */
void mring_unit_label(const struct mr_unit *u, char *buf, size_t cap);

/* The node split's rule in one sentence, for every output that shows
 * per-rank joules. */
extern const char mring_split_rule[];

#endif
