/*
 * energy_model.h - a run's ring and perun file on one timeline.
 *
 * What `phases`, `functions` and `timeline` share: load the ring and the
 * perun file, pick the multirun / round / host, align perun onto the ring's
 * clock (align.h), and expose every power sensor as an attrib_series on
 * the timeline (seconds since the ring's first record) plus a cumulative
 * energy curve to integrate any slice of time.
 */
#ifndef ANCHORPOST_ENERGY_MODEL_H
#define ANCHORPOST_ENERGY_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "align/align.h"
#include "attrib/attrib.h"
#include "attrib/sensor_model.h"
#include "input/perun.h"
#include "input/ringload.h"
#include "model/sensor_glitch.h"
#include "model/sensor_lag.h"
#include "model/sensor_reads.h"
#include "model/train_procs.h"
#include "phase/phase_set.h"
#include "util/diag.h"

struct em_sensor {
	const struct perun_sensor *ps;
	const char *group;        /* device group ("cpu", "gpu", "ram", ...) */
	struct attrib_series ser; /* sensor time (perun's t; at its reads when timed) */
	double *t_read, *v_read;  /* owned: ser.t_s and (window means) ser.value at the reads, or NULL */
	struct sensor_reads reads; /* whether its window edges are its reads (sensor_reads.h) */
	double *t_tl;             /* n: timeline seconds */
	double tl_offset_s;       /* timeline = sensor t + tl_offset_s: the alignment's offset less lag.lag_s */
	struct sensor_lag lag;    /* its readings' own lag behind perun's stamps (sensor_lag.h) */
	double *cum_j;            /* n: cumulative energy at each t */
	struct sensor_glitch fix; /* ser.value, and the windows a repair touched */
	struct sensor_response resp; /* GPU: what a reading stands for, and whence */
};

struct em_opts {
	const char *ring, *perun;
	const char *run;     /* multirun id, NULL: the last one */
	long round;          /* round index */
	const char *host;    /* NULL: the ring's host, else the first with power */
	const char *tz;      /* execution_dt zone, NULL: local */
	double fit_range_s;  /* offset search half-width around the prior */
	int no_fit;
	int no_hook;         /* --no-hook: ignore perun.sample stamps */
};

struct energy_model {
	const char *ring_path, *perun_path; /* as opened (the caller's strings) */
	struct ringload rl;
	struct phase_set ph;    /* ph.primary: the lead training process's primary thread */
	struct train_procs train; /* the training processes (train_procs.h) */
	/* Training processes of the ring outside this perun file's run (the
	 * user's two concurrent runs sharing one ring: `perun monitor X` and
	 * `py-spy record -- python X`): how many, and the first's pid.  Phase
	 * counts and times are then the file's run's own (phase_table). */
	size_t other_runs;
	uint32_t other_run_pid;
	struct perun_file pf;
	const struct perun_multirun *run;
	const struct perun_round *round;
	const struct perun_host *host;
	uint64_t base_ns;       /* timeline origin: the ring's first record */
	struct align_perun align;
	struct em_sensor *sen;  /* power sensors of the host */
	size_t nsen;
	char **groups;          /* distinct device groups, in sensor order */
	size_t ngroups;
	int emulated;           /* EMULATED_SENSOR.txt beside the perun file */
	double span_t0_s, span_t1_s; /* perun's span on the timeline (times only: the ring's) */
	/* Opened without a perun file (em_opts.perun NULL): the ring and its
	 * phases alone; run, round and host are NULL, no sensor, no groups,
	 * align.method says "none". */
	int times_only;
};

/* Load and align.  Returns 0, or a negative errno with *e filled (and
 * nothing left to close).  The perun file is read through
 * perun_load_guarded: a libhdf5 crash or hang is an error, not a signal.
 * o->perun NULL opens the ring alone (times_only): every phase's times,
 * no energy. */
int energy_model_open(struct energy_model *m, const struct em_opts *o, struct em_error *e);

void energy_model_close(struct energy_model *m);

/* Timeline seconds of a ring timestamp. */
double energy_model_tl(const struct energy_model *m, uint64_t ts_ns);

/* Put sensor s on the timeline: timeline = perun t + offset_s - its
 * fitted lag (s->lag), into s->tl_offset_s and every s->t_tl. */
void energy_model_place_sensor(struct em_sensor *s, double offset_s);

/* Free what energy_model_add_sensors built for one sensor. */
void energy_model_sensor_free(struct em_sensor *s);

/* Energy of one sensor over timeline [a, b] (clipped to its span). */
double energy_model_slice_j(const struct em_sensor *s, double a, double b);

/* Highest and lowest window power of sensor s over timeline [a, b] into
 * *hi / *lo (only raised / lowered: start them at -INFINITY / INFINITY):
 * window i is (t_tl[i-1], t_tl[i]] at values[i] (perun's mean over it).
 * What the plausibility flags compare a phase's power with. */
void energy_model_window_range(const struct em_sensor *s, double a, double b, double *hi, double *lo);

/* Index of a group name in m->groups. */
size_t energy_model_group_of(const struct energy_model *m, const struct em_sensor *s);

/* Append host h's power sensors (>= 2 samples) to *sen, each with its
 * cumulative energy curve, and their device groups, once each, to *groups.
 * Returns 0 or -ENOMEM (what was appended stays, for the caller to free). */
int energy_model_add_sensors(const struct perun_host *h, struct em_sensor **sen, size_t *nsen,
			     char ***groups, size_t *ngroups);

/* perun's file read through perun_load_guarded and its multirun (run;
 * NULL: the last) and round picked.  Returns 0, or a negative errno with
 * *e naming path (what was loaded stays in *pf for the caller's
 * perun_free).  What one ring (energy_model_open) and many (mring) share. */
int energy_model_open_perun(struct perun_file *pf, const char *path, const char *run, long round,
			    const struct perun_multirun **run_out, const struct perun_round **round_out,
			    struct em_error *e);

/* The host's first sensor with more than one sample: the timesteps that
 * perun.sample stamps must reproduce; NULL when none. */
const struct perun_sensor *energy_model_ref_sensor(const struct perun_host *h);

/* 1 when EMULATED_SENSOR.txt lies beside the perun file, 0 when not,
 * -ENOMEM. */
int energy_model_emulated(const char *perun_path);

/* The notice every output carries for an emulated sensor ("" if real). */
const char *energy_model_sensor_note(const struct energy_model *m);

/* The pid whose phases count for this file (its run's lead process) when
 * the ring holds other runs too (several perun runs, or a run perun did
 * not start: m->other_runs); 0 (every process) otherwise. */
uint32_t energy_model_own_pid(const struct energy_model *m);

#endif
