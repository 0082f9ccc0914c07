/*
 * pyspy_speedscope.c - streaming speedscope reader (yajl callbacks).
 *
 * A state machine over the document's fixed shape; keys may come in any
 * order (py-spy writes profiles before shared, samples before weights,
 * other exporters need not).  Each sample array is folded into the stack
 * prefix tree as it streams by; a common prefix with the previous sample
 * is reused without hashing, which is most of a deep, repetitive profile.
 * A profile's samples are delivered when its object closes, once weights
 * (and type and unit) are known; weights are kept run-length encoded
 * (py-spy writes one constant), so the buffer is 4 bytes per sample.
 *
 * Evented profiles (speedscope's O/C events: pyinstrument and others) are
 * read as intervals of an unchanged stack, like chrometrace.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "input/pyspy.h"
#include "input/pyspy_input.h"

enum st {
	S_TOP0, S_TOP, S_PROFILES, S_PROFILE, S_SAMPLES, S_SAMPLE, S_WEIGHTS, S_EVENTS, S_EVENT,
	S_SHARED, S_FRAMES, S_FRAME, S_DONE,
};

enum key {
	K_SKIP, K_PROFILES, K_SHARED, K_EXPORTER, K_TYPE, K_NAME, K_UNIT, K_START, K_END,
	K_SAMPLES, K_WEIGHTS, K_EVENTS, K_FRAMES, K_FILE, K_LINE, K_AT, K_FRAME,
};

enum vk { V_NULL, V_BOOL, V_NUM, V_STR, V_MAP, V_ARR };

struct wrun {
	double w;
	uint64_t n;
};

struct event {
	double at;
	uint32_t frame;
	int open;
};

struct memo {
	uint64_t hash;
	uint64_t off;  /* frames in arena[off, off + depth) */
	uint32_t depth;
	uint32_t node; /* 0: empty slot (the empty stack is never memoised) */
};

/* Most samples repeat a stack seen before, so a sample is first looked up
 * whole: one probe and a memcmp of contiguous frames, instead of one
 * scattered tree lookup per frame.  The arena is capped; past it, new
 * stacks still resolve through the tree. */
#define MEMO_ARENA_MAX ((size_t)8 << 20) /* frames: 32 MB */

struct ss {
	struct pyspy_input *in;
	yajl_handle h;
	uint64_t feed_base;  /* file offset of the first byte last fed to h */
	/* Fast path: a "samples" array is scanned here, not by yajl (below). */
	int takeover;        /* a callback asks the driver to hand over */
	int fast;            /* scanning a samples array */
	int fstate;          /* scanner state */
	uint64_t fval;       /* integer being scanned */
	unsigned fdigits;
	uint64_t fast_off;   /* file offset of the byte being scanned */
	int replay;          /* feeding the restart prefix: ignore callbacks */
	struct pyspy_profile *p;
	pyspy_sample_fn fn;
	void *ctx;
	struct em_error *err;
	int failed;          /* errno of a callback failure */
	enum st st;
	enum key key;
	unsigned skip;       /* depth of the value being skipped */
	int seen_profiles, seen_shared;
	uint64_t nprofiles;

	/* the profile being read */
	int have_type, evented, have_unit, have_samples, have_weights, have_events;
	char *name;
	char unit[16];
	double start_value, end_value;
	uint32_t *nodes;
	size_t nnodes, nodes_cap;
	struct wrun *runs;
	size_t nruns, runs_cap;
	uint64_t nweights;
	struct event *events;
	size_t nevents, events_cap;
	struct event ev;     /* event being read */
	int ev_have_type, ev_have_at, ev_have_frame;

	/* the sample being read: its frames and a running hash of them */
	uint32_t *cur;
	uint32_t depth, cur_cap;
	uint64_t cur_hash;
	/* the last stack resolved through the tree: reused as a prefix */
	uint32_t *path_frame, *path_node;
	uint32_t path_len, path_cap;
	/* whole-stack memo: (hash, frames) -> node, frames kept in an arena */
	struct memo *memo;
	uint32_t memo_cap, memo_n;
	uint32_t *arena;
	size_t arena_n, arena_cap;

	/* frames */
	int64_t max_frame;
	uint64_t max_frame_off;
	char *fr_name, *fr_file;
	size_t fr_name_len, fr_file_len;
	int32_t fr_line;
	int fr_have_name;

	/* across profiles */
	double first_weight_s;
	int weights_differ;
	int have_first_weight;
};

/* File offset of the token being handled: yajl counts from where it was
 * last fed (feed_base); the fast samples scanner sets fast_off itself. */
static uint64_t off(const struct ss *s)
{
	return s->fast ? s->fast_off : s->feed_base + yajl_get_bytes_consumed(s->h);
}

static int fail(struct ss *s, int e, const char *what)
{
	if (e == -ENOMEM)
		pyspy_set_err(s->err, "out of memory");
	else
		pyspy_set_err(s->err, "byte %llu: %s", (unsigned long long)off(s), what);
	s->failed = e;
	return 0;
}

static int failf(struct ss *s, const char *fmt, const char *arg)
{
	char buf[200];
	snprintf(buf, sizeof buf, fmt, arg);
	return fail(s, -EINVAL, buf);
}

