/* sensors_csv.c - the GPU sensors' CSV and summary (see sensors_csv.h). */
#include "output/sensors_csv.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "output/csv.h"
#include "output/outfile.h"

static void put(struct csv *c, const char *gpu, const char *q, const char *phase, double v, double lo, double hi,
		const char *unit, const char *note)
{
	csv_str(c, gpu);
	csv_str(c, q);
	csv_str(c, phase);
	csv_f64(c, v, 9);
	csv_f64(c, lo, 9);
	csv_f64(c, hi, 9);
	csv_str(c, unit);
	csv_str(c, note);
	csv_row_end(c);
}

/* One reading's identification: rows prefix_update_period_ms, ... and a
 * summary line. */
static void write_ident(struct csv *c, const char *gpu, const char *prefix, const char *what, int has,
			const struct sensor_ident *id, const char *note, FILE *tty)
{
	const char *verdict = id->decided ? "decided" : id->why ? id->why : "not in the ring";
	char q[64];
	if (has) {
		snprintf(q, sizeof q, "%s_update_period_ms", prefix);
		put(c, gpu, q, "", id->grid.step_s * 1e3, id->grid.lo_s * 1e3, id->grid.hi_s * 1e3, "ms", verdict);
		snprintf(q, sizeof q, "%s_window_ms", prefix);
		put(c, gpu, q, "", id->window_s * 1e3, id->window_lo_s * 1e3, id->window_hi_s * 1e3, "ms", verdict);
		snprintf(q, sizeof q, "%s_window_delay_ms", prefix);
		put(c, gpu, q, "", id->delay_s * 1e3, id->delay_lo_s * 1e3, id->delay_hi_s * 1e3, "ms", verdict);
		snprintf(q, sizeof q, "%s_fit_r2", prefix);
		put(c, gpu, q, "", id->r2, NAN, NAN, "", verdict);
		snprintf(q, sizeof q, "%s_updates", prefix);
		put(c, gpu, q, "", (double)id->updates, NAN, NAN, "", note);
	}
	if (!tty)
		return;
	fprintf(tty, "%s: %s (%zu readings, %zu updates, %zu phase edges): ", gpu, what, id->readings, id->updates,
		id->edges);
	if (!has)
		fprintf(tty, "not in the ring (the driver does not answer it)\n");
	else if (!id->grid.step_s)
		fprintf(tty, "no period: %s\n", verdict);
	else
		fprintf(tty,
			"update period %.3f ms [%.3f, %.3f]; window %.2f ms [%.2f, %.2f], ending %.2f ms "
			"[%.2f, %.2f] before the update; r2 %.4f; %s\n",
			id->grid.step_s * 1e3, id->grid.lo_s * 1e3, id->grid.hi_s * 1e3, id->window_s * 1e3,
			id->window_lo_s * 1e3, id->window_hi_s * 1e3, id->delay_s * 1e3, id->delay_lo_s * 1e3,
			id->delay_hi_s * 1e3, id->r2, verdict);
}

