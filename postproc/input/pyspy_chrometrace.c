/*
 * pyspy_chrometrace.c - streaming reader for py-spy's chrometrace output.
 *
 * py-spy (>= 0.4) writes a bare array of "B"/"E" events; per thread it
 * diffs consecutive samples: frames that ended get "E" (leaf first), new
 * frames "B" (root first), all at the sample's ts (µs since py-spy made
 * its recorder).  So a thread's stack is constant between two distinct
 * ts values of its events, and each such interval with a non-empty stack
 * becomes one delivered row.  Chrome's {"traceEvents": [...]} wrapper is
 * accepted too; metadata ("M") events are skipped; any other phase is
 * refused rather than misread.
 *
 * py-spy keeps the previous stack per *pthread id only* and stamps each
 * event with the pid of the sample being diffed (src/chrometrace.rs).
 * With --subprocesses a forked child inherits its parent's pthread id, so
 * the "E" of a frame opened under one pid can come with another pid.  The
 * stack state here is therefore kept per pthread id like py-spy's.  An
 * interval belongs to one (pid, tid): it runs from that thread's event
 * batch to its own next one (when two processes share a pthread id, each
 * sample of either differs from the shared state and emits events, so
 * every sample shows; the other process's events do not end it).  What
 * is still open when the file ends runs to its last ts.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "input/pyspy.h"
#include "input/pyspy_input.h"

enum st { S_TOP0, S_WRAP, S_EVENTS, S_EVENT, S_ARGS, S_DONE };
enum key { K_SKIP, K_TRACE_EVENTS, K_ARGS, K_NAME, K_PH, K_PID, K_TID, K_TS, K_FILENAME, K_LINE, K_ARG_NAME };

struct tstate {
	uint64_t tid;   /* pthread id: py-spy's key for the previous stack */
	uint32_t node;
	double last_ts;
	int have_ts;
};

/* Per (pid, tid): the stack its latest events left, since when. */
struct own {
	uint32_t node;
	double ts;
	int have;
};

struct ct {
	struct pyspy_input *in;
	yajl_handle h;
	struct pyspy_profile *p;
	pyspy_sample_fn fn;
	void *ctx;
	struct em_error *err;
	int failed;
	enum st st;
	enum key key;
	unsigned skip;
	int seen_events, wrapped;
	struct tstate *ts;
	uint32_t nts, ts_cap, last_ts_idx;
	struct own *own;
	uint32_t own_cap;
	double max_ts;
	uint32_t last_thread;

	/* the event being read */
	char *name, *file, *arg_name;
	size_t name_len, name_cap, file_len, file_cap, arg_name_len, arg_name_cap;
	int have_name, have_file, have_pid, have_tid, have_ts, have_arg_name;
	char ph;
	int32_t line;
	int64_t pid;
	uint64_t tid;
	double t_us;
};

static int fail(struct ct *c, int e, const char *what)
{
	if (e == -ENOMEM)
		pyspy_set_err(c->err, "out of memory");
	else
		pyspy_set_err(c->err, "byte %llu: %s", (unsigned long long)pyspy_json_offset(c->in, c->h), what);
	c->failed = e;
	return 0;
}

static int copy(char **dst, size_t *cap, size_t *len, const unsigned char *s, size_t n)
{
	if (n + 1 > *cap) {
		char *d = realloc(*dst, n + 1);
		if (!d)
			return -ENOMEM;
		*dst = d;
		*cap = n + 1;
	}
	memcpy(*dst, s, n);
	(*dst)[n] = '\0';
	*len = n;
	return 0;
}

