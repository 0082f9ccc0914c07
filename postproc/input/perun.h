/*
 * perun.h - perun's HDF5 output as an in-memory model.
 *
 * Reads what `perun monitor` writes (0.9.x and 1.0.x; docs/perun-format.md
 * has the layout, the differences between versions and the source lines
 * they come from).  The file is one tree of groups, each with @type:
 *
 *   /<app>                        1 APP
 *     nodes/<multirun id>         2 MULTI_RUN   @app_name @perun_version @execution_dt
 *       nodes/<round "0","1",..>  3 RUN         @hostname ...
 *         regions/<name>/raw_data/<mpi rank>    float32 start,stop,start,stop,.. s
 *         nodes/<hostname>        4 NODE        @mpi_ranks "[0, 1]"
 *           nodes/<group>         5 DEVICE_GROUP @device_type (cpu gpu ram disk net ..)
 *             nodes/<sensor>      6 SENSOR      backend metadata as string attrs
 *               metrics/ENERGY    @value: perun's trapezoid integral (J)
 *               raw_data/timesteps, values[, alt_values]   each with @unit @mag
 *
 * Everything is loaded at once: perun files hold one value per sensor per
 * sampling period (a 1 h run at 0.1 s with 20 sensors is 0.7 M samples).
 *
 * Times: timesteps are seconds since this host's first sample of the round;
 * region times are seconds since rank 0's start of the app.  Neither origin
 * is stored.  perun < 1.0 took them from time.time_ns() (CLOCK_REALTIME),
 * perun >= 1.0 from time.perf_counter_ns() (CLOCK_MONOTONIC on Linux):
 * perun_multirun.clock says which.  Aligning them is not this module's job.
 */
#ifndef ANCHORPOST_PERUN_H
#define ANCHORPOST_PERUN_H

#include <stddef.h>

#include "util/diag.h"

/* One string attribute ("key" = "value"), e.g. backend metadata. */
struct perun_kv {
	char *key;
	char *value;
};

/* One sensor: a time series and what perun computed from it. */
struct perun_sensor {
	char *id;          /* node name: "cpu_0_package-0", "CUDA:0_POWER", "RAM_USAGE" */
	char *device_type; /* @device_type: "cpu", "gpu", "ram", ...; "" if absent */
	struct perun_kv *meta; /* backend metadata: the string attributes but type/device_type */
	size_t nmeta;

	size_t n;            /* samples; 0 when the sensor has no raw_data */
	double *timesteps_s; /* n, seconds since the host's first sample, scaled by their @mag */
	double *values;      /* n, stored value * @mag, in `unit` (NVML mW become W) */
	char *unit;          /* values' @unit: "W", "%", "B", "B/s", "Hz", ... */
	double mag;          /* values' @mag as stored (1e-3 for NVML power) */
	int values_digits;   /* significant digits the stored type holds (float32: 9) */
	const char *metric;  /* what values measure: perun_metric_name(unit) */

	double *alt_values;  /* n or NULL: raw_data/alt_values * its @mag, a cumulative
			      * counter (RAPL: J; perun 1.0 disk/net: B) */
	char *alt_unit;      /* alt_values' @unit, NULL without alt_values */
	double alt_mag;
	int alt_digits;

	/* @valid_max of values and alt_values, scaled by their @mag; NAN when
	 * absent.  perun 1.0 stores there what the backend said the sensor's
	 * range is: RAPL's max_energy_range_uj for the counter (where it
	 * wraps), NVML's default power limit for GPU power (uint32 max, 4.3 MW,
	 * when NVML would not say). */
	double values_max;
	double alt_max;

	int has_energy;      /* metrics/ENERGY present (power sensors only) */
	double energy_j;     /* its @value: perun's own trapezoid integral of values */
};

/* A device group ("cpu", "gpu", ...) of one host. */
struct perun_group {
	char *name;
	struct perun_sensor *sensors;
	size_t nsensors;
};

/* One host of a round; only the lowest rank per host sampled. */
struct perun_host {
	char *name;
	int *mpi_ranks; /* parsed from @mpi_ranks */
	size_t nranks;
	struct perun_group *groups;
	size_t ngroups;
};

/* One region (@perun.monitor function) on one rank: n (start, stop) pairs. */
struct perun_region_rank {
	int rank;
	size_t n;
	double *start_s; /* seconds since rank 0's app start */
	double *stop_s;  /* NAN where a start has no stop (odd event count) */
};

