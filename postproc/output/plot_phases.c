/*
 * plot_phases.c - phases.svg/png: self energy per phase, one bar per
 * device group side by side (grouped, not stacked, so each bar carries
 * its own 95 % interval as an error bar, exactly the phases.csv row), and
 * "(unattributed)": perun's energy while no phase ran.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "plot.h"

#define W_PX 1200.0
#define H_PX 560.0
#define LEFT_PX 90.0
#define RIGHT_PX 170.0
#define TOP_PX 90.0
#define BOTTOM_PX 80.0

struct bars_ctx {
	const struct energy_model *m;
	const struct phase_scope *sr;
	const char *title;
	int *cat;       /* phase index per category (nnames: unattributed) */
	size_t ncat;
	double ymax;
	double hidden_j;  /* energy of the phases not drawn (anchor.*) */
	size_t nhidden;
};

static const struct phase_group_row *row(const struct bars_ctx *c, size_t k, size_t g)
{
	return &c->sr->row[(size_t)c->cat[k] * c->m->ngroups + g];
}

static void draw(cairo_t *cr, double w, double h, void *ctx)
{
	const struct bars_ctx *c = ctx;
	const struct energy_model *m = c->m;
	size_t ng = m->ngroups;
	double x0 = LEFT_PX, pw = w - LEFT_PX - RIGHT_PX, y0 = TOP_PX, ph = h - TOP_PX - BOTTOM_PX;
	double slot = c->ncat ? pw / (double)c->ncat : pw, bw = slot * 0.8 / (double)(ng ? ng : 1);
	double step = plot_tick_step(c->ymax, 6);
	char buf[512];

	cairo_set_source_rgb(cr, 0, 0, 0);
	snprintf(buf, sizeof buf, "energy per phase: %s", c->title);
	plot_text(cr, 20, 14, 17, 0, 0, 1, buf);
	snprintf(buf, sizeof buf, "self energy on the primary thread's timeline (nested phases excluded); "
				  "error bars: 95 %% interval; alignment %s (+-%.3g ms)",
		 m->align.method, m->align.uncert_ms);
	plot_text(cr, 20, 40, 12, 0, 0, 0, buf);
	if (c->nhidden) {
		snprintf(buf, sizeof buf, "not drawn: anchor's own sync pulses (%.3g J in all groups, rows in phases.csv)",
			 c->hidden_j);
		plot_text(cr, 20, 58, 11, 0, 0, 0, buf);
	}
	if (m->emulated) {
		cairo_set_source_rgb(cr, 0.8, 0, 0);
		plot_text(cr, w - 20, 14, 15, 1, 0, 1, "emulated sensor, not a measurement");
	}

	cairo_set_line_width(cr, 1);
	for (double v = 0; v <= c->ymax + step * 1e-9; v += step) {
		double y = floor(y0 + ph - v / c->ymax * ph) + 0.5;
		cairo_set_source_rgb(cr, 0.88, 0.88, 0.88);
		cairo_move_to(cr, x0, y);
		cairo_line_to(cr, x0 + pw, y);
		cairo_stroke(cr);
		cairo_set_source_rgb(cr, 0, 0, 0);
		snprintf(buf, sizeof buf, "%g", v);
		plot_text(cr, x0 - 6, y, 11, 1, 0.65, 0, buf);
	}
	cairo_save(cr);
	cairo_translate(cr, x0 - 60, y0 + ph / 2);
	cairo_rotate(cr, -M_PI / 2);
	plot_text(cr, 0, 0, 12, 0.5, 0.5, 0, "energy (J)");
	cairo_restore(cr);

	for (size_t k = 0; k < c->ncat; k++) {
		double cx = x0 + slot * ((double)k + 0.5);
		int p = c->cat[k];
		for (size_t g = 0; g < ng; g++) {
			const struct phase_group_row *r = row(c, k, g);
			double bx = cx - bw * (double)ng / 2 + bw * (double)g;
			double e = isfinite(r->energy_j) ? r->energy_j : 0;
			double yb = y0 + ph - e / c->ymax * ph;
			plot_set_group_colour(cr, g);
			cairo_rectangle(cr, bx + 1, yb, bw - 2, y0 + ph - yb);
			cairo_fill(cr);
			/* Error bar: the row's own 95 % interval. */
			if (isfinite(r->lo_j) && isfinite(r->hi_j) && r->hi_j > r->lo_j) {
				int clipped = r->hi_j > c->ymax;
				double ylo = y0 + ph - r->lo_j / c->ymax * ph;
				double yhi = clipped ? y0 : y0 + ph - r->hi_j / c->ymax * ph;
				double xm = bx + bw / 2;
				cairo_set_source_rgb(cr, 0, 0, 0);
				cairo_set_line_width(cr, 1.2);
				cairo_move_to(cr, xm, ylo);
				cairo_line_to(cr, xm, yhi);
				cairo_move_to(cr, xm - bw / 4, ylo);
				cairo_line_to(cr, xm + bw / 4, ylo);
				if (clipped) {
					cairo_move_to(cr, xm - 4, yhi + 7);
					cairo_line_to(cr, xm, yhi);
					cairo_line_to(cr, xm + 4, yhi + 7);
				} else {
					cairo_move_to(cr, xm - bw / 4, yhi);
					cairo_line_to(cr, xm + bw / 4, yhi);
				}
				cairo_stroke(cr);
				if (clipped) {
					snprintf(buf, sizeof buf, "to %.3g", r->hi_j);
					plot_text(cr, xm + 5, yhi + 2, 9, 0, 0, 0, buf);
				} else {
					yb = fmin(yb, yhi);
				}
			}
			cairo_set_source_rgb(cr, 0, 0, 0);
			snprintf(buf, sizeof buf, e >= 100 ? "%.0f" : "%.3g", e);
			plot_text(cr, bx + bw / 2, yb - 3, 10, 0.5, 1, 0, buf);
		}
		cairo_set_source_rgb(cr, 0, 0, 0);
		plot_text(cr, cx, y0 + ph + 8, 12, 0.5, 0, 1, p == (int)m->ph.nnames ? "(unattributed)" : m->ph.names[p]);
		{
			const struct phase_group_row *r = row(c, k, 0);
			const char *meth = r->method == ATTRIB_INTEGRATE ? "integrate" : r->method == ATTRIB_REGRESS ? "regress"
					   : r->method == ATTRIB_SPLIT ? "split" : "";
			snprintf(buf, sizeof buf, "%.2f s, %s", r->time_s, r->mixed ? "mixed" : meth);
			plot_text(cr, cx, y0 + ph + 26, 10, 0.5, 0, 0, buf);
		}
	}
	cairo_set_source_rgb(cr, 0, 0, 0);
	cairo_set_line_width(cr, 1);
	cairo_move_to(cr, x0 + 0.5, y0);
	cairo_line_to(cr, x0 + 0.5, y0 + ph + 0.5);
	cairo_line_to(cr, x0 + pw, y0 + ph + 0.5);
	cairo_stroke(cr);

	/* Legend. */
	{
		double lx = w - RIGHT_PX + 20, ly = y0;
		plot_text(cr, lx, ly, 12, 0, 0, 1, "device group");
		ly += 20;
		for (size_t g = 0; g < ng; g++, ly += 18) {
			plot_set_group_colour(cr, g);
			cairo_rectangle(cr, lx, ly + 1, 22, 12);
			cairo_fill(cr);
			cairo_set_source_rgb(cr, 0, 0, 0);
			plot_text(cr, lx + 28, ly + 7, 11, 0, 0.65, 0, m->groups[g]);
		}
		if (!ng)
			plot_text(cr, lx, ly, 11, 0, 0, 0, "no power sensor");
	}
}