static int push(void **v, size_t *cap, size_t n, size_t elem)
{
	void *nv;
	size_t ncap;
	if (n < *cap)
		return 0;
	ncap = *cap ? *cap * 2 : 1024;
	nv = realloc(*v, ncap * elem);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

static double unit_seconds(const char *u, int *known)
{
	static const struct {
		const char *name;
		double s;
	} units[] = {
		{"seconds", 1.0}, {"milliseconds", 1e-3}, {"microseconds", 1e-6},
		{"nanoseconds", 1e-9}, {"none", NAN}, {"bytes", NAN},
	};
	for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
		if (!strcmp(u, units[i].name)) {
			*known = 1;
			return units[i].s;
		}
	*known = 0;
	return NAN;
}

static void profile_reset(struct ss *s)
{
	free(s->name);
	s->name = NULL;
	s->have_type = s->evented = s->have_unit = s->have_samples = s->have_weights = s->have_events = 0;
	s->unit[0] = '\0';
	s->start_value = 0;
	s->end_value = NAN;
	s->nnodes = s->nruns = s->nevents = 0;
	s->nweights = 0;
}

/* "Thread 680254 \"MainThread\"", "Process 12 Thread 0x1a \"\"": py-spy's
 * profile names.  Anything else leaves pid/tid/thread name unknown. */
static int parse_profile_name(struct pyspy_thread *t, const char *name)
{
	const char *q = name, *e;
	char *end;
	if (!strncmp(q, "Process ", 8)) {
		long long pid = strtoll(q + 8, &end, 10);
		if (end == q + 8 || *end != ' ' || pid < 0)
			return 0;
		t->pid = pid;
		q = end + 1;
	}
	if (strncmp(q, "Thread ", 7))
		return 0;
	q += 7;
	e = strchr(q, ' ');
	if (!e || e == q || (size_t)(e - q) >= sizeof t->tid || e[1] != '"')
		return 0;
	memcpy(t->tid, q, (size_t)(e - q));
	t->tid[e - q] = '\0';
	size_t nl = strlen(e + 2);
	if (nl && e[2 + nl - 1] == '"') {
		char *tn = strndup(e + 2, nl - 1);
		if (!tn)
			return -ENOMEM;
		free(t->thread_name);
		t->thread_name = tn;
	}
	return 0;
}

static int deliver(struct ss *s, uint32_t ti, const struct pyspy_sample_ev *ev)
{
	struct pyspy_thread *t = &s->p->threads[ti];
	t->nsamples += ev->count;
	t->total_weight += ev->weight;
	if (ev->stack == 0)
		s->p->meta.empty_samples++;
	if (s->fn && s->fn(s->ctx, s->p, ev, s->err)) {
		s->failed = -ECANCELED;
		return -ECANCELED;
	}
	return 0;
}

static int emit_sampled(struct ss *s, uint32_t ti, double unit_s)
{
	struct pyspy_sample_ev ev = {.thread = ti, .ts_us = NAN, .count = 1};
	double cum = 0, rate = s->p->rate_override_hz;
	size_t r = 0;
	uint64_t in_run = 0;
	int override = rate > 0;

	for (size_t i = 0; i < s->nnodes; i++) {
		double w;
		while (in_run == s->runs[r].n) {
			r++;
			in_run = 0;
		}
		w = s->runs[r].w;
		in_run++;
		ev.stack = s->nodes[i];
		ev.index = i;
		ev.weight = w;
		if (override) {
			ev.t_rel_s = (double)i / rate;
			ev.duration_s = 1.0 / rate;
		} else {
			ev.t_rel_s = cum * unit_s;
			ev.duration_s = w * unit_s;
		}
		cum += w;
		if (deliver(s, ti, &ev))
			return -ECANCELED;
	}
	return 0;
}

static int emit_evented(struct ss *s, uint32_t ti, double unit_s)
{
	struct pyspy_sample_ev ev = {.thread = ti, .ts_us = NAN, .count = 1};
	struct pyspy_stacks *st = &s->p->stacks;
	uint32_t node = 0;
	double last = s->start_value;
	uint64_t idx = 0;

	for (size_t i = 0; i < s->nevents; i++) {
		const struct event *e = &s->events[i];
		if (e->at < last)
			return fail(s, -EINVAL, "evented profile: event times go backwards"), -EINVAL;
		if (e->at > last && node) {
			ev.stack = node;
			ev.index = idx++;
			ev.t_rel_s = (last - s->start_value) * unit_s;
			ev.duration_s = (e->at - last) * unit_s;
			ev.weight = e->at - last;
			if (deliver(s, ti, &ev))
				return -ECANCELED;
		}
		last = e->at;
		if (e->open) {
			if (pyspy_stacks_child(st, node, e->frame, &node))
				return fail(s, -ENOMEM, ""), -ENOMEM;
		} else {
			if (!node || st->v[node].frame != e->frame)
				return fail(s, -EINVAL, "evented profile: a close event does not match the open frame"),
				       -EINVAL;
			node = st->v[node].parent;
		}
	}
	if (node)
		return fail(s, -EINVAL, "evented profile: frames still open at the end"), -EINVAL;
	return 0;
}

static int profile_end(struct ss *s)
{
	struct pyspy_profile *p = s->p;
	struct pyspy_thread *t;
	uint32_t ti;
	double unit_s;
	int known;
	char msg[200];

	if (!s->have_samples && !s->have_events)
		return fail(s, -EINVAL, "profile has neither samples nor events");
	if (s->have_samples && s->have_events)
		return fail(s, -EINVAL, "profile has both samples and events");
	if (s->have_type && s->evented != s->have_events)
		return fail(s, -EINVAL, s->evented ? "evented profile has samples instead of events"
						   : "sampled profile has events instead of samples");
	if (!s->have_unit)
		return fail(s, -EINVAL, "profile has no unit");
	unit_s = unit_seconds(s->unit, &known);
	if (!known)
		return failf(s, "profile has unknown unit '%s'", s->unit);
	if (s->have_samples && !s->have_weights)
		return fail(s, -EINVAL, "sampled profile has no weights");
	if (s->have_samples && s->nweights != s->nnodes) {
		snprintf(msg, sizeof msg, "profiles[%llu]: %zu samples but %llu weights",
			 (unsigned long long)s->nprofiles, s->nnodes, (unsigned long long)s->nweights);
		return fail(s, -EINVAL, msg);
	}
	if (pyspy_thread_add(p, &ti))
		return fail(s, -ENOMEM, "");
	t = &p->threads[ti];
	t->profile = s->name ? s->name : strdup("");
	s->name = NULL;
	if (!t->profile || parse_profile_name(t, t->profile))
		return fail(s, -ENOMEM, "");
	snprintf(t->unit, sizeof t->unit, "%s", s->unit);
	t->unit_s = unit_s;
	t->evented = s->have_events;
	t->start_value = s->start_value;
	t->end_value = s->end_value;

	if (!p->meta.unit[0])
		snprintf(p->meta.unit, sizeof p->meta.unit, "%s", s->unit);
	else if (strcmp(p->meta.unit, s->unit))
		snprintf(p->meta.unit, sizeof p->meta.unit, "mixed");
	if (isnan(unit_s) && !(p->rate_override_hz > 0) && !s->have_events)
		p->meta.times_known = 0;
	for (size_t r = 0; r < s->nruns; r++) {
		double w = s->runs[r].w * (isnan(unit_s) ? 1 : unit_s);
		if (!s->have_first_weight) {
			s->first_weight_s = w;
			s->have_first_weight = 1;
		} else if (w != s->first_weight_s) {
			s->weights_differ = 1;
		}
	}
	if (s->have_events)
		return emit_evented(s, ti, unit_s) ? 0 : 1;
	return emit_sampled(s, ti, unit_s) ? 0 : 1;
}

static int frame_end(struct ss *s)
{
	uint32_t idx;
	if (!s->fr_have_name)
		return fail(s, -EINVAL, "frame has no name");
	if (pyspy_frames_add(&s->p->frames, s->fr_name, s->fr_name_len, s->fr_file, s->fr_file_len, s->fr_line,
			     &idx))
		return fail(s, -ENOMEM, "");
	return 1;
}

static int sample_frame(struct ss *s, long long v)
{
	uint32_t f;
	if (v < 0 || v > INT32_MAX)
		return fail(s, -EINVAL, "frame index out of range");
	f = (uint32_t)v;
	if (v > s->max_frame) {
		s->max_frame = v;
		s->max_frame_off = off(s);
		if (s->p->frames.complete && f >= s->p->frames.n)
			return fail(s, -EINVAL, "frame index out of range");
	}
	if (s->depth == s->cur_cap) {
		uint32_t cap = s->cur_cap ? s->cur_cap * 2 : 256;
		uint32_t *c = realloc(s->cur, (size_t)cap * sizeof *c);
		if (!c)
			return fail(s, -ENOMEM, "");
		s->cur = c;
		s->cur_cap = cap;
	}
	s->cur[s->depth++] = f;
	s->cur_hash = (s->cur_hash ^ f) * 0x100000001b3ULL;
	return 1;
}

/* Walk the prefix tree for cur[], reusing the common prefix with the
 * previous walk. */
static int resolve_tree(struct ss *s, uint32_t *out)
{
	uint32_t node = 0, d = 0;
	if (s->depth > s->path_cap) {
		uint32_t cap = s->cur_cap;
		uint32_t *a = realloc(s->path_frame, (size_t)cap * sizeof *a);
		if (!a)
			return -ENOMEM;
		s->path_frame = a;
		uint32_t *b = realloc(s->path_node, (size_t)cap * sizeof *b);
		if (!b)
			return -ENOMEM;
		s->path_node = b;
		s->path_cap = cap;
	}
	while (d < s->depth && d < s->path_len && s->path_frame[d] == s->cur[d])
		node = s->path_node[d++];
	for (; d < s->depth; d++) {
		if (pyspy_stacks_child(&s->p->stacks, node, s->cur[d], &node))
			return -ENOMEM;
		s->path_frame[d] = s->cur[d];
		s->path_node[d] = node;
	}
	s->path_len = s->depth;
	*out = node;
	return 0;
}

static int memo_grow(struct ss *s)
{
	uint32_t cap = s->memo_cap ? s->memo_cap * 2 : 4096;
	struct memo *t = calloc(cap, sizeof *t);
	if (!t)
		return -ENOMEM;
	for (uint32_t i = 0; i < s->memo_cap; i++) {
		uint32_t j;
		if (!s->memo[i].node)
			continue;
		for (j = (uint32_t)s->memo[i].hash & (cap - 1); t[j].node; j = (j + 1) & (cap - 1))
			;
		t[j] = s->memo[i];
	}
	free(s->memo);
	s->memo = t;
	s->memo_cap = cap;
	return 0;
}

static int sample_end(struct ss *s)
{
	uint64_t h = s->cur_hash ^ s->depth;
	uint32_t node = 0, j;
	h ^= h >> 31;
	h *= 0x94d049bb133111ebULL;
	h ^= h >> 29;
	if (s->depth) {
		if ((s->memo_n + 1) * 2 > s->memo_cap && memo_grow(s))
			return fail(s, -ENOMEM, "");
		for (j = (uint32_t)h & (s->memo_cap - 1); s->memo[j].node; j = (j + 1) & (s->memo_cap - 1)) {
			const struct memo *m = &s->memo[j];
			if (m->hash == h && m->depth == s->depth &&
			    !memcmp(s->arena + m->off, s->cur, (size_t)s->depth * sizeof *s->cur)) {
				node = m->node;
				break;
			}
		}
		if (!node) {
			if (resolve_tree(s, &node))
				return fail(s, -ENOMEM, "");
			if (s->arena_n + s->depth <= MEMO_ARENA_MAX) {
				if (s->arena_n + s->depth > s->arena_cap) {
					size_t cap = (s->arena_n + s->depth) * 2;
					uint32_t *a = realloc(s->arena, cap * sizeof *a);
					if (!a)
						return fail(s, -ENOMEM, "");
					s->arena = a;
					s->arena_cap = cap;
				}
				memcpy(s->arena + s->arena_n, s->cur, (size_t)s->depth * sizeof *s->cur);
				s->memo[j] = (struct memo){h, s->arena_n, s->depth, node};
				s->arena_n += s->depth;
				s->memo_n++;
			}
		}
	}
	if (push((void **)&s->nodes, &s->nodes_cap, s->nnodes, sizeof *s->nodes))
		return fail(s, -ENOMEM, "");
	s->nodes[s->nnodes++] = node;
	return 1;
}

static int add_weight(struct ss *s, double w)
{
	if (!(w >= 0))
		return fail(s, -EINVAL, "negative weight");
	if (s->nruns && s->runs[s->nruns - 1].w == w) {
		s->runs[s->nruns - 1].n++;
	} else {
		if (push((void **)&s->runs, &s->runs_cap, s->nruns, sizeof *s->runs))
			return fail(s, -ENOMEM, "");
		s->runs[s->nruns].w = w;
		s->runs[s->nruns++].n = 1;
	}
	s->nweights++;
	return 1;
}

static int set_string(char **dst, size_t *dlen, const unsigned char *v, size_t n)
{
	char *c = realloc(*dst, n + 1);
	if (!c)
		return -ENOMEM;
	memcpy(c, v, n);
	c[n] = '\0';
	*dst = c;
	if (dlen)
		*dlen = n;
	return 0;
}

/* A top-level key's value: "profiles" and "shared" entered (once each),
 * "exporter" kept; the rest ignored. */
static int mv_top(struct ss *s, enum key key, enum vk k, const unsigned char *str, size_t len)
{
	if (key == K_PROFILES) {
		if (k != V_ARR)
			return fail(s, -EINVAL, "\"profiles\" is not an array");
		if (s->seen_profiles++)
			return fail(s, -EINVAL, "duplicate \"profiles\"");
		s->st = S_PROFILES;
	} else if (key == K_SHARED) {
		if (k != V_MAP)
			return fail(s, -EINVAL, "\"shared\" is not an object");
		if (s->seen_shared++)
			return fail(s, -EINVAL, "duplicate \"shared\"");
		s->st = S_SHARED;
	} else if (key == K_EXPORTER && k == V_STR) {
		snprintf(s->p->meta.exporter, sizeof s->p->meta.exporter, "%.*s", (int)len, (const char *)str);
	}
	return 1;
}

/* One field of a shared frame: name, file (or null), line (or null). */
static int mv_frame(struct ss *s, enum key key, enum vk k, int is_int, long long iv, const unsigned char *str,
		    size_t len)
{
	if (key == K_NAME) {
		if (k != V_STR)
			return fail(s, -EINVAL, "frame name is not a string");
		s->fr_have_name = 1;
		if (set_string(&s->fr_name, &s->fr_name_len, str, len))
			return fail(s, -ENOMEM, "");
	} else if (key == K_FILE) {
		if (k == V_STR) {
			if (set_string(&s->fr_file, &s->fr_file_len, str, len))
				return fail(s, -ENOMEM, "");
		} else if (k != V_NULL) {
			return fail(s, -EINVAL, "frame file is not a string");
		}
	} else if (key == K_LINE) {
		if (k == V_NUM && is_int && iv >= 0 && iv <= INT32_MAX)
			s->fr_line = (int32_t)iv;
		else if (k != V_NULL)
			return fail(s, -EINVAL, "frame line is not a non-negative integer");
	}
	return 1;
}

/* One field of a profile: its type, name, unit and span checked and kept;
 * "samples" handed to the fast scanner (returns 0 to stop yajl),
 * "weights" and "events" entered. */
static int mv_profile(struct ss *s, enum key key, enum vk k, double num, const unsigned char *str, size_t len)
{
	switch (key) {
	case K_TYPE:
		if (k != V_STR)
			return fail(s, -EINVAL, "profile type is not a string");
		if (len == 7 && !memcmp(str, "sampled", 7))
			s->evented = 0;
		else if (len == 7 && !memcmp(str, "evented", 7))
			s->evented = 1;
		else
			return fail(s, -EINVAL, "profile type is neither \"sampled\" nor \"evented\"");
		s->have_type = 1;
		return 1;
	case K_NAME:
		if (k != V_STR)
			return fail(s, -EINVAL, "profile name is not a string");
		if (set_string(&s->name, NULL, str, len))
			return fail(s, -ENOMEM, "");
		return 1;
	case K_UNIT:
		if (k != V_STR || len >= sizeof s->unit)
			return fail(s, -EINVAL, "profile unit is not a known unit");
		memcpy(s->unit, str, len);
		s->unit[len] = '\0';
		s->have_unit = 1;
		return 1;
	case K_START:
	case K_END:
		if (k != V_NUM)
			return fail(s, -EINVAL, "startValue/endValue is not a number");
		*(key == K_START ? &s->start_value : &s->end_value) = num;
		return 1;
	case K_SAMPLES:
		if (k != V_ARR)
			return fail(s, -EINVAL, "\"samples\" is not an array");
		if (s->have_samples++)
			return fail(s, -EINVAL, "duplicate \"samples\"");
		s->st = S_SAMPLES;
		/* Stop yajl right after '[': the driver scans the array. */
		s->takeover = 1;
		return 0;
	case K_WEIGHTS:
		if (k != V_ARR)
			return fail(s, -EINVAL, "\"weights\" is not an array");
		if (s->have_weights++)
			return fail(s, -EINVAL, "duplicate \"weights\"");
		s->st = S_WEIGHTS;
		return 1;
	case K_EVENTS:
		if (k != V_ARR)
			return fail(s, -EINVAL, "\"events\" is not an array");
		if (s->have_events++)
			return fail(s, -EINVAL, "duplicate \"events\"");
		s->st = S_EVENTS;
		return 1;
	default:
		return 1;
	}
}

/* One field of an evented profile's event: type O/C, at, frame. */
static int mv_event(struct ss *s, enum key key, enum vk k, double num, int is_int, long long iv,
		    const unsigned char *str, size_t len)
{
	if (key == K_TYPE) {
		if (k != V_STR || len != 1 || (str[0] != 'O' && str[0] != 'C'))
			return fail(s, -EINVAL, "event type is neither \"O\" nor \"C\"");
		s->ev.open = str[0] == 'O';
		s->ev_have_type = 1;
	} else if (key == K_AT) {
		if (k != V_NUM)
			return fail(s, -EINVAL, "event \"at\" is not a number");
		s->ev.at = num;
		s->ev_have_at = 1;
	} else if (key == K_FRAME) {
		if (k != V_NUM || !is_int)
			return fail(s, -EINVAL, "event frame is not an integer");
		if (iv < 0 || iv > INT32_MAX)
			return fail(s, -EINVAL, "frame index out of range");
		s->ev.frame = (uint32_t)iv;
		s->ev_have_frame = 1;
		if (iv > s->max_frame) {
			s->max_frame = iv;
			s->max_frame_off = off(s);
		}
	}
	return 1;
}

/* A value in a map, after its key: the state's handler. */
static int map_value(struct ss *s, enum vk k, double num, int is_int, long long iv, const unsigned char *str,
		     size_t len)
{
	enum key key = s->key;
	if (key == K_SKIP) {
		if (k == V_MAP || k == V_ARR)
			s->skip = 1;
		return 1;
	}
	switch (s->st) {
	case S_TOP:
		return mv_top(s, key, k, str, len);
	case S_SHARED:
		if (k != V_ARR)
			return fail(s, -EINVAL, "\"shared.frames\" is not an array");
		if (s->p->frames.n)
			return fail(s, -EINVAL, "duplicate \"frames\"");
		s->st = S_FRAMES;
		return 1;
	case S_FRAME:
		return mv_frame(s, key, k, is_int, iv, str, len);
	case S_PROFILE:
		return mv_profile(s, key, k, num, str, len);
	case S_EVENT:
		return mv_event(s, key, k, num, is_int, iv, str, len);
	default:
		return fail(s, -EINVAL, "unexpected value");
	}
}

static int value(struct ss *s, enum vk k, double num, int is_int, long long iv, const unsigned char *str,
		 size_t len)
{
	if (s->replay)
		return 1;
	if (s->skip) {
		if (k == V_MAP || k == V_ARR) {
			if (++s->skip > PYSPY_MAX_SKIP_DEPTH)
				return fail(s, -EINVAL, "nesting too deep");
		}
		return 1;
	}
	switch (s->st) {
	case S_TOP0:
		if (k != V_MAP)
			return fail(s, -EINVAL, "top-level value is not an object (not a speedscope file)");
		s->st = S_TOP;
		return 1;
	case S_PROFILES:
		if (k != V_MAP)
			return fail(s, -EINVAL, "a profile is not an object");
		profile_reset(s);
		s->st = S_PROFILE;
		return 1;
	case S_SAMPLES:
		if (k != V_ARR)
			return fail(s, -EINVAL, "a sample is not an array of frame indices");
		s->st = S_SAMPLE;
		s->depth = 0;
		s->cur_hash = 0xcbf29ce484222325ULL;
		return 1;
	case S_SAMPLE:
		if (k != V_NUM || !is_int)
			return fail(s, -EINVAL, "a sample holds something other than a frame index");
		return sample_frame(s, iv);
	case S_WEIGHTS:
		if (k != V_NUM)
			return fail(s, -EINVAL, "a weight is not a number");
		return add_weight(s, num);
	case S_EVENTS:
		if (k != V_MAP)
			return fail(s, -EINVAL, "an event is not an object");
		s->st = S_EVENT;
		s->ev_have_type = s->ev_have_at = s->ev_have_frame = 0;
		return 1;
	case S_FRAMES:
		if (k != V_MAP)
			return fail(s, -EINVAL, "a frame is not an object");
		s->st = S_FRAME;
		s->fr_have_name = 0;
		free(s->fr_file);
		s->fr_file = NULL;
		s->fr_file_len = 0;
		s->fr_line = -1;
		return 1;
	case S_DONE:
		return fail(s, -EINVAL, "unexpected value after the document");
	default:
		return map_value(s, k, num, is_int, iv, str, len);
	}
}

static int cb_null(void *c)
{
	return value(c, V_NULL, 0, 0, 0, NULL, 0);
}

static int cb_bool(void *c, int b)
{
	return value(c, V_BOOL, b, 0, 0, NULL, 0);
}

static int cb_int(void *c, long long v)
{
	return value(c, V_NUM, (double)v, 1, v, NULL, 0);
}

static int cb_double(void *c, double v)
{
	return value(c, V_NUM, v, 0, 0, NULL, 0);
}

static int cb_string(void *c, const unsigned char *v, size_t n)
{
	return value(c, V_STR, 0, 0, 0, v, n);
}

static int cb_start_map(void *c)
{
	return value(c, V_MAP, 0, 0, 0, NULL, 0);
}

static int cb_start_array(void *c)
{
	return value(c, V_ARR, 0, 0, 0, NULL, 0);
}

static int key_is(const unsigned char *k, size_t n, const char *lit)
{
	return strlen(lit) == n && !memcmp(k, lit, n);
}

static int cb_map_key(void *c, const unsigned char *k, size_t n)
{
	struct ss *s = c;
	enum key key = K_SKIP;
	if (s->replay)
		return 1;
	if (s->skip)
		return 1;
	switch (s->st) {
	case S_TOP:
		key = key_is(k, n, "profiles") ? K_PROFILES : key_is(k, n, "shared") ? K_SHARED
			: key_is(k, n, "exporter") ? K_EXPORTER : K_SKIP;
		break;
	case S_SHARED:
		key = key_is(k, n, "frames") ? K_FRAMES : K_SKIP;
		break;
	case S_FRAME:
		key = key_is(k, n, "name") ? K_NAME : key_is(k, n, "file") ? K_FILE
			: key_is(k, n, "line") ? K_LINE : K_SKIP;
		break;
	case S_PROFILE:
		key = key_is(k, n, "type") ? K_TYPE : key_is(k, n, "name") ? K_NAME
			: key_is(k, n, "unit") ? K_UNIT : key_is(k, n, "startValue") ? K_START
			: key_is(k, n, "endValue") ? K_END : key_is(k, n, "samples") ? K_SAMPLES
			: key_is(k, n, "weights") ? K_WEIGHTS : key_is(k, n, "events") ? K_EVENTS : K_SKIP;
		break;
	case S_EVENT:
		key = key_is(k, n, "type") ? K_TYPE : key_is(k, n, "at") ? K_AT
			: key_is(k, n, "frame") ? K_FRAME : K_SKIP;
		break;
	default:
		break;
	}
	s->key = key;
	return 1;
}

static int cb_end_map(void *c)
{
	struct ss *s = c;
	if (s->replay)
		return 1;
	if (s->skip) {
		s->skip--;
		return 1;
	}
	switch (s->st) {
	case S_TOP:
		s->st = S_DONE;
		return 1;
	case S_SHARED:
		s->st = S_TOP;
		return 1;
	case S_PROFILE: {
		int ok;
		s->st = S_PROFILES;
		ok = profile_end(s);
		s->nprofiles++;
		return ok;
	}
	case S_FRAME:
		s->st = S_FRAMES;
		return frame_end(s);
	case S_EVENT:
		if (!s->ev_have_type || !s->ev_have_at || !s->ev_have_frame)
			return fail(s, -EINVAL, "event lacks type, at or frame");
		if (push((void **)&s->events, &s->events_cap, s->nevents, sizeof *s->events))
			return fail(s, -ENOMEM, "");
		s->events[s->nevents++] = s->ev;
		s->st = S_EVENTS;
		return 1;
	default:
		return fail(s, -EINVAL, "unexpected end of object");
	}
}

static int cb_end_array(void *c)
{
	struct ss *s = c;
	if (s->replay)
		return 1;
	if (s->skip) {
		s->skip--;
		return 1;
	}
	switch (s->st) {
	case S_PROFILES:
		s->st = S_TOP;
		return 1;
	case S_SAMPLES:
	case S_WEIGHTS:
	case S_EVENTS:
		s->st = S_PROFILE;
		return 1;
	case S_SAMPLE:
		s->st = S_SAMPLES;
		return sample_end(s);
	case S_FRAMES:
		s->st = S_SHARED;
		s->p->frames.complete = 1;
		if (s->max_frame >= (int64_t)s->p->frames.n) {
			pyspy_set_err(s->err, "byte %llu: frame index %lld out of range (%u frames)",
				      (unsigned long long)s->max_frame_off, (long long)s->max_frame, s->p->frames.n);
			s->failed = -EINVAL;
			return 0;
		}
		return 1;
	default:
		return fail(s, -EINVAL, "unexpected end of array");
	}
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

/*
 * The fast path.  Nearly all of a profile's bytes are its "samples": arrays
 * of small integers, where yajl's per-token callbacks cost twice what the
 * data needs.  So when a profile's "samples" array opens, the callback
 * stops yajl right after the '[' and the driver scans the array with the
 * byte loop below (same checks, same messages, same frame-by-frame calls
 * as the callbacks).  At the closing ']' a fresh yajl handle is primed
 * with a prefix that leaves it in the same nesting (inside a profile
 * object, after a value) and parsing goes on from the next byte.
 */
enum fstate { F_FIRST, F_NEXT, F_AFTER, F_IN_FIRST, F_IN_NEXT, F_INT, F_IN_AFTER, F_DONE };

static const char restart_prefix[] = "{\"profiles\":[{\"samples\":[]";

static int is_ws(unsigned char c)
{
	return c == ' ' || c == '\n' || c == '\r' || c == '\t';
}

/* What fast_byte says of one byte: go on, stop at an error (s->failed
 * set), or the closing ']' of "samples" was consumed. */
enum { FS_GO, FS_ERR, FS_END };

/* One byte outside a number (not white space) in state *st: brackets and
 * commas move the state, a digit opens a number; the same checks and
 * messages as the yajl callbacks.  static inline: it runs once per
 * structural byte of the samples, the loop fast_scan exists for. */
static inline int fast_byte(struct ss *s, unsigned char c, int *st)
{
	switch (*st) {
	case F_FIRST:
	case F_NEXT:
		if (c == '[') {
			s->depth = 0;
			s->cur_hash = 0xcbf29ce484222325ULL;
			*st = F_IN_FIRST;
		} else if (c == ']' && *st == F_FIRST) {
			s->fast = 0;
			s->st = S_PROFILE;
			return FS_END;
		} else {
			fail(s, -EINVAL, c == '{' || c == '"' || c == '-' || (c >= '0' && c <= '9') || c == 't' ||
						 c == 'f' || c == 'n'
					 ? "a sample is not an array of frame indices"
					 : "invalid JSON in \"samples\"");
			return FS_ERR;
		}
		return FS_GO;
	case F_AFTER:
		if (c == ',') {
			*st = F_NEXT;
		} else if (c == ']') {
			s->fast = 0;
			s->st = S_PROFILE;
			return FS_END;
		} else {
			fail(s, -EINVAL, "invalid JSON in \"samples\" (expected ',' or ']')");
			return FS_ERR;
		}
		return FS_GO;
	case F_IN_FIRST:
	case F_IN_NEXT:
		if (c >= '0' && c <= '9') {
			s->fval = (uint64_t)(c - '0');
			s->fdigits = 1;
			*st = F_INT;
		} else if (c == '-') {
			fail(s, -EINVAL, "frame index out of range");
			return FS_ERR;
		} else if (c == ']' && *st == F_IN_FIRST) {
			if (!sample_end(s))
				return FS_ERR;
			*st = F_AFTER;
		} else {
			fail(s, -EINVAL, c == '[' || c == '{' || c == '"' || c == 't' || c == 'f' || c == 'n'
					 ? "a sample holds something other than a frame index"
					 : "invalid JSON in a sample");
			return FS_ERR;
		}
		return FS_GO;
	case F_IN_AFTER:
		if (c == ',') {
			*st = F_IN_NEXT;
		} else if (c == ']') {
			if (!sample_end(s))
				return FS_ERR;
			*st = F_AFTER;
		} else {
			fail(s, -EINVAL, "invalid JSON in a sample (expected ',' or ']')");
			return FS_ERR;
		}
		return FS_GO;
	default:
		return FS_GO;
	}
}

/* Scan buf[0, n) at file offset base.  Returns bytes used; sets s->fast = 0
 * at the closing ']'; on error s->failed is set.  The digits of a frame
 * index stay in this loop (the bulk of the bytes); the rest is fast_byte. */
static size_t fast_scan(struct ss *s, const unsigned char *buf, size_t n, uint64_t base)
{
	size_t i = 0;
	int st = s->fstate, r;
	for (; i < n; i++) {
		unsigned char c = buf[i];
		if (st == F_INT) {
			if (c >= '0' && c <= '9') {
				if (s->fval == 0 && s->fdigits) {
					s->fast_off = base + i;
					fail(s, -EINVAL, "invalid JSON (leading zero in a number)");
					return i;
				}
				if (s->fdigits < 12)
					s->fval = s->fval * 10 + (uint64_t)(c - '0');
				s->fdigits++;
				continue;
			}
			s->fast_off = base + i;
			if (c == '.' || c == 'e' || c == 'E') {
				fail(s, -EINVAL, "a sample holds something other than a frame index");
				return i;
			}
			if (!sample_frame(s, s->fval > INT32_MAX ? -1 : (long long)s->fval))
				return i;
			st = F_IN_AFTER;
		}
		if (is_ws(c))
			continue;
		s->fast_off = base + i;
		r = fast_byte(s, c, &st);
		if (r == FS_END)
			return i + 1;
		if (r == FS_ERR)
			return i;
	}
	s->fstate = st;
	return i;
}

static int restart_yajl(struct ss *s);

static int ss_drive(struct ss *s)
{
	struct pyspy_input *in = s->in;
	size_t pos = 0;
	yajl_status st;
	int rc;

	for (;;) {
		if (s->fast && pos < in->len) {
			pos += fast_scan(s, (const unsigned char *)in->buf + pos, in->len - pos, in->base + pos);
			if (s->failed)
				return s->failed;
			if (!s->fast && (rc = restart_yajl(s)))
				return rc;
		}
		if (!s->fast && pos < in->len) {
			s->feed_base = in->base + pos;
			st = yajl_parse(s->h, (const unsigned char *)in->buf + pos, in->len - pos);
			if (st == yajl_status_client_canceled && s->takeover) {
				s->takeover = 0;
				s->fast = 1;
				s->fstate = F_FIRST;
				pos += yajl_get_bytes_consumed(s->h);
				continue;
			}
			if (st != yajl_status_ok)
				return pyspy_json_fail(in, s->h, st, s->feed_base, &s->failed, s->err);
			pos = in->len;
		}
		if (pos < in->len)
			continue;
		if (in->eof)
			break;
		if ((rc = pyspy_input_fill(in, s->err)))
			return rc;
		pos = 0;
	}
	in->base += in->len;
	in->len = 0;
	if (s->fast) {
		pyspy_set_err(s->err, "byte %llu: truncated JSON (inside \"samples\")", (unsigned long long)in->base);
		return -EINVAL;
	}
	s->feed_base = in->base;
	st = yajl_complete_parse(s->h);
	if (st != yajl_status_ok)
		return pyspy_json_fail(in, s->h, st, s->feed_base, &s->failed, s->err);
	return 0;
}

static int restart_yajl(struct ss *s)
{
	yajl_free(s->h);
	s->h = yajl_alloc(&callbacks, NULL, s);
	if (!s->h) {
		pyspy_set_err(s->err, "out of memory");
		return -ENOMEM;
	}
	s->replay = 1;
	yajl_parse(s->h, (const unsigned char *)restart_prefix, sizeof restart_prefix - 1);
	s->replay = 0;
	return 0;
}

int pyspy_speedscope_parse(struct pyspy_input *in, struct pyspy_profile *p, pyspy_sample_fn fn, void *ctx,
			   struct em_error *err)
{
	struct ss s;
	int rc;

	memset(&s, 0, sizeof s);
	s.in = in;
	s.p = p;
	s.fn = fn;
	s.ctx = ctx;
	s.err = err;
	s.max_frame = -1;
	s.fr_line = -1;
	p->meta.format = PYSPY_FMT_SPEEDSCOPE;
	p->meta.times_known = 1;
	if (pyspy_stacks_init(&p->stacks)) {
		pyspy_set_err(err, "out of memory");
		return -ENOMEM;
	}
	s.h = yajl_alloc(&callbacks, NULL, &s);
	if (!s.h) {
		pyspy_set_err(err, "out of memory");
		return -ENOMEM;
	}
	rc = ss_drive(&s);
	if (!rc && !s.seen_profiles) {
		pyspy_set_err(err, "no \"profiles\" array (not a speedscope file)");
		rc = -EINVAL;
	}
	if (!rc && s.max_frame >= 0 && !p->frames.complete) {
		pyspy_set_err(err, "no \"shared.frames\" table");
		rc = -EINVAL;
	}
	if (!rc && s.max_frame >= (int64_t)p->frames.n) {
		pyspy_set_err(err, "byte %llu: frame index %lld out of range (%u frames)",
			      (unsigned long long)s.max_frame_off, (long long)s.max_frame, p->frames.n);
		rc = -EINVAL;
	}
	if (!rc) {
		p->meta.weights_constant = s.have_first_weight && !s.weights_differ;
		if (p->rate_override_hz > 0)
			p->meta.rate_hz = p->rate_override_hz;
		else if (p->meta.weights_constant && s.first_weight_s > 0 && p->meta.times_known)
			p->meta.rate_hz = 1.0 / s.first_weight_s;
	}
	yajl_free(s.h);
	profile_reset(&s);
	free(s.nodes);
	free(s.runs);
	free(s.events);
	free(s.path_frame);
	free(s.path_node);
	free(s.cur);
	free(s.memo);
	free(s.arena);
	free(s.fr_name);
	free(s.fr_file);
	return rc;
}
