/*
 * torch_trace.c - streaming reader for torch.profiler / Kineto chrome
 * traces (prof.export_chrome_trace(), tensorboard_trace_handler files),
 * into the same model as py-spy's profiles (pyspy.h).
 *
 * The file is {"schemaVersion":1, "deviceProperties":[...],
 * "baseTimeNanoseconds":N, "traceEvents":[...], ...}.  Every operator is a
 * complete event {"ph":"X","cat":..,"name":..,"pid":..,"tid":..,"ts":µs,
 * "dur":µs}; ts counts from baseTimeNanoseconds (torch >= 2.4; older
 * traces have no base and ts is unix µs itself), on the system clock
 * torch's profiler converts its own readings to.  Categories kept:
 *
 *   host (pid/tid are the OS process and thread):  cpu_op (aten ops),
 *     user_annotation (record_function ranges), python_function
 *     (with_stack=True: Python frames and "nn.Module: X_0" module scopes),
 *     cuda_runtime / cuda_driver (launch calls).
 *   device (pid is the GPU, tid the stream):  kernel, gpu_memcpy,
 *     gpu_memset, on the device's own start and end (CUPTI, converted by
 *     Kineto to the host clock).
 * Flows, counters, metadata and the whole-trace "Trace" span are skipped.
 *
 * Events are in no particular order in the file, so they are kept (24
 * bytes each) and laid out per thread after the parse: sorted by start,
 * longer first, a stack of open events gives, between consecutive edges,
 * the nested ops running there; each such interval with a non-empty stack
 * is one delivered row (like py-spy chrometrace: t_rel_s, duration_s).  A
 * child that outlives its parent (rounding to 1 ns in the file) is cut at
 * the parent's end.  The frame of an event is (name, file = its category,
 * line -1), so functions.csv says which kind each row is.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "input/pyspy.h"
#include "input/pyspy_input.h"

enum st { S_TOP0, S_TOP, S_EVENTS, S_EVENT, S_DONE };
enum key { K_SKIP, K_TRACE_EVENTS, K_BASE, K_SCHEMA, K_NAME, K_PH, K_CAT, K_PID, K_TID, K_TS, K_DUR };

/* One kept event. */
struct tev {
	double ts_us, end_us;
	uint32_t frame, thread;
};

struct tt {
	struct pyspy_input *in;
	yajl_handle h;
	struct pyspy_profile *p;
	struct em_error *err;
	int failed;
	enum st st;
	enum key key;
	unsigned skip;
	int seen_events;
	struct tev *ev;
	size_t nev, ev_cap;
	uint32_t last_thread;

	/* the event being read */
	char name[512], cat[32], tid_s[24];
	size_t name_len;
	int have_name, have_cat, have_pid, have_tid, have_ts, have_dur;
	char ph;
	int64_t pid;
	double ts, dur;
};

static int fail(struct tt *c, int e, const char *what)
{
	if (e == -ENOMEM)
		pyspy_set_err(c->err, "out of memory");
	else
		pyspy_set_err(c->err, "byte %llu: %s", (unsigned long long)pyspy_json_offset(c->in, c->h), what);
	c->failed = e;
	return 0;
}

/* Categories kept, and whether they run on a device. */
static int category(const char *cat, int *device)
{
	static const char *const host[] = {"cpu_op", "user_annotation", "python_function", "cuda_runtime",
					   "cuda_driver", NULL};
	static const char *const dev[] = {"kernel", "gpu_memcpy", "gpu_memset", NULL};
	for (size_t i = 0; host[i]; i++)
		if (!strcmp(cat, host[i])) {
			*device = 0;
			return 1;
		}
	for (size_t i = 0; dev[i]; i++)
		if (!strcmp(cat, dev[i])) {
			*device = 1;
			return 1;
		}
	return 0;
}

