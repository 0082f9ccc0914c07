/*
 * cmd_samples.c - `anchorpost samples PROFILE`: py-spy output to CSV.
 *
 * Rows stream out as the reader delivers them whenever frame names are
 * already known (chrometrace, raw); py-spy's speedscope files put the
 * frame table last, so there rows wait in the 24-byte-per-sample model
 * until it arrives.  --by-frame aggregates per stack node while reading
 * (memory independent of the sample count) and resolves names at the end.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "csv.h"
#include "cmd_writers.h"
#include "diag.h"
#include "outfile.h"
#include "pyspy.h"
#include "ringload.h"

/* raw rows repeat each stack `count` times; refuse absurd totals. */
#define RAW_MAX_ROWS 1000000000ULL

static void usage(FILE *fp)
{
	fprintf(fp,
		"usage: anchorpost samples PROFILE [-o OUT.csv] [--format speedscope|chrometrace|raw]\n"
		"                          [--ring RING [--pid PID]] [--rate HZ] [--by-frame]\n"
		"  py-spy output (format detected from the content) to CSV, one row per sample\n"
		"  (speedscope), per interval of an unchanged stack (chrometrace) or per sample\n"
		"  of each collapsed stack (raw: no time, t_rel_s and duration_s are empty):\n"
		"    profile,pid,tid,thread_name,sample_index,t_rel_s,duration_s,depth,\n"
		"    leaf_function,leaf_file,leaf_line,stack\n"
		"  stack is root;...;leaf with frames written 'func (file:line)'.  chrometrace\n"
		"  has no OS tid: tid is py-spy's pthread id there.\n"
		"  --ring RING  add unix_s,utc_iso: t_rel_s=0 is taken as the PROC_START of --pid\n"
		"               (default: the profile's pid when the file names one, else the\n"
		"               first process in the ring); the method and its expected error go\n"
		"               to OUT.csv.alignment.txt (stderr when writing to stdout)\n"
		"  --rate HZ    time speedscope samples as i/HZ (py-spy < 0.3.9 files whose\n"
		"               weights are not seconds)\n"
		"  --by-frame   per frame instead: function,file,line,self_samples,total_samples,\n"
		"               self_s,total_s (a frame counts once per sample for total)\n"
		"  -v           one summary line on stderr: format, exporter, threads, samples,\n"
		"               rate, and whether it looks recorded with py-spy --idle\n");
}

/* Samples waiting for the frame table: 24 bytes each.  Only speedscope
 * waits, and it delivers each thread's samples contiguously and in
 * order, so a sample's index is its position within its thread's run. */
struct pending {
	struct pyspy_sample *v;
	size_t n, cap;
};

struct out {
	struct csv c;
	const char *path;
	struct pending pend;
	/* formatted "func (file:line)" per frame, built once frames are complete */
	char **ftext;
	uint32_t *flen;
	uint32_t nftext;
	uint32_t *frames;
	uint32_t frames_cap;
	char *stack;
	size_t stack_cap, stack_len;
	uint32_t stack_node; /* node whose text is in stack, UINT32_MAX none */
	/* Each stack's finished CSV field (quoted as csv.c would), cached per
	 * node: 1.8 M rows usually name only thousands of stacks, and
	 * formatting and quote-scanning kilobytes per row dominated. */
	uint64_t *field_off;  /* UINT64_MAX: not cached */
	uint32_t *field_len;
	uint32_t field_cap;
	char *field_arena;
	size_t field_used, field_arena_cap;
	FILE *scratch;        /* memstream the fields are formatted into */
	char *scratch_buf;
	size_t scratch_len;
	int with_time;
	int64_t anchor_unix_ns;
	uint64_t rows;
};

static void oom(void)
{
	diag_fatal(NULL, "out of memory");
}

