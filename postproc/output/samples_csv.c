/*
 * samples_csv.c - py-spy's samples as CSV (see samples_csv.h).
 *
 * Rows stream out as the reader delivers them whenever frame names are
 * already known (chrometrace, raw); py-spy's speedscope files put the
 * frame table last, so there rows wait in the 24-byte-per-sample model
 * until it arrives.  --by-frame aggregates per stack node while reading
 * (memory independent of the sample count) and resolves names at the end.
 */
#include "output/samples_csv.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/lookup.h"
#include "output/csv.h"
#include "output/outfile.h"
#include "output/timebase.h"
#include "util/diag.h"

/* raw rows repeat each stack `count` times; refuse absurd totals. */
#define RAW_MAX_ROWS 1000000000ULL

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
	/* --ring, while the rows are written: the run's one alignment and its
	 * UTC map (model/sample_times.h) */
	const struct sample_times *st;
	char **thread_prefix; /* per thread: "thread,pid,tid,thread_name" */
	uint32_t nprefix;
	char *const *tid_over, *const *name_over; /* per thread, from the ring (NULL: none); st's */
	uint8_t *used;        /* per stack node: a sample names it */
	uint32_t used_cap;
	uint64_t rows;
	struct em_error *e; /* a failure while rows stream out (a callback's), for the caller */
	int rc;
};

/* Every allocation failure of a writer here: one line naming no file. */
static int oom(struct em_error *e)
{
	return diag_error(e, -ENOMEM, NULL, "out of memory");
}

static int build_ftext(struct out *o, const struct pyspy_profile *p)
{
	char buf[64], **ft;
	uint32_t *fl;
	if (o->nftext == p->frames.n)
		return 0;
	if (!(ft = realloc(o->ftext, (size_t)p->frames.n * sizeof *o->ftext)))
		return oom(o->e);
	o->ftext = ft;
	if (!(fl = realloc(o->flen, (size_t)p->frames.n * sizeof *o->flen)))
		return oom(o->e);
	o->flen = fl;
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
		if ((int)n < 0) {
			o->nftext = f; /* out_free frees those before f */
			return oom(o->e);
		}
		o->ftext[f] = s;
		o->flen[f] = (uint32_t)n;
	}
	o->nftext = p->frames.n;
	return 0;
}