struct perun_region {
	char *name;
	struct perun_region_rank *ranks;
	size_t nranks;
};

/* One round ("0", "1", ... with --rounds N). */
struct perun_round {
	char *id;
	struct perun_host *hosts;
	size_t nhosts;
	struct perun_region *regions;
	size_t nregions;
};

/* Which clock a multirun's timesteps and region times were read from. */
enum perun_clock {
	PERUN_CLOCK_UNKNOWN = 0,
	PERUN_CLOCK_REALTIME,  /* perun < 1.0: time.time_ns() */
	PERUN_CLOCK_MONOTONIC, /* perun >= 1.0: time.perf_counter_ns() */
};

/* One `perun monitor` invocation. */
struct perun_multirun {
	char *id;            /* node name, by default execution_dt */
	char *app_name;
	char *perun_version; /* "0.9.1", "1.0.0" */
	char *execution_dt;  /* as stored: local ISO time without timezone */
	enum perun_clock clock;
	/* perun's configuration for the run, as it stores it: every other
	 * string attribute, "section.option" = value ("monitor.sampling_period"
	 * = "0.1"); what perun_spelling.h reads. */
	struct perun_kv *config;
	size_t nconfig;
	struct perun_round *rounds;
	size_t nrounds;
};

struct perun_file {
	char *app; /* the one top-level group */
	struct perun_multirun *runs;
	size_t nruns;
};

/* Load `path` into *pf (zeroed first).  Returns 0, or a negative errno
 * (-ENOENT, -EINVAL for a file that is not perun's, -ENOMEM) with a
 * one-line message naming the HDF5 path in *e, file NULL (the caller
 * names the file); *pf is then empty.
 * Silences libhdf5's own error printing. */
int perun_load(const char *path, struct perun_file *pf, struct em_error *e);

/* perun_load over the file's bytes already in memory (libhdf5's core
 * driver): libhdf5 never opens the file.  The same errors as perun_load. */
int perun_load_image(const void *buf, size_t len, struct perun_file *pf, struct em_error *e);

/* Read path into *buf (malloc'd, *len bytes) after input_file_check: the
 * one open of a perun file.  The HDF5 signature and superblock are found
 * first with a few small reads (hdf5_probe.h): a file that is not HDF5 is
 * refused unread, one shorter than its superblock says is refused as
 * truncated, and only the bytes up to the superblock's end-of-file address
 * are read.  0, or a negative errno with *e. */
int perun_read_bytes(const char *path, char **buf, size_t *len, struct em_error *e);

/* perun_load, but first walk the file in a forked child: libhdf5 1.10
 * crashes or loops on some corrupt files (docs/perun-format.md); this turns
 * a crash into -EIO and a child running past 20 s + 1 s/MB (or
 * $ANCHORPOST_PERUN_TIMEOUT_S) into -ETIMEDOUT, each with a message saying
 * what libhdf5 did, instead of killing or hanging the caller.  Errors the
 * child finds are returned as they are.  The file is opened once, by the
 * caller (perun_read_bytes): the child parses those bytes
 * (perun_load_image) and sends the model back (perun_pack.h), so the
 * caller never runs libhdf5 on the file. */
int perun_load_guarded(const char *path, struct perun_file *pf, struct em_error *e);

/* Free everything perun_load allocated; safe on a zeroed struct. */
void perun_free(struct perun_file *pf);

/* The multirun with this id, or NULL. */
const struct perun_multirun *perun_find_run(const struct perun_file *pf, const char *id);

/* 1 if the sensor's values are a power series (unit "W"). */
int perun_sensor_is_power(const struct perun_sensor *s);

/* perun's total energy for the sensor (metrics/ENERGY), in J.  Returns 0,
 * or -ENOENT when perun stored none (not a power sensor). */
int perun_sensor_energy_j(const struct perun_sensor *s, double *energy_j);

/* Number of power sensors in the file (0: psutil only, no energy). */
size_t perun_count_power_sensors(const struct perun_file *pf);

/* A name for what a series in `unit` measures: "power" (W), "energy" (J),
 * "utilization" (%), "frequency" (Hz), "bytes" (B), "bandwidth" (B/s),
 * "time" (s), "value" otherwise. */
const char *perun_metric_name(const char *unit);

#endif
