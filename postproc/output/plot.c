/* plot.c - SVG/PNG rendering and chart helpers (see plot.h). */
#include "output/plot.h"

#include <cairo-svg.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "output/outfile.h"
#include "util/diag.h"

/* Tableau 10 (distinguishable, colour-blind-tolerant, print-safe), then
 * ten more of other hue and lightness so that 20 phases never share a
 * colour: the darker and lighter members of Tableau 20's pairs and a few
 * of Kelly's 22 (purple-red, olive, navy, teal). */
static const double phase_rgb[][3] = {
	{0.306, 0.475, 0.655}, {0.949, 0.557, 0.169}, {0.349, 0.631, 0.310}, {0.882, 0.341, 0.349},
	{0.690, 0.478, 0.631}, {0.929, 0.788, 0.282}, {0.463, 0.718, 0.698}, {1.000, 0.616, 0.655},
	{0.612, 0.459, 0.373}, {0.729, 0.690, 0.675},
	{0.122, 0.231, 0.451}, {0.682, 0.780, 0.910}, {0.553, 0.000, 0.318}, {0.596, 0.875, 0.541},
	{0.502, 0.502, 0.000}, {1.000, 0.733, 0.471}, {0.000, 0.420, 0.420}, {0.773, 0.690, 0.835},
	{0.251, 0.251, 0.251}, {0.859, 0.859, 0.553},
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

static const cairo_user_data_key_t svg_text_key;

static void xml_escaped(FILE *out, const char *s)
{
	for (const char *c = s; *c; c++) {
		if (*c == '<')
			fputs("&lt;", out);
		else if (*c == '>')
			fputs("&gt;", out);
		else if (*c == '&')
			fputs("&amp;", out);
		else if (*c == '"')
			fputs("&quot;", out);
		else
			fputc(*c, out);
	}
}

/* cairo's SVG surface draws text as glyph outlines (not selectable, not
 * searchable): on an SVG target the text becomes a real <text> element,
 * collected here and appended to the document by plot_write. */
static void svg_text(cairo_t *cr, FILE *out, double x, double y, double size, double ax, int bold, const char *s)
{
	cairo_matrix_t mx;
	double r = 0, g = 0, b = 0, a = 1, dx = x, dy = y;
	cairo_pattern_get_rgba(cairo_get_source(cr), &r, &g, &b, &a);
	cairo_get_matrix(cr, &mx);
	cairo_user_to_device(cr, &dx, &dy);
	fprintf(out, "<text x=\"%.2f\" y=\"%.2f\" font-family=\"DejaVu Sans, Verdana, sans-serif\" "
		     "font-size=\"%.1f\"%s fill=\"#%02x%02x%02x\"%s",
		dx, dy, size, bold ? " font-weight=\"bold\"" : "", (int)lround(r * 255), (int)lround(g * 255),
		(int)lround(b * 255), ax > 0.75 ? " text-anchor=\"end\"" : ax > 0.25 ? " text-anchor=\"middle\"" : "");
	if (mx.yx != 0 || mx.xy != 0)
		fprintf(out, " transform=\"rotate(%.2f %.2f %.2f)\"", atan2(mx.yx, mx.xx) * 180 / M_PI, dx, dy);
	if (a < 1)
		fprintf(out, " fill-opacity=\"%.2f\"", a);
	fputs(">", out);
	xml_escaped(out, s);
	fputs("</text>\n", out);
}

void plot_text(cairo_t *cr, double x, double y, double size, double ax, double ay, int bold, const char *s)
{
	cairo_font_extents_t fe;
	FILE *svg = cairo_surface_get_user_data(cairo_get_target(cr), &svg_text_key);
	font(cr, size, bold);
	cairo_font_extents(cr, &fe);
	/* ay: 0 puts the ascent at y, 1 the baseline. */
	if (svg) {
		svg_text(cr, svg, x, y + (1 - ay) * fe.ascent, size, ax, bold, s);
		return;
	}
	cairo_move_to(cr, x - ax * plot_text_width(cr, size, bold, s), y + (1 - ay) * fe.ascent);
	cairo_show_text(cr, s);
}

static cairo_status_t write_fp(void *closure, const unsigned char *data, unsigned int len)
{
	return fwrite(data, 1, len, (FILE *)closure) == len ? CAIRO_STATUS_SUCCESS : CAIRO_STATUS_WRITE_ERROR;
}

/* cairo's document with a <title> after the opening <svg ...> tag (what
 * the picture is, and any "emulated sensor" note) and the <text> elements
 * (svg_text) before the closing </svg>, on top of the drawing. */
static void copy_svg_with_text(FILE *out, const char *svg, size_t len, const char *title, const char *text,
			       size_t text_len)
{
	const char *open = strstr(svg, "<svg");
	const char *gt = open ? strchr(open, '>') : NULL;
	const char *close = NULL;
	size_t head = gt ? (size_t)(gt + 1 - svg) : 0, tail;
	for (const char *c = strstr(svg, "</svg>"); c; c = strstr(c + 1, "</svg>"))
		close = c;
	tail = close ? (size_t)(close - svg) : len;
	fwrite(svg, 1, head, out);
	if (gt) {
		fputs("\n<title>", out);
		xml_escaped(out, title);
		fputs("</title>", out);
	}
	fwrite(svg + head, 1, tail - head, out);
	fwrite(text, 1, text_len, out);
	fwrite(svg + tail, 1, len - tail, out);
}

int plot_write(const char *path, enum plot_kind kind, double w, double h, const char *title, plot_draw_fn fn,
	       void *ctx, struct em_error *e)
{
	struct outfile of;
	cairo_surface_t *sf;
	cairo_status_t st;
	cairo_t *cr;
	char *svg = NULL, *text = NULL;
	size_t svg_len = 0, text_len = 0;
	FILE *mem = NULL, *text_mem = NULL;

	int rc = outfile_create(&of, path, e);
	if (rc)
		return rc;
	if (kind == PLOT_SVG) {
		mem = open_memstream(&svg, &svg_len);
		text_mem = open_memstream(&text, &text_len);
		if (!mem || !text_mem) {
			if (mem)
				fclose(mem);
			if (text_mem)
				fclose(text_mem);
			free(svg);
			free(text);
			outfile_abort(&of);
			return diag_error(e, -ENOMEM, NULL, "out of memory");
		}
		sf = cairo_svg_surface_create_for_stream(write_fp, mem, w, h);
		cairo_surface_set_user_data(sf, &svg_text_key, text_mem, NULL);
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
		if (fclose(mem) | fclose(text_mem))
			st = CAIRO_STATUS_NO_MEMORY;
		else if (st == CAIRO_STATUS_SUCCESS)
			copy_svg_with_text(of.fp, svg, svg_len, title, text, text_len);
		free(svg);
		free(text);
	}
	if (st != CAIRO_STATUS_SUCCESS) {
		outfile_abort(&of);
		return diag_error(e, st == CAIRO_STATUS_NO_MEMORY ? -ENOMEM : -EIO, path, "drawing failed: %s",
				  cairo_status_to_string(st));
	}
	return outfile_finish(&of, path, e);
}
