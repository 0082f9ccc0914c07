/*
 * plot_phases.c - phases.svg/png: self energy per phase, one bar per
 * device group side by side (grouped, not stacked, so each bar carries
 * its own 95 % interval as an error bar, exactly the phases.csv row), and
 * "(unattributed)": perun's energy while no phase ran.  Without a power
 * sensor the bars are the phases' self times and the picture says so.
 * The tools' own phases (phase_set_is_tool) are left out.  Phase names
 * that do not fit under their bar are written at a slant, and names
 * longer than LABEL_MAX characters are cut (the full name is in
 * phases.csv).
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/phase_flags.h"
#include "output/phase_table.h"
#include "output/plot.h"
#include "util/diag.h"

#define W_PX 1200.0
#define H_PX 560.0
#define LEFT_PX 90.0
#define RIGHT_PX 170.0
#define TOP_PX 90.0
#define BOTTOM_PX 80.0
#define LABEL_MAX 40      /* characters of a phase name under its bar */
#define SLANT_DEG 35.0

struct bars_ctx {
	const struct energy_model *m;
	const struct phase_scope *sr;
	const char *title;
	int *cat;       /* phase index per category (nnames: unattributed) */
	size_t ncat;
	double ymax;
	double bottom_px, left_px; /* margins the names need */
	double hidden_j;  /* energy of the phases not drawn (the tool's own) */
	size_t nhidden;
	int slanted;      /* names too wide for their slot: drawn at a slant */
	char (*label)[LABEL_MAX + 8];
	char (*codes)[16]; /* ncat x groups: phases.csv's flags as letters (phase_flags.h) */
	unsigned flag_used;
};

static double bar_value(const struct bars_ctx *c, size_t k, size_t g);

/* Name of category k, cut to LABEL_MAX characters (UTF-8 safe). */
static void make_label(const struct energy_model *m, int p, char *buf, size_t cap)
{
	const char *name = p == (int)m->ph.nnames ? "(unattributed)" : m->ph.names[p];
	size_t n = 0, chars = 0;
	while (name[n] && chars < LABEL_MAX) {
		n++;
		while ((name[n] & 0xC0) == 0x80)
			n++;
		chars++;
	}
	snprintf(buf, cap, "%.*s%s", (int)n, name, name[n] ? "\xe2\x80\xa6" : "");
}

static const struct phase_group_row *row(const struct bars_ctx *c, size_t k, size_t g)
{
	return &c->sr->row[(size_t)c->cat[k] * c->m->ngroups + g];
}

/* Bar height: self energy, or self seconds without a power sensor. */
static double bar_value(const struct bars_ctx *c, size_t k, size_t g)
{
	double v;
	if (!c->m->ngroups)
		return phase_scope_self_s(c->m, c->sr, c->cat[k]);
	v = row(c, k, g)->energy_j;
	return isfinite(v) ? v : 0;
}

/* Where the plot area lies (draw). */
struct bars_geom {
	double x0, pw, y0, ph, slot, bw;
	size_t nbar;
};

