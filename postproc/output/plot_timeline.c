/*
 * plot_timeline.c - timeline.svg/png: power per device group over time
 * and the phases of every process, once over the whole run and once
 * zoomed in (a few sensor periods in the middle), because phases of tens
 * of milliseconds are sub-pixel over a minute-long run.
 *
 * Power is drawn as steps, one per perun window (group_power.h).  Bands
 * are each process's primary thread's exclusive timeline: the innermost
 * phase at every instant.  The tools' own phases (phase_set_is_tool)
 * are not drawn; the others get colours in order of first appearance in
 * the legend, 20 distinct ones.  The legend is as wide as its longest
 * name (cut at LEGEND_MAX characters).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/group_power.h"
#include "model/lookup.h"
#include "output/plot.h"
#include "util/diag.h"

#define W_PX 1400.0
#define LEFT_PX 170.0   /* lane labels */
#define RIGHT_PX 210.0  /* legend */
#define POWER_PX 200.0
#define LANE_PX 22.0
#define AXIS_PX 44.0
#define LEGEND_MAX 48   /* characters of a phase name in the legend */

struct lane {
	size_t thr;  /* index into m->ph.thr */
	char label[64];
};

struct tl_ctx {
	const struct energy_model *m;
	const char *title;
	struct group_power *gp;
	struct lane *lane;
	size_t nlane;
	double t0, t1;       /* whole view */
	double z0, z1;       /* zoom view; z1 <= z0: none */
	double wmax;         /* power axis top */
	double period_s;     /* median perun window */
	char *shown;         /* per phase: drawn in some lane */
	size_t *colour;      /* per phase: palette index among the drawn ones */
	double w_px, right_px; /* picture width, legend column */
};

