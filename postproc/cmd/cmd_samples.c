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

#include "align/align_pyspy.h"
#include "align/align_torch.h"
#include "cmd/cmd_fatal.h"
#include "cmd/cmd_writers.h"
#include "cmd/commands.h"
#include "cmd/options.h"
#include "input/pyspy.h"
#include "input/ringload.h"
#include "output/csv.h"
#include "output/outfile.h"
#include "output/timebase.h"
#include "phase/phase_set.h"
#include "util/diag.h"

/* raw rows repeat each stack `count` times; refuse absurd totals. */
#define RAW_MAX_ROWS 1000000000ULL

static const struct cmd_usage samples_usage = {
	.name = "samples",
	.usage = "[--profile] PROFILE [-o OUT.csv] [--format F] [--ring RING] [--rate HZ] [--stack-text] [--by-frame]",
	.about = "  py-spy output (format detected from the content) to CSV, one row per sample\n"
		 "  (speedscope), per interval of an unchanged stack (chrometrace) or per sample\n"
		 "  of each collapsed stack (raw: no time, t_rel_s and duration_s are empty):\n"
		 "    thread,pid,tid,thread_name,sample_index,t_rel_s,duration_s[,t_s,unix_s,at_s,placed,place_ms],depth,stack_id\n"
		 "  Stacks are ids into companion tables written beside OUT (OUT minus .csv, plus):\n"
		 "    .stacks.csv   stack_id,depth,frame_id   (depth 0 = root; one row per frame)\n"
		 "    .frames.csv   frame_id,function,file,line\n"
		 "    .threads.csv  thread,profile,pid,tid,pthread_id,thread_name,samples\n"
		 "  --stack-text (implied with -o -) adds the whole stack as text, root;...;leaf.\n"
		 "  tid is the OS thread id (chrometrace names pthread ids only: the tid comes\n"
		 "  from the ring with --ring, else it is empty).  Units: docs/report.md.\n",
};

static const struct opt_choice format_choices[] = {
	{"auto", PYSPY_FMT_AUTO, "from the content"},
	{"speedscope", PYSPY_FMT_SPEEDSCOPE, NULL},
	{"chrometrace", PYSPY_FMT_CHROMETRACE, NULL},
	{"raw", PYSPY_FMT_RAW, NULL},
	{NULL, 0, NULL},
};

/* Samples waiting for the frame table: 24 bytes each.  Only speedscope
 * waits, and it delivers each thread's samples contiguously and in
 * order, so a sample's index is its position within its thread's run. */
struct pending {
	struct pyspy_sample *v;
	size_t n, cap;
};