/* Title, subtitle, the hidden phases' note, the emulated-sensor mark. */
static void draw_header(cairo_t *cr, const struct bars_ctx *c, double w)
{
	const struct energy_model *m = c->m;
	size_t ng = m->ngroups;
	char buf[512];
	cairo_set_source_rgb(cr, 0, 0, 0);
	snprintf(buf, sizeof buf, "%s per phase: %s", ng ? "energy" : "time", c->title);
	plot_text(cr, 20, 14, 17, 0, 0, 1, buf);
	if (ng)
		snprintf(buf, sizeof buf, "self energy on the primary thread's timeline (nested phases excluded); "
					  "error bars: 95 %% interval; alignment %s (+-%.3g ms)",
			 m->align.method, m->align.uncert_ms);
	else
		snprintf(buf, sizeof buf, "%s: no energy; bars are each phase's self time on the primary thread "
					  "(nested phases excluded)", m->times_only ? "no perun file" : "no power sensor in the perun file");
	plot_text(cr, 20, 40, 12, 0, 0, 0, buf);
	if (c->nhidden) {
		if (ng)
			snprintf(buf, sizeof buf, "not drawn: %zu phase(s) of the tool itself (anchor.*, perun's MPI "
						  "calls): %.3g J in all groups, rows in phases.csv", c->nhidden, c->hidden_j);
		else
			snprintf(buf, sizeof buf, "not drawn: %zu phase(s) of the tool itself (anchor.*, perun's MPI "
						  "calls), rows in phases.csv", c->nhidden);
		plot_text(cr, 20, 58, 11, 0, 0, 0, buf);
	}
	if (c->flag_used) {
		/* A flagged bar carries its letters; they are explained here. */
		char legend[400];
		phase_flags_legend_short(c->flag_used, legend, sizeof legend);
		snprintf(buf, sizeof buf, "flags (phases.csv): %s", legend);
		plot_text(cr, 20, 74, 11, 0, 0, 0, buf);
	}
	if (m->emulated) {
		cairo_set_source_rgb(cr, 0.8, 0, 0);
		plot_text(cr, w - 20, 14, 15, 1, 0, 1, "emulated sensor, not a measurement");
	}
}

/* Grid lines, tick labels and the axis title. */
static void draw_y_axis(cairo_t *cr, const struct bars_ctx *c, const struct bars_geom *gm)
{
	double step = plot_tick_step(c->ymax, 6);
	char buf[64];
	cairo_set_line_width(cr, 1);
	for (double v = 0; v <= c->ymax + step * 1e-9; v += step) {
		double y = floor(gm->y0 + gm->ph - v / c->ymax * gm->ph) + 0.5;
		cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
		cairo_move_to(cr, gm->x0, y);
		cairo_line_to(cr, gm->x0 + gm->pw, y);
		cairo_stroke(cr);
		cairo_set_source_rgb(cr, 0, 0, 0);
		snprintf(buf, sizeof buf, "%g", v);
		plot_text(cr, gm->x0 - 6, y, 11, 1, 0.65, 0, buf);
	}
	cairo_save(cr);
	cairo_translate(cr, gm->x0 - 60, gm->y0 + gm->ph / 2);
	cairo_rotate(cr, -M_PI / 2);
	plot_text(cr, 0, 0, 12, 0.5, 0.5, 0, c->m->ngroups ? "energy (J)" : "self time (s)");
	cairo_restore(cr);
}

/* The row's own 95 % interval as an error bar over the bar at bx; a top
 * beyond the axis is clipped with an arrow.  Returns the bar's top for its
 * value label (above the interval when that is drawn whole). */
static double draw_error_bar(cairo_t *cr, const struct bars_ctx *c, const struct bars_geom *gm,
			     const struct phase_group_row *r, double bx, double yb)
{
	char buf[64];
	int clipped = r->hi_j > c->ymax;
	double ylo = gm->y0 + gm->ph - r->lo_j / c->ymax * gm->ph;
	double yhi = clipped ? gm->y0 : gm->y0 + gm->ph - r->hi_j / c->ymax * gm->ph;
	double xm = bx + gm->bw / 2;
	cairo_set_source_rgb(cr, 0, 0, 0);
	cairo_set_line_width(cr, 1.2);
	cairo_move_to(cr, xm, ylo);
	cairo_line_to(cr, xm, yhi);
	cairo_move_to(cr, xm - gm->bw / 4, ylo);
	cairo_line_to(cr, xm + gm->bw / 4, ylo);
	if (clipped) {
		cairo_move_to(cr, xm - 4, yhi + 7);
		cairo_line_to(cr, xm, yhi);
		cairo_line_to(cr, xm + 4, yhi + 7);
	} else {
		cairo_move_to(cr, xm - gm->bw / 4, yhi);
		cairo_line_to(cr, xm + gm->bw / 4, yhi);
	}
	cairo_stroke(cr);
	if (!clipped)
		return fmin(yb, yhi);
	snprintf(buf, sizeof buf, "to %.3g", r->hi_j);
	plot_text(cr, xm + 5, yhi + 2, 9, 0, 0, 0, buf);
	return yb;
}

