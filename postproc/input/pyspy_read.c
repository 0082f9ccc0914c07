/*
 * pyspy_read.c - open a py-spy profile, detect its format, drive the
 * parser, and build the model (pyspy.h).
 *
 * Detection looks at the first non-blank byte: '{' speedscope, '['
 * chrometrace (py-spy writes a bare event array), anything else that is
 * text is py-spy's raw collapsed format.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "input/input_file.h"
#include "input/pyspy.h"
#include "input/pyspy_input.h"

int pyspy_input_fill(struct pyspy_input *in, struct em_error *err)
{
	in->base += in->len;
	in->len = 0;
	if (in->eof)
		return 0;
	in->len = fread(in->buf, 1, PYSPY_CHUNK, in->fp);
	if (in->len < PYSPY_CHUNK) {
		if (ferror(in->fp)) {
			pyspy_set_err(err, "read error at byte %llu", (unsigned long long)in->base);
			return -EIO;
		}
		in->eof = 1;
	}
	return 0;
}

int pyspy_json_fail(struct pyspy_input *in, yajl_handle h, yajl_status st, uint64_t feed_base, const int *failed,
		    struct em_error *err)
{
	unsigned char *m;
	size_t n;
	if (st == yajl_status_client_canceled)
		return failed && *failed ? *failed : -ECANCELED;
	m = yajl_get_error(h, 0, NULL, 0);
	/* yajl's message is "parse error: what\n"; keep "what". */
	const char *what = m ? (const char *)m : "parse error";
	if (!strncmp(what, "parse error: ", 13))
		what += 13;
	n = strcspn(what, "\n");
	if (in->eof && !in->len)
		pyspy_set_err(err, "byte %llu: truncated JSON (%.*s)", (unsigned long long)in->base, (int)n, what);
	else
		pyspy_set_err(err, "byte %llu: invalid JSON (%.*s)",
			      (unsigned long long)(feed_base + yajl_get_bytes_consumed(h)), (int)n, what);
	if (m)
		yajl_free_error(h, m);
	return -EINVAL;
}

int pyspy_json_drive(struct pyspy_input *in, yajl_handle h, const int *failed, struct em_error *err)
{
	yajl_status st;
	int rc;
	for (;;) {
		if (in->len) {
			st = yajl_parse(h, (const unsigned char *)in->buf, in->len);
			if (st != yajl_status_ok)
				return pyspy_json_fail(in, h, st, in->base, failed, err);
		}
		if (in->eof) {
			in->base += in->len;
			in->len = 0;
			break;
		}
		if ((rc = pyspy_input_fill(in, err)))
			return rc;
	}
	st = yajl_complete_parse(h);
	if (st != yajl_status_ok)
		return pyspy_json_fail(in, h, st, in->base, failed, err);
	return 0;
}

/* A torch.profiler / Kineto trace: a JSON object with "traceEvents" whose
 * first bytes name what only Kineto writes (it puts schemaVersion and
 * deviceProperties before the events; cpu_op names its aten events).  A
 * py-spy chrometrace wrapped in {"traceEvents": ...} has none of them. */
static int is_torch(const struct pyspy_input *in)
{
	static const char *const marks[] = {"\"schemaVersion\"", "\"deviceProperties\"", "\"baseTimeNanoseconds\"",
					    "\"cpu_op\"", "\"user_annotation\"", NULL};
	size_t i = 0;
	while (i < in->len && strchr(" \t\r\n", in->buf[i]))
		i++;
	if (i == in->len || in->buf[i] != '{')
		return 0;
	for (size_t k = 0; marks[k]; k++)
		if (memmem(in->buf, in->len, marks[k], strlen(marks[k])))
			return 1;
	return 0;
}

static enum pyspy_format detect(const struct pyspy_input *in)
{
	for (size_t i = 0; i < in->len; i++) {
		unsigned char c = (unsigned char)in->buf[i];
		if (c == ' ' || c == '\t' || c == '\n' || c == '\r')
			continue;
		if (c == 0xef && i + 2 < in->len && (unsigned char)in->buf[i + 1] == 0xbb)
			return PYSPY_FMT_SPEEDSCOPE; /* BOM: let yajl refuse it with an offset */
		if (c == '[')
			return PYSPY_FMT_CHROMETRACE;
		/* A raw line for an empty stack is just " COUNT" (py-spy --idle
		 * writes one): a digit followed by more lines is raw. */
		if (c >= '0' && c <= '9') {
			const char *nl = memchr(in->buf + i, '\n', in->len - i);
			for (size_t k = nl ? (size_t)(nl - in->buf) : in->len; k < in->len; k++)
				if (!strchr(" \t\r\n", in->buf[k]))
					return PYSPY_FMT_RAW;
		}
		/* An object, or a JSON scalar: the speedscope reader names what
		 * is wrong. */
		if (c == '{' || c == '"' || c == '-' || (c >= '0' && c <= '9'))
			return PYSPY_FMT_SPEEDSCOPE;
		return PYSPY_FMT_RAW;
	}
	return PYSPY_FMT_AUTO;
}