static int thread_of(struct ct *c, uint32_t *out)
{
	struct pyspy_profile *p = c->p;
	struct pyspy_thread *t;
	char buf[96];
	uint32_t i = c->last_thread;
	if (i < p->nthreads && p->threads[i].pid == c->pid && p->threads[i].pthread_id == c->tid) {
		*out = i;
		return 0;
	}
	for (i = 0; i < p->nthreads; i++)
		if (p->threads[i].pid == c->pid && p->threads[i].pthread_id == c->tid) {
			*out = c->last_thread = i;
			return 0;
		}
	if (pyspy_thread_add(p, &i))
		return -ENOMEM;
	if (i >= c->own_cap) {
		uint32_t cap = p->threads_cap > i ? p->threads_cap : i + 1;
		struct own *no = realloc(c->own, (size_t)cap * sizeof *no);
		if (!no)
			return -ENOMEM;
		memset(no + c->own_cap, 0, (size_t)(cap - c->own_cap) * sizeof *no);
		c->own = no;
		c->own_cap = cap;
	}
	t = &p->threads[i];
	t->pid = c->pid;
	t->pthread_id = c->tid;
	snprintf(t->tid, sizeof t->tid, "%" PRIu64, c->tid);
	snprintf(t->unit, sizeof t->unit, "seconds");
	t->unit_s = 1.0;
	snprintf(buf, sizeof buf, "Process %" PRId64 " Thread %" PRIu64, c->pid, c->tid);
	if (!(t->profile = strdup(buf)))
		return -ENOMEM;
	*out = c->last_thread = i;
	return 0;
}

/* The stack state of pthread id c->tid, shared by every pid. */
static struct tstate *state_of(struct ct *c)
{
	uint32_t i = c->last_ts_idx;
	if (i < c->nts && c->ts[i].tid == c->tid)
		return &c->ts[i];
	for (i = 0; i < c->nts; i++)
		if (c->ts[i].tid == c->tid) {
			c->last_ts_idx = i;
			return &c->ts[i];
		}
	if (c->nts == c->ts_cap) {
		uint32_t cap = c->ts_cap ? c->ts_cap * 2 : 8;
		struct tstate *ts = realloc(c->ts, (size_t)cap * sizeof *ts);
		if (!ts)
			return NULL;
		c->ts = ts;
		c->ts_cap = cap;
	}
	memset(&c->ts[c->nts], 0, sizeof c->ts[0]);
	c->ts[c->nts].tid = c->tid;
	c->last_ts_idx = c->nts;
	return &c->ts[c->nts++];
}

static int emit(struct ct *c, uint32_t ti, uint32_t node, double t0_us, double t1_us)
{
	struct pyspy_profile *p = c->p;
	struct pyspy_sample_ev ev = {
		.thread = ti,
		.stack = node,
		.index = p->threads[ti].nsamples,
		.t_rel_s = t0_us / 1e6,
		.duration_s = (t1_us - t0_us) / 1e6,
		.ts_us = t0_us,
		.count = 1,
	};
	ev.weight = ev.duration_s;
	p->threads[ti].nsamples++;
	p->threads[ti].total_weight += ev.weight;
	if (c->fn && c->fn(c->ctx, p, &ev, c->err)) {
		c->failed = -ECANCELED;
		return -1;
	}
	return 0;
}