static void legend_label(const char *name, char *buf, size_t cap)
{
	size_t n = 0, chars = 0;
	while (name[n] && chars < LEGEND_MAX) {
		n++;
		while ((name[n] & 0xC0) == 0x80)
			n++;
		chars++;
	}
	snprintf(buf, cap, "%.*s%s", (int)n, name, name[n] ? "\xe2\x80\xa6" : "");
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

static int build_lanes(struct tl_ctx *c)
{
	const struct energy_model *m = c->m;
	c->lane = calloc(m->ph.nthr ? m->ph.nthr : 1, sizeof *c->lane);
	c->shown = calloc(m->ph.nnames ? m->ph.nnames : 1, 1);
	c->colour = calloc(m->ph.nnames ? m->ph.nnames : 1, sizeof *c->colour);
	if (!c->lane || !c->shown || !c->colour)
		return -ENOMEM;
	for (size_t i = 0; i < m->ph.nthr; i++) {
		uint32_t pid = m->ph.thr[i].pid;
		const struct ring_proc *p = lookup_proc(&m->rl.procs, pid);
		const char *exe = p && p->exe[0] ? p->exe : "";
		const char *base = strrchr(exe, '/');
		int dup = 0, own = 0, device = m->ph.thr[i].tid == PHASE_DEVICE_TID;
		/* A process's device-side timeline (GPU stream) gets its own lane. */
		for (size_t k = 0; k < c->nlane && !device; k++)
			dup |= m->ph.thr[c->lane[k].thr].pid == pid && m->ph.thr[c->lane[k].thr].tid != PHASE_DEVICE_TID;
		/* A process whose only phases are the tools' own activity
		 * ("anchor.sync_pulse" in every Python process, perun's MPI
		 * calls) gets no lane. */
		for (size_t k = 0; k < m->ph.thr[i].nseg && !own; k++)
			own = !phase_set_is_tool(&m->ph, m->ph.thr[i].seg[k].phase);
		if (dup || !own || (!device && phase_set_primary_of(&m->ph, pid) != (long)i))
			continue;
		c->lane[c->nlane].thr = i;
		if (device) /* short: the lane label column is narrow */
			snprintf(c->lane[c->nlane].label, sizeof c->lane[c->nlane].label, "pid %u device", pid);
		else
			snprintf(c->lane[c->nlane].label, sizeof c->lane[c->nlane].label, "pid %u%s%s%.24s%s", pid,
				 i == m->ph.primary ? "*" : "", *exe ? " " : "", base ? base + 1 : exe,
				 m->ph.thr[i].tid != pid ? " (thr)" : "");
		for (size_t k = 0; k < m->ph.thr[i].nseg; k++)
			c->shown[m->ph.thr[i].seg[k].phase] |= !phase_set_is_tool(&m->ph, m->ph.thr[i].seg[k].phase);
		c->nlane++;
	}
	for (size_t k = 0, n = 0; k < m->ph.nnames; k++)
		if (c->shown[k])
			c->colour[k] = n++;
	return 0;
}

static double xof(double t, double t0, double t1, double x0, double w)
{
	return x0 + (t - t0) / (t1 - t0) * w;
}

static void draw_time_axis(cairo_t *cr, double t0, double t1, double x0, double w, double y)
{
	double step = plot_tick_step(t1 - t0, 12);
	char buf[32];
	cairo_set_source_rgb(cr, 0, 0, 0);
	cairo_set_line_width(cr, 1);
	cairo_move_to(cr, x0, y + 0.5);
	cairo_line_to(cr, x0 + w, y + 0.5);
	cairo_stroke(cr);
	for (double t = ceil(t0 / step) * step; t <= t1 + step * 1e-9; t += step) {
		double x = floor(xof(t, t0, t1, x0, w)) + 0.5;
		cairo_move_to(cr, x, y);
		cairo_line_to(cr, x, y + 5);
		cairo_stroke(cr);
		snprintf(buf, sizeof buf, "%.*f", step < 0.1 ? 2 : step < 1 ? 1 : 0, fabs(t) < step * 1e-6 ? 0.0 : t);
		plot_text(cr, x, y + 7, 11, 0.5, 0, 0, buf);
	}
	plot_text(cr, x0 + w / 2, y + 24, 12, 0.5, 0, 0, "time since the first anchor (s)");
}

/* One view: power panel, lanes, time axis, from y; returns its height. */
/* The power panel of a view over [t0, t1] at y: grid, the zoom's shade,
 * one step line per device group. */
static void draw_power(cairo_t *cr, const struct tl_ctx *c, double t0, double t1, double x0, double w, double y)
{
	const struct energy_model *m = c->m;
	double ph = POWER_PX, ystep = plot_tick_step(c->wmax, 5);
	char buf[64];
	cairo_set_line_width(cr, 1);
	for (double v = 0; v <= c->wmax + ystep * 1e-9; v += ystep) {
		double yy = floor(y + ph - v / c->wmax * ph) + 0.5;
		cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
		cairo_move_to(cr, x0, yy);
		cairo_line_to(cr, x0 + w, yy);
		cairo_stroke(cr);
		cairo_set_source_rgb(cr, 0, 0, 0);
		snprintf(buf, sizeof buf, "%g", v);
		plot_text(cr, x0 - 6, yy, 11, 1, 0.65, 0, buf);
	}
	cairo_save(cr);
	cairo_translate(cr, x0 - 44, y + ph / 2);
	cairo_rotate(cr, -M_PI / 2);
	plot_text(cr, 0, 0, 12, 0.5, 0.5, 0, "power (W)");
	cairo_restore(cr);
	if (c->z1 > c->z0 && (t0 != c->z0 || t1 != c->z1)) {
		/* Where the zoomed view is. */
		cairo_set_source_rgba(cr, 0.2, 0.2, 0.2, 0.10);
		cairo_rectangle(cr, xof(c->z0, t0, t1, x0, w), y, (c->z1 - c->z0) / (t1 - t0) * w, ph);
		cairo_fill(cr);
	}
	cairo_save(cr);
	cairo_rectangle(cr, x0, y - 1, w, ph + 2);
	cairo_clip(cr);
	cairo_set_line_width(cr, 1.6);
	for (size_t g = 0; g < m->ngroups; g++) {
		const struct group_power *gp = &c->gp[g];
		int started = 0;
		plot_set_group_colour(cr, g);
		for (size_t i = 1; i < gp->n; i++) {
			double xa = xof(gp->t_s[i - 1], t0, t1, x0, w), xb = xof(gp->t_s[i], t0, t1, x0, w);
			double yy = y + ph - gp->power_w[i] / c->wmax * ph;
			if (xb < x0 - 2 || xa > x0 + w + 2)
				continue;
			if (!started)
				cairo_move_to(cr, xa, yy);
			else
				cairo_line_to(cr, xa, yy);
			cairo_line_to(cr, xb, yy);
			started = 1;
		}
		cairo_stroke(cr);
	}
	cairo_restore(cr);
	cairo_set_source_rgb(cr, 0, 0, 0);
	if (!m->ngroups)
		plot_text(cr, x0 + w / 2, y + ph / 2, 13, 0.5, 0.5, 0,
			  "no power sensor in the perun file: no power to draw, phases only");
	cairo_set_line_width(cr, 1);
	cairo_rectangle(cr, x0 + 0.5, y + 0.5, w, ph);
	cairo_stroke(cr);
}

/* Lane l at ly: its thread's exclusive timeline and its marks. */
static void draw_lane(cairo_t *cr, const struct tl_ctx *c, size_t l, double t0, double t1, double x0, double w,
		      double ly)
{
	const struct energy_model *m = c->m;
	const struct phase_thread *th = &m->ph.thr[c->lane[l].thr];
	cairo_set_source_rgb(cr, 0.96, 0.96, 0.96);
	cairo_rectangle(cr, x0, ly + 2, w, LANE_PX - 4);
	cairo_fill(cr);
	cairo_save(cr);
	cairo_rectangle(cr, x0, ly, w, LANE_PX);
	cairo_clip(cr);
	for (size_t s = 0; s < th->nseg; s++) {
		double a = energy_model_tl(m, th->seg[s].t0_ns), b = energy_model_tl(m, th->seg[s].t1_ns);
		if (b < t0 || a > t1 || !c->shown[th->seg[s].phase])
			continue;
		plot_set_phase_colour(cr, c->colour[th->seg[s].phase], 1);
		cairo_rectangle(cr, xof(a, t0, t1, x0, w), ly + 2, (b - a) / (t1 - t0) * w, LANE_PX - 4);
		cairo_fill(cr);
	}
	/* Marks of that thread: thin ticks over the band. */
	cairo_set_source_rgb(cr, 0, 0, 0);
	cairo_set_line_width(cr, 1);
	for (size_t i = 0; i < m->rl.rf.nev; i++) {
		const struct ring_event *e = &m->rl.rf.ev[i];
		double t = energy_model_tl(m, e->ts_ns);
		if (e->kind != ANCHOR_KIND_MARK || e->pid != th->pid || e->tid != th->tid || t < t0 || t > t1)
			continue;
		cairo_move_to(cr, xof(t, t0, t1, x0, w), ly + 2);
		cairo_line_to(cr, xof(t, t0, t1, x0, w), ly + 8);
	}
	cairo_stroke(cr);
	cairo_restore(cr);
	cairo_set_source_rgb(cr, 0, 0, 0);
	plot_text(cr, x0 - 6, ly + LANE_PX / 2, 11, 1, 0.65, 0, c->lane[l].label);
}

/* One view over [t0, t1] at y: label, power panel, one lane per process
 * (its primary thread's exclusive timeline), time axis.  Returns its
 * height. */
static double draw_view(cairo_t *cr, const struct tl_ctx *c, double t0, double t1, double y, const char *label)
{
	double x0 = LEFT_PX, w = c->w_px - LEFT_PX - c->right_px, ph = POWER_PX;
	plot_text(cr, x0, y, 13, 0, 0, 1, label);
	y += 20;
	draw_power(cr, c, t0, t1, x0, w, y);
	y += ph + 8;
	for (size_t l = 0; l < c->nlane; l++)
		draw_lane(cr, c, l, t0, t1, x0, w, y + (double)l * LANE_PX);
	y += (double)c->nlane * LANE_PX + 4;
	draw_time_axis(cr, t0, t1, x0, w, y);
	return 20 + ph + 8 + (double)c->nlane * LANE_PX + 4 + AXIS_PX;
}

static void draw_legend(cairo_t *cr, const struct tl_ctx *c, double y)
{
	const struct energy_model *m = c->m;
	double x = c->w_px - c->right_px + 20;
	char buf[LEGEND_MAX * 4 + 8];
	cairo_set_source_rgb(cr, 0, 0, 0);
	plot_text(cr, x, y, 12, 0, 0, 1, "power (perun)");
	y += 20;
	for (size_t g = 0; g < m->ngroups; g++, y += 18) {
		plot_set_group_colour(cr, g);
		cairo_set_line_width(cr, 2.5);
		cairo_move_to(cr, x, y + 7);
		cairo_line_to(cr, x + 22, y + 7);
		cairo_stroke(cr);
		cairo_set_source_rgb(cr, 0, 0, 0);
		plot_text(cr, x + 28, y + 7, 11, 0, 0.65, 0, m->groups[g]);
	}
	if (!m->ngroups) {
		plot_text(cr, x, y, 11, 0, 0, 0, "no power sensor");
		y += 18;
	}
	y += 12;
	plot_text(cr, x, y, 12, 0, 0, 1, "phases (anchors)");
	y += 20;
	for (size_t k = 0; k < m->ph.nnames; k++) {
		if (!c->shown[k])
			continue;
		plot_set_phase_colour(cr, c->colour[k], 1);
		cairo_rectangle(cr, x, y + 1, 22, 12);
		cairo_fill(cr);
		cairo_set_source_rgb(cr, 0, 0, 0);
		legend_label(m->ph.names[k], buf, sizeof buf);
		plot_text(cr, x + 28, y + 7, 11, 0, 0.65, 0, buf);
		y += 18;
	}
	cairo_set_source_rgb(cr, 0, 0, 0);
	cairo_set_line_width(cr, 1);
	cairo_move_to(cr, x + 11.5, y + 1);
	cairo_line_to(cr, x + 11.5, y + 13);
	cairo_stroke(cr);
	plot_text(cr, x + 28, y + 7, 11, 0, 0.65, 0, "mark (instant)");
	y += 26;
	plot_text(cr, x, y, 10, 0, 0, 0, "* primary thread: the one");
	plot_text(cr, x, y + 13, 10, 0, 0, 0, "  whose phases get the joules");
}

static double header(cairo_t *cr, const struct energy_model *m, const char *title, const char *what, double w_px)
{
	char buf[512];
	cairo_set_source_rgb(cr, 0, 0, 0);
	snprintf(buf, sizeof buf, "%s: %s", what, title);
	plot_text(cr, 20, 14, 17, 0, 0, 1, buf);
	snprintf(buf, sizeof buf, "perun host %s, %zu power sensor(s) over %.1f s; perun aligned to the anchors by %s (+-%.3g ms)",
		 m->host->name, m->nsen, m->span_t1_s - m->span_t0_s, m->align.method, m->align.uncert_ms);
	plot_text(cr, 20, 40, 12, 0, 0, 0, buf);
	if (m->emulated) {
		cairo_set_source_rgb(cr, 0.8, 0, 0);
		plot_text(cr, w_px - 20, 14, 15, 1, 0, 1, "emulated sensor, not a measurement");
		cairo_set_source_rgb(cr, 0, 0, 0);
	}
	return 66;
}

static void draw(cairo_t *cr, double w, double h, void *ctx)
{
	const struct tl_ctx *c = ctx;
	double y = header(cr, c->m, c->title, "anchor timeline", c->w_px);
	draw_legend(cr, c, y + 20);
	y += draw_view(cr, c, c->t0, c->t1, y, "whole run");
	if (c->z1 > c->z0) {
		char buf[96];
		snprintf(buf, sizeof buf, "zoom: %.2f s to %.2f s (shaded above)", c->z0, c->z1);
		draw_view(cr, c, c->z0, c->z1, y + 6, buf);
	}
}

/* The zoomed view: three iterations of the primary thread's most
 * repeated phase (the loop's step), at least 20 sensor periods and 2 s,
 * starting where one such iteration starts near the middle of the run;
 * none when that would not be well inside the run. */
static int pick_zoom(const struct energy_model *m, struct tl_ctx *c)
{
	const struct phase_thread *th;
	size_t *count, best = 0, n = 0;
	double *gap, a, b, zw, cycle = 0, start;
	int ph = -1;
	if (!m->ph.nthr || !m->ph.thr[m->ph.primary].nseg)
		return 0;
	th = &m->ph.thr[m->ph.primary];
	/* The user's phases only: the tool's (sync pulses, perun's MPI calls)
	 * sit at the ends and would pull the zoom off the work. */
	a = INFINITY, b = -INFINITY;
	for (size_t i = 0; i < th->nseg; i++)
		if (!phase_set_is_tool(&m->ph, th->seg[i].phase)) {
			a = fmin(a, energy_model_tl(m, th->seg[i].t0_ns));
			b = fmax(b, energy_model_tl(m, th->seg[i].t1_ns));
		}
	if (!(b > a))
		return 0;
	count = calloc(m->ph.nnames, sizeof *count);
	gap = malloc((m->ph.nocc ? m->ph.nocc : 1) * sizeof *gap);
	if (!count || !gap) {
		free(count);
		free(gap);
		return -ENOMEM;
	}
	for (size_t i = 0; i < m->ph.nocc; i++)
		if (m->ph.occ[i].pid == th->pid && m->ph.occ[i].tid == th->tid &&
		    !phase_set_is_tool(&m->ph, m->ph.occ[i].phase))
			count[m->ph.occ[i].phase]++;
	for (size_t k = 0; k < m->ph.nnames; k++)
		if (count[k] > best)
			best = count[k], ph = (int)k;
	start = (a + b) / 2;
	if (best >= 3) {
		uint64_t prev = 0;
		double mid = (a + b) / 2, dist = INFINITY;
		for (size_t i = 0; i < m->ph.nocc; i++) {
			const struct phase_occ *o = &m->ph.occ[i];
			double t;
			if (o->pid != th->pid || o->tid != th->tid || o->phase != ph)
				continue;
			if (prev)
				gap[n++] = (double)(o->t0_ns - prev) / 1e9;
			prev = o->t0_ns;
			t = energy_model_tl(m, o->t0_ns);
			if (fabs(t - mid) < dist)
				dist = fabs(t - mid), start = t;
		}
		qsort(gap, n, sizeof *gap, cmp_double);
		cycle = n ? gap[n / 2] : 0;
	}
	zw = fmax(fmax(2.0, 20 * c->period_s), 3 * cycle);
	if (b - a > 2 * zw) {
		c->z0 = fmin(fmax(start - 0.05 * zw, a), b - zw);
		c->z1 = c->z0 + zw;
	}
	free(count);
	free(gap);
	return 0;
}

static double view_height(const struct tl_ctx *c)
{
	return 20 + POWER_PX + 8 + (double)c->nlane * LANE_PX + 4 + AXIS_PX;
}

/* The legend column: as wide as its longest phase name needs. */
static void legend_width(struct tl_ctx *c)
{
	const struct energy_model *m = c->m;
	cairo_surface_t *sf = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1);
	cairo_t *cr = cairo_create(sf);
	char buf[LEGEND_MAX * 4 + 8];
	double widest = 0;
	for (size_t k = 0; k < m->ph.nnames; k++)
		if (c->shown[k]) {
			legend_label(m->ph.names[k], buf, sizeof buf);
			widest = fmax(widest, plot_text_width(cr, 11, 0, buf));
		}
	cairo_destroy(cr);
	cairo_surface_destroy(sf);
	c->right_px = fmax(RIGHT_PX, widest + 28 + 30);
	c->w_px = W_PX - RIGHT_PX + c->right_px;
}

