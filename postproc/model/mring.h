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
 * the single-ring method), else execution_dt alone (+-2 s, --no-fit).  A rank's energy is its host's power explained by that
 * rank's primary thread (the --by-process rule); a host's energy is the
 * one explained by its lowest rank (the rank perun samples from).
 *
 * Units.  One unit per process that carries a rank variable; a ring with
 * no ranked process contributes its processes with phases as rank -1.
 *
 * Memory stays bounded by two loaded rings at a time: pass 1 loads each
 * ring for its clock, host and perun anchors; pass 2 loads it again and
 * keeps only per-unit summaries (phase rows, steps).  Both passes run on
 * `threads` threads, one ring per task.
 */
#ifndef ANCHORPOST_MRING_H
#define ANCHORPOST_MRING_H

#include <stddef.h>
#include <stdint.h>

#include "anchors/ring_reader.h"
#include "attrib/attrib.h"
#include "input/perun.h"
#include "model/energy_model.h"

struct mr_phase {
	char *name;
	size_t count;
	double total_s, self_s, mean_ms, p50_ms, p95_ms;
	double *energy_j, *lo_j, *hi_j; /* per group; NAN when not attributed */
	int method;                     /* attrib_method of the first group */
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
	char host[64];
	long host_idx;             /* into mring.hosts, -1 without perun data */
	struct mr_phase *ph;
	size_t nph;
	double *unattr_j, *total_j; /* per group */
	struct mr_step *steps;
	size_t nsteps;
	double coll_s;             /* all time in collectives */
	double first_s, last_s;    /* the process's first and last record */
	char status[64];           /* "exit 0", "signal 9", "no exit record" */
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
};

/* Expand inputs and load everything.  Returns 0, or a negative errno with
 * *e filled; e->file may point into *m: print it, then mring_close(m)
 * (which is safe on a half-opened model). */
int mring_open(struct mring *m, const struct mring_opts *o, struct em_error *e);

void mring_close(struct mring *m);

/* 1 for a collective/wait range name: MPI_* (not MPI_Init*, MPI_Finalize)
 * and dist.* (torch.distributed). */
int mring_is_collective(const char *name);

/* "r3@node7" style label of a unit into buf. */
void mring_unit_label(const struct mr_unit *u, char *buf, size_t cap);

#endif