static void build_ftext(struct out *o, const struct pyspy_profile *p)
{
	char buf[64];
	if (o->nftext == p->frames.n)
		return;
	o->ftext = realloc(o->ftext, (size_t)p->frames.n * sizeof *o->ftext);
	o->flen = realloc(o->flen, (size_t)p->frames.n * sizeof *o->flen);
	if (!o->ftext || !o->flen)
		oom();
	for (uint32_t f = o->nftext; f < p->frames.n; f++) {
		const struct pyspy_frame *fr = &p->frames.v[f];
		char *s;
		size_t n;
		if (fr->line >= 0)
			snprintf(buf, sizeof buf, ":%d", fr->line);
		else
			buf[0] = '\0';
		if (fr->file || fr->line >= 0)
			n = (size_t)asprintf(&s, "%s (%s%s)", fr->name, fr->file ? fr->file : "", buf);
		else
			n = (size_t)asprintf(&s, "%s", fr->name);
		if ((int)n < 0)
			oom();
		o->ftext[f] = s;
		o->flen[f] = (uint32_t)n;
	}
	o->nftext = p->frames.n;
}

static void build_stack(struct out *o, const struct pyspy_profile *p, uint32_t node)
{
	uint32_t depth = p->stacks.v[node].depth;
	size_t len = 0;
	if (node == o->stack_node)
		return;
	if (depth > o->frames_cap) {
		o->frames = realloc(o->frames, (size_t)depth * sizeof *o->frames);
		if (!o->frames)
			oom();
		o->frames_cap = depth;
	}
	pyspy_stack_frames(&p->stacks, node, o->frames, o->frames_cap);
	for (uint32_t d = 0; d < depth; d++)
		len += o->flen[o->frames[d]] + 1;
	if (len + 1 > o->stack_cap) {
		o->stack_cap = (len + 1) * 2;
		if (!(o->stack = realloc(o->stack, o->stack_cap)))
			oom();
	}
	len = 0;
	for (uint32_t d = 0; d < depth; d++) {
		if (d)
			o->stack[len++] = ';';
		memcpy(o->stack + len, o->ftext[o->frames[d]], o->flen[o->frames[d]]);
		len += o->flen[o->frames[d]];
	}
	o->stack_len = len;
	o->stack_node = node;
}

#define FIELD_CACHE_MAX ((size_t)64 << 20)

/* A field whose bytes need no quoting (digits, or a field csv.c already
 * quoted): struct csv is public, a field is a separator plus its bytes. */
static void raw_field(struct csv *c, const char *s, size_t n)
{
	if (c->nfield++)
		putc(',', c->fp);
	fwrite(s, 1, n, c->fp);
}

static size_t u64_text(char *end, uint64_t v)
{
	char *p = end;
	do
		*--p = (char)('0' + v % 10);
	while (v /= 10);
	return (size_t)(end - p);
}

static void u64_field(struct csv *c, uint64_t v)
{
	char b[24];
	size_t n = u64_text(b + sizeof b, v);
	raw_field(c, b + sizeof b - n, n);
}

/* Seconds with 9 decimals, as csv_fixed(v, 9) but without printf. */
static void time_field(struct csv *c, double v)
{
	char b[48], *e = b + sizeof b;
	uint64_t ns;
	size_t n;
	if (isnan(v)) {
		csv_empty(c);
		return;
	}
	if (!(v >= 0 && v < 1e9)) {
		csv_fixed(c, v, 9);
		return;
	}
	/* Whole seconds apart first (v - floor(v) is exact), so rounding the
	 * fraction to ns matches printf's to the last digit but rarely. */
	double whole = floor(v);
	uint64_t sec = (uint64_t)whole;
	ns = (uint64_t)llround((v - whole) * 1e9);
	if (ns >= 1000000000) {
		sec++;
		ns -= 1000000000;
	}
	n = u64_text(e, ns);
	memset(e - 9, '0', 9 - n);
	e[-10] = '.';
	n = u64_text(e - 10, sec);
	raw_field(c, e - 10 - n, 10 + n);
}