/* Each group's power and the axis's top (c->gp, c->wmax). */
static int build_power(struct tl_ctx *c)
{
	const struct energy_model *m = c->m;
	c->gp = calloc(m->ngroups ? m->ngroups : 1, sizeof *c->gp);
	if (!c->gp)
		return -ENOMEM;
	c->wmax = 0;
	for (size_t g = 0; g < m->ngroups; g++) {
		if (group_power_build(m, g, &c->gp[g]))
			return -ENOMEM;
		for (size_t i = 1; i < c->gp[g].n; i++)
			if (c->gp[g].power_w[i] > c->wmax)
				c->wmax = c->gp[g].power_w[i];
	}
	c->wmax = c->wmax > 0 ? ceil(c->wmax * 1.08 / plot_tick_step(c->wmax * 1.08, 5)) * plot_tick_step(c->wmax * 1.08, 5) : 1;
	return 0;
}

/* Zoom (pick_zoom) needs the sensor period: the median gap of the first
 * power sensor, 0.1 s without one. */
static int sensor_period(const struct energy_model *m, double *period_s)
{
	size_t n;
	double *d;
	*period_s = 0.1;
	if (!m->nsen || m->sen[0].ser.n <= 2)
		return 0;
	n = m->sen[0].ser.n - 1;
	d = malloc(n * sizeof *d);
	if (!d)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		d[i] = m->sen[0].t_tl[i + 1] - m->sen[0].t_tl[i];
	qsort(d, n, sizeof *d, cmp_double);
	*period_s = d[n / 2];
	free(d);
	return 0;
}

