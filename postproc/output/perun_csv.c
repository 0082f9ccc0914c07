/* perun_csv.c - perun's HDF5 as long CSV (see perun_csv.h). */
#include "output/perun_csv.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/lookup.h"
#include "model/sensor_glitch.h"
#include "output/csv.h"
#include "output/outfile.h"
#include "output/timebase.h"
#include "util/diag.h"

/* --ring: the aligned (multirun, round, host) and its offset. */
struct tl {
	const struct energy_model *m; /* NULL: no --ring */
};

static void put_series(struct csv *c, const struct tl *tl, const struct perun_multirun *m,
		       const struct perun_round *r, const struct perun_host *h, const struct perun_group *g,
		       const struct perun_sensor *s, const char *metric, const char *unit, const double *v, int digits,
		       const unsigned char *bad)
{
	const struct energy_model *em = tl->m;
	int aligned = em && em->run == m && em->round == r && em->host == h;
	const double *placed = NULL;
	/* A sensor the model attributes with sits where its windows were
	 * placed (em_sensor.t_tl: at its reads, less its fitted lag), as in
	 * timeline.csv and trace.json; the others at their stamps. */
	for (size_t k = 0; aligned && k < em->nsen; k++)
		if (em->sen[k].ps == s && em->sen[k].ser.n == s->n)
			placed = em->sen[k].t_tl;
	for (size_t i = 0; i < s->n; i++) {
		csv_str(c, m->id);
		csv_str(c, r->id);
		csv_str(c, h->name);
		csv_str(c, g->name);
		csv_str(c, s->id);
		csv_str(c, metric);
		csv_str(c, unit);
		csv_f64(c, s->timesteps_s[i], 9);
		if (em && aligned) {
			double t = placed ? placed[i] : s->timesteps_s[i] + em->align.offset_s;
			csv_fixed(c, t, 9);
			timebase_unix_field(c, &em->rl.clock, em->base_ns, t);
		} else if (em) {
			csv_empty(c);
			csv_empty(c);
		}
		csv_f64(c, v[i], digits);
		/* the window this reading ends held an impossible reading
		 * (sensor_glitch.h): the value is as stored, not a measurement */
		csv_str(c, bad && bad[i] ? "sensor-glitch" : "");
		csv_row_end(c);
	}
}

static int write_samples(struct csv *c, const struct tl *tl, const struct perun_multirun *m)
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
					struct sensor_glitch sg = {0};
					if (!s->n)
						continue;
					if (lookup_perun_is_power(s) && s->n >= 2 &&
					    sensor_glitch_repair(s, gr->name,
								 !strcmp(gr->name, "gpu") ? ATTRIB_INSTANT_W
											  : ATTRIB_WINDOW_AVG_W,
								 &sg) == -ENOMEM)
						return -ENOMEM;
					put_series(c, tl, m, r, h, gr, s, s->metric, s->unit, s->values,
						   s->values_digits, sg.bad);
					if (s->alt_values) {
						snprintf(cmetric, sizeof cmetric, "%s_counter",
							 lookup_perun_metric(s->alt_unit));
						put_series(c, tl, m, r, h, gr, s, cmetric, s->alt_unit, s->alt_values,
							   s->alt_digits, sg.bad);
					}
					sensor_glitch_free(&sg);
				}
			}
		}
	}
	return 0;
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

/* 1 when s has impossible readings (sensor_glitch.h); their description
 * into buf.  perun's own ENERGY sums them as if real. */
static int sensor_glitched(const struct perun_sensor *s, const char *group, char *buf, size_t cap)
{
	struct sensor_glitch sg;
	int bad;
	buf[0] = '\0';
	if (s->n < 2 || sensor_glitch_repair(s, group, !strcmp(group, "gpu") ? ATTRIB_INSTANT_W : ATTRIB_WINDOW_AVG_W,
					     &sg) == -ENOMEM)
		return 0;
	bad = sg.g.nbad > 0;
	if (bad)
		sensor_glitch_describe(s, &sg, buf, cap);
	sensor_glitch_free(&sg);
	return bad;
}

/* Energy per power sensor, to the table (tfp) and the CSV (c); either may
 * be NULL.  A sensor with impossible readings is flagged in both, and
 * described in *notes (a memstream, the table's foot). */