/* Write the stack field of node, from the cache when it is there. */
static void stack_field(struct out *o, const struct pyspy_profile *p, uint32_t node)
{
	struct csv tmp;
	if (node >= o->field_cap) {
		uint32_t cap = o->field_cap ? o->field_cap : 4096;
		while (cap <= node)
			cap *= 2;
		o->field_off = realloc(o->field_off, (size_t)cap * sizeof *o->field_off);
		o->field_len = realloc(o->field_len, (size_t)cap * sizeof *o->field_len);
		if (!o->field_off || !o->field_len)
			oom();
		memset(o->field_off + o->field_cap, 0xff, (size_t)(cap - o->field_cap) * sizeof *o->field_off);
		o->field_cap = cap;
	}
	if (o->field_off[node] != UINT64_MAX) {
		raw_field(&o->c, o->field_arena + o->field_off[node], o->field_len[node]);
		return;
	}
	build_stack(o, p, node);
	if (!o->scratch && !(o->scratch = open_memstream(&o->scratch_buf, &o->scratch_len)))
		oom();
	fseeko(o->scratch, 0, SEEK_SET);
	csv_init(&tmp, o->scratch);
	csv_strn(&tmp, o->stack, o->stack_len);
	if (fflush(o->scratch))
		oom();
	raw_field(&o->c, o->scratch_buf, o->scratch_len);
	if (o->field_used + o->scratch_len > FIELD_CACHE_MAX)
		return;
	if (o->field_used + o->scratch_len > o->field_arena_cap) {
		o->field_arena_cap = (o->field_used + o->scratch_len) * 2;
		if (!(o->field_arena = realloc(o->field_arena, o->field_arena_cap)))
			oom();
	}
	memcpy(o->field_arena + o->field_used, o->scratch_buf, o->scratch_len);
	o->field_off[node] = o->field_used;
	o->field_len[node] = (uint32_t)o->scratch_len;
	o->field_used += o->scratch_len;
}

static void write_row(struct out *o, const struct pyspy_profile *p, const struct pyspy_sample_ev *s,
		      uint64_t index)
{
	const struct pyspy_thread *t = &p->threads[s->thread];
	const struct pyspy_node *nd = &p->stacks.v[s->stack];
	struct csv *c = &o->c;

	csv_str(c, t->profile);
	if (t->pid >= 0)
		u64_field(c, (uint64_t)t->pid);
	else
		csv_empty(c);
	csv_str(c, t->tid);
	csv_str(c, t->thread_name);
	u64_field(c, index);
	time_field(c, s->t_rel_s);
	time_field(c, s->duration_s);
	u64_field(c, nd->depth);
	if (s->stack) {
		const struct pyspy_frame *fr = &p->frames.v[nd->frame];
		csv_str(c, fr->name);
		csv_str(c, fr->file);
		if (fr->line >= 0)
			u64_field(c, (uint64_t)fr->line);
		else
			csv_empty(c);
	} else {
		csv_empty(c);
		csv_empty(c);
		csv_empty(c);
	}
	stack_field(o, p, s->stack);
	if (o->with_time) {
		if (isnan(s->t_rel_s)) {
			csv_empty(c);
			csv_empty(c);
		} else {
			int64_t ns = o->anchor_unix_ns + llround(s->t_rel_s * 1e9);
			char buf[48];
			snprintf(buf, sizeof buf, "%" PRId64 ".%09" PRId64, ns / 1000000000, ns % 1000000000);
			csv_str(c, buf);
			ring_clock_iso(ns, buf, sizeof buf);
			csv_str(c, buf);
		}
	}
	csv_row_end(c);
	o->rows++;
}

static void emit(struct out *o, const struct pyspy_profile *p, const struct pyspy_sample_ev *s)
{
	if (p->meta.format == PYSPY_FMT_RAW) {
		uint64_t first = o->rows;
		if (o->rows + s->count > RAW_MAX_ROWS)
			diag_fatal(o->path, "raw counts add up to more than %llu samples; use --by-frame",
				   (unsigned long long)RAW_MAX_ROWS);
		for (uint64_t k = 0; k < s->count; k++)
			write_row(o, p, s, first + k);
		return;
	}
	write_row(o, p, s, s->index);
}