static void write_gpu(struct csv *c, const struct gpu_sensor *g, const struct phase_set *ph, const char *note,
		      int gain_calibrated, FILE *tty)
{
	write_ident(c, g->name, "power", "power reading (nvmlDeviceGetPowerUsage)", g->has_power, &g->id, note, tty);
	write_ident(c, g->name, "instant", "instant power (field NVML_FI_DEV_POWER_INSTANT)", g->has_instant, &g->inst,
		    note, tty);
	put(c, g->name, "counter_update_ms", "", g->counter.step_s * 1e3, g->counter.lo_s * 1e3,
	    g->counter.hi_s * 1e3, "ms", g->counter.step_s ? note : g->counter_why);
	if (tty) {
		if (g->counter.step_s)
			fprintf(tty, "%s: energy counter updates every %.3f ms [%.3f, %.3f] (%zu updates)\n", g->name,
				g->counter.step_s * 1e3, g->counter.lo_s * 1e3, g->counter.hi_s * 1e3, g->counter.events);
		else
			fprintf(tty, "%s: energy counter update interval not seen: %s\n", g->name, g->counter_why);
	}
	if (g->cmp_span_s > 0) {
		double d = g->cmp_counter_j > 0 ? (g->cmp_power_j - g->cmp_counter_j) / g->cmp_counter_j : NAN;
		put(c, g->name, "counter_j", "", g->cmp_counter_j, NAN, NAN, "J", note);
		put(c, g->name, "integrated_power_j", "", g->cmp_power_j, NAN, NAN, "J", note);
		put(c, g->name, "power_vs_counter_pct", "", 100 * d, NAN, NAN, "%", note);
		put(c, g->name, "integrated_instant_j", "", g->cmp_instant_j, NAN, NAN, "J", note);
		put(c, g->name, "instant_vs_counter_pct", "", 100 * (g->cmp_instant_j - g->cmp_counter_j) / g->cmp_counter_j,
		    NAN, NAN, "%", note);
		if (tty)
			fprintf(tty, "%s: over %.3f s the counter says %.3f J, the integrated readings %.3f J (%+.2f %%), "
				     "the integrated instant power %.3f J (%+.2f %%)\n",
				g->name, g->cmp_span_s, g->cmp_counter_j, g->cmp_power_j, 100 * d, g->cmp_instant_j,
				100 * (g->cmp_instant_j - g->cmp_counter_j) / g->cmp_counter_j);
	}
	if (tty)
		fprintf(tty, "%-20s %5s %10s %10s %12s %12s  (GPU joules %s)\n", "phase", "n", "host_s", "device_s",
			"host_J", "device_J",
			gain_calibrated ? "calibrated by --gpu-gain"
						  : "carry the board's +-5 % gain floor; ratios do not");
	for (size_t i = 0; i < g->nrows; i++) {
		const struct gpu_phase_row *r = &g->rows[i];
		const char *name = ph->names[r->phase];
		double hl = r->host_glo, hh = r->host_ghi, dl = r->dev_glo, dh = r->dev_ghi, hj = r->host_gj, dj = r->dev_gj;
		if (!r->count || phase_set_is_tool(ph, r->phase))
			continue;
		put(c, g->name, "count", name, (double)r->count, NAN, NAN, "", note);
		put(c, g->name, "host_s", name, r->host_s, NAN, NAN, "s", note);
		put(c, g->name, "device_s", name, r->dev_s, NAN, NAN, "s", note);
		put(c, g->name, "host_j", name, hj, hl, hh, "J", note);
		put(c, g->name, "device_j", name, dj, dl, dh, "J", note);
		if (tty)
			fprintf(tty, "%-20.20s %5zu %10.4f %10.4f %12.3f %12.3f\n", name, r->count, r->host_s, r->dev_s,
				hj, dj);
	}
}

int sensors_csv_write(const struct gpu_sensors *gs, const struct phase_set *ph, const char *out, FILE *tty,
		      struct em_error *e)
{
	static const char *const cols[] = {"gpu", "quantity", "phase", "value", "lo", "hi", "unit", "note", NULL};
	const char *note = gs->emulated ? "emulated sensor, not a measurement" : "";
	struct outfile of;
	struct csv c;
	int rc;
	if (tty)
		fprintf(tty, "GPU sensors from the run's own data (sampler tick %.3f ms; phases on the %s timeline)%s%s\n",
			gs->tick_ms, gs->device_timeline ? "device" : "host", *note ? "; " : "", note);
	/* Without out the summary alone: the rows go nowhere. */
	if (out) {
		if ((rc = outfile_create(&of, out, e)))
			return rc;
	} else if (!(of.fp = fopen("/dev/null", "w"))) {
		return diag_error(e, -errno, "/dev/null", "cannot open");
	}
	csv_init(&c, of.fp);
	csv_header(&c, cols);
	for (size_t i = 0; i < gs->n; i++)
		write_gpu(&c, &gs->g[i], ph, note, gs->gain_calibrated, tty);
	if (out)
		return outfile_done(&of, e);
	fclose(of.fp);
	return 0;
}