/* Bar g of category k (centre cx), its interval and its value. */
static void draw_bar(cairo_t *cr, const struct bars_ctx *c, const struct bars_geom *gm, size_t k, size_t g, double cx)
{
	size_t ng = c->m->ngroups;
	const struct phase_group_row *r = ng ? row(c, k, g) : NULL;
	double bx = cx - gm->bw * (double)gm->nbar / 2 + gm->bw * (double)g;
	double e = bar_value(c, k, g);
	double yb = gm->y0 + gm->ph - e / c->ymax * gm->ph;
	char buf[64];
	if (ng)
		plot_set_group_colour(cr, g);
	else
		cairo_set_source_rgb(cr, 0.45, 0.45, 0.45);
	cairo_rectangle(cr, bx + 1, yb, gm->bw - 2, gm->y0 + gm->ph - yb);
	cairo_fill(cr);
	if (r && isfinite(r->lo_j) && isfinite(r->hi_j) && r->hi_j > r->lo_j)
		yb = draw_error_bar(cr, c, gm, r, bx, yb);
	cairo_set_source_rgb(cr, 0, 0, 0);
	snprintf(buf, sizeof buf, ng ? (e >= 100 ? "%.0f" : "%.3g") : "%.3g s", e);
	if (ng && c->codes[k * ng + g][0]) {
		size_t len = strlen(buf);
		snprintf(buf + len, sizeof buf - len, " %s", c->codes[k * ng + g]);
	}
	if (plot_text_width(cr, 10, 0, buf) <= gm->bw) {
		plot_text(cr, bx + gm->bw / 2, yb - 3, 10, 0.5, 1, 0, buf);
	} else {
		/* Narrow bars (many phases): the value reads upwards. */
		cairo_save(cr);
		cairo_translate(cr, bx + gm->bw / 2, yb - 3);
		cairo_rotate(cr, -M_PI / 2);
		plot_text(cr, 0, 0, 10, 0, 0.65, 0, buf);
		cairo_restore(cr);
	}
}

/* Category k's name and detail (time, method) under its bars. */
static void draw_label(cairo_t *cr, const struct bars_ctx *c, const struct bars_geom *gm, size_t k, double cx)
{
	const struct energy_model *m = c->m;
	char buf[512];
	cairo_set_source_rgb(cr, 0, 0, 0);
	if (m->ngroups) {
		const struct phase_group_row *r = row(c, k, 0);
		const char *meth = r->method == ATTRIB_INTEGRATE ? "integrate" : r->method == ATTRIB_REGRESS ? "regress"
				   : r->method == ATTRIB_SPLIT ? "split" : "";
		snprintf(buf, sizeof buf, "%.2f s, %s", r->time_s, r->mixed ? "mixed" : meth);
	} else {
		/* The time is on the bar already. */
		snprintf(buf, sizeof buf, "no energy");
	}
	if (c->slanted) {
		/* Name and detail on one slanted line ending under the bar. */
		char line[640];
		snprintf(line, sizeof line, "%s (%s)", c->label[k], buf);
		cairo_save(cr);
		cairo_translate(cr, cx + 4, gm->y0 + gm->ph + 8);
		cairo_rotate(cr, -SLANT_DEG * M_PI / 180);
		plot_text(cr, 0, 0, 11, 1, 0.65, c->cat[k] != (int)m->ph.nnames, line);
		cairo_restore(cr);
	} else {
		plot_text(cr, cx, gm->y0 + gm->ph + 8, 12, 0.5, 0, 1, c->label[k]);
		plot_text(cr, cx, gm->y0 + gm->ph + 26, 10, 0.5, 0, 0, buf);
	}
}