static void free_ctx(struct tl_ctx *c)
{
	for (size_t g = 0; c->gp && g < c->m->ngroups; g++)
		group_power_free(&c->gp[g]);
	free(c->gp);
	free(c->lane);
	free(c->shown);
	free(c->colour);
}

int plot_timeline(const struct energy_model *m, const char *title, const char *path, enum plot_kind kind,
		  struct em_error *e)
{
	struct tl_ctx c = {.m = m, .title = title};
	double h, legend_h;
	char doc_title[512];
	int rc;

	if (build_power(&c) || build_lanes(&c) || sensor_period(m, &c.period_s) || pick_zoom(m, &c)) {
		free_ctx(&c);
		return diag_error(e, -ENOMEM, NULL, "out of memory");
	}
	legend_width(&c);
	/* The whole view: the ring's records and perun's span together. */
	c.t0 = fmin(0, m->span_t0_s);
	c.t1 = fmax(energy_model_tl(m, m->rl.rf.ev[m->rl.rf.nev - 1].ts_ns), m->span_t1_s);
	if (!(c.t1 > c.t0))
		c.t1 = c.t0 + 1;

	h = 66 + view_height(&c) * (c.z1 > c.z0 ? 2 : 1) + (c.z1 > c.z0 ? 6 : 0) + 10;
	legend_h = 66 + 20 + 40 + 18.0 * (double)m->ngroups + 32 + 18.0 * (double)m->ph.nnames + 40;
	snprintf(doc_title, sizeof doc_title, "anchor timeline: %s%s%s", title, m->emulated ? " (" : "",
		 m->emulated ? "emulated sensor, not a measurement)" : "");
	rc = plot_write(path, kind, c.w_px, fmax(h, legend_h), doc_title, draw, &c, e);
	free_ctx(&c);
	return rc;
}