struct out {
	struct csv c;
	/* The header waits for the first row, so that a profile that fails
	 * to parse leaves nothing but the error (-o - included). */
	const char *const *header;
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
	int stack_text;       /* the stack_text column */
	/* --ring: the run's one alignment (align_pyspy.h), and its UTC map */
	const struct align_pyspy *al;
	const struct ring_clock *clk;
	uint64_t base_ns;
	char **thread_prefix; /* per thread: "thread,pid,tid,thread_name" */
	uint32_t nprefix;
	char **tid_over, **name_over; /* per thread, from the ring (NULL: none) */
	uint8_t *used;        /* per stack node: a sample names it */
	uint32_t used_cap;
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

/* The thread's leading fields, quoted once: they repeat on every row. */
static const char *thread_prefix(struct out *o, const struct pyspy_profile *p, uint32_t k)
{
	if (k >= o->nprefix) {
		char **np = realloc(o->thread_prefix, (size_t)p->nthreads * sizeof *np);
		if (!np)
			oom();
		for (uint32_t j = o->nprefix; j < p->nthreads; j++)
			np[j] = NULL;
		o->thread_prefix = np;
		o->nprefix = p->nthreads;
	}
	if (!o->thread_prefix[k]) {
		const struct pyspy_thread *t = &p->threads[k];
		char *buf = NULL;
		size_t len = 0;
		FILE *fp = open_memstream(&buf, &len);
		struct csv tc;
		if (!fp)
			oom();
		csv_init(&tc, fp);
		csv_u64(&tc, k);
		if (t->pid >= 0)
			csv_u64(&tc, (uint64_t)t->pid);
		else if (o->al && k < o->al->nthr && o->al->thr[k].ring_pid)
			csv_u64(&tc, o->al->thr[k].ring_pid); /* speedscope names no pid: the ring's */
		else
			csv_empty(&tc);
		if (o->tid_over && o->tid_over[k])
			csv_str(&tc, o->tid_over[k]);
		else if (p->meta.format == PYSPY_FMT_CHROMETRACE)
			csv_empty(&tc); /* a pthread id, not an OS tid: threads.csv has it */
		else
			csv_str(&tc, t->tid);
		csv_str(&tc, o->name_over && o->name_over[k] ? o->name_over[k] : t->thread_name);
		if (fclose(fp))
			oom();
		o->thread_prefix[k] = buf;
	}
	return o->thread_prefix[k];
}

static void mark_used(struct out *o, uint32_t node)
{
	if (node >= o->used_cap) {
		uint32_t cap = o->used_cap ? o->used_cap : 4096;
		while (cap <= node)
			cap *= 2;
		if (!(o->used = realloc(o->used, cap)))
			oom();
		memset(o->used + o->used_cap, 0, cap - o->used_cap);
		o->used_cap = cap;
	}
	o->used[node] = 1;
}

/* With --ring: the sample's instant on the timeline and whether it is
 * placed (align_pyspy.h: unplaced), beside its slice. */
struct row_place {
	double at_s;
	int placed;
	double place_ms;
};

/* One row; t_s: the sample's aligned slice start (--ring), else unused. */
static void write_row(struct out *o, const struct pyspy_profile *p, const struct pyspy_sample_ev *s,
		      uint64_t index, double t_s, const struct row_place *rp)
{
	const struct pyspy_node *nd = &p->stacks.v[s->stack];
	struct csv *c = &o->c;
	const char *pre;

	if (o->header) {
		csv_header(c, o->header);
		o->header = NULL;
	}
	pre = thread_prefix(o, p, s->thread);
	raw_field(c, pre, strlen(pre));
	c->nfield += 3; /* the prefix holds four fields */
	u64_field(c, index);
	time_field(c, s->t_rel_s);
	time_field(c, s->duration_s);
	if (o->al) {
		char buf[48];
		size_t n;
		csv_fixed(c, t_s, 9);
		if ((n = timebase_unix_text(o->clk, o->base_ns, t_s, buf, sizeof buf)))
			raw_field(c, buf, n);
		else
			csv_empty(c);
		csv_fixed(c, rp->at_s, 9);
		u64_field(c, (uint64_t)rp->placed);
		csv_f64(c, rp->place_ms, 6);
	}
	u64_field(c, nd->depth);
	u64_field(c, s->stack);
	mark_used(o, s->stack);
	if (o->stack_text)
		stack_field(o, p, s->stack);
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
			write_row(o, p, s, first + k, NAN, NULL);
		return;
	}
	write_row(o, p, s, s->index, NAN, NULL);
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

/* chrometrace names threads by pthread id; the aligned ring thread gives
 * the OS tid, and its THREAD record the thread's name. */
static void ring_thread_names(struct out *o, const struct ringload *rl, const struct pyspy_profile *p,
			      const struct align_pyspy *al)
{
	o->tid_over = calloc(p->nthreads + 1, sizeof *o->tid_over);
	o->name_over = calloc(p->nthreads + 1, sizeof *o->name_over);
	if (!o->tid_over || !o->name_over)
		oom();
	for (uint32_t k = 0; k < p->nthreads && k < al->nthr; k++) {
		const struct align_pyspy_thread *at = &al->thr[k];
		if (!at->ring_tid)
			continue;
		if (p->meta.format == PYSPY_FMT_CHROMETRACE && asprintf(&o->tid_over[k], "%u", at->ring_tid) < 0)
			oom();
		if (p->threads[k].thread_name && p->threads[k].thread_name[0])
			continue;
		for (size_t i = 0; i < rl->rf.nev; i++) {
			const struct ring_event *e = &rl->rf.ev[i];
			if (e->kind == ANCHOR_KIND_THREAD && e->pid == at->ring_pid && e->tid == at->ring_tid &&
			    e->text && e->text[0]) {
				if (!(o->name_over[k] = strdup(e->text)))
					oom();
				break;
			}
		}
	}
}

static void write_alignment(FILE *fp, const struct pyspy_profile *p, const char *profile, const char *ring,
			    const struct align_pyspy *al, const struct ringload *rl, uint64_t base_ns)
{
	char iso[48], line[2048];
	ring_clock_iso(ring_clock_unix_ns(&rl->clock, base_ns), iso, sizeof iso);
	align_pyspy_describe(al, p, line, sizeof line);
	fprintf(fp, "method: %s (the fit functions, timeline and trace.json use: align_pyspy.h)\n", al->method);
	fprintf(fp, "profile: %s (%s)\nring: %s\n", profile, pyspy_format_name(p->meta.format), ring);
	fprintf(fp, "py-spy alignment: %s\n", line);
	fprintf(fp, "t_s: start of the sample's aligned slice, seconds since the ring's first record "
		    "(mono_ns %" PRIu64 " = %s)\n", base_ns, iso);
	fprintf(fp, "unix_s: t_s in UTC through the ring's SYNC records (%zu)\n", rl->clock.n);
	fprintf(fp, "at_s: the sample's own instant on the same timeline; placed: 0 when its time is not known well "
		    "enough to name its phase (CANNOT PLACE) or it lies outside its process's life; place_ms: the "
		    "placement's stated uncertainty\n");
}

/* OUT minus ".csv", plus suffix. */
static char *companion(const char *out, const char *suffix)
{
	size_t n = strlen(out);
	char *s;
	if (n > 4 && !strcmp(out + n - 4, ".csv"))
		n -= 4;
	if (asprintf(&s, "%.*s%s", (int)n, out, suffix) < 0)
		oom();
	return s;
}

/* stacks, frames and threads tables beside OUT. */
/* OUT.stacks.csv: one row per frame of every stack the samples used. */
static void write_stacks_csv(const struct out *o, const struct pyspy_profile *p, const char *out)
{
	static const char *const scols[] = {"stack_id", "depth", "frame_id", NULL};
	struct outfile of;
	struct csv c;
	char *path = companion(out, ".stacks.csv");
	uint32_t *fr = NULL, cap = 0;

	outfile_open(&of, path);
	setvbuf(of.fp, NULL, _IOFBF, 1 << 20);
	csv_init(&c, of.fp);
	csv_header(&c, scols);
	for (uint32_t node = 0; node < o->used_cap && node < p->stacks.n; node++) {
		uint32_t depth = p->stacks.v[node].depth;
		if (!o->used[node])
			continue;
		if (depth > cap) {
			cap = depth;
			if (!(fr = realloc(fr, (size_t)cap * sizeof *fr)))
				oom();
		}
		pyspy_stack_frames(&p->stacks, node, fr, cap);
		for (uint32_t d = 0; d < depth; d++) {
			u64_field(&c, node);
			u64_field(&c, d);
			u64_field(&c, fr[d]);
			csv_row_end(&c);
		}
	}
	free(fr);
	outfile_commit(&of);
	free(path);
}

/* OUT.frames.csv: every frame of the profile (line empty when unknown). */
static void write_frames_csv(const struct pyspy_profile *p, const char *out)
{
	static const char *const fcols[] = {"frame_id", "function", "file", "line", NULL};
	struct outfile of;
	struct csv c;
	char *path = companion(out, ".frames.csv");

	outfile_open(&of, path);
	csv_init(&c, of.fp);
	csv_header(&c, fcols);
	for (uint32_t f = 0; f < p->frames.n; f++) {
		u64_field(&c, f);
		csv_str(&c, p->frames.v[f].name);
		csv_str(&c, p->frames.v[f].file);
		if (p->frames.v[f].line >= 0)
			csv_i64(&c, p->frames.v[f].line);
		else
			csv_empty(&c);
		csv_row_end(&c);
	}
	outfile_commit(&of);
	free(path);
}

/* OUT.threads.csv: py-spy's threads with the pid and name the ring gave
 * them where the profile lacks them. */
static void write_threads_csv(const struct out *o, const struct pyspy_profile *p, const char *out)
{
	static const char *const tcols[] = {"thread", "profile", "pid", "tid", "pthread_id", "thread_name",
					    "samples", NULL};
	struct outfile of;
	struct csv c;
	char *path = companion(out, ".threads.csv");

	outfile_open(&of, path);
	csv_init(&c, of.fp);
	csv_header(&c, tcols);
	for (uint32_t k = 0; k < p->nthreads; k++) {
		const struct pyspy_thread *t = &p->threads[k];
		csv_u64(&c, k);
		csv_str(&c, t->profile);
		if (t->pid >= 0)
			csv_i64(&c, t->pid);
		else if (o->al && k < o->al->nthr && o->al->thr[k].ring_pid)
			csv_u64(&c, o->al->thr[k].ring_pid);
		else
			csv_empty(&c);
		if (o->tid_over && o->tid_over[k])
			csv_str(&c, o->tid_over[k]);
		else if (p->meta.format == PYSPY_FMT_CHROMETRACE)
			csv_empty(&c);
		else
			csv_str(&c, t->tid);
		if (t->pthread_id)
			csv_u64(&c, t->pthread_id);
		else
			csv_empty(&c);
		csv_str(&c, o->name_over && o->name_over[k] ? o->name_over[k] : t->thread_name);
		csv_u64(&c, t->nsamples);
		csv_row_end(&c);
	}
	outfile_commit(&of);
	free(path);
}

static void write_companions(const struct out *o, const struct pyspy_profile *p, const char *out)
{
	write_stacks_csv(o, p, out);
	write_frames_csv(p, out);
	write_threads_csv(o, p, out);
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

static const char *const cols[] = {"thread", "pid", "tid", "thread_name", "sample_index", "t_rel_s",
				   "duration_s", "t_s", "unix_s", "at_s", "placed", "place_ms", "depth", "stack_id",
				   "stack_text", NULL};
static const char *const cols_short[] = {"thread", "pid", "tid", "thread_name", "sample_index",
					 "t_rel_s", "duration_s", "depth", "stack_id", "stack_text", NULL};

/* The header: cols (or cols_short) without stack_text unless o has it. */
static void set_header(struct out *o, const char **hdr, int ring)
{
	const char *const *src = ring ? cols : cols_short;
	size_t n = 0;
	for (; *src; src++)
		if (strcmp(*src, "stack_text") || o->stack_text)
			hdr[n++] = *src;
	hdr[n] = NULL;
	o->header = hdr;
}

static void out_free(struct out *o, const struct pyspy_profile *p)
{
	for (uint32_t f = 0; f < o->nftext; f++)
		free(o->ftext[f]);
	for (uint32_t k = 0; k < o->nprefix; k++)
		free(o->thread_prefix[k]);
	for (uint32_t k = 0; o->tid_over && k < p->nthreads; k++) {
		free(o->tid_over[k]);
		free(o->name_over[k]);
	}
	free(o->tid_over);
	free(o->name_over);
	free(o->thread_prefix);
	free(o->used);
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

/* --ring: one row per sample of the loaded profile, aligned with the ring
 * (align_pyspy_fit, as every other output aligns it), its slice start on
 * the timeline; the alignment note beside out (stderr for a stream). */
static void write_aligned(struct out *o, const struct pyspy_profile *p, const char *in, const struct ringload *rl,
			  const struct align_pyspy *al, uint64_t base_ns, const char *ring, const char *out)
{
	uint64_t *idx;

	o->base_ns = base_ns;
	o->al = al;
	o->clk = &rl->clock;
	ring_thread_names(o, rl, p, al);
	if (!outfile_is_stream(out)) {
		struct outfile af;
		char *apath;
		if (asprintf(&apath, "%s.alignment.txt", out) < 0)
			oom();
		outfile_open(&af, apath);
		write_alignment(af.fp, p, in, ring, al, rl, o->base_ns);
		outfile_commit(&af);
		free(apath);
	} else {
		write_alignment(stderr, p, in, ring, al, rl, o->base_ns);
	}
	build_ftext(o, p);
	if (!(idx = calloc((size_t)p->nthreads + 1, sizeof *idx)))
		oom();
	for (size_t i = 0; i < p->nsamples; i++) {
		const struct pyspy_sample *sm = &p->samples[i];
		struct pyspy_sample_ev ev = {
			.thread = sm->thread,
			.stack = sm->stack,
			.t_rel_s = sm->t_rel_s,
			.duration_s = sm->duration_s,
			.ts_us = NAN,
			.count = 1,
		};
		double t0, t1;
		align_pyspy_slice(al, p, i, &t0, &t1);
		struct row_place rp = {align_pyspy_time(al, sm->thread, sm->t_rel_s),
				       !(al->unplaced && al->unplaced[i]), al->uncert_ms};
		write_row(o, p, &ev, idx[sm->thread]++, t0, &rp);
	}
	free(idx);
	o->al = NULL;
}

int samples_write_ring(const struct pyspy_profile *p, const char *in, const struct ringload *rl,
		       const struct align_pyspy *al, uint64_t base_ns, const char *ring, const char *out,
		       int stack_text)
{
	struct outfile of;
	struct em_error werr;
	struct out o;
	const char *hdr[16];

	if (!p->meta.times_known)
		diag_fatal(in, "%s profile has no sample times, so --ring cannot place it (%s)",
			   pyspy_format_name(p->meta.format),
			   p->meta.format == PYSPY_FMT_RAW ? "raw format" : "pass --rate HZ");
	if (!rl->clock.n)
		diag_fatal(ring, "no clock SYNC record: cannot map to UTC");
	memset(&o, 0, sizeof o);
	o.path = in;
	o.stack_node = UINT32_MAX;
	o.stack_text = stack_text || outfile_is_stream(out);
	set_header(&o, hdr, 1);
	outfile_open(&of, out);
	setvbuf(of.fp, NULL, _IOFBF, 1 << 20);
	csv_init(&o.c, of.fp);
	write_aligned(&o, p, in, rl, al, base_ns, ring, out);
	if (o.header)
		csv_header(&o.c, o.header);
	if (outfile_error(&of, out, &werr)) /* before the companions */
		diag_fatal(werr.file, "%s", werr.msg);
	if (!outfile_is_stream(out))
		write_companions(&o, p, out);
	outfile_commit(&of);
	out_free(&o, p);
	return 0;
}

/* `samples --ring`: load the profile and the ring, align them as the run
 * model does (run_model.c), then samples_write_ring.  Nothing is written
 * before the profile and the ring are read and aligned. */
static int samples_ring(const char *in, int fmt, double rate, const char *ring, const char *out, int stack_text,
			int verbose)
{
	struct pyspy_profile p;
	struct pyspy_error err;
	struct ringload rl;
	struct phase_set ph;
	struct align_pyspy al;
	char aerr[320], script[1024];
	uint64_t base_ns;

	pyspy_profile_init(&p);
	p.rate_override_hz = rate;
	if (pyspy_load(in, (enum pyspy_format)fmt, &p, &err))
		diag_fatal(in, "%s", err.msg);
	if (!p.meta.times_known)
		diag_fatal(in, "%s profile has no sample times, so --ring cannot place it (%s)",
			   pyspy_format_name(p.meta.format),
			   p.meta.format == PYSPY_FMT_RAW ? "raw format" : "pass --rate HZ");
	ringload_open(&rl, ring);
	if (!rl.rf.nev)
		diag_fatal(ring, "the ring holds no records");
	if (!rl.clock.n)
		diag_fatal(ring, "no clock SYNC record: cannot map to UTC");
	memset(&ph, 0, sizeof ph);
	memset(&al, 0, sizeof al);
	if (phase_set_build(rl.rf.ev, rl.rf.nev, &rl.procs, &ph))
		oom();
	base_ns = rl.rf.ev[0].ts_ns;
	if (align_profile_fit(&rl, &ph, base_ns, &p, &al, aerr, sizeof aerr))
		diag_fatal(in, "%s", aerr);
	/* perun monitor's "<string>" frames named as functions and report
	 * name them (sample_energy.h) */
	sample_energy_name_script(&rl, &p, script, sizeof script);
	samples_write_ring(&p, in, &rl, &al, base_ns, ring, out, stack_text);
	if (verbose)
		summary(in, &p);
	align_pyspy_free(&al);
	phase_set_free(&ph);
	ringload_close(&rl);
	pyspy_profile_free(&p);
	return 0;
}

int cmd_samples(int argc, char **argv)
{
	const char *in = NULL, *out = "-", *ring = NULL;
	int fmt = PYSPY_FMT_AUTO, by_frame = 0, verbose = 0, stack_text = 0;
	double rate = 0;
	struct pyspy_profile p;
	struct pyspy_error err;
	struct outfile of;
	struct em_error werr;
	struct out o;
	int rc;
	const char *hdr[16];

	const struct option opts[] = {
		OPT_STRING(0, "profile", &in, "FILE", "py-spy's profile (or give it as the only argument)"),
		OPT_STRING('o', "out", &out, "FILE", "the CSV (-: stdout, with --stack-text and no companions) [-]"),
		OPT_CHOICE(0, "format", &fmt, "F", format_choices, "the profile's format [auto]"),
		OPT_STRING(0, "ring", &ring, "RING",
			   "add t_s,unix_s: each sample's slice on the run's timeline, aligned as functions, "
			   "timeline and trace.json align it (sync pulses, ...); the method goes to "
			   "OUT.alignment.txt (stderr when writing to stdout)"),
		OPT_DOUBLE(0, "rate", &rate, "HZ", 1e-6, 1e6, 0,
			   "time speedscope samples as i/HZ (py-spy < 0.3.9 files whose weights are not seconds)"),
		OPT_BOOL(0, "stack-text", &stack_text, "add stack_text: the whole stack, root;...;leaf, frames "
						       "'func (file:line)' (large: kilobytes per row)"),
		OPT_BOOL(0, "by-frame", &by_frame, "per frame instead: function,file,line,self_samples,"
						   "total_samples,self_s,total_s (a frame counts once per sample for total)"),
		OPT_BOOL('v', "verbose", &verbose, "a summary of the profile on stderr"),
		OPT_END(),
	};
	int npos = options_parse(argc, argv, opts, &samples_usage, 0);

	in = options_input(&samples_usage, npos, argv, in, "--profile");
	if (by_frame && ring)
		options_usage_error(&samples_usage, "--ring has no meaning with --by-frame");

	if (ring)
		return samples_ring(in, fmt, rate, ring, out, stack_text, verbose);
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
	o.stack_text = stack_text || outfile_is_stream(out);
	set_header(&o, hdr, 0);
	outfile_open(&of, out);
	setvbuf(of.fp, NULL, _IOFBF, 1 << 20);
	csv_init(&o.c, of.fp);
	if ((rc = pyspy_read(in, (enum pyspy_format)fmt, &p, on_sample, &o, &err)))
		diag_fatal(in, "%s", err.msg);
	flush_pending(&o, &p);
	if (o.header)
		csv_header(&o.c, o.header);
	if (outfile_error(&of, out, &werr)) /* before the companions */
		diag_fatal(werr.file, "%s", werr.msg);
	if (!outfile_is_stream(out))
		write_companions(&o, &p, out);
	outfile_commit(&of);
	if (verbose)
		summary(in, &p);
	if (p.meta.format == PYSPY_FMT_RAW)
		diag_warn(in, "raw format has no time: t_rel_s and duration_s are empty, one row per sample");
	else if (!p.meta.times_known)
		diag_warn(in, "unit '%s' is not a time: t_rel_s and duration_s are empty (--rate HZ sets them)",
			  p.meta.unit);
	out_free(&o, &p);
	pyspy_profile_free(&p);
	return 0;
}