/* Does it look recorded with --idle?  py-spy gives no flag, so this reads
 * the evidence: with --idle every live thread is sampled at every tick, so
 * threads of one process end up with similar sample counts; without it a
 * thread that mostly waits (a DataLoader queue, a join) has few.  A single
 * thread says nothing either way. */
static void idle_guess(struct pyspy_profile *p)
{
	double max = 0, second = 0;
	uint32_t big = 0;
	struct pyspy_meta *m = &p->meta;
	if (m->format == PYSPY_FMT_RAW) {
		m->idle = PYSPY_IDLE_UNKNOWN;
		snprintf(m->idle_reason, sizeof m->idle_reason, "raw format has no per-thread sample times");
		return;
	}
	/* Compare covered time where there is one (chrometrace rows are
	 * intervals, not samples), else sample counts. */
	for (uint32_t i = 0; i < p->nthreads; i++) {
		const struct pyspy_thread *t = &p->threads[i];
		double n = m->times_known && !isnan(t->unit_s) ? t->total_weight * t->unit_s : (double)t->nsamples;
		if (t->nsamples >= 20 || (m->format == PYSPY_FMT_CHROMETRACE && n > 0.1))
			big++;
		if (n > max) {
			second = max;
			max = n;
		} else if (n > second) {
			second = n;
		}
	}
	if (big < 2) {
		m->idle = PYSPY_IDLE_UNKNOWN;
		snprintf(m->idle_reason, sizeof m->idle_reason, "%s",
			 p->nthreads < 2 ? "one thread: nothing to compare" : "fewer than two threads with enough samples");
		return;
	}
	/* Threads started or ended at different times differ too (measured:
	 * 0.76-0.98 with --idle for a thread that lives 80 % of the run, 0.10
	 * without for one that sleeps), so only a near tie counts for --idle
	 * and a large gap against.  Busy threads tie without --idle too: this
	 * is a hint, not a proof. */
	double ratio = second / max;
	m->idle = ratio >= 0.7 ? PYSPY_IDLE_LIKELY : ratio < 0.3 ? PYSPY_IDLE_UNLIKELY : PYSPY_IDLE_UNKNOWN;
	snprintf(m->idle_reason, sizeof m->idle_reason, "the two most sampled threads have %.6g and %.6g %s (ratio %.2f)",
		 max, second, m->times_known ? "s" : "samples", ratio);
}

int pyspy_written_by_anchorpost(const char *head, size_t len)
{
	static const char mark[] = "\"exporter\":\"" PYSPY_ENERGY_EXPORTER "\"";
	/* The writer puts it right after $schema: the first few hundred
	 * bytes hold it, whatever the file's size. */
	size_t n = len < 1024 ? len : 1024;
	return memmem(head, n, mark, sizeof mark - 1) != NULL;
}

int pyspy_read_fp(FILE *fp, enum pyspy_format fmt, struct pyspy_profile *p, pyspy_sample_fn fn, void *ctx,
		  struct em_error *err)
{
	struct pyspy_input in = {.fp = fp};
	enum pyspy_format found;
	int rc, gz = 0;