static void flush_pending(struct out *o, const struct pyspy_profile *p)
{
	uint64_t *idx;
	build_ftext(o, p);
	if (!o->pend.n)
		return;
	if (!(idx = calloc((size_t)p->nthreads + 1, sizeof *idx)))
		oom();
	for (size_t i = 0; i < o->pend.n; i++) {
		const struct pyspy_sample *sm = &o->pend.v[i];
		struct pyspy_sample_ev ev = {
			.thread = sm->thread,
			.stack = sm->stack,
			.index = idx[sm->thread]++,
			.t_rel_s = sm->t_rel_s,
			.duration_s = sm->duration_s,
			.ts_us = NAN,
			.count = 1,
		};
		emit(o, p, &ev);
	}
	free(idx);
	o->pend.n = 0;
}

static int on_sample(void *ctx, const struct pyspy_profile *p, const struct pyspy_sample_ev *s,
		     struct pyspy_error *err)
{
	struct out *o = ctx;
	(void)err;
	if (!p->frames.complete) {
		if (o->pend.n == o->pend.cap) {
			o->pend.cap = o->pend.cap ? o->pend.cap * 2 : 65536;
			if (!(o->pend.v = realloc(o->pend.v, o->pend.cap * sizeof *o->pend.v)))
				oom();
		}
		if (s->index != 0 && (!o->pend.n || o->pend.v[o->pend.n - 1].thread != s->thread))
			diag_fatal(o->path, "internal: samples of a thread were not delivered in order");
		o->pend.v[o->pend.n++] = (struct pyspy_sample){s->thread, s->stack, s->t_rel_s, s->duration_s};
		return 0;
	}
	if (o->pend.n || o->nftext != p->frames.n)
		flush_pending(o, p);
	emit(o, p, s);
	return 0;
}

/* --by-frame: per stack node, the samples whose stack is exactly it. */
struct agg {
	uint64_t *count;
	double *secs;
	uint32_t cap;
};

static int on_sample_agg(void *ctx, const struct pyspy_profile *p, const struct pyspy_sample_ev *s,
			 struct pyspy_error *err)
{
	struct agg *a = ctx;
	(void)err;
	if (s->stack >= a->cap) {
		uint32_t cap = a->cap ? a->cap : 4096;
		while (cap <= s->stack)
			cap *= 2;
		a->count = realloc(a->count, (size_t)cap * sizeof *a->count);
		a->secs = realloc(a->secs, (size_t)cap * sizeof *a->secs);
		if (!a->count || !a->secs)
			oom();
		memset(a->count + a->cap, 0, (size_t)(cap - a->cap) * sizeof *a->count);
		memset(a->secs + a->cap, 0, (size_t)(cap - a->cap) * sizeof *a->secs);
		a->cap = cap;
	}
	(void)p;
	a->count[s->stack] += s->count;
	if (!isnan(s->duration_s))
		a->secs[s->stack] += s->duration_s;
	return 0;
}

struct frow {
	uint32_t canon;
	uint64_t self_n, total_n;
	double self_s, total_s;
};

static const struct pyspy_frames *sort_frames;

static int frow_cmp(const void *a, const void *b)
{
	const struct frow *x = a, *y = b;
	int r;
	if (x->total_n != y->total_n)
		return x->total_n > y->total_n ? -1 : 1;
	if (x->self_n != y->self_n)
		return x->self_n > y->self_n ? -1 : 1;
	r = strcmp(sort_frames->v[x->canon].name, sort_frames->v[y->canon].name);
	return r ? r : (x->canon > y->canon) - (x->canon < y->canon);
}