static int thread_of(struct tt *c, int device, uint32_t *out)
{
	struct pyspy_profile *p = c->p;
	struct pyspy_thread *t;
	char buf[96];
	uint32_t i = c->last_thread;
	/* Device threads are keyed by (-1 - device, stream): a GPU index is
	 * no OS pid, and the aligner must not look for it in the ring. */
	int64_t key = device ? -1 - c->pid : c->pid;
	if (i < p->nthreads && p->threads[i].pid == key && !strcmp(p->threads[i].tid, c->tid_s)) {
		*out = i;
		return 0;
	}
	for (i = 0; i < p->nthreads; i++)
		if (p->threads[i].pid == key && !strcmp(p->threads[i].tid, c->tid_s)) {
			*out = c->last_thread = i;
			return 0;
		}
	if (pyspy_thread_add(p, &i))
		return -ENOMEM;
	t = &p->threads[i];
	t->pid = key;
	snprintf(t->tid, sizeof t->tid, "%s", c->tid_s);
	snprintf(t->unit, sizeof t->unit, "seconds");
	t->unit_s = 1.0;
	if (device)
		snprintf(buf, sizeof buf, "GPU %" PRId64 " stream %s", c->pid, c->tid_s);
	else
		snprintf(buf, sizeof buf, "Process %" PRId64 " Thread %s", c->pid, c->tid_s);
	if (!(t->profile = strdup(buf)))
		return -ENOMEM;
	if (device) {
		free(t->thread_name);
		if (!(t->thread_name = strdup(buf)))
			return -ENOMEM;
	}
	*out = c->last_thread = i;
	return 0;
}

static int event_end(struct tt *c)
{
	struct pyspy_profile *p = c->p;
	int device = 0;
	uint32_t ti, frame;
	if (c->ph != 'X' || !c->have_cat || !category(c->cat, &device))
		return 1;
	if (!c->have_name || !c->have_pid || !c->have_tid || !c->have_ts || !c->have_dur)
		return fail(c, -EINVAL, "complete event (\"ph\":\"X\") without name, pid, tid, ts or dur");
	if (!(c->dur >= 0) || !isfinite(c->ts + c->dur))
		return fail(c, -EINVAL, "event with a negative or unbounded \"dur\"");
	if (thread_of(c, device, &ti) ||
	    pyspy_frames_intern(&p->frames, c->name, c->name_len, c->cat, strlen(c->cat), -1, &frame))
		return fail(c, -ENOMEM, "");
	if (c->nev == c->ev_cap) {
		size_t cap = c->ev_cap ? 2 * c->ev_cap : 4096;
		struct tev *v = realloc(c->ev, cap * sizeof *v);
		if (!v)
			return fail(c, -ENOMEM, "");
		c->ev = v;
		c->ev_cap = cap;
	}
	c->ev[c->nev++] = (struct tev){c->ts, c->ts + c->dur, frame, ti};
	if (device)
		p->meta.torch_device_events++;
	if (!strcmp(c->cat, "user_annotation"))
		p->meta.torch_annotations++;
	return 1;
}

static int value(struct tt *c, int is_map, int is_arr, int is_num, double num, int is_int, long long iv,
		 const unsigned char *str, size_t len)
{
	if (c->skip) {
		if ((is_map || is_arr) && ++c->skip > PYSPY_MAX_SKIP_DEPTH)
			return fail(c, -EINVAL, "nesting too deep");
		return 1;
	}
	switch (c->st) {
	case S_TOP0:
		if (!is_map)
			return fail(c, -EINVAL, "a torch.profiler trace is a JSON object");
		c->st = S_TOP;
		return 1;
	case S_TOP:
		if (c->key == K_TRACE_EVENTS) {
			if (!is_arr)
				return fail(c, -EINVAL, "\"traceEvents\" is not an array");
			c->seen_events = 1;
			c->st = S_EVENTS;
			return 1;
		}
		if (c->key == K_BASE && is_num) {
			/* ns since 1970 fit a double to ~256 ns: take the
			 * integer when yajl gives one; a value no int64 holds
			 * is no clock */
			if (!is_int && !(fabs(num) < 9.2e18))
				return fail(c, -EINVAL, "\"baseTimeNanoseconds\" is out of range");
			c->p->meta.torch_base_ns = is_int ? (int64_t)iv : (int64_t)num;
			c->p->meta.torch_has_base = 1;
			return 1;
		}
		if (c->key == K_SCHEMA && is_num)
			c->p->meta.torch_schema = fabs(num) < 1e6 ? (int)num : -1;
		if (is_map || is_arr)
			c->skip = 1;
		return 1;
	case S_EVENTS:
		if (!is_map)
			return fail(c, -EINVAL, "a trace event is not an object");
		c->st = S_EVENT;
		c->have_name = c->have_cat = c->have_pid = c->have_tid = c->have_ts = c->have_dur = 0;
		c->ph = 0;
		return 1;
	case S_EVENT:
		break;
	default:
		return fail(c, -EINVAL, "unexpected value after the document");
	}
	switch (c->key) {
	case K_NAME:
		if (!str)
			return fail(c, -EINVAL, "event name is not a string");
		c->name_len = len < sizeof c->name - 1 ? len : sizeof c->name - 1;
		memcpy(c->name, str, c->name_len);
		c->name[c->name_len] = '\0';
		c->have_name = 1;
		return 1;
	case K_CAT:
		if (str) {
			size_t n = len < sizeof c->cat - 1 ? len : sizeof c->cat - 1;
			memcpy(c->cat, str, n);
			c->cat[n] = '\0';
			c->have_cat = 1;
		}
		return 1;
	case K_PH:
		c->ph = str && len == 1 ? (char)str[0] : '?';
		return 1;
	case K_PID:
		/* GPU rows may be named by strings in other tools' traces:
		 * only integers identify a process or a device. */
		if (is_num && is_int) {
			c->pid = iv;
			c->have_pid = 1;
		}
		return 1;
	case K_TID:
		if (is_num && is_int)
			snprintf(c->tid_s, sizeof c->tid_s, "%lld", iv);
		else if (str)
			snprintf(c->tid_s, sizeof c->tid_s, "%.*s", (int)(len < 23 ? len : 23), (const char *)str);
		else
			return 1;
		c->have_tid = 1;
		return 1;
	case K_TS:
	case K_DUR:
		if (!is_num || !isfinite(num))
			return fail(c, -EINVAL, "event ts or dur is not a number");
		if (c->key == K_TS) {
			c->ts = num;
			c->have_ts = 1;
		} else {
			c->dur = num;
			c->have_dur = 1;
		}
		return 1;
	default:
		if (is_map || is_arr)
			c->skip = 1;
		return 1;
	}
}