static int build_stack(struct out *o, const struct pyspy_profile *p, uint32_t node)
{
	uint32_t depth = p->stacks.v[node].depth;
	size_t len = 0;
	if (node == o->stack_node)
		return 0;
	if (depth > o->frames_cap) {
		uint32_t *fr = realloc(o->frames, (size_t)depth * sizeof *o->frames);
		if (!fr)
			return oom(o->e);
		o->frames = fr;
		o->frames_cap = depth;
	}
	lookup_stack_frames(p, node, o->frames, o->frames_cap);
	for (uint32_t d = 0; d < depth; d++)
		len += o->flen[o->frames[d]] + 1;
	if (len + 1 > o->stack_cap) {
		char *st = realloc(o->stack, (len + 1) * 2);
		if (!st)
			return oom(o->e);
		o->stack = st;
		o->stack_cap = (len + 1) * 2;
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
	return 0;
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
static int stack_field(struct out *o, const struct pyspy_profile *p, uint32_t node)
{
	struct csv tmp;
	if (node >= o->field_cap) {
		uint32_t cap = o->field_cap ? o->field_cap : 4096;
		uint64_t *off;
		uint32_t *len;
		while (cap <= node)
			cap *= 2;
		if (!(off = realloc(o->field_off, (size_t)cap * sizeof *o->field_off)))
			return oom(o->e);
		o->field_off = off;
		if (!(len = realloc(o->field_len, (size_t)cap * sizeof *o->field_len)))
			return oom(o->e);
		o->field_len = len;
		memset(o->field_off + o->field_cap, 0xff, (size_t)(cap - o->field_cap) * sizeof *o->field_off);
		o->field_cap = cap;
	}
	if (o->field_off[node] != UINT64_MAX) {
		raw_field(&o->c, o->field_arena + o->field_off[node], o->field_len[node]);
		return 0;
	}
	if (build_stack(o, p, node))
		return -ENOMEM;
	if (!o->scratch && !(o->scratch = open_memstream(&o->scratch_buf, &o->scratch_len)))
		return oom(o->e);
	fseeko(o->scratch, 0, SEEK_SET);
	csv_init(&tmp, o->scratch);
	csv_strn(&tmp, o->stack, o->stack_len);
	if (fflush(o->scratch))
		return oom(o->e);
	raw_field(&o->c, o->scratch_buf, o->scratch_len);
	if (o->field_used + o->scratch_len > FIELD_CACHE_MAX)
		return 0;
	if (o->field_used + o->scratch_len > o->field_arena_cap) {
		char *ar = realloc(o->field_arena, (o->field_used + o->scratch_len) * 2);
		if (!ar)
			return oom(o->e);
		o->field_arena = ar;
		o->field_arena_cap = (o->field_used + o->scratch_len) * 2;
	}
	memcpy(o->field_arena + o->field_used, o->scratch_buf, o->scratch_len);
	o->field_off[node] = o->field_used;
	o->field_len[node] = (uint32_t)o->scratch_len;
	o->field_used += o->scratch_len;
	return 0;
}

/* The thread's leading fields, quoted once: they repeat on every row.
 * NULL: out of memory (*o->e says it). */
static const char *thread_prefix(struct out *o, const struct pyspy_profile *p, uint32_t k)
{
	if (k >= o->nprefix) {
		char **np = realloc(o->thread_prefix, (size_t)p->nthreads * sizeof *np);
		if (!np) {
			oom(o->e);
			return NULL;
		}
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
		if (!fp) {
			oom(o->e);
			return NULL;
		}
		csv_init(&tc, fp);
		csv_u64(&tc, k);
		if (t->pid >= 0)
			csv_u64(&tc, (uint64_t)t->pid);
		else if (o->st && k < o->st->nthr && o->st->ring_pid[k])
			csv_u64(&tc, o->st->ring_pid[k]); /* speedscope names no pid: the ring's */
		else
			csv_empty(&tc);
		if (o->tid_over && o->tid_over[k])
			csv_str(&tc, o->tid_over[k]);
		else if (p->meta.format == PYSPY_FMT_CHROMETRACE)
			csv_empty(&tc); /* a pthread id, not an OS tid: threads.csv has it */
		else
			csv_str(&tc, t->tid);
		csv_str(&tc, o->name_over && o->name_over[k] ? o->name_over[k] : t->thread_name);
		if (fclose(fp)) {
			free(buf);
			oom(o->e);
			return NULL;
		}
		o->thread_prefix[k] = buf;
	}
	return o->thread_prefix[k];
}

static int mark_used(struct out *o, uint32_t node)
{
	if (node >= o->used_cap) {
		uint32_t cap = o->used_cap ? o->used_cap : 4096;
		uint8_t *u;
		while (cap <= node)
			cap *= 2;
		if (!(u = realloc(o->used, cap)))
			return oom(o->e);
		o->used = u;
		memset(o->used + o->used_cap, 0, cap - o->used_cap);
		o->used_cap = cap;
	}
	o->used[node] = 1;
	return 0;
}

/* With --ring: the sample's instant on the timeline and whether it is
 * placed (align_pyspy.h: unplaced), beside its slice. */
struct row_place {
	double at_s;
	int placed;
	double place_ms;
};

/* One row; t_s: the sample's aligned slice start (--ring), else unused.
 * 0, or -ENOMEM with *o->e filled. */
static int write_row(struct out *o, const struct pyspy_profile *p, const struct pyspy_sample_ev *s,
		      uint64_t index, double t_s, const struct row_place *rp)
{
	const struct pyspy_node *nd = &p->stacks.v[s->stack];
	struct csv *c = &o->c;
	const char *pre;

	if (o->header) {
		csv_header(c, o->header);
		o->header = NULL;
	}
	if (!(pre = thread_prefix(o, p, s->thread)))
		return -ENOMEM;
	raw_field(c, pre, strlen(pre));
	c->nfield += 3; /* the prefix holds four fields */
	u64_field(c, index);
	time_field(c, s->t_rel_s);
	time_field(c, s->duration_s);
	if (o->st) {
		char buf[48];
		size_t n;
		csv_fixed(c, t_s, 9);
		if ((n = timebase_unix_text(o->st->clk, o->st->base_ns, t_s, buf, sizeof buf)))
			raw_field(c, buf, n);
		else
			csv_empty(c);
		csv_fixed(c, rp->at_s, 9);
		u64_field(c, (uint64_t)rp->placed);
		csv_f64(c, rp->place_ms, 6);
	}
	u64_field(c, nd->depth);
	u64_field(c, s->stack);
	if (mark_used(o, s->stack) || (o->stack_text && stack_field(o, p, s->stack)))
		return -ENOMEM;
	csv_row_end(c);
	o->rows++;
	return 0;
}

static int emit(struct out *o, const struct pyspy_profile *p, const struct pyspy_sample_ev *s)
{
	if (p->meta.format == PYSPY_FMT_RAW) {
		uint64_t first = o->rows;
		if (o->rows + s->count > RAW_MAX_ROWS)
			return diag_error(o->e, -EFBIG, o->path, "raw counts add up to more than %llu samples; use --by-frame",
					  (unsigned long long)RAW_MAX_ROWS);
		for (uint64_t k = 0; k < s->count; k++)
			if (write_row(o, p, s, first + k, NAN, NULL))
				return -ENOMEM;
		return 0;
	}
	return write_row(o, p, s, s->index, NAN, NULL);
}

static int flush_pending(struct out *o, const struct pyspy_profile *p)
{
	uint64_t *idx;
	int rc = 0;
	if (build_ftext(o, p))
		return -ENOMEM;
	if (!o->pend.n)
		return 0;
	if (!(idx = calloc((size_t)p->nthreads + 1, sizeof *idx)))
		return oom(o->e);
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
		if ((rc = emit(o, p, &ev)))
			break;
	}
	free(idx);
	o->pend.n = 0;
	return rc;
}

static int on_sample(void *ctx, const struct pyspy_profile *p, const struct pyspy_sample_ev *s,
		     struct em_error *err)
{
	struct out *o = ctx;
	(void)err; /* the failure goes to o->e: it names its own file */
	if (!p->frames.complete) {
		if (o->pend.n == o->pend.cap) {
			size_t cap = o->pend.cap ? o->pend.cap * 2 : 65536;
			struct pyspy_sample *v = realloc(o->pend.v, cap * sizeof *o->pend.v);
			if (!v)
				return o->rc = oom(o->e);
			o->pend.v = v;
			o->pend.cap = cap;
		}
		if (s->index != 0 && (!o->pend.n || o->pend.v[o->pend.n - 1].thread != s->thread))
			return o->rc = diag_error(o->e, -EINVAL, o->path,
						  "internal: samples of a thread were not delivered in order");
		o->pend.v[o->pend.n++] = (struct pyspy_sample){s->thread, s->stack, s->t_rel_s, s->duration_s};
		return 0;
	}
	if ((o->pend.n || o->nftext != p->frames.n) && (o->rc = flush_pending(o, p)))
		return o->rc;
	return o->rc = emit(o, p, s);
}

/* --by-frame: per stack node, the samples whose stack is exactly it. */
struct agg {
	uint64_t *count;
	double *secs;
	uint32_t cap;
	int oom; /* an allocation failed: the callback stopped the reader */
};

static int on_sample_agg(void *ctx, const struct pyspy_profile *p, const struct pyspy_sample_ev *s,
			 struct em_error *err)
{
	struct agg *a = ctx;
	(void)err;
	if (s->stack >= a->cap) {
		uint32_t cap = a->cap ? a->cap : 4096;
		while (cap <= s->stack)
			cap *= 2;
		uint64_t *cn = realloc(a->count, (size_t)cap * sizeof *a->count);
		double *sc;
		if (!cn)
			return a->oom = 1;
		a->count = cn;
		if (!(sc = realloc(a->secs, (size_t)cap * sizeof *a->secs)))
			return a->oom = 1;
		a->secs = sc;
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

static int write_by_frame(const struct pyspy_profile *p, const struct agg *a, const char *out, struct em_error *e)
{
	static const char *const cols[] = {"function", "file", "line", "self_samples", "total_samples",
					   "self_s", "total_s", NULL};
	struct pyspy_frames canon_tab;
	uint32_t *canon = malloc(((size_t)p->frames.n + 1) * sizeof *canon);
	struct frow *rows;
	uint32_t *stamp;
	struct outfile of;
	struct csv c;
	int times = p->meta.times_known, rc = -ENOMEM;

	memset(&canon_tab, 0, sizeof canon_tab);
	rows = NULL;
	stamp = NULL;
	if (!canon)
		goto oom;
	/* py-spy's frame table can repeat (name, file, line): merge those. */
	if (lookup_distinct_frames(p, &canon_tab, canon))
		goto oom;
	rows = calloc((size_t)canon_tab.n + 1, sizeof *rows);
	stamp = malloc(((size_t)canon_tab.n + 1) * sizeof *stamp);
	if (!rows || !stamp)
		goto oom;
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
	if ((rc = outfile_create(&of, out, e)))
		goto done;
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
	rc = outfile_done(&of, e);
	goto done;
oom:
	rc = oom(e);
done:
	free(rows);
	free(stamp);
	free(canon);
	lookup_frames_free(&canon_tab);
	return rc;
}

/* chrometrace names threads by pthread id; the aligned ring thread gives
 * the OS tid, and its THREAD record the thread's name. */
static void write_alignment(FILE *fp, const struct pyspy_profile *p, const char *profile, const char *ring,
			    const struct sample_times *st)
{
	fprintf(fp, "method: %s (the fit functions, timeline and trace.json use: align_pyspy.h)\n", st->method);
	fprintf(fp, "profile: %s (%s)\nring: %s\n", profile, lookup_format_name(p->meta.format), ring);
	fprintf(fp, "py-spy alignment: %s\n", st->align_text);
	fprintf(fp, "t_s: start of the sample's aligned slice, seconds since the ring's first record "
		    "(mono_ns %" PRIu64 " = %s)\n", st->base_ns, st->base_iso);
	fprintf(fp, "unix_s: t_s in UTC through the ring's SYNC records (%zu)\n", st->clk->n);
	fprintf(fp, "at_s: the sample's own instant on the same timeline; placed: 0 when its time is not known well "
		    "enough to name its phase (CANNOT PLACE) or it lies outside its process's life; place_ms: the "
		    "placement's stated uncertainty\n");
}

/* OUT minus ".csv", plus suffix; NULL: out of memory. */
static char *companion(const char *out, const char *suffix)
{
	size_t n = strlen(out);
	char *s;
	if (n > 4 && !strcmp(out + n - 4, ".csv"))
		n -= 4;
	if (asprintf(&s, "%.*s%s", (int)n, out, suffix) < 0)
		return NULL;
	return s;
}

/* Commit a companion whose path (malloc'd) the error may name. */
static int companion_done(struct outfile *of, char *path, struct em_error *e)
{
	int rc = outfile_done(of, e);
	free(path);
	return rc; /* outfile_done keeps the path it names in *e */
}

/* stacks, frames and threads tables beside OUT. */
/* OUT.stacks.csv: one row per frame of every stack the samples used. */
static int write_stacks_csv(const struct out *o, const struct pyspy_profile *p, const char *out, struct em_error *e)
{
	static const char *const scols[] = {"stack_id", "depth", "frame_id", NULL};
	struct outfile of;
	struct csv c;
	char *path = companion(out, ".stacks.csv");
	uint32_t *fr = NULL, cap = 0;
	int rc;

	if (!path)
		return oom(e);
	if ((rc = outfile_create(&of, path, e))) {
		diag_error_keep_file(e);
		free(path);
		return rc;
	}
	setvbuf(of.fp, NULL, _IOFBF, 1 << 20);
	csv_init(&c, of.fp);
	csv_header(&c, scols);
	for (uint32_t node = 0; node < o->used_cap && node < p->stacks.n; node++) {
		uint32_t depth = p->stacks.v[node].depth;
		if (!o->used[node])
			continue;
		if (depth > cap) {
			uint32_t *nfr = realloc(fr, (size_t)depth * sizeof *fr);
			if (!nfr) {
				free(fr);
				outfile_abort(&of);
				free(path);
				return oom(e);
			}
			fr = nfr;
			cap = depth;
		}
		lookup_stack_frames(p, node, fr, cap);
		for (uint32_t d = 0; d < depth; d++) {
			u64_field(&c, node);
			u64_field(&c, d);
			u64_field(&c, fr[d]);
			csv_row_end(&c);
		}
	}
	free(fr);
	return companion_done(&of, path, e);
}

/* OUT.frames.csv: every frame of the profile (line empty when unknown). */
static int write_frames_csv(const struct pyspy_profile *p, const char *out, struct em_error *e)
{
	static const char *const fcols[] = {"frame_id", "function", "file", "line", NULL};
	struct outfile of;
	struct csv c;
	char *path = companion(out, ".frames.csv");
	int rc;

	if (!path)
		return oom(e);
	if ((rc = outfile_create(&of, path, e))) {
		diag_error_keep_file(e);
		free(path);
		return rc;
	}
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
	return companion_done(&of, path, e);
}

/* OUT.threads.csv: py-spy's threads with the pid and name the ring gave
 * them where the profile lacks them. */
static int write_threads_csv(const struct out *o, const struct pyspy_profile *p, const char *out,
			     struct em_error *e)
{
	static const char *const tcols[] = {"thread", "profile", "pid", "tid", "pthread_id", "thread_name",
					    "samples", NULL};
	struct outfile of;
	struct csv c;
	char *path = companion(out, ".threads.csv");
	int rc;

	if (!path)
		return oom(e);
	if ((rc = outfile_create(&of, path, e))) {
		diag_error_keep_file(e);
		free(path);
		return rc;
	}
	csv_init(&c, of.fp);
	csv_header(&c, tcols);
	for (uint32_t k = 0; k < p->nthreads; k++) {
		const struct pyspy_thread *t = &p->threads[k];
		csv_u64(&c, k);
		csv_str(&c, t->profile);
		if (t->pid >= 0)
			csv_i64(&c, t->pid);
		else if (o->st && k < o->st->nthr && o->st->ring_pid[k])
			csv_u64(&c, o->st->ring_pid[k]);
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
	return companion_done(&of, path, e);
}

static int write_companions(const struct out *o, const struct pyspy_profile *p, const char *out, struct em_error *e)
{
	int rc;
	if ((rc = write_stacks_csv(o, p, out, e)) || (rc = write_frames_csv(p, out, e)))
		return rc;
	return write_threads_csv(o, p, out, e);
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
 * (align_pyspy_fit, as every other output aligns it: st), its slice start
 * on the timeline; the alignment note beside out (stderr for a stream). */
static int write_aligned(struct out *o, const struct pyspy_profile *p, const char *in, const struct sample_times *st,
			 const char *ring, const char *out)
{
	uint64_t *idx;
	int rc = 0;

	o->st = st;
	o->tid_over = st->tid_text;
	o->name_over = st->name_text;
	if (!outfile_is_stream(out)) {
		struct outfile af;
		char *apath;
		if (asprintf(&apath, "%s.alignment.txt", out) < 0)
			return oom(o->e);
		if (!(rc = outfile_create(&af, apath, o->e))) {
			write_alignment(af.fp, p, in, ring, st);
			rc = outfile_done(&af, o->e);
		}
		if (rc)
			diag_error_keep_file(o->e);
		free(apath);
		if (rc)
			return rc;
	} else {
		write_alignment(stderr, p, in, ring, st);
	}
	if (build_ftext(o, p))
		return -ENOMEM;
	if (!(idx = calloc((size_t)p->nthreads + 1, sizeof *idx)))
		return oom(o->e);
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
		struct row_place rp = {st->t_s[i], st->placed[i], st->uncert_ms};
		if ((rc = write_row(o, p, &ev, idx[sm->thread]++, st->t0_s[i], &rp)))
			break;
	}
	free(idx);
	o->st = NULL;
	return rc;
}

int samples_csv_write_ring(const struct pyspy_profile *p, const char *in, const struct sample_times *st,
			   const char *ring, const char *out, int stack_text, struct em_error *e)
{
	struct outfile of;
	struct out o;
	const char *hdr[16];
	int rc;

	if (!p->meta.times_known)
		return diag_error(e, -EINVAL, in, "%s profile has no sample times, so --ring cannot place it (%s)",
				  lookup_format_name(p->meta.format),
				  p->meta.format == PYSPY_FMT_RAW ? "raw format" : "pass --rate HZ");
	if (!st->clk->n)
		return diag_error(e, -EINVAL, ring, "no clock SYNC record: cannot map to UTC");
	memset(&o, 0, sizeof o);
	o.path = in;
	o.e = e;
	o.stack_node = UINT32_MAX;
	o.stack_text = stack_text || outfile_is_stream(out);
	set_header(&o, hdr, 1);
	if ((rc = outfile_create(&of, out, e)))
		return rc;
	setvbuf(of.fp, NULL, _IOFBF, 1 << 20);
	csv_init(&o.c, of.fp);
	if ((rc = write_aligned(&o, p, in, st, ring, out)))
		goto fail;
	if (o.header)
		csv_header(&o.c, o.header);
	if ((rc = outfile_error(&of, out, e))) /* before the companions */
		goto fail;
	if (!outfile_is_stream(out) && (rc = write_companions(&o, p, out, e)))
		goto fail;
	rc = outfile_done(&of, e);
	out_free(&o, p);
	return rc;
fail:
	outfile_abort(&of);
	out_free(&o, p);
	return rc;
}

/* A samples.csv that streams: the rows as the reader delivers them. */
struct samples_stream {
	struct out o;
	struct outfile of;
	const char *hdr[16];
	const char *out;
	struct em_error *e;
};

int samples_csv_stream_open(struct samples_stream **ssp, const char *in, const char *out, int stack_text,
			    struct em_error *e)
{
	struct samples_stream *ss = calloc(1, sizeof *ss);
	int rc;
	*ssp = NULL;
	if (!ss)
		return oom(e);
	ss->o.path = in;
	ss->o.e = e;
	ss->o.stack_node = UINT32_MAX;
	ss->o.stack_text = stack_text || outfile_is_stream(out);
	ss->out = out;
	ss->e = e;
	set_header(&ss->o, ss->hdr, 0);
	if ((rc = outfile_create(&ss->of, out, e))) {
		free(ss);
		return rc;
	}
	setvbuf(ss->of.fp, NULL, _IOFBF, 1 << 20);
	csv_init(&ss->o.c, ss->of.fp);
	*ssp = ss;
	return 0;
}

int samples_csv_stream_sample(void *ctx, const struct pyspy_profile *p, const struct pyspy_sample_ev *s,
			      struct em_error *err)
{
	return on_sample(&((struct samples_stream *)ctx)->o, p, s, err);
}

int samples_csv_stream_close(struct samples_stream *ss, const struct pyspy_profile *p, int read_rc,
			     const struct em_error *read_err)
{
	struct em_error *e = ss->e;
	int rc = read_rc;
	if (rc) {
		/* a row that failed said why in *e itself */
		if (ss->o.rc)
			rc = ss->o.rc;
		else
			diag_error(e, rc, ss->o.path, "%s", read_err->msg);
		goto fail;
	}
	if ((rc = flush_pending(&ss->o, p)))
		goto fail;
	if (ss->o.header)
		csv_header(&ss->o.c, ss->o.header);
	if ((rc = outfile_error(&ss->of, ss->out, e))) /* before the companions */
		goto fail;
	if (!outfile_is_stream(ss->out) && (rc = write_companions(&ss->o, p, ss->out, e)))
		goto fail;
	rc = outfile_done(&ss->of, e);
	out_free(&ss->o, p);
	free(ss);
	return rc;
fail:
	outfile_abort(&ss->of);
	out_free(&ss->o, p);
	free(ss);
	return rc;
}

/* --by-frame as the reader delivers the samples. */
struct frames_stream {
	struct agg a;
};

int samples_csv_frames_open(struct frames_stream **fsp, struct em_error *e)
{
	if (!(*fsp = calloc(1, sizeof **fsp)))
		return oom(e);
	return 0;
}

int samples_csv_frames_sample(void *ctx, const struct pyspy_profile *p, const struct pyspy_sample_ev *s,
			      struct em_error *err)
{
	return on_sample_agg(&((struct frames_stream *)ctx)->a, p, s, err);
}

int samples_csv_frames_close(struct frames_stream *fs, const struct pyspy_profile *p, const char *in, const char *out,
			     int read_rc, const struct em_error *read_err, struct em_error *e)
{
	int rc;
	if (read_rc)
		rc = fs->a.oom ? oom(e) : diag_error(e, read_rc, in, "%s", read_err->msg);
	else
		rc = write_by_frame(p, &fs->a, out, e);
	free(fs->a.count);
	free(fs->a.secs);
	free(fs);
	return rc;
}
