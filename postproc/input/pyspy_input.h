/*
 * pyspy_input.h - private to the py-spy readers: the input buffer shared
 * by format detection and the parsers, and the yajl driving loop.
 */
#ifndef ANCHORPOST_PYSPY_INPUT_H
#define ANCHORPOST_PYSPY_INPUT_H

#include <stdint.h>
#include <stdio.h>
#include <yajl/yajl_parse.h>

#include "input/pyspy.h"

#define PYSPY_CHUNK (256 * 1024)
/* Containers nested deeper than this inside values we skip are refused:
 * no py-spy file comes near it, and it bounds what garbage can cost. */
#define PYSPY_MAX_SKIP_DEPTH 256

struct pyspy_input {
	FILE *fp;
	char *buf;      /* PYSPY_CHUNK bytes */
	size_t len;     /* bytes in buf not yet consumed */
	uint64_t base;  /* file offset of buf[0] */
	int eof;
};

/* Refill buf from fp (buf is consumed whole).  0, or -EIO. */
int pyspy_input_fill(struct pyspy_input *in, struct em_error *err);

/* Feed the whole input to h.  A callback that stopped the parse has set
 * err; *failed (when non-NULL and non-zero) carries its errno.  Returns 0
 * or -errno; on yajl errors the message names the byte offset. */
int pyspy_json_drive(struct pyspy_input *in, yajl_handle h, const int *failed, struct em_error *err);

/* Turn a yajl failure into err (offset = feed_base + what h consumed);
 * returns -errno. */
int pyspy_json_fail(struct pyspy_input *in, yajl_handle h, yajl_status st, uint64_t feed_base, const int *failed,
		    struct em_error *err);

/* Byte offset of the token being handled inside a yajl callback. */
static inline uint64_t pyspy_json_offset(const struct pyspy_input *in, yajl_handle h)
{
	return in->base + yajl_get_bytes_consumed(h);
}

int pyspy_speedscope_parse(struct pyspy_input *in, struct pyspy_profile *p, pyspy_sample_fn fn, void *ctx,
			   struct em_error *err);
int pyspy_chrometrace_parse(struct pyspy_input *in, struct pyspy_profile *p, pyspy_sample_fn fn, void *ctx,
			    struct em_error *err);
/* Replace in->fp by a stream that inflates in->buf's gzip data and the
 * rest of in->fp, and refill buf from it.  0, or -errno with err set. */
int pyspy_gzip_input(struct pyspy_input *in, struct em_error *err);
int pyspy_torch_parse(struct pyspy_input *in, struct pyspy_profile *p, pyspy_sample_fn fn, void *ctx,
		      struct em_error *err);
int pyspy_raw_parse(struct pyspy_input *in, struct pyspy_profile *p, pyspy_sample_fn fn, void *ctx,
		    struct em_error *err);

#endif