static void write_by_frame(const struct pyspy_profile *p, const struct agg *a, const char *out)
{
	static const char *const cols[] = {"function", "file", "line", "self_samples", "total_samples",
					   "self_s", "total_s", NULL};
	struct pyspy_frames canon_tab;
	uint32_t *canon = malloc(((size_t)p->frames.n + 1) * sizeof *canon);
	struct frow *rows;
	uint32_t *stamp;
	struct outfile of;
	struct csv c;
	int times = p->meta.times_known;

	memset(&canon_tab, 0, sizeof canon_tab);
	if (!canon)
		oom();
	/* py-spy's frame table can repeat (name, file, line): merge those. */
	for (uint32_t f = 0; f < p->frames.n; f++) {
		const struct pyspy_frame *fr = &p->frames.v[f];
		if (pyspy_frames_intern(&canon_tab, fr->name, strlen(fr->name), fr->file,
					fr->file ? strlen(fr->file) : 0, fr->line, &canon[f]))
			oom();
	}
	rows = calloc((size_t)canon_tab.n + 1, sizeof *rows);
	stamp = malloc(((size_t)canon_tab.n + 1) * sizeof *stamp);
	if (!rows || !stamp)
		oom();
	memset(stamp, 0xff, ((size_t)canon_tab.n + 1) * sizeof *stamp);
	for (uint32_t k = 0; k < canon_tab.n; k++)
		rows[k].canon = k;
	for (uint32_t node = 1; node < a->cap && node < p->stacks.n; node++) {
		if (!a->count[node])
			continue;
		uint32_t leaf = canon[p->stacks.v[node].frame];
		rows[leaf].self_n += a->count[node];
		rows[leaf].self_s += a->secs[node];
		for (uint32_t n = node; n; n = p->stacks.v[n].parent) {
			uint32_t k = canon[p->stacks.v[n].frame];
			if (stamp[k] == node)
				continue; /* recursion: once per sample */
			stamp[k] = node;
			rows[k].total_n += a->count[node];
			rows[k].total_s += a->secs[node];
		}
	}
	sort_frames = &canon_tab;
	qsort(rows, canon_tab.n, sizeof *rows, frow_cmp);
	outfile_open(&of, out);
	csv_init(&c, of.fp);
	csv_header(&c, cols);
	for (uint32_t k = 0; k < canon_tab.n; k++) {
		const struct pyspy_frame *fr = &canon_tab.v[rows[k].canon];
		if (!rows[k].total_n)
			continue;
		csv_str(&c, fr->name);
		csv_str(&c, fr->file);
		if (fr->line >= 0)
			csv_i64(&c, fr->line);
		else
			csv_empty(&c);
		csv_u64(&c, rows[k].self_n);
		csv_u64(&c, rows[k].total_n);
		time_field(&c, times ? rows[k].self_s : NAN);
		time_field(&c, times ? rows[k].total_s : NAN);
		csv_row_end(&c);
	}
	outfile_commit(&of);
	free(rows);
	free(stamp);
	free(canon);
	for (size_t i = 0; i < canon_tab.nblocks; i++)
		free(canon_tab.blocks[i]);
	free(canon_tab.blocks);
	free(canon_tab.v);
	free(canon_tab.hash);
}

/* The process-start anchor: PROC_START of pid, else of the profile's pid,
 * else the earliest started process of the ring. */
static const struct ring_proc *pick_proc(const struct ringload *rl, const struct pyspy_profile *p, long long pid,
					 const char *ring, char *why, size_t whylen)
{
	const struct ring_proc *best = NULL;
	if (pid >= 0) {
		best = ring_procs_find(&rl->procs, (uint32_t)pid);
		if (!best || !best->start_ns)
			diag_fatal(ring, "no process start record for --pid %lld", pid);
		snprintf(why, whylen, "the pid given with --pid");
		return best;
	}
	for (uint32_t t = 0; t < p->nthreads; t++) {
		if (p->threads[t].pid < 0)
			continue;
		best = ring_procs_find(&rl->procs, (uint32_t)p->threads[t].pid);
		if (best && best->start_ns) {
			snprintf(why, whylen, "the pid named in the profile");
			return best;
		}
	}
	best = NULL;
	for (size_t i = 0; i < rl->procs.n; i++) {
		const struct ring_proc *r = &rl->procs.p[i];
		if (r->start_ns && (!best || r->start_ns < best->start_ns))
			best = r;
	}
	if (!best)
		diag_fatal(ring, "no process start record in the ring");
	snprintf(why, whylen, "the profile names no pid in the ring: the first process that started");
	return best;
}