static int cb_null(void *c) { return value(c, 0, 0, 0, 0, 0, 0, NULL, 0); }
static int cb_bool(void *c, int b) { return value(c, 0, 0, 0, b, 0, 0, NULL, 0); }
static int cb_int(void *c, long long v) { return value(c, 0, 0, 1, (double)v, 1, v, NULL, 0); }
static int cb_double(void *c, double v) { return value(c, 0, 0, 1, v, 0, 0, NULL, 0); }
static int cb_string(void *c, const unsigned char *v, size_t n) { return value(c, 0, 0, 0, 0, 0, 0, v, n); }
static int cb_start_map(void *c) { return value(c, 1, 0, 0, 0, 0, 0, NULL, 0); }
static int cb_start_array(void *c) { return value(c, 0, 1, 0, 0, 0, 0, NULL, 0); }

static int key_is(const unsigned char *k, size_t n, const char *lit)
{
	return strlen(lit) == n && !memcmp(k, lit, n);
}

static int cb_map_key(void *v, const unsigned char *k, size_t n)
{
	struct tt *c = v;
	if (c->skip)
		return 1;
	if (c->st == S_TOP)
		c->key = key_is(k, n, "traceEvents") ? K_TRACE_EVENTS : key_is(k, n, "baseTimeNanoseconds") ? K_BASE
			: key_is(k, n, "schemaVersion") ? K_SCHEMA : K_SKIP;
	else if (c->st == S_EVENT)
		c->key = key_is(k, n, "name") ? K_NAME : key_is(k, n, "ph") ? K_PH : key_is(k, n, "cat") ? K_CAT
			: key_is(k, n, "pid") ? K_PID : key_is(k, n, "tid") ? K_TID : key_is(k, n, "ts") ? K_TS
			: key_is(k, n, "dur") ? K_DUR : K_SKIP;
	else
		c->key = K_SKIP;
	return 1;
}

static int cb_end_map(void *v)
{
	struct tt *c = v;
	if (c->skip) {
		c->skip--;
		return 1;
	}
	if (c->st == S_EVENT) {
		c->st = S_EVENTS;
		return event_end(c);
	}
	if (c->st == S_TOP) {
		c->st = S_DONE;
		return 1;
	}
	return fail(c, -EINVAL, "unexpected end of object");
}