static void draw_legend(cairo_t *cr, const struct bars_ctx *c, double w, double y0)
{
	size_t ng = c->m->ngroups;
	double lx = w - RIGHT_PX + 20, ly = y0;
	plot_text(cr, lx, ly, 12, 0, 0, 1, "device group");
	ly += 20;
	for (size_t g = 0; g < ng; g++, ly += 18) {
		plot_set_group_colour(cr, g);
		cairo_rectangle(cr, lx, ly + 1, 22, 12);
		cairo_fill(cr);
		cairo_set_source_rgb(cr, 0, 0, 0);
		plot_text(cr, lx + 28, ly + 7, 11, 0, 0.65, 0, c->m->groups[g]);
	}
	if (!ng) {
		plot_text(cr, lx, ly, 11, 0, 0, 0, "no power sensor:");
		plot_text(cr, lx, ly + 15, 11, 0, 0, 0, "no energy, times only");
	}
}

static void draw(cairo_t *cr, double w, double h, void *ctx)
{
	const struct bars_ctx *c = ctx;
	struct bars_geom gm;
	gm.nbar = c->m->ngroups ? c->m->ngroups : 1;
	gm.x0 = c->left_px;
	gm.pw = w - c->left_px - RIGHT_PX;
	gm.y0 = TOP_PX;
	gm.ph = h - TOP_PX - c->bottom_px;
	gm.slot = c->ncat ? gm.pw / (double)c->ncat : gm.pw;
	gm.bw = gm.slot * 0.8 / (double)gm.nbar;

	draw_header(cr, c, w);
	draw_y_axis(cr, c, &gm);
	for (size_t k = 0; k < c->ncat; k++) {
		double cx = gm.x0 + gm.slot * ((double)k + 0.5);
		for (size_t g = 0; g < gm.nbar; g++)
			draw_bar(cr, c, &gm, k, g, cx);
		draw_label(cr, c, &gm, k, cx);
	}
	cairo_set_source_rgb(cr, 0, 0, 0);
	cairo_set_line_width(cr, 1);
	cairo_move_to(cr, gm.x0 + 0.5, gm.y0);
	cairo_line_to(cr, gm.x0 + 0.5, gm.y0 + gm.ph + 0.5);
	cairo_line_to(cr, gm.x0 + gm.pw, gm.y0 + gm.ph + 0.5);
	cairo_stroke(cr);
	draw_legend(cr, c, w, gm.y0);
}

/* Horizontal names when every one fits its slot, else slanted ones with
 * the bottom margin their longest needs. */
static void layout_labels(struct bars_ctx *c)
{
	cairo_surface_t *sf = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1);
	cairo_t *cr = cairo_create(sf);
	double slot = c->ncat ? (W_PX - LEFT_PX - RIGHT_PX) / (double)c->ncat : 0, widest = 0, left = 0;
	double detail = plot_text_width(cr, 11, 0, " (000.00 s, integrate)");
	c->slanted = 0;
	for (size_t k = 0; k < c->ncat; k++) {
		double wd = plot_text_width(cr, 12, 1, c->label[k]), line;
		c->slanted |= wd > slot - 6 || plot_text_width(cr, 10, 0, "000.00 s, integrate") > slot - 6;
		/* Slanted line: the name and "(123.45 s, integrate)", ending
		 * under its bar and reaching down to the left. */
		line = plot_text_width(cr, 11, 1, c->label[k]) + detail;
		widest = fmax(widest, line);
		left = fmax(left, line * cos(SLANT_DEG * M_PI / 180) - slot * ((double)k + 0.5));
	}
	c->bottom_px = c->slanted ? fmax(BOTTOM_PX, widest * sin(SLANT_DEG * M_PI / 180) + 30) : BOTTOM_PX;
	c->left_px = c->slanted ? fmax(LEFT_PX, left + 20) : LEFT_PX;
	cairo_destroy(cr);
	cairo_surface_destroy(sf);
}

