/*
 * pyspy_tables.c - the tables of a py-spy profile (pyspy.h): frames with
 * an intern hash and a string arena, the stack prefix tree, threads.
 */
#include "input/pyspy.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void pyspy_set_err(struct em_error *err, const char *fmt, ...)
{
	va_list ap;
	if (!err)
		return;
	err->file = NULL;
	va_start(ap, fmt);
	vsnprintf(err->msg, PYSPY_ERR_MAX, fmt, ap);
	va_end(ap);
}

void pyspy_profile_init(struct pyspy_profile *p)
{
	memset(p, 0, sizeof *p);
	p->meta.rate_hz = NAN;
}

void pyspy_profile_free(struct pyspy_profile *p)
{
	for (uint32_t i = 0; i < p->nthreads; i++) {
		free(p->threads[i].profile);
		free(p->threads[i].thread_name);
	}
	free(p->threads);
	for (size_t i = 0; i < p->frames.nblocks; i++)
		free(p->frames.blocks[i]);
	free(p->frames.blocks);
	free(p->frames.v);
	free(p->frames.hash);
	free(p->stacks.v);
	free(p->stacks.hash);
	free(p->samples);
	free(p->ts_us);
	free(p->counts);
	pyspy_profile_init(p);
}

const char *pyspy_format_name(enum pyspy_format f)
{
	switch (f) {
	case PYSPY_FMT_SPEEDSCOPE:
		return "speedscope";
	case PYSPY_FMT_CHROMETRACE:
		return "chrometrace";
	case PYSPY_FMT_RAW:
		return "raw";
	default:
		return "auto";
	}
}

int pyspy_format_parse(const char *s)
{
	if (!strcmp(s, "speedscope"))
		return PYSPY_FMT_SPEEDSCOPE;
	if (!strcmp(s, "chrometrace"))
		return PYSPY_FMT_CHROMETRACE;
	if (!strcmp(s, "raw"))
		return PYSPY_FMT_RAW;
	if (!strcmp(s, "auto"))
		return PYSPY_FMT_AUTO;
	return -1;
}

const char *pyspy_idle_name(enum pyspy_idle i)
{
	return i == PYSPY_IDLE_LIKELY ? "likely" : i == PYSPY_IDLE_UNLIKELY ? "unlikely" : "unknown";
}

static int grow(void **v, uint32_t *cap, uint32_t need, size_t elem)
{
	uint32_t ncap;
	void *nv;
	if (need <= *cap)
		return 0;
	if (need > UINT32_MAX / 2)
		return -ENOMEM;
	ncap = *cap ? *cap : 64;
	while (ncap < need)
		ncap *= 2;
	nv = realloc(*v, (size_t)ncap * elem);
	if (!nv)
		return -ENOMEM;
	*v = nv;
	*cap = ncap;
	return 0;
}

/* Copy n bytes plus NUL into the arena; blocks never move, so frame
 * strings stay valid while the table grows. */
static char *arena_copy(struct pyspy_frames *f, const char *s, size_t n)
{
	char *dst;
	if (!f->nblocks || f->block_used + n + 1 > f->block_cap) {
		size_t cap = n + 1 > 65536 ? n + 1 : 65536;
		char **nb = realloc(f->blocks, (f->nblocks + 1) * sizeof *nb);
		if (!nb)
			return NULL;
		f->blocks = nb;
		if (!(nb[f->nblocks] = malloc(cap)))
			return NULL;
		f->nblocks++;
		f->block_used = 0;
		f->block_cap = cap;
	}
	dst = f->blocks[f->nblocks - 1] + f->block_used;
	memcpy(dst, s, n);
	dst[n] = '\0';
	f->block_used += n + 1;
	return dst;
}