static int cb_end_array(void *v)
{
	struct tt *c = v;
	if (c->skip) {
		c->skip--;
		return 1;
	}
	if (c->st != S_EVENTS)
		return fail(c, -EINVAL, "unexpected end of array");
	c->st = S_TOP;
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

static int cmp_tev(const void *a, const void *b)
{
	const struct tev *x = a, *y = b;
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	if (x->ts_us != y->ts_us)
		return x->ts_us < y->ts_us ? -1 : 1;
	/* the longer one opens first: it is the parent */
	if (x->end_us != y->end_us)
		return x->end_us > y->end_us ? -1 : 1;
	return 0;
}

static int emit(struct pyspy_profile *p, pyspy_sample_fn fn, void *ctx, struct em_error *err, uint32_t ti,
		uint32_t node, double a_us, double b_us)
{
	if (!node || !(b_us > a_us))
		return 0;
	double t0 = p->meta.torch_t0_us;
	struct pyspy_sample_ev ev = {
		.thread = ti,
		.stack = node,
		.index = p->threads[ti].nsamples,
		.t_rel_s = (a_us - t0) / 1e6,
		.duration_s = (b_us - a_us) / 1e6,
		.ts_us = a_us,
		.count = 1,
	};
	ev.weight = ev.duration_s;
	p->threads[ti].nsamples++;
	p->threads[ti].total_weight += ev.weight;
	return fn && fn(ctx, p, &ev, err) ? -ECANCELED : 0;
}

/* Lay out one thread's events (ev[0..n), sorted) as constant-stack rows. */
#define MAX_DEPTH 512
static int layout_thread(struct pyspy_profile *p, pyspy_sample_fn fn, void *ctx, struct em_error *err,
			 const struct tev *ev, size_t n)
{
	double end[MAX_DEPTH];
	uint32_t node[MAX_DEPTH + 1];
	size_t depth = 0;
	double cur = n ? ev[0].ts_us : 0;
	uint32_t ti = n ? ev[0].thread : 0;
	int rc;
	node[0] = 0;
	for (size_t i = 0; i <= n; i++) {
		double t = i < n ? ev[i].ts_us : INFINITY;
		/* close what ended before this event starts */
		while (depth && end[depth - 1] <= t) {
			if ((rc = emit(p, fn, ctx, err, ti, node[depth], cur, end[depth - 1])))
				return rc;
			cur = end[depth - 1] > cur ? end[depth - 1] : cur;
			depth--;
		}
		if (i == n)
			break;
		if ((rc = emit(p, fn, ctx, err, ti, node[depth], cur, t)))
			return rc;
		cur = t > cur ? t : cur;
		if (depth == MAX_DEPTH) {
			pyspy_set_err(err, "ops nested deeper than %d on thread %s", MAX_DEPTH, p->threads[ti].tid);
			return -EINVAL;
		}
		end[depth] = depth && ev[i].end_us > end[depth - 1] ? end[depth - 1] : ev[i].end_us;
		if (pyspy_stacks_child(&p->stacks, node[depth], ev[i].frame, &node[depth + 1])) {
			pyspy_set_err(err, "out of memory");
			return -ENOMEM;
		}
		depth++;
	}
	return 0;
}

int pyspy_torch_parse(struct pyspy_input *in, struct pyspy_profile *p, pyspy_sample_fn fn, void *ctx,
		      struct em_error *err)
{
	struct tt c;
	int rc;

	memset(&c, 0, sizeof c);
	c.in = in;
	c.p = p;
	c.err = err;
	p->meta.format = PYSPY_FMT_CHROMETRACE;
	p->meta.torch = 1;
	p->meta.times_known = 1;
	p->meta.rate_hz = NAN;
	snprintf(p->meta.exporter, sizeof p->meta.exporter, "torch.profiler");
	snprintf(p->meta.unit, sizeof p->meta.unit, "seconds");
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
	if (!rc && !c.seen_events) {
		pyspy_set_err(err, "no \"traceEvents\" array (not a torch.profiler trace)");
		rc = -EINVAL;
	}
	if (!rc && !c.nev) {
		pyspy_set_err(err, "no operator, annotation or kernel events in \"traceEvents\"");
		rc = -EINVAL;
	}
	if (!rc) {
		qsort(c.ev, c.nev, sizeof *c.ev, cmp_tev);
		p->meta.torch_t0_us = INFINITY;
		for (size_t i = 0; i < c.nev; i++)
			if (c.ev[i].ts_us < p->meta.torch_t0_us)
				p->meta.torch_t0_us = c.ev[i].ts_us;
		for (size_t i = 0, j; !rc && i < c.nev; i = j) {
			for (j = i; j < c.nev && c.ev[j].thread == c.ev[i].thread; j++)
				;
			rc = layout_thread(p, fn, ctx, err, c.ev + i, j - i);
		}
		p->meta.torch_events = c.nev;
	}
	yajl_free(c.h);
	free(c.ev);
	return rc;
}
