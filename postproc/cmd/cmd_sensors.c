/*
 * cmd_sensors.c - `anchorpost sensors RING [-o FILE.csv]`: what the run's
 * own data say about each GPU's sensors (model/gpu_sensors.h): the power
 * reading's update period, averaging window and window delay with 95 %
 * intervals, the energy counter's update interval, the counter against
 * the integrated readings, and each phase's time and GPU energy on the
 * host's and the device's timeline.
 *
 * CSV (long): gpu, quantity, phase, value, lo, hi, unit, note.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attrib/sensor_model.h"
#include "cmd/cmd_fatal.h"
#include "cmd/commands.h"
#include "cmd/options.h"
#include "input/ringload.h"
#include "model/gpu_sensors.h"
#include "output/csv.h"
#include "output/outfile.h"
#include "phase/phase_set.h"
#include "util/diag.h"

static const struct cmd_usage sensors_usage = {
	.name = "sensors",
	.usage = "[--ring] RING [-o FILE.csv] [--gpu-gain G]",
	.about = "  each GPU's power sensor (update period, averaging window) and energy counter as the\n"
		 "  run's data show them (ANCHOR_SENSORS=nvml), and GPU joules per phase, host and device side\n",
};

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

static void write_gpu(struct csv *c, const struct gpu_sensor *g, const struct phase_set *ph, const char *note, FILE *tty)
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
			sensor_model_gpu_gain > 0 ? "calibrated by --gpu-gain"
						  : "carry the board's +-5 % gain floor; ratios do not");
	for (size_t i = 0; i < g->nrows; i++) {
		const struct gpu_phase_row *r = &g->rows[i];
		const char *name = ph->names[r->phase];
		double hl = r->host_lo, hh = r->host_hi, dl = r->dev_lo, dh = r->dev_hi, hj, dj;
		if (!r->count || phase_set_is_tool(ph, r->phase))
			continue;
		hj = sensor_model_gpu_joules(r->host_j, &hl, &hh);
		dj = sensor_model_gpu_joules(r->dev_j, &dl, &dh);
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

int cmd_sensors(int argc, char **argv)
{
	static const char *const cols[] = {"gpu", "quantity", "phase", "value", "lo", "hi", "unit", "note", NULL};
	const char *ring = NULL, *out = NULL;
	struct ringload rl;
	struct phase_set ph;
	struct gpu_sensors gs;
	struct outfile of;
	struct csv c;
	const char *note;
	FILE *tty;

	const struct option opts[] = {
		OPT_STRING(0, "ring", &ring, "RING", "the ring (or give it as the only argument)"),
		OPT_STRING('o', "out", &out, "FILE", "the CSV (default: none; the summary goes to stdout)"),
		OPT_GPU_GAIN,
		OPT_END(),
	};
	int npos = options_parse(argc, argv, opts, &sensors_usage, 0);

	ring = options_input(&sensors_usage, npos, argv, ring, "--ring");
	ringload_open(&rl, ring);
	memset(&ph, 0, sizeof ph);
	if (phase_set_build(rl.rf.ev, rl.rf.nev, &rl.procs, &ph) || gpu_sensors_build(rl.rf.ev, rl.rf.nev, &ph, &gs))
		diag_fatal(NULL, "out of memory");
	if (!gs.n)
		diag_fatal(ring, "no GPU energy counter in the ring (record with ANCHOR_SENSORS=nvml)");
	note = gs.emulated ? "emulated sensor, not a measurement" : "";
	tty = out && !strcmp(out, "-") ? NULL : stdout; /* the CSV on stdout: no summary there */
	if (tty)
		fprintf(tty, "GPU sensors from the run's own data (sampler tick %.3f ms; phases on the %s timeline)%s%s\n",
			gs.tick_ms, gs.device_timeline ? "device" : "host", *note ? "; " : "", note);
	/* Without -o the summary alone: the rows go nowhere. */
	if (out)
		outfile_open(&of, out);
	else if (!(of.fp = fopen("/dev/null", "w")))
		diag_fatal("/dev/null", "cannot open");
	csv_init(&c, of.fp);
	csv_header(&c, cols);
	for (size_t i = 0; i < gs.n; i++)
		write_gpu(&c, &gs.g[i], &ph, note, tty);
	if (out)
		outfile_commit(&of);
	else
		fclose(of.fp);
	gpu_sensors_free(&gs);
	phase_set_free(&ph);
	ringload_close(&rl);
	return 0;
}
