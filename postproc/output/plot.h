/*
 * plot.h - the pictures' common ground: one cairo drawing code path
 * rendered to SVG and PNG, written all-or-nothing (outfile.h), plus the
 * small helpers both charts use (palette, nice axis ticks, aligned text).
 *
 * cairo's toy text API picks the font through fontconfig; Debian's
 * fonts-dejavu-core gives "DejaVu Sans" (scripts/install-deps.sh).
 */
#ifndef ANCHORPOST_PLOT_H
#define ANCHORPOST_PLOT_H

#include <cairo.h>
#include <stddef.h>

#include "model/energy_model.h"
#include "output/phase_table.h"

/* Draw the whole picture on cr, w x h user units (1 unit = 1 px in PNG). */
typedef void (*plot_draw_fn)(cairo_t *cr, double w, double h, void *ctx);

enum plot_kind { PLOT_SVG, PLOT_PNG };

/* title also becomes the SVG's <title>; in SVG, plot_text writes real
 * <text> elements (cairo's own SVG text is glyph outlines).
 * Draw with fn into path (all or nothing, outfile.h).  Returns 0, or a
 * negative errno with *e filled. */
int plot_write(const char *path, enum plot_kind kind, double w, double h, const char *title, plot_draw_fn fn,
	       void *ctx, struct em_error *e);

/* Categorical colours (phases, device groups), cycling; phases get 20
 * distinct ones. */
void plot_set_phase_colour(cairo_t *cr, size_t i, double alpha);
void plot_set_group_colour(cairo_t *cr, size_t i);

/* A round tick step giving at most max_ticks ticks over range. */
double plot_tick_step(double range, int max_ticks);

/* Text at (x, y): ax 0 left / 0.5 centre / 1 right of x; ay likewise from
 * the top (0) to the baseline (1) of the text.  Bold when bold != 0. */
void plot_text(cairo_t *cr, double x, double y, double size, double ax, double ay, int bold, const char *s);

/* Width of text at size. */
double plot_text_width(cairo_t *cr, double size, int bold, const char *s);

/* The timeline: power per device group (lines) over the whole run and a
 * zoomed window, phases as bands per process (one lane each).  title
 * names the run. */
int plot_timeline(const struct energy_model *m, const char *title, const char *path, enum plot_kind kind,
		  struct em_error *e);

/* Per-phase energy, one bar per device group, 95 % intervals as error
 * bars, from the "all" scope of the phase table.  Both pictures return 0,
 * or a negative errno with *e filled. */
int plot_phases(const struct energy_model *m, const struct phase_scope *sr, const char *title, const char *path,
		enum plot_kind kind, struct em_error *e);

#endif
