/*
 * plot_layers.c - joules per layer, forward and backward side by side,
 * 95 % intervals as error bars (layers.svg / layers.png in report).
 *
 * A layer is a phase pair "PATH/forward", "PATH/backward" as
 * anchor.torch.layers names them; one row per PATH in the order the
 * phases were first seen (the model's order), two horizontal bars (the
 * self joules of all device groups together, interval bounds summed:
 * each group's interval is its own 95 %, so the sum is conservative).
 * Rows are horizontal so that long module paths stay readable.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/plot.h"
#include "output/plot_layers.h"

struct layer {
	char path[96];
	double e[2], lo[2], hi[2]; /* forward, backward */
	int have[2];
};

struct lctx {
	struct layer *l;
	size_t n;
	double xmax;
	const char *note;
};

static const char *const WHAT[2] = {"/forward", "/backward"};

static size_t collect(const struct energy_model *m, const struct phase_scope *sr, struct layer *l)
{
	size_t n = 0, ng = m->ngroups;
	for (size_t p = 0; p < m->ph.nnames; p++) {
		const char *name = m->ph.names[p];
		size_t len = strlen(name);
		for (int w = 0; w < 2; w++) {
			size_t wl = strlen(WHAT[w]);
			if (len <= wl || strcmp(name + len - wl, WHAT[w]))
				continue;
			size_t k;
			for (k = 0; k < n; k++)
				if (strlen(l[k].path) == len - wl && !strncmp(l[k].path, name, len - wl))
					break;
			if (k == n) {
				memset(&l[n], 0, sizeof l[n]);
				snprintf(l[n].path, sizeof l[n].path, "%.*s", (int)(len - wl), name);
				n++;
			}
			for (size_t g = 0; g < ng; g++) {
				const struct phase_group_row *r = &sr->row[p * ng + g];
				if (!r->method)
					continue;
				l[k].e[w] += r->energy_j;
				l[k].lo[w] += r->lo_j;
				l[k].hi[w] += r->hi_j;
				l[k].have[w] = 1;
			}
		}
	}
	return n;
}

static void draw(cairo_t *cr, double w, double h, void *v)
{
	const struct lctx *c = v;
	double lw = 0, top = 56, row = 34, x0, pw;
	char buf[64];
	for (size_t k = 0; k < c->n; k++)
		lw = fmax(lw, plot_text_width(cr, 11, 0, c->l[k].path));
	x0 = 16 + lw + 10;
	pw = w - x0 - 90;
	cairo_set_source_rgb(cr, 0, 0, 0);
	plot_text(cr, 16, 22, 13, 0, 1, 1, "Joules per layer: forward and backward (self energy, 95 % intervals)");
	plot_text(cr, 16, 40, 10, 0, 1, 0, c->note);
	for (size_t k = 0; k < c->n; k++) {
		double y = top + row * (double)k;
		cairo_set_source_rgb(cr, 0, 0, 0);
		plot_text(cr, x0 - 10, y + row / 2, 11, 1, 0.7, 0, c->l[k].path);
		for (int i = 0; i < 2; i++) {
			double by = y + 4 + i * 13, bh = 11;
			if (!c->l[k].have[i])
				continue;
			plot_set_phase_colour(cr, (size_t)i, 0.85);
			cairo_rectangle(cr, x0, by, pw * c->l[k].e[i] / c->xmax, bh);
			cairo_fill(cr);
			cairo_set_source_rgb(cr, 0, 0, 0);
			cairo_set_line_width(cr, 1.1);
			double xl = x0 + pw * c->l[k].lo[i] / c->xmax, xh = x0 + pw * c->l[k].hi[i] / c->xmax;
			cairo_move_to(cr, xl, by + bh / 2);
			cairo_line_to(cr, xh, by + bh / 2);
			cairo_move_to(cr, xl, by + 2);
			cairo_line_to(cr, xl, by + bh - 2);
			cairo_move_to(cr, xh, by + 2);
			cairo_line_to(cr, xh, by + bh - 2);
			cairo_stroke(cr);
			snprintf(buf, sizeof buf, "%.3g J", c->l[k].e[i]);
			plot_text(cr, fmax(xh, x0 + pw * c->l[k].e[i] / c->xmax) + 4, by + bh - 1, 9, 0, 1, 0, buf);
		}
	}
	/* axis and legend */
	double ya = top + row * (double)c->n + 6, step = plot_tick_step(c->xmax, 6);
	cairo_set_source_rgb(cr, 0, 0, 0);
	cairo_move_to(cr, x0, ya);
	cairo_line_to(cr, x0 + pw, ya);
	cairo_stroke(cr);
	for (double t = 0; step > 0 && t <= c->xmax * 1.0001; t += step) {
		snprintf(buf, sizeof buf, "%.3g", t);
		plot_text(cr, x0 + pw * t / c->xmax, ya + 14, 9, 0.5, 1, 0, buf);
	}
	plot_text(cr, x0 + pw / 2, ya + 30, 10, 0.5, 1, 0, "J (all device groups)");
	for (int i = 0; i < 2; i++) {
		plot_set_phase_colour(cr, (size_t)i, 0.85);
		cairo_rectangle(cr, w - 160 + 80 * i, 12, 10, 10);
		cairo_fill(cr);
		cairo_set_source_rgb(cr, 0, 0, 0);
		plot_text(cr, w - 146 + 80 * i, 21, 10, 0, 1, 0, WHAT[i] + 1);
	}
	(void)h;
}

int plot_layers(const struct energy_model *m, const struct phase_scope *sr, const char *title, const char *path,
		enum plot_kind kind, struct em_error *e)
{
	struct lctx c = {0};
	int rc;
	c.l = calloc(m->ph.nnames ? m->ph.nnames : 1, sizeof *c.l);
	if (!c.l)
		return diag_error(e, -ENOMEM, NULL, "out of memory");
	c.n = collect(m, sr, c.l);
	for (size_t k = 0; k < c.n; k++)
		for (int i = 0; i < 2; i++)
			c.xmax = fmax(c.xmax, fmax(c.l[k].hi[i], c.l[k].e[i]));
	if (!(c.xmax > 0))
		c.xmax = 1;
	c.note = m->emulated ? energy_model_sensor_note(m) : "";
	rc = plot_write(path, kind, 900, 56 + 34 * (double)(c.n ? c.n : 1) + 50, title, draw, &c, e);
	free(c.l);
	return rc;
}

int plot_layers_count(const struct energy_model *m)
{
	int n = 0;
	for (size_t p = 0; p < m->ph.nnames; p++) {
		size_t len = strlen(m->ph.names[p]);
		n += (len > 8 && !strcmp(m->ph.names[p] + len - 8, "/forward")) ||
		     (len > 9 && !strcmp(m->ph.names[p] + len - 9, "/backward"));
	}
	return n;
}