void plot_phases(const struct energy_model *m, const struct phase_scope *sr, const char *title,
		 const char *path, enum plot_kind kind)
{
	struct bars_ctx c = {.m = m, .sr = sr, .title = title};
	size_t ng = m->ngroups;
	char doc_title[512];
	c.cat = malloc((m->ph.nnames + 1) * sizeof *c.cat);
	if (!c.cat)
		diag_fatal(NULL, "out of memory");
	/* Phases that got joules (on the primary thread), then unattributed;
	 * the tools' own activity (sync pulses, perun's MPI calls:
	 * phase_set_is_tool) stays in phases.csv only. */
	for (size_t k = 0; k <= m->ph.nnames; k++) {
		if (k < m->ph.nnames && !(phase_scope_self_s(m, sr, (int)k) > 0))
			continue;
		if (k < m->ph.nnames && phase_set_is_tool(&m->ph, (int)k)) {
			for (size_t g = 0; g < ng; g++)
				if (isfinite(sr->row[k * ng + g].energy_j))
					c.hidden_j += sr->row[k * ng + g].energy_j;
			c.nhidden++;
			continue;
		}
		c.cat[c.ncat++] = (int)k;
	}
	/* The axis fits the bars and every interval up to twice the largest
	 * bar; a wider interval (an unidentifiable phase) is clipped with an
	 * arrow and its upper end written, so it does not flatten the rest. */
	double emax = 0, hmax = 0;
	for (size_t k = 0; k < c.ncat; k++)
		for (size_t g = 0; g < ng; g++) {
			const struct phase_group_row *r = row(&c, k, g);
			emax = fmax(emax, isfinite(r->energy_j) ? r->energy_j : 0);
			hmax = fmax(hmax, isfinite(r->hi_j) ? r->hi_j : 0);
		}
	c.ymax = fmax(emax, fmin(hmax, 2 * emax));
	c.ymax = c.ymax > 0 ? c.ymax * 1.12 : 1;
	c.ymax = ceil(c.ymax / plot_tick_step(c.ymax, 6)) * plot_tick_step(c.ymax, 6);
	snprintf(doc_title, sizeof doc_title, "energy per phase: %s%s%s", title, m->emulated ? " (" : "",
		 m->emulated ? "emulated sensor, not a measurement)" : "");
	plot_write(path, kind, W_PX, H_PX, doc_title, draw, &c);
	free(c.cat);
}