static void write_alignment(FILE *fp, const struct pyspy_profile *p, const char *profile, const char *ring,
			    const struct ring_proc *proc, const char *why, int64_t unix_ns)
{
	char iso[48];
	ring_clock_iso(unix_ns, iso, sizeof iso);
	fprintf(fp, "method: process-start anchor\n");
	fprintf(fp, "profile: %s (%s)\nring: %s\n", profile, pyspy_format_name(p->meta.format), ring);
	fprintf(fp, "anchor: PROC_START of pid %u (%s), mono_ns %" PRIu64 " = %s\n", proc->pid, why, proc->start_ns,
		iso);
	fprintf(fp, "assumes: t_rel_s = 0 is that instant (py-spy record -- CMD creates its clock just before it\n"
		    "         spawns CMD; libanchor writes PROC_START in CMD's first constructor)\n");
	/* Measured (tests/t_pyspy_ring.py, 2 loaded cores): the first sample
	 * in a function marked in the ring came 70-400 ms after the mark,
	 * because py-spy starts its clock before it spawns the command and
	 * the exec, loader and interpreter start-up take that long there. */
	fprintf(fp, "expected error: samples placed late by the time from py-spy starting its clock to the\n"
		    "         command's first constructor: a few ms on an idle machine, 70-400 ms measured on\n"
		    "         2 heavily loaded cores; ");
	if (p->meta.format == PYSPY_FMT_CHROMETRACE)
		fprintf(fp, "chrometrace ts are real monotonic times, so it stays constant\n");
	else
		fprintf(fp, "then growing: speedscope times are nominal (sample i at the sum of\n"
			    "         1/rate weights) while real intervals are random and any lag of py-spy is not\n"
			    "         recorded; without --idle, idle samples are dropped with no gap and the error is\n"
			    "         unbounded (idle guess: %s, %s); every thread's profile starts at 0\n"
			    "         even if the thread started later\n",
			pyspy_idle_name(p->meta.idle), p->meta.idle_reason);
	fprintf(fp, "fitted alignment: not applied at this stage\n");
}

static void summary(const char *in, const struct pyspy_profile *p)
{
	uint64_t n = 0;
	for (uint32_t t = 0; t < p->nthreads; t++)
		n += p->threads[t].nsamples;
	fprintf(stderr,
		"anchorpost: %s: format=%s exporter=%s threads=%u samples=%llu frames=%u stacks=%u unit=%s "
		"rate_hz=%g empty_samples=%llu idle=%s (%s)\n",
		in, pyspy_format_name(p->meta.format), p->meta.exporter[0] ? p->meta.exporter : "-", p->nthreads,
		(unsigned long long)n, p->frames.n, p->stacks.n ? p->stacks.n - 1 : 0, p->meta.unit, p->meta.rate_hz,
		(unsigned long long)p->meta.empty_samples, pyspy_idle_name(p->meta.idle), p->meta.idle_reason);
}

static const char *const cols[] = {"profile", "pid", "tid", "thread_name", "sample_index", "t_rel_s",
				   "duration_s", "depth", "leaf_function", "leaf_file", "leaf_line",
				   "stack", "unix_s", "utc_iso", NULL};
static const char *const cols_short[] = {"profile", "pid", "tid", "thread_name", "sample_index",
					 "t_rel_s", "duration_s", "depth", "leaf_function",
					 "leaf_file", "leaf_line", "stack", NULL};

