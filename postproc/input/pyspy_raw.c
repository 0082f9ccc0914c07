/*
 * pyspy_raw.c - reader for py-spy's raw (collapsed stack) text format:
 * one line per distinct stack, "root;...;leaf COUNT", in no particular
 * order and without any time.  Frames look like "func (file:line)"; a
 * frame without that suffix (--threads / --subprocesses pseudo-frames) is
 * kept whole as the name.  Each line is delivered once with its count.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "input/pyspy.h"
#include "input/pyspy_input.h"

#define RAW_MAX_LINE (16u << 20)

/* Split "func (file:line)" into its parts; the file may itself hold ':'
 * and parentheses, so match from the end. */
static int add_frame(struct pyspy_frames *f, const char *s, size_t n, uint32_t *idx)
{
	if (n >= 5 && s[n - 1] == ')') {
		size_t colon = n - 1, open;
		long line = 0;
		while (colon > 0 && s[colon - 1] >= '0' && s[colon - 1] <= '9')
			colon--;
		if (colon > 0 && colon < n - 1 && n - 1 - colon <= 9 && s[colon - 1] == ':') {
			for (size_t i = colon; i < n - 1; i++)
				line = line * 10 + (s[i] - '0');
			colon--;
			for (open = colon; open > 1; open--)
				if (s[open - 1] == '(' && s[open - 2] == ' ')
					break;
			if (open > 1)
				return pyspy_frames_intern(f, s, open - 2, s + open, colon - open, (int32_t)line, idx);
		}
	}
	return pyspy_frames_intern(f, s, n, NULL, 0, -1, idx);
}

static int parse_line(struct pyspy_profile *p, char *line, size_t n, uint64_t lineno, uint64_t *row,
		      pyspy_sample_fn fn, void *ctx, struct em_error *err)
{
	size_t sp, i, start;
	uint64_t count = 0;
	uint32_t node = 0, frame;

	while (n && (line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t'))
		n--;
	if (!n)
		return 0;
	if (memchr(line, '\0', n)) {
		pyspy_set_err(err, "line %llu: NUL byte (not a text file)", (unsigned long long)lineno);
		return -EINVAL;
	}
	for (sp = n; sp > 0 && line[sp - 1] != ' '; sp--)
		;
	if (!sp || sp == n || n - sp > 19) {
		pyspy_set_err(err, "line %llu: no sample count at the end (not py-spy raw output)",
			      (unsigned long long)lineno);
		return -EINVAL;
	}
	for (i = sp; i < n; i++) {
		if (line[i] < '0' || line[i] > '9') {
			pyspy_set_err(err, "line %llu: sample count is not a number", (unsigned long long)lineno);
			return -EINVAL;
		}
		count = count * 10 + (uint64_t)(line[i] - '0');
	}
	if (!count) {
		pyspy_set_err(err, "line %llu: sample count is 0", (unsigned long long)lineno);
		return -EINVAL;
	}
	n = sp - 1;
	/* " COUNT" alone: samples with an empty stack (start-up, shutdown). */
	for (start = 0, i = 0; n && i <= n; i++) {
		if (i < n && line[i] != ';')
			continue;
		if (i == start) {
			pyspy_set_err(err, "line %llu: empty frame in the stack", (unsigned long long)lineno);
			return -EINVAL;
		}
		if (add_frame(&p->frames, line + start, i - start, &frame) ||
		    pyspy_stacks_child(&p->stacks, node, frame, &node))
			goto oom;
		start = i + 1;
	}
	struct pyspy_sample_ev ev = {
		.thread = 0,
		.stack = node,
		.index = (*row)++,
		.t_rel_s = NAN,
		.duration_s = NAN,
		.weight = (double)count,
		.ts_us = NAN,
		.count = count,
	};
	p->threads[0].nsamples += count;
	p->threads[0].total_weight += (double)count;
	if (fn && fn(ctx, p, &ev, err))
		return -ECANCELED;
	return 0;
oom:
	pyspy_set_err(err, "out of memory");
	return -ENOMEM;
}

int pyspy_raw_parse(struct pyspy_input *in, struct pyspy_profile *p, pyspy_sample_fn fn, void *ctx,
		    struct em_error *err)
{
	char *line = NULL;
	size_t len = 0, cap = 0, pos = 0;
	uint64_t lineno = 1, row = 0;
	uint32_t ti;
	int rc = 0;

	p->meta.format = PYSPY_FMT_RAW;
	p->meta.times_known = 0;
	snprintf(p->meta.unit, sizeof p->meta.unit, "none");
	p->frames.complete = 1;
	if (pyspy_stacks_init(&p->stacks) || pyspy_thread_add(p, &ti) || !(p->threads[0].profile = strdup("raw"))) {
		pyspy_set_err(err, "out of memory");
		return -ENOMEM;
	}
	snprintf(p->threads[0].unit, sizeof p->threads[0].unit, "none");
	for (;;) {
		if (pos == in->len) {
			if (in->eof)
				break;
			if ((rc = pyspy_input_fill(in, err)))
				goto out;
			pos = 0;
			continue;
		}
		char *nl = memchr(in->buf + pos, '\n', in->len - pos);
		size_t take = nl ? (size_t)(nl - (in->buf + pos)) : in->len - pos;
		if (len + take > RAW_MAX_LINE) {
			pyspy_set_err(err, "line %llu: longer than %u bytes", (unsigned long long)lineno, RAW_MAX_LINE);
			rc = -EINVAL;
			goto out;
		}
		if (len + take + 1 > cap) {
			size_t ncap = (len + take + 1) * 2;
			char *nb = realloc(line, ncap);
			if (!nb) {
				pyspy_set_err(err, "out of memory");
				rc = -ENOMEM;
				goto out;
			}
			line = nb;
			cap = ncap;
		}
		memcpy(line + len, in->buf + pos, take);
		len += take;
		pos += take;
		if (!nl)
			continue;
		pos++;
		if ((rc = parse_line(p, line, len, lineno, &row, fn, ctx, err)))
			goto out;
		len = 0;
		lineno++;
	}
	if (len)
		rc = parse_line(p, line, len, lineno, &row, fn, ctx, err);
out:
	free(line);
	return rc;
}
