/*
 * cmd_perun.c - `anchorpost perun FILE.hdf5 [-o perun.csv] [--run ID] [--regions]`:
 * perun's HDF5 as tidy long CSV.
 *
 * Default: one row per sample, columns
 *   multirun,round,host,device_group,sensor,metric,unit,t_rel_s,value
 * value is the stored value times its @mag (NVML mW become W); metric names
 * what it measures (perun_metric_name).  A sensor with a cumulative counter
 * (RAPL energy, perun 1.0 disk/net bytes) adds rows with metric
 * "<metric>_counter" after its own rows.  Then a table of each power
 * sensor's total energy as perun computed it goes to stdout (stderr when
 * the CSV goes to stdout) and, with -o FILE, to FILE.energy.csv
 * (multirun,round,host,device_group,sensor,energy_j).
 *
 * --regions: one row per region call instead,
 *   multirun,round,region,rank,start_s,stop_s
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "csv.h"
#include "cmd_writers.h"
#include "diag.h"
#include "outfile.h"
#include "perun.h"

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: anchorpost perun FILE.hdf5 [-o perun.csv] [--run ID] [--regions]\n"
		"  perun's HDF5 as long CSV: multirun,round,host,device_group,sensor,metric,unit,t_rel_s,value\n"
		"  (value scaled by perun's mag), then each power sensor's energy as perun computed it\n"
		"  (table; with -o also written to <out>.energy.csv).\n"
		"  --run ID    only this multirun (default: all)\n"
		"  --regions   region calls instead: multirun,round,region,rank,start_s,stop_s\n");
}

static void put_series(struct csv *c, const struct perun_multirun *m, const struct perun_round *r,
		       const struct perun_host *h, const struct perun_group *g,
		       const struct perun_sensor *s, const char *metric, const char *unit,
		       const double *v, int digits)
{
	for (size_t i = 0; i < s->n; i++) {
		csv_str(c, m->id);
		csv_str(c, r->id);
		csv_str(c, h->name);
		csv_str(c, g->name);
		csv_str(c, s->id);
		csv_str(c, metric);
		csv_str(c, unit);
		csv_f64(c, s->timesteps_s[i], 9);
		csv_f64(c, v[i], digits);
		csv_row_end(c);
	}
}

static void write_samples(struct csv *c, const struct perun_multirun *m)
{
	for (size_t j = 0; j < m->nrounds; j++) {
		const struct perun_round *r = &m->rounds[j];
		for (size_t k = 0; k < r->nhosts; k++) {
			const struct perun_host *h = &r->hosts[k];
			for (size_t g = 0; g < h->ngroups; g++) {
				const struct perun_group *gr = &h->groups[g];
				for (size_t q = 0; q < gr->nsensors; q++) {
					const struct perun_sensor *s = &gr->sensors[q];
					char cmetric[64];
					if (!s->n)
						continue;
					put_series(c, m, r, h, gr, s, s->metric, s->unit, s->values,
						   s->values_digits);
					if (!s->alt_values)
						continue;
					snprintf(cmetric, sizeof cmetric, "%s_counter",
						 perun_metric_name(s->alt_unit));
					put_series(c, m, r, h, gr, s, cmetric, s->alt_unit, s->alt_values,
						   s->alt_digits);
				}
			}
		}
	}
}

static void write_regions(struct csv *c, const struct perun_multirun *m)
{
	for (size_t j = 0; j < m->nrounds; j++) {
		const struct perun_round *r = &m->rounds[j];
		for (size_t k = 0; k < r->nregions; k++) {
			const struct perun_region *rg = &r->regions[k];
			for (size_t q = 0; q < rg->nranks; q++) {
				const struct perun_region_rank *rr = &rg->ranks[q];
				for (size_t i = 0; i < rr->n; i++) {
					csv_str(c, m->id);
					csv_str(c, r->id);
					csv_str(c, rg->name);
					csv_i64(c, rr->rank);
					csv_f64(c, rr->start_s[i], 9);
					csv_f64(c, rr->stop_s[i], 9); /* NaN: empty */
					csv_row_end(c);
				}
			}
		}
	}
}

/* Energy per power sensor, to the table (tfp) and the CSV (c); either may be NULL. */
static size_t write_energy(FILE *tfp, struct csv *c, const struct perun_multirun *m)
{
	size_t n = 0;
	for (size_t j = 0; j < m->nrounds; j++) {
		const struct perun_round *r = &m->rounds[j];
		for (size_t k = 0; k < r->nhosts; k++) {
			const struct perun_host *h = &r->hosts[k];
			for (size_t g = 0; g < h->ngroups; g++) {
				const struct perun_group *gr = &h->groups[g];
				for (size_t q = 0; q < gr->nsensors; q++) {
					const struct perun_sensor *s = &gr->sensors[q];
					double e_j;
					if (!perun_sensor_is_power(s) || perun_sensor_energy_j(s, &e_j) < 0)
						continue;
					if (tfp)
						fprintf(tfp, "  %-28s %-5s %-12s %-6s %-24s %12.3f\n", m->id,
							r->id, h->name, gr->name, s->id, e_j);
					if (c) {
						csv_str(c, m->id);
						csv_str(c, r->id);
						csv_str(c, h->name);
						csv_str(c, gr->name);
						csv_str(c, s->id);
						csv_f64(c, e_j, 9);
						csv_row_end(c);
					}
					n++;
				}
			}
		}
	}
	return n;
}