static void out_free(struct out *o)
{
	for (uint32_t f = 0; f < o->nftext; f++)
		free(o->ftext[f]);
	free(o->ftext);
	free(o->flen);
	free(o->frames);
	free(o->stack);
	free(o->pend.v);
	free(o->field_off);
	free(o->field_len);
	free(o->field_arena);
	if (o->scratch)
		fclose(o->scratch);
	free(o->scratch_buf);
}

/* The anchor of --ring: t_rel_s = 0 at the picked process's start, and
 * the alignment note beside out (stderr when out is stdout). */
static void anchor_to_ring(struct out *o, const struct pyspy_profile *p, const char *in, const struct ringload *rl,
			   const char *ring, long long pid, const char *out)
{
	const struct ring_proc *proc;
	char why[96];
	proc = pick_proc(rl, p, pid, ring, why, sizeof why);
	o->anchor_unix_ns = ring_clock_unix_ns(&rl->clock, proc->start_ns);
	if (!o->anchor_unix_ns)
		diag_fatal(ring, "no clock SYNC record: cannot map to UTC");
	o->with_time = 1;
	if (strcmp(out, "-")) {
		struct outfile af;
		char *apath;
		if (asprintf(&apath, "%s.alignment.txt", out) < 0)
			oom();
		outfile_open(&af, apath);
		write_alignment(af.fp, p, in, ring, proc, why, o->anchor_unix_ns);
		outfile_commit(&af);
		free(apath);
	} else {
		write_alignment(stderr, p, in, ring, proc, why, o->anchor_unix_ns);
	}
}

int samples_write_ring(const struct pyspy_profile *p, const char *in, const struct ringload *rl, const char *ring,
		       long long pid, const char *out)
{
	struct outfile of;
	struct out o;
	uint64_t *idx;

	if (!p->meta.times_known)
		diag_fatal(in, "%s profile has no sample times, so --ring cannot place it (%s)",
			   pyspy_format_name(p->meta.format),
			   p->meta.format == PYSPY_FMT_RAW ? "raw format" : "pass --rate HZ");
	memset(&o, 0, sizeof o);
	o.path = in;
	o.stack_node = UINT32_MAX;
	anchor_to_ring(&o, p, in, rl, ring, pid, out);
	outfile_open(&of, out);
	setvbuf(of.fp, NULL, _IOFBF, 1 << 20);
	csv_init(&o.c, of.fp);
	csv_header(&o.c, cols);
	build_ftext(&o, p);
	/* The loaded samples in the order the reader delivered them; a
	 * sample's index is its position within its thread, as the reader
	 * counts (pyspy_sample_ev.index). */
	if (!(idx = calloc((size_t)p->nthreads + 1, sizeof *idx)))
		oom();
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct pyspy_sample *sm = &p->samples[i];
		struct pyspy_sample_ev ev = {
			.thread = sm->thread,
			.stack = sm->stack,
			.index = idx[sm->thread]++,
			.t_rel_s = sm->t_rel_s,
			.duration_s = sm->duration_s,
			.ts_us = p->ts_us ? p->ts_us[i] : NAN,
			.count = p->counts ? p->counts[i] : 1,
		};
		emit(&o, p, &ev);
	}
	free(idx);
	if (ferror(of.fp))
		diag_fatal(out, "write error");
	outfile_commit(&of);
	out_free(&o);
	return 0;
}