static int event_end(struct ct *c)
{
	struct pyspy_profile *p = c->p;
	struct pyspy_stacks *st = &p->stacks;
	struct tstate *s;
	struct own *o;
	uint32_t ti, frame;

	if (c->ph == 'M') {
		/* {"ph":"M","name":"thread_name","args":{"name":"..."}}: other
		 * chrometrace writers name threads so (py-spy 0.4 does not). */
		if (c->have_name && c->have_pid && c->have_tid && c->have_arg_name && c->name_len == 11 &&
		    !memcmp(c->name, "thread_name", 11)) {
			char *tn;
			if (thread_of(c, &ti) || !(tn = strndup(c->arg_name, c->arg_name_len)))
				return fail(c, -ENOMEM, "");
			free(p->threads[ti].thread_name);
			p->threads[ti].thread_name = tn;
		}
		return 1;
	}
	if (c->ph != 'B' && c->ph != 'E') {
		char msg[96];
		snprintf(msg, sizeof msg, "event phase '%c' is not B or E (not a py-spy chrometrace)",
			 c->ph ? c->ph : '?');
		return fail(c, -EINVAL, msg);
	}
	if (!c->have_name || !c->have_pid || !c->have_tid || !c->have_ts)
		return fail(c, -EINVAL, "event lacks name, pid, tid or ts");
	if (thread_of(c, &ti) || !(s = state_of(c)))
		return fail(c, -ENOMEM, "");
	if (s->have_ts && c->t_us < s->last_ts)
		return fail(c, -EINVAL, "ts goes backwards within a thread");
	o = &c->own[ti];
	if (o->have && c->t_us > o->ts && o->node && emit(c, ti, o->node, o->ts, c->t_us))
		return 0;
	s->last_ts = c->t_us;
	s->have_ts = 1;
	if (c->t_us > c->max_ts)
		c->max_ts = c->t_us;
	o->ts = c->t_us;
	o->have = 1;
	if (c->ph == 'B') {
		if (pyspy_frames_intern(&p->frames, c->name, c->name_len, c->have_file ? c->file : NULL, c->file_len,
					c->line, &frame) ||
		    pyspy_stacks_child(st, s->node, frame, &s->node))
			return fail(c, -ENOMEM, "");
		o->node = s->node;
		return 1;
	}
	if (!s->node)
		return fail(c, -EINVAL, "\"E\" event with no open frame on its thread");
	const struct pyspy_frame *top = &p->frames.v[st->v[s->node].frame];
	if (strlen(top->name) != c->name_len || memcmp(top->name, c->name, c->name_len))
		return fail(c, -EINVAL, "\"E\" event does not close the innermost open frame");
	s->node = st->v[s->node].parent;
	o->node = s->node;
	return 1;
}

/* The document's first value: an array of events, or an object that
 * wraps them in "traceEvents". */
static int value_top(struct ct *c, int is_map, int is_arr)
{
	if (is_arr) {
		c->st = S_EVENTS;
		c->seen_events = 1;
	} else if (is_map) {
		c->st = S_WRAP;
		c->wrapped = 1;
	} else {
		return fail(c, -EINVAL, "top-level value is not an array (not a chrometrace file)");
	}
	return 1;
}

/* A value of the wrapping object: "traceEvents" once, the rest skipped. */
static int value_wrap(struct ct *c, int is_map, int is_arr)
{
	if (c->key == K_TRACE_EVENTS) {
		if (!is_arr)
			return fail(c, -EINVAL, "\"traceEvents\" is not an array");
		if (c->seen_events++)
			return fail(c, -EINVAL, "duplicate \"traceEvents\"");
		c->st = S_EVENTS;
	} else if (is_map || is_arr) {
		c->skip = 1;
	}
	return 1;
}

/* An element of the events array: a new event, its fields not yet seen. */
static int value_event_open(struct ct *c, int is_map)
{
	if (!is_map)
		return fail(c, -EINVAL, "an event is not an object");
	c->st = S_EVENT;
	c->have_name = c->have_file = c->have_pid = c->have_tid = c->have_ts = c->have_arg_name = 0;
	c->ph = 0;
	c->line = -1;
	c->file_len = 0;
	return 1;
}

/* One field of an event: name, ph, pid, tid, ts checked and kept; "args"
 * entered; anything else skipped. */