int plot_phases(const struct energy_model *m, const struct phase_scope *sr, const char *title, const char *path,
		enum plot_kind kind, struct em_error *e)
{
	struct bars_ctx c = {.m = m, .sr = sr, .title = title};
	size_t ng = m->ngroups;
	char doc_title[512];
	int rc;
	c.cat = malloc((m->ph.nnames + 1) * sizeof *c.cat);
	c.label = malloc((m->ph.nnames + 1) * sizeof *c.label);
	if (!c.cat || !c.label) {
		free(c.cat);
		free(c.label);
		return diag_error(e, -ENOMEM, NULL, "out of memory");
	}
	/* Phases with time on the primary thread, then unattributed (with a
	 * power sensor); the tools' own activity (sync pulses, perun's MPI calls:
	 * phase_set_is_tool) stays in phases.csv only, the
	 * subtitle says how much they got. */
	for (size_t k = 0; k <= m->ph.nnames; k++) {
		if (k < m->ph.nnames && !(phase_scope_self_s(m, sr, (int)k) > 0))
			continue;
		if (k == m->ph.nnames && !ng)
			continue;
		if (k < m->ph.nnames && phase_set_is_tool(&m->ph, (int)k)) {
			for (size_t g = 0; g < ng; g++)
				if (isfinite(sr->row[k * ng + g].energy_j))
					c.hidden_j += sr->row[k * ng + g].energy_j;
			c.nhidden++;
			continue;
		}
		make_label(m, (int)k, c.label[c.ncat], sizeof c.label[c.ncat]);
		c.cat[c.ncat++] = (int)k;
	}
	/* Every flag phases.csv gives a drawn bar goes on the bar. */
	c.codes = calloc(c.ncat * (ng ? ng : 1), sizeof *c.codes);
	if (!c.codes) {
		free(c.cat);
		free(c.label);
		return diag_error(e, -ENOMEM, NULL, "out of memory");
	}
	for (size_t k = 0; k < c.ncat && ng; k++)
		for (size_t g = 0; g < ng; g++) {
			char fl[192];
			if (phase_table_flags_text(m, sr, (size_t)c.cat[k], g, fl, sizeof fl) < 0) {
				free(c.cat);
				free(c.label);
				free(c.codes);
				return diag_error(e, -ENOMEM, NULL, "out of memory");
			}
			phase_flags_codes(fl, c.codes[k * ng + g], sizeof c.codes[k * ng + g], &c.flag_used);
		}
	layout_labels(&c);
	/* The axis fits the bars and every interval up to twice the largest
	 * bar; a wider interval (an unidentifiable phase) is clipped with an
	 * arrow and its upper end written, so it does not flatten the rest. */
	double emax = 0, hmax = 0;
	for (size_t k = 0; k < c.ncat; k++)
		for (size_t g = 0; g < (ng ? ng : 1); g++) {
			emax = fmax(emax, bar_value(&c, k, g));
			if (ng)
				hmax = fmax(hmax, isfinite(row(&c, k, g)->hi_j) ? row(&c, k, g)->hi_j : 0);
		}
	c.ymax = fmax(emax, fmin(hmax, 2 * emax));
	c.ymax = c.ymax > 0 ? c.ymax * 1.12 : 1;
	c.ymax = ceil(c.ymax / plot_tick_step(c.ymax, 6)) * plot_tick_step(c.ymax, 6);
	snprintf(doc_title, sizeof doc_title, "%s per phase: %s%s%s%s", ng ? "energy" : "time", title,
		 m->emulated ? " (" : "", m->emulated ? "emulated sensor, not a measurement)" : "",
		 ng ? "" : m->times_only ? " (no perun file: no energy)" : " (no power sensor: no energy)");
	rc = plot_write(path, kind, W_PX, H_PX - BOTTOM_PX + c.bottom_px, doc_title, draw, &c, e);
	free(c.cat);
	free(c.label);
	free(c.codes);
	return rc;
}