int cmd_samples(int argc, char **argv)
{
	const char *in = NULL, *out = "-", *ring = NULL;
	int fmt = PYSPY_FMT_AUTO, by_frame = 0, verbose = 0;
	long long pid = -1;
	double rate = 0;
	struct pyspy_profile p;
	struct pyspy_error err;
	struct ringload rl;
	struct outfile of;
	struct out o;
	int rc;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(a, "-o") && i + 1 < argc) {
			out = argv[++i];
		} else if (!strcmp(a, "--format") && i + 1 < argc) {
			if ((fmt = pyspy_format_parse(argv[++i])) < 0)
				diag_fatal(NULL, "samples: unknown format '%s' (speedscope, chrometrace, raw)", argv[i]);
		} else if (!strcmp(a, "--ring") && i + 1 < argc) {
			ring = argv[++i];
		} else if (!strcmp(a, "--pid") && i + 1 < argc) {
			char *end;
			pid = strtoll(argv[++i], &end, 10);
			if (*end || pid < 0)
				diag_fatal(NULL, "samples: --pid wants a process id, not '%s'", argv[i]);
		} else if (!strcmp(a, "--rate") && i + 1 < argc) {
			char *end;
			rate = strtod(argv[++i], &end);
			if (*end || !(rate > 0) || !isfinite(rate))
				diag_fatal(NULL, "samples: --rate wants samples per second, not '%s'", argv[i]);
		} else if (!strcmp(a, "--by-frame")) {
			by_frame = 1;
		} else if (!strcmp(a, "-v") || !strcmp(a, "--verbose")) {
			verbose = 1;
		} else if (a[0] == '-' && a[1]) {
			usage(stderr);
			diag_fatal(NULL, "samples: unknown option '%s'", a);
		} else if (!in) {
			in = a;
		} else {
			diag_fatal(NULL, "samples: more than one profile given ('%s')", a);
		}
	}
	if (!in) {
		usage(stderr);
		return 2;
	}
	if (by_frame && ring)
		diag_fatal(NULL, "samples: --ring has no meaning with --by-frame");

	pyspy_profile_init(&p);
	p.rate_override_hz = rate;
	if (by_frame) {
		struct agg a = {0};
		if ((rc = pyspy_read(in, (enum pyspy_format)fmt, &p, on_sample_agg, &a, &err)))
			diag_fatal(in, "%s", err.msg);
		write_by_frame(&p, &a, out);
		if (verbose)
			summary(in, &p);
		free(a.count);
		free(a.secs);
		pyspy_profile_free(&p);
		return 0;
	}

	memset(&o, 0, sizeof o);
	o.path = in;
	o.stack_node = UINT32_MAX;
	if (ring) {
		/* Only formats with times can be anchored; find out before
		 * writing anything (the header depends on it). */
		struct pyspy_profile probe;
		pyspy_profile_init(&probe);
		probe.rate_override_hz = rate;
		if (pyspy_read(in, (enum pyspy_format)fmt, &probe, NULL, NULL, &err))
			diag_fatal(in, "%s", err.msg);
		if (!probe.meta.times_known)
			diag_fatal(in, "%s profile has no sample times, so --ring cannot place it (%s)",
				   pyspy_format_name(probe.meta.format),
				   probe.meta.format == PYSPY_FMT_RAW ? "raw format" : "pass --rate HZ");
		ringload_open(&rl, ring);
		anchor_to_ring(&o, &probe, in, &rl, ring, pid, out);
		ringload_close(&rl);
		pyspy_profile_free(&probe);
	}
	outfile_open(&of, out);
	setvbuf(of.fp, NULL, _IOFBF, 1 << 20);
	csv_init(&o.c, of.fp);
	csv_header(&o.c, o.with_time ? cols : cols_short);
	if ((rc = pyspy_read(in, (enum pyspy_format)fmt, &p, on_sample, &o, &err)))
		diag_fatal(in, "%s", err.msg);
	flush_pending(&o, &p);
	if (ferror(of.fp))
		diag_fatal(out, "write error");
	outfile_commit(&of);
	if (verbose)
		summary(in, &p);
	if (p.meta.format == PYSPY_FMT_RAW)
		diag_warn(in, "raw format has no time: t_rel_s and duration_s are empty, one row per sample");
	else if (!p.meta.times_known)
		diag_warn(in, "unit '%s' is not a time: t_rel_s and duration_s are empty (--rate HZ sets them)",
			  p.meta.unit);
	out_free(&o);
	pyspy_profile_free(&p);
	return 0;
}
