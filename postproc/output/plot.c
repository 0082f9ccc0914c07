/* plot.c - SVG/PNG rendering and chart helpers (see plot.h). */
#include "plot.h"

#include <cairo-svg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "outfile.h"

/* Tableau 10: distinguishable, colour-blind-tolerant, print-safe. */
static const double phase_rgb[][3] = {
	{0.306, 0.475, 0.655}, {0.949, 0.557, 0.169}, {0.349, 0.631, 0.310}, {0.882, 0.341, 0.349},
	{0.690, 0.478, 0.631}, {0.929, 0.788, 0.282}, {0.463, 0.718, 0.698}, {1.000, 0.616, 0.655},
	{0.612, 0.459, 0.373}, {0.729, 0.690, 0.675},
};

/* Device groups: dark, saturated, unlike the phase bands behind them. */
static const double group_rgb[][3] = {
	{0.80, 0.10, 0.10}, {0.10, 0.10, 0.55}, {0.05, 0.45, 0.05}, {0.45, 0.05, 0.55}, {0.10, 0.10, 0.10},
};

void plot_set_phase_colour(cairo_t *cr, size_t i, double alpha)
{
	const double *c = phase_rgb[i % (sizeof phase_rgb / sizeof phase_rgb[0])];
	cairo_set_source_rgba(cr, c[0], c[1], c[2], alpha);
}

void plot_set_group_colour(cairo_t *cr, size_t i)
{
	const double *c = group_rgb[i % (sizeof group_rgb / sizeof group_rgb[0])];
	cairo_set_source_rgb(cr, c[0], c[1], c[2]);
}

double plot_tick_step(double range, int max_ticks)
{
	double raw, mag, f;
	if (!(range > 0) || max_ticks < 1)
		return 1;
	raw = range / max_ticks;
	mag = pow(10, floor(log10(raw)));
	f = raw / mag;
	return (f <= 1 ? 1 : f <= 2 ? 2 : f <= 5 ? 5 : 10) * mag;
}

static void font(cairo_t *cr, double size, int bold)
{
	cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL,
			       bold ? CAIRO_FONT_WEIGHT_BOLD : CAIRO_FONT_WEIGHT_NORMAL);
	cairo_set_font_size(cr, size);
}

double plot_text_width(cairo_t *cr, double size, int bold, const char *s)
{
	cairo_text_extents_t e;
	font(cr, size, bold);
	cairo_text_extents(cr, s, &e);
	return e.x_advance;
}

void plot_text(cairo_t *cr, double x, double y, double size, double ax, double ay, int bold, const char *s)
{
	cairo_font_extents_t fe;
	font(cr, size, bold);
	cairo_font_extents(cr, &fe);
	/* ay: 0 puts the ascent at y, 1 the baseline. */
	cairo_move_to(cr, x - ax * plot_text_width(cr, size, bold, s), y + (1 - ay) * fe.ascent);
	cairo_show_text(cr, s);
}

static cairo_status_t write_fp(void *closure, const unsigned char *data, unsigned int len)
{
	return fwrite(data, 1, len, (FILE *)closure) == len ? CAIRO_STATUS_SUCCESS : CAIRO_STATUS_WRITE_ERROR;
}

/* cairo draws SVG text as glyph outlines: a <title> after the opening
 * <svg ...> tag keeps what the picture is (and any "emulated sensor"
 * note) readable by people, search and tests. */
static void copy_svg_with_title(FILE *out, const char *svg, size_t len, const char *title)
{
	const char *open = strstr(svg, "<svg");
	const char *gt = open ? strchr(open, '>') : NULL;
	size_t head = gt ? (size_t)(gt + 1 - svg) : 0;
	fwrite(svg, 1, head, out);
	if (gt) {
		fputs("\n<title>", out);
		for (const char *c = title; *c; c++) {
			if (*c == '<')
				fputs("&lt;", out);
			else if (*c == '>')
				fputs("&gt;", out);
			else if (*c == '&')
				fputs("&amp;", out);
			else
				fputc(*c, out);
		}
		fputs("</title>", out);
	}
	fwrite(svg + head, 1, len - head, out);
}

void plot_write(const char *path, enum plot_kind kind, double w, double h, const char *title, plot_draw_fn fn,
		void *ctx)
{
	struct outfile of;
	cairo_surface_t *sf;
	cairo_status_t st;
	cairo_t *cr;
	char *svg = NULL;
	size_t svg_len = 0;
	FILE *mem = NULL;

	outfile_open(&of, path);
	if (kind == PLOT_SVG) {
		mem = open_memstream(&svg, &svg_len);
		if (!mem)
			diag_fatal(NULL, "out of memory");
		sf = cairo_svg_surface_create_for_stream(write_fp, mem, w, h);
	} else
		sf = cairo_image_surface_create(CAIRO_FORMAT_RGB24, (int)ceil(w), (int)ceil(h));
	cr = cairo_create(sf);
	cairo_set_source_rgb(cr, 1, 1, 1);
	cairo_paint(cr);
	fn(cr, w, h, ctx);
	st = cairo_status(cr);
	cairo_destroy(cr);
	if (st == CAIRO_STATUS_SUCCESS && kind == PLOT_PNG)
		st = cairo_surface_write_to_png_stream(sf, write_fp, of.fp);
	/* SVG: finishing flushes the document into the stream. */
	cairo_surface_finish(sf);
	if (st == CAIRO_STATUS_SUCCESS)
		st = cairo_surface_status(sf);
	cairo_surface_destroy(sf);
	if (mem) {
		if (fclose(mem))
			st = CAIRO_STATUS_NO_MEMORY;
		else if (st == CAIRO_STATUS_SUCCESS)
			copy_svg_with_title(of.fp, svg, svg_len, title);
		free(svg);
	}
	if (st != CAIRO_STATUS_SUCCESS)
		diag_fatal(path, "drawing failed: %s", cairo_status_to_string(st));
	outfile_commit(&of);
}
