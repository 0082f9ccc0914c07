/*
 * gzip_input.c - read a gzip'd profile (tensorboard_trace_handler's
 * .json.gz) through the same streaming input as a plain one.
 *
 * Format detection has already read the first chunk of the raw file into
 * in->buf; the decompressor takes that chunk first, then the rest of the
 * raw stream, through a stdio cookie (glibc fopencookie), so the JSON
 * readers keep their one FILE-driven loop and constant memory.  The raw
 * FILE stays its opener's to close.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "input/pyspy.h"
#include "input/pyspy_input.h"

struct gz_cookie {
	FILE *raw;
	z_stream z;
	unsigned char *prefix; /* the chunk detection read, fed first (owned) */
	size_t prefix_len;
	int prefix_fed;
	unsigned char ibuf[64 * 1024];
	int done, bad;
};

static ssize_t gz_read(void *v, char *out, size_t cap)
{
	struct gz_cookie *g = v;
	size_t got;
	g->z.next_out = (unsigned char *)out;
	g->z.avail_out = (uInt)(cap > (1u << 30) ? (1u << 30) : cap);
	while (g->z.avail_out && !g->done) {
		if (!g->z.avail_in) {
			if (!g->prefix_fed) {
				g->z.next_in = g->prefix;
				g->z.avail_in = (uInt)g->prefix_len;
				g->prefix_fed = 1;
			} else {
				size_t n = fread(g->ibuf, 1, sizeof g->ibuf, g->raw);
				if (!n) {
					/* truncated: the stream never ended */
					g->bad = 1;
					return -1;
				}
				g->z.next_in = g->ibuf;
				g->z.avail_in = (uInt)n;
			}
		}
		int rc = inflate(&g->z, Z_NO_FLUSH);
		if (rc == Z_STREAM_END) {
			/* gzip allows several members one after the other */
			int c = g->z.avail_in ? 0 : fgetc(g->raw);
			if (!g->z.avail_in && c == EOF)
				g->done = 1;
			else {
				if (!g->z.avail_in)
					ungetc(c, g->raw);
				inflateReset(&g->z);
			}
		} else if (rc != Z_OK && rc != Z_BUF_ERROR) {
			g->bad = 1;
			return -1;
		}
	}
	got = (size_t)(g->z.next_out - (unsigned char *)out);
	return (ssize_t)got;
}

static int gz_close(void *v)
{
	struct gz_cookie *g = v;
	inflateEnd(&g->z);
	free(g->prefix);
	free(g);
	return 0;
}

int pyspy_gzip_input(struct pyspy_input *in, struct em_error *err)
{
	struct gz_cookie *g = calloc(1, sizeof *g);
	cookie_io_functions_t io = {.read = gz_read, .close = gz_close};
	if (!g || !(g->prefix = malloc(in->len ? in->len : 1)) || inflateInit2(&g->z, 15 + 32) != Z_OK) {
		if (g)
			free(g->prefix);
		free(g);
		pyspy_set_err(err, "out of memory");
		return -ENOMEM;
	}
	memcpy(g->prefix, in->buf, in->len);
	g->prefix_len = in->len;
	g->raw = in->fp;
	FILE *fp = fopencookie(g, "r", io);
	if (!fp) {
		gz_close(g);
		pyspy_set_err(err, "out of memory");
		return -ENOMEM;
	}
	in->fp = fp;
	in->base = 0;
	in->len = 0;
	in->eof = 0;
	int rc = pyspy_input_fill(in, err);
	in->base = 0;
	if (rc)
		pyspy_set_err(err, "not a readable gzip stream (corrupt or truncated)");
	return rc;
}