/* Power sensors in the selected multirun(s). */
static size_t count_power(const struct perun_file *pf, const struct perun_multirun *only)
{
	struct perun_file one;
	if (!only)
		return perun_count_power_sensors(pf);
	one = (struct perun_file){.app = pf->app, .runs = (struct perun_multirun *)only, .nruns = 1};
	return perun_count_power_sensors(&one);
}

int perun_write(const struct perun_file *pfp, const char *in, const char *out, const struct perun_multirun *only,
		int regions, FILE *table)
{
	static const char *const cols[] = {"multirun", "round", "host",  "device_group", "sensor",
					   "metric",   "unit",  "t_rel_s", "value",        NULL};
	static const char *const rcols[] = {"multirun", "round", "region", "rank", "start_s", "stop_s", NULL};
	static const char *const ecols[] = {"multirun", "round",  "host", "device_group",
					    "sensor",   "energy_j", NULL};
	int to_stdout = !strcmp(out, "-");
	struct outfile of;
	struct csv c;
	outfile_open(&of, out);
	csv_init(&c, of.fp);
	csv_header(&c, regions ? rcols : cols);
	for (size_t i = 0; i < pfp->nruns; i++) {
		const struct perun_multirun *m = &pfp->runs[i];
		if (only && m != only)
			continue;
		if (regions)
			write_regions(&c, m);
		else
			write_samples(&c, m);
	}

	if (!regions) {
		FILE *tfp = table; /* NULL: no table */
		struct outfile eof;
		struct csv ec;
		char *epath = NULL;
		size_t nenergy = 0;
		if (!to_stdout) {
			size_t len = strlen(out) + sizeof ".energy.csv";
			epath = malloc(len);
			if (!epath)
				diag_fatal(out, "out of memory");
			snprintf(epath, len, "%s.energy.csv", out);
			outfile_open(&eof, epath);
			csv_init(&ec, eof.fp);
			csv_header(&ec, ecols);
		}
		if (tfp) {
			fprintf(tfp, "energy per sensor as perun computed it (J):\n");
			fprintf(tfp, "  %-28s %-5s %-12s %-6s %-24s %12s\n", "multirun", "round", "host", "group",
				"sensor", "energy_j");
		}
		for (size_t i = 0; i < pfp->nruns; i++)
			if (!only || &pfp->runs[i] == only)
				nenergy += write_energy(tfp, to_stdout ? NULL : &ec, &pfp->runs[i]);
		if (!nenergy && tfp)
			fprintf(tfp, "  (none)\n");
		if (!count_power(pfp, only))
			diag_warn(in, "holds no power sensors (psutil only: no RAPL or GPU was readable), so no energy can be computed");
		if (epath) {
			outfile_commit(&eof);
			free(epath);
		}
	}
	outfile_commit(&of);
	return 0;
}

int cmd_perun(int argc, char **argv)
{
	const char *in = NULL, *out = "-", *run = NULL;
	int regions = 0, rc;
	struct perun_file pf;
	char err[1024];

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-o") && i + 1 < argc) {
			out = argv[++i];
		} else if (!strcmp(argv[i], "--run") && i + 1 < argc) {
			run = argv[++i];
		} else if (!strcmp(argv[i], "--regions")) {
			regions = 1;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			usage(stderr);
			diag_fatal(NULL, "perun: unknown option or missing value '%s'", argv[i]);
		} else if (!in) {
			in = argv[i];
		} else {
			diag_fatal(NULL, "perun: more than one input given ('%s')", argv[i]);
		}
	}
	if (!in) {
		usage(stderr);
		return 2;
	}
	rc = perun_load_guarded(in, &pf, err, sizeof err);
	if (rc < 0)
		diag_fatal(in, "%s", err);

	const struct perun_multirun *only = NULL;
	if (run && !(only = perun_find_run(&pf, run))) {
		char have[512] = "";
		size_t len = 0;
		for (size_t i = 0; i < pf.nruns && len < sizeof have; i++) {
			int k = snprintf(have + len, sizeof have - len, "%s%s", i ? ", " : "", pf.runs[i].id);
			if (k > 0)
				len += (size_t)k;
		}
		diag_fatal(in, "no multirun '%s' (the file has: %s)", run, pf.nruns ? have : "none");
	}

	rc = perun_write(&pf, in, out, only, regions, !strcmp(out, "-") ? stderr : stdout);
	perun_free(&pf);
	return rc;
}