static int value_event(struct ct *c, int is_map, int is_arr, int is_num, double num, int is_int, long long iv,
		       const unsigned char *str, size_t len)
{
	switch (c->key) {
	case K_ARGS:
		if (is_map)
			c->st = S_ARGS;
		else if (is_arr)
			c->skip = 1;
		return 1;
	case K_NAME:
		if (!str)
			return fail(c, -EINVAL, "event name is not a string");
		c->have_name = 1;
		return copy(&c->name, &c->name_cap, &c->name_len, str, len) ? fail(c, -ENOMEM, "") : 1;
	case K_PH:
		if (!str || len != 1)
			return fail(c, -EINVAL, "event phase \"ph\" is not a one-letter string");
		c->ph = (char)str[0];
		return 1;
	case K_PID:
	case K_TID:
		if (!is_num || !is_int || iv < 0)
			return fail(c, -EINVAL, "event pid/tid is not a non-negative integer");
		if (c->key == K_PID) {
			c->pid = iv;
			c->have_pid = 1;
		} else {
			c->tid = (uint64_t)iv;
			c->have_tid = 1;
		}
		return 1;
	case K_TS:
		if (!is_num || !isfinite(num))
			return fail(c, -EINVAL, "event ts is not a number");
		c->t_us = num;
		c->have_ts = 1;
		return 1;
	default:
		if (is_map || is_arr)
			c->skip = 1;
		return 1;
	}
}

/* One field of an event's "args": filename, line, name (thread names);
 * the rest skipped. */
static int value_args(struct ct *c, int is_map, int is_arr, int is_num, int is_int, long long iv,
		      const unsigned char *str, size_t len)
{
	if (c->key == K_FILENAME && str) {
		c->have_file = 1;
		return copy(&c->file, &c->file_cap, &c->file_len, str, len) ? fail(c, -ENOMEM, "") : 1;
	}
	if (c->key == K_ARG_NAME && str) {
		c->have_arg_name = 1;
		return copy(&c->arg_name, &c->arg_name_cap, &c->arg_name_len, str, len) ? fail(c, -ENOMEM, "") : 1;
	}
	if (c->key == K_LINE && is_num && is_int && iv >= 0 && iv <= INT32_MAX) {
		c->line = (int32_t)iv;
		return 1;
	}
	if (is_map || is_arr)
		c->skip = 1;
	return 1;
}

/* Every yajl value callback: skipped subtrees, else the state's handler. */
static int value(struct ct *c, int is_map, int is_arr, int is_num, double num, int is_int, long long iv,
		 const unsigned char *str, size_t len)
{
	if (c->skip) {
		if ((is_map || is_arr) && ++c->skip > PYSPY_MAX_SKIP_DEPTH)
			return fail(c, -EINVAL, "nesting too deep");
		return 1;
	}
	switch (c->st) {
	case S_TOP0:
		return value_top(c, is_map, is_arr);
	case S_WRAP:
		return value_wrap(c, is_map, is_arr);
	case S_EVENTS:
		return value_event_open(c, is_map);
	case S_EVENT:
		return value_event(c, is_map, is_arr, is_num, num, is_int, iv, str, len);
	case S_ARGS:
		return value_args(c, is_map, is_arr, is_num, is_int, iv, str, len);
	default:
		return fail(c, -EINVAL, "unexpected value after the document");
	}
}

static int cb_null(void *c)
{
	return value(c, 0, 0, 0, 0, 0, 0, NULL, 0);
}

static int cb_bool(void *c, int b)
{
	return value(c, 0, 0, 0, b, 0, 0, NULL, 0);
}

static int cb_int(void *c, long long v)
{
	return value(c, 0, 0, 1, (double)v, 1, v, NULL, 0);
}

static int cb_double(void *c, double v)
{
	return value(c, 0, 0, 1, v, 0, 0, NULL, 0);
}

static int cb_string(void *c, const unsigned char *v, size_t n)
{
	return value(c, 0, 0, 0, 0, 0, 0, v, n);
}

static int cb_start_map(void *c)
{
	return value(c, 1, 0, 0, 0, 0, 0, NULL, 0);
}

static int cb_start_array(void *c)
{
	return value(c, 0, 1, 0, 0, 0, 0, NULL, 0);
}

static int key_is(const unsigned char *k, size_t n, const char *lit)
{
	return strlen(lit) == n && !memcmp(k, lit, n);
}