	err->msg[0] = '\0';
	if (!(in.buf = malloc(PYSPY_CHUNK))) {
		pyspy_set_err(err, "out of memory");
		return -ENOMEM;
	}
	if ((rc = pyspy_input_fill(&in, err)))
		goto out;
	in.base = 0;
	if (!in.len) {
		pyspy_set_err(err, "empty file (0 bytes)");
		rc = -EINVAL;
		goto out;
	}
	/* anchorpost's own energy profile (PYSPY_ENERGY_EXPORTER near the
	 * start; older files name it at the end, checked after the parse):
	 * weights in joules, not py-spy's samples. */
	if (pyspy_written_by_anchorpost(in.buf, in.len)) {
		pyspy_set_err(err, "%s", PYSPY_OWN_OUTPUT_MSG);
		rc = -EINVAL;
		goto out;
	}
	/* tensorboard_trace_handler(use_gzip=True) writes .json.gz: read
	 * through zlib, whatever the name says (detected by content). */
	if (in.len >= 2 && (unsigned char)in.buf[0] == 0x1f && (unsigned char)in.buf[1] == 0x8b) {
		if ((rc = pyspy_gzip_input(&in, err)))
			goto out;
		gz = 1;
		if (!is_torch(&in)) {
			pyspy_set_err(err, "a gzip file that is not a torch.profiler trace (py-spy profiles are not "
					   "compressed: give the .json)");
			rc = -EINVAL;
			goto out;
		}
	}
	if (is_torch(&in) && (fmt == PYSPY_FMT_AUTO || fmt == PYSPY_FMT_CHROMETRACE)) {
		rc = pyspy_torch_parse(&in, p, fn, ctx, err);
		if (!rc)
			idle_guess(p);
		goto out;
	}
	found = detect(&in);
	if (found == PYSPY_FMT_AUTO) {
		pyspy_set_err(err, "only white space in the first %zu bytes", in.len);
		rc = -EINVAL;
		goto out;
	}
	if (fmt == PYSPY_FMT_AUTO)
		fmt = found;
	switch (fmt) {
	case PYSPY_FMT_SPEEDSCOPE:
		rc = pyspy_speedscope_parse(&in, p, fn, ctx, err);
		break;
	case PYSPY_FMT_CHROMETRACE:
		rc = pyspy_chrometrace_parse(&in, p, fn, ctx, err);
		break;
	default:
		rc = pyspy_raw_parse(&in, p, fn, ctx, err);
		break;
	}
	if (!rc && !strcmp(p->meta.exporter, PYSPY_ENERGY_EXPORTER)) {
		pyspy_set_err(err, "%s", PYSPY_OWN_OUTPUT_MSG);
		rc = -EINVAL;
	}
	if (!rc)
		idle_guess(p);
out:
	if (rc && !err->msg[0])
		pyspy_set_err(err, "%s", strerror(-rc));
	if (gz)
		fclose(in.fp);
	free(in.buf);
	return rc;
}

int pyspy_read(const char *path, enum pyspy_format fmt, struct pyspy_profile *p, pyspy_sample_fn fn, void *ctx,
	       struct em_error *err)
{
	struct em_error why;
	int rc = input_file_open(path, INPUT_FILE_REMEMBER, &why);
	FILE *fp;
	if (rc < 0) {
		pyspy_set_err(err, "%s", why.msg);
		return rc;
	}
	fp = fdopen(rc, "rb");
	if (!fp) {
		int e = errno;
		close(rc);
		pyspy_set_err(err, "cannot open: %s", strerror(e));
		return -e;
	}
	rc = pyspy_read_fp(fp, fmt, p, fn, ctx, err);
	fclose(fp);
	return rc;
}

static int model_add(void *ctx, const struct pyspy_profile *cp, const struct pyspy_sample_ev *s,
		     struct em_error *err)
{
	struct pyspy_profile *p = ctx;
	(void)cp;
	if (p->nsamples == p->samples_cap) {
		size_t cap = p->samples_cap ? p->samples_cap * 2 : 4096;
		struct pyspy_sample *v = realloc(p->samples, cap * sizeof *v);
		if (!v)
			goto oom;
		p->samples = v;
		if (p->meta.format == PYSPY_FMT_CHROMETRACE) {
			double *t = realloc(p->ts_us, cap * sizeof *t);
			if (!t)
				goto oom;
			p->ts_us = t;
		}
		if (p->meta.format == PYSPY_FMT_RAW) {
			uint64_t *c = realloc(p->counts, cap * sizeof *c);
			if (!c)
				goto oom;
			p->counts = c;
		}
		p->samples_cap = cap;
	}
	p->samples[p->nsamples] = (struct pyspy_sample){s->thread, s->stack, s->t_rel_s, s->duration_s};
	if (p->ts_us)
		p->ts_us[p->nsamples] = s->ts_us;
	if (p->counts)
		p->counts[p->nsamples] = s->count;
	p->nsamples++;
	return 0;
oom:
	pyspy_set_err(err, "out of memory");
	return 1;
}

int pyspy_load_fp(FILE *fp, enum pyspy_format fmt, struct pyspy_profile *p, struct em_error *err)
{
	return pyspy_read_fp(fp, fmt, p, model_add, p, err);
}

int pyspy_load(const char *path, enum pyspy_format fmt, struct pyspy_profile *p, struct em_error *err)
{
	return pyspy_read(path, fmt, p, model_add, p, err);
}