int pyspy_frames_add(struct pyspy_frames *f, const char *name, size_t name_len, const char *file,
		     size_t file_len, int32_t line, uint32_t *idx)
{
	struct pyspy_frame *fr;
	if (grow((void **)&f->v, &f->cap, f->n + 1, sizeof *f->v))
		return -ENOMEM;
	fr = &f->v[f->n];
	fr->name = arena_copy(f, name ? name : "", name ? name_len : 0);
	fr->file = file ? arena_copy(f, file, file_len) : NULL;
	fr->line = line;
	if (!fr->name || (file && !fr->file))
		return -ENOMEM;
	*idx = f->n++;
	return 0;
}

static uint64_t hash_bytes(uint64_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (unsigned char)s[i]) * 0x100000001b3ULL;
	return h;
}

static uint64_t frame_hash(const char *name, size_t nl, const char *file, size_t fl, int32_t line)
{
	uint64_t h = hash_bytes(0xcbf29ce484222325ULL, name, nl);
	h = hash_bytes(h ^ 0xff, file ? file : "", file ? fl : 0);
	h ^= (uint64_t)(uint32_t)line * 0x9e3779b97f4a7c15ULL + (file ? 1 : 0);
	return h ^ (h >> 29);
}

static int frame_eq(const struct pyspy_frame *fr, const char *name, size_t nl, const char *file, size_t fl,
		    int32_t line)
{
	if (fr->line != line || strlen(fr->name) != nl || memcmp(fr->name, name, nl))
		return 0;
	if (!file || !fr->file)
		return !file && !fr->file;
	return strlen(fr->file) == fl && !memcmp(fr->file, file, fl);
}

static int frames_rehash(struct pyspy_frames *f, uint32_t cap)
{
	uint32_t *h = malloc((size_t)cap * sizeof *h);
	if (!h)
		return -ENOMEM;
	memset(h, 0xff, (size_t)cap * sizeof *h);
	for (uint32_t i = 0; i < f->n; i++) {
		const struct pyspy_frame *fr = &f->v[i];
		uint64_t k = frame_hash(fr->name, strlen(fr->name), fr->file, fr->file ? strlen(fr->file) : 0,
					fr->line);
		uint32_t j = (uint32_t)k & (cap - 1);
		while (h[j] != UINT32_MAX)
			j = (j + 1) & (cap - 1);
		h[j] = i;
	}
	free(f->hash);
	f->hash = h;
	f->hash_cap = cap;
	return 0;
}

int pyspy_frames_intern(struct pyspy_frames *f, const char *name, size_t name_len, const char *file,
			size_t file_len, int32_t line, uint32_t *idx)
{
	uint64_t k;
	uint32_t j;
	if ((f->n + 1) * 2 > f->hash_cap && frames_rehash(f, f->hash_cap ? f->hash_cap * 2 : 1024))
		return -ENOMEM;
	k = frame_hash(name, name_len, file, file_len, line);
	for (j = (uint32_t)k & (f->hash_cap - 1); f->hash[j] != UINT32_MAX; j = (j + 1) & (f->hash_cap - 1)) {
		if (frame_eq(&f->v[f->hash[j]], name, name_len, file, file_len, line)) {
			*idx = f->hash[j];
			return 0;
		}
	}
	if (pyspy_frames_add(f, name, name_len, file, file_len, line, idx))
		return -ENOMEM;
	f->hash[j] = *idx;
	return 0;
}

/* splitmix64's finalizer: every key bit reaches the low bits we mask,
 * which linear probing needs to avoid long clusters. */
static uint32_t node_hash(uint32_t parent, uint32_t frame, uint32_t cap)
{
	uint64_t k = (uint64_t)parent << 32 | frame;
	k ^= k >> 30;
	k *= 0xbf58476d1ce4e5b9ULL;
	k ^= k >> 27;
	k *= 0x94d049bb133111ebULL;
	k ^= k >> 31;
	return (uint32_t)k & (cap - 1);
}

static int stacks_rehash(struct pyspy_stacks *s, uint32_t cap)
{
	uint32_t *h = malloc((size_t)cap * sizeof *h);
	if (!h)
		return -ENOMEM;
	memset(h, 0xff, (size_t)cap * sizeof *h);
	for (uint32_t i = 1; i < s->n; i++) {
		uint32_t j = node_hash(s->v[i].parent, s->v[i].frame, cap);
		while (h[j] != UINT32_MAX)
			j = (j + 1) & (cap - 1);
		h[j] = i;
	}
	free(s->hash);
	s->hash = h;
	s->hash_cap = cap;
	return 0;
}