static int cb_map_key(void *v, const unsigned char *k, size_t n)
{
	struct ct *c = v;
	if (c->skip)
		return 1;
	switch (c->st) {
	case S_WRAP:
		c->key = key_is(k, n, "traceEvents") ? K_TRACE_EVENTS : K_SKIP;
		break;
	case S_EVENT:
		c->key = key_is(k, n, "args") ? K_ARGS : key_is(k, n, "name") ? K_NAME : key_is(k, n, "ph") ? K_PH
			: key_is(k, n, "pid") ? K_PID : key_is(k, n, "tid") ? K_TID : key_is(k, n, "ts") ? K_TS
			: K_SKIP;
		break;
	case S_ARGS:
		c->key = key_is(k, n, "filename") ? K_FILENAME : key_is(k, n, "line") ? K_LINE
			: key_is(k, n, "name") ? K_ARG_NAME : K_SKIP;
		break;
	default:
		c->key = K_SKIP;
		break;
	}
	return 1;
}

static int cb_end_map(void *v)
{
	struct ct *c = v;
	if (c->skip) {
		c->skip--;
		return 1;
	}
	switch (c->st) {
	case S_ARGS:
		c->st = S_EVENT;
		return 1;
	case S_EVENT:
		c->st = S_EVENTS;
		return event_end(c);
	case S_WRAP:
		c->st = S_DONE;
		return 1;
	default:
		return fail(c, -EINVAL, "unexpected end of object");
	}
}

static int cb_end_array(void *v)
{
	struct ct *c = v;
	if (c->skip) {
		c->skip--;
		return 1;
	}
	if (c->st != S_EVENTS)
		return fail(c, -EINVAL, "unexpected end of array");
	c->st = c->wrapped ? S_WRAP : S_DONE;
	return 1;
}

static const yajl_callbacks callbacks = {
	.yajl_null = cb_null,
	.yajl_boolean = cb_bool,
	.yajl_integer = cb_int,
	.yajl_double = cb_double,
	.yajl_string = cb_string,
	.yajl_start_map = cb_start_map,
	.yajl_map_key = cb_map_key,
	.yajl_end_map = cb_end_map,
	.yajl_start_array = cb_start_array,
	.yajl_end_array = cb_end_array,
};

int pyspy_chrometrace_parse(struct pyspy_input *in, struct pyspy_profile *p, pyspy_sample_fn fn, void *ctx,
			    struct em_error *err)
{
	struct ct c;
	int rc;

	memset(&c, 0, sizeof c);
	c.in = in;
	c.p = p;
	c.fn = fn;
	c.ctx = ctx;
	c.err = err;
	p->meta.format = PYSPY_FMT_CHROMETRACE;
	p->meta.times_known = 1;
	snprintf(p->meta.unit, sizeof p->meta.unit, "seconds");
	/* Frames are interned as events name them, so the table is always
	 * complete for the samples delivered so far. */
	p->frames.complete = 1;
	if (pyspy_stacks_init(&p->stacks)) {
		pyspy_set_err(err, "out of memory");
		return -ENOMEM;
	}
	c.h = yajl_alloc(&callbacks, NULL, &c);
	if (!c.h) {
		pyspy_set_err(err, "out of memory");
		return -ENOMEM;
	}
	rc = pyspy_json_drive(in, c.h, &c.failed, err);
	/* Stacks still open: py-spy closes only the last owner of each
	 * pthread id; the others run to the end of the recording. */
	for (uint32_t i = 0; !rc && i < p->nthreads && i < c.own_cap; i++)
		if (c.own[i].have && c.own[i].node && c.max_ts > c.own[i].ts &&
		    emit(&c, i, c.own[i].node, c.own[i].ts, c.max_ts))
			rc = c.failed;
	if (!rc && !c.seen_events) {
		pyspy_set_err(err, "no \"traceEvents\" array (not a chrometrace file)");
		rc = -EINVAL;
	}
	yajl_free(c.h);
	free(c.ts);
	free(c.own);
	free(c.name);
	free(c.file);
	free(c.arg_name);
	return rc;
}