static size_t write_energy(FILE *tfp, struct csv *c, const struct perun_multirun *m, FILE *notes)
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
					char why[512];
					int bad;
					if (!lookup_perun_is_power(s) || lookup_perun_energy_j(s, &e_j) < 0)
						continue;
					bad = sensor_glitched(s, gr->name, why, sizeof why);
					if (tfp)
						fprintf(tfp, "  %-28s %-5s %-12s %-6s %-24s %12.3f%s\n", m->id,
							r->id, h->name, gr->name, s->id, e_j, bad ? " (!)" : "");
					if (bad && notes)
						fprintf(notes, "(!) %s\n", why);
					if (c) {
						csv_str(c, m->id);
						csv_str(c, r->id);
						csv_str(c, h->name);
						csv_str(c, gr->name);
						csv_str(c, s->id);
						csv_f64(c, e_j, 9);
						csv_str(c, bad ? "sensor-glitch" : "");
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
		return lookup_perun_power_sensors(pf);
	one = (struct perun_file){.app = pf->app, .runs = (struct perun_multirun *)only, .nruns = 1};
	return lookup_perun_power_sensors(&one);
}

/* OUT.energy.csv (epath, NULL: none) and the table (tfp, NULL: none):
 * each power sensor's energy as perun computed it. */
static int write_energy_files(const struct perun_file *pfp, const char *in, const char *epath,
			      const struct perun_multirun *only, FILE *tfp, struct em_error *e)
{
	static const char *const ecols[] = {"multirun", "round",  "host", "device_group",
					    "sensor",   "energy_j", "flags", NULL};
	struct outfile eof;
	struct csv ec;
	size_t nenergy = 0;
	char *notes = NULL;
	size_t notes_len = 0;
	FILE *nfp;
	int rc;
	if (epath) {
		if ((rc = outfile_create(&eof, epath, e)))
			return rc;
		csv_init(&ec, eof.fp);
		csv_header(&ec, ecols);
	}
	if (tfp) {
		fprintf(tfp, "energy per sensor as perun computed it (J):\n");
		fprintf(tfp, "  %-28s %-5s %-12s %-6s %-24s %12s\n", "multirun", "round", "host", "group",
			"sensor", "energy_j");
	}
	if (!(nfp = open_memstream(&notes, &notes_len))) {
		if (epath)
			outfile_abort(&eof);
		return diag_error(e, -ENOMEM, NULL, "out of memory");
	}
	for (size_t i = 0; i < pfp->nruns; i++)
		if (!only || &pfp->runs[i] == only)
			nenergy += write_energy(tfp, epath ? &ec : NULL, &pfp->runs[i], nfp);
	fclose(nfp);
	if (!nenergy && tfp)
		fprintf(tfp, "  (none)\n");
	if (notes_len && tfp)
		fprintf(tfp, "%sperun's energy above sums those readings as if real (flags column of the energy "
			     "CSV); phases, timeline and report use the repaired series; the CSV holds the readings as "
			     "stored\n",
			notes);
	free(notes);
	if (!count_power(pfp, only))
		diag_warn(in, "holds no power sensors (psutil only: no RAPL or GPU was readable), so no energy can be computed");
	return epath ? outfile_done(&eof, e) : 0;
}

int perun_csv_write(const struct perun_file *pfp, const char *in, const char *out, const struct perun_multirun *only,
		    int regions, FILE *table, const struct energy_model *aligned, struct em_error *e)
{
	static const char *const cols[] = {"multirun", "round", "host",  "device_group", "sensor",
					   "metric",   "unit",  "t_rel_s", "value", "flags", NULL};
	static const char *const tcols[] = {"multirun", "round", "host", "device_group", "sensor", "metric",
					    "unit", "t_rel_s", "t_s", "unix_s", "value", "flags", NULL};
	static const char *const rcols[] = {"multirun", "round", "region", "rank", "start_s", "stop_s", NULL};
	const struct tl tl = {aligned};
	struct outfile of;
	struct csv c;
	int rc;
	if ((rc = outfile_create(&of, out, e)))
		return rc;
	csv_init(&c, of.fp);
	csv_header(&c, regions ? rcols : tl.m ? tcols : cols);
	for (size_t i = 0; i < pfp->nruns; i++) {
		const struct perun_multirun *m = &pfp->runs[i];
		if (only && m != only)
			continue;
		if (regions) {
			write_regions(&c, m);
		} else if (write_samples(&c, &tl, m)) {
			outfile_abort(&of);
			return diag_error(e, -ENOMEM, NULL, "out of memory");
		}
	}
	if (!regions) {
		char *epath = NULL;
		if (!outfile_is_stream(out)) {
			size_t len = strlen(out) + sizeof ".energy.csv";
			if (!(epath = malloc(len))) {
				outfile_abort(&of);
				return diag_error(e, -ENOMEM, out, "out of memory");
			}
			snprintf(epath, len, "%s.energy.csv", out);
		}
		rc = write_energy_files(pfp, in, epath, only, table, e);
		if (rc)
			diag_error_keep_file(e); /* it may name epath */
		free(epath);
		if (rc) {
			outfile_abort(&of);
			return rc;
		}
	}
	return outfile_done(&of, e);
}