int pyspy_stacks_init(struct pyspy_stacks *s)
{
	if (s->n)
		return 0;
	if (grow((void **)&s->v, &s->cap, 1, sizeof *s->v))
		return -ENOMEM;
	s->v[0].parent = UINT32_MAX;
	s->v[0].frame = UINT32_MAX;
	s->v[0].depth = 0;
	s->n = 1;
	return 0;
}

int pyspy_stacks_child(struct pyspy_stacks *s, uint32_t parent, uint32_t frame, uint32_t *child)
{
	uint32_t j;
	struct pyspy_node *nd;
	if ((s->n + 1) * 2 > s->hash_cap && stacks_rehash(s, s->hash_cap ? s->hash_cap * 2 : 4096))
		return -ENOMEM;
	for (j = node_hash(parent, frame, s->hash_cap); s->hash[j] != UINT32_MAX; j = (j + 1) & (s->hash_cap - 1)) {
		nd = &s->v[s->hash[j]];
		if (nd->parent == parent && nd->frame == frame) {
			*child = s->hash[j];
			return 0;
		}
	}
	if (grow((void **)&s->v, &s->cap, s->n + 1, sizeof *s->v))
		return -ENOMEM;
	nd = &s->v[s->n];
	nd->parent = parent;
	nd->frame = frame;
	nd->depth = s->v[parent].depth + 1;
	s->hash[j] = s->n;
	*child = s->n++;
	return 0;
}

uint32_t pyspy_stack_frames(const struct pyspy_stacks *s, uint32_t node, uint32_t *out, uint32_t cap)
{
	uint32_t depth = s->v[node].depth;
	for (uint32_t d = depth; d > 0; d--, node = s->v[node].parent)
		if (d - 1 < cap)
			out[d - 1] = s->v[node].frame;
	return depth;
}

int pyspy_thread_add(struct pyspy_profile *p, uint32_t *idx)
{
	struct pyspy_thread *t;
	if (grow((void **)&p->threads, &p->threads_cap, p->nthreads + 1, sizeof *p->threads))
		return -ENOMEM;
	t = &p->threads[p->nthreads];
	memset(t, 0, sizeof *t);
	t->pid = -1;
	t->unit_s = NAN;
	t->start_value = NAN;
	t->end_value = NAN;
	if (!(t->thread_name = strdup("")))
		return -ENOMEM;
	*idx = p->nthreads++;
	return 0;
}

static int cmp_frame_fn(const void *x, const void *y, void *ctx)
{
	const struct pyspy_profile *p = ctx;
	const struct pyspy_frame *a = &p->frames.v[*(const uint32_t *)x], *b = &p->frames.v[*(const uint32_t *)y];
	int c = strcmp(a->name, b->name);
	return c ? c : strcmp(a->file ? a->file : "", b->file ? b->file : "");
}

int pyspy_function_ids(const struct pyspy_profile *p, uint32_t *fn_of_frame, uint32_t *first_frame, uint32_t *nfn)
{
	uint32_t nf = p->frames.n, *ord = malloc((nf ? nf : 1) * sizeof *ord);
	if (!ord)
		return -ENOMEM;
	for (uint32_t f = 0; f < nf; f++)
		ord[f] = f;
	qsort_r(ord, nf, sizeof *ord, cmp_frame_fn, (void *)p);
	*nfn = 0;
	for (uint32_t i = 0; i < nf; i++) {
		if (!i || cmp_frame_fn(&ord[i - 1], &ord[i], (void *)p)) {
			if (first_frame)
				first_frame[*nfn] = ord[i];
			(*nfn)++;
		}
		fn_of_frame[ord[i]] = *nfn - 1;
	}
	free(ord);
	return 0;
}
