/*
 * pyspy_sites.c - label py-spy stacks with the phase they were taken in,
 * from the ring's SITE records (see pyspy_sites.h).
 */
#include "align/pyspy_sites.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

struct site {
	int32_t phase;
	uint64_t set;            /* every phase seen at this site (phases 0..63) */
	const char *file, *func; /* into the ring's arena */
	long l0, l1;             /* lines inside the phase (a mark's: see mark_lines) */
	long at;                 /* line of the `with` or mark() call, 0 unknown */
	int mark;
	int dead;                /* unusable: see collect and mark_lines */
};

/* One SITE record into s; 0 when it is unusable (truncated, malformed, or
 * its phase never ran in this ring). */
static int parse_site(const struct ring_event *e, const struct phase_set *ph, struct site *s)
{
	const char *name = ring_event_field(e, "phase"), *lines = ring_event_field(e, "lines");
	const char *at = ring_event_field(e, "at"), *mark = ring_event_field(e, "mark");
	char *end;
	if (e->flags & ANCHOR_FLAG_TRUNC || !name)
		return 0;
	s->file = ring_event_field(e, "file");
	s->func = ring_event_field(e, "func");
	s->phase = phase_set_find(ph, name);
	s->set = s->phase >= 0 && s->phase < 64 ? 1ULL << s->phase : 0;
	s->at = at ? strtol(at, NULL, 10) : 0;
	s->mark = mark && *mark == '1';
	s->dead = 0;
	s->l0 = s->l1 = 0;
	if (!s->file || !s->func || s->phase < 0)
		return 0;
	if (s->mark)
		return s->at > 0;
	if (!lines)
		return 0;
	s->l0 = strtol(lines, &end, 10);
	if (*end != '-')
		return 0;
	s->l1 = strtol(end + 1, &end, 10);
	return s->l0 > 0 && s->l1 >= s->l0;
}

static int same_func(const struct site *a, const struct site *b)
{
	return !strcmp(a->func, b->func) && !strcmp(a->file, b->file);
}

/* A mark's segment (phase_set.h: it lasts until the thread's next mark or
 * range begin) as lines: those after its call up to the next call site
 * (`with` or mark) of the same function.  Only what the source order
 * proves: a mark inside a `with` body of its function (an instant, no
 * segment), or the last site of its function (what follows is not
 * known), gets no lines. */
static void mark_lines(struct site *v, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		struct site *m = &v[k];
		long next = 0;
		if (!m->mark || m->dead)
			continue;
		for (size_t j = 0; j < n; j++) {
			const struct site *o = &v[j];
			if (j == k || !same_func(m, o))
				continue;
			if (!o->mark && o->l0 && m->at >= o->l0 && m->at <= o->l1)
				m->dead = 1; /* inside a range */
			if (o->at > m->at && (!next || o->at < next))
				next = o->at;
		}
		m->l0 = m->at + 1;
		m->l1 = next - 1;
		if (!next || m->l1 < m->l0)
			m->dead = 1;
	}
}

/* Collect the usable sites; the same site named with several phases (a
 * generic helper, a computed phase name) keeps the set of them, duplicates
 * (one site seen by several processes) kept once. */
static int collect(const struct ring_file *rf, const struct phase_set *ph, struct site **out, size_t *n)
{
	size_t cap = 0, m = 0;
	struct site *v = NULL;
	for (size_t i = 0; i < rf->nev; i++) {
		struct site s;
		if (rf->ev[i].kind != ANCHOR_KIND_SITE || !parse_site(&rf->ev[i], ph, &s))
			continue;
		size_t k = 0;
		for (; k < m; k++)
			if (v[k].l0 == s.l0 && v[k].l1 == s.l1 && v[k].at == s.at && v[k].mark == s.mark && same_func(&v[k], &s))
				break;
		if (k < m) {
			v[k].set |= s.set;
			if (v[k].phase != s.phase)
				v[k].phase = -2; /* several: only the set says */
			continue;
		}
		if (m == cap) {
			struct site *nv = realloc(v, (cap = cap ? 2 * cap : 16) * sizeof *nv);
			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
		}
		v[m++] = s;
	}
	mark_lines(v, m);
	*out = v;
	*n = m;
	return 0;
}

/* The phase of one frame: the narrowest live site holding its line (a
 * `with` nested in another `with` of the same function), -1 none or
 * several (*set says which: a site with several names, or a tie between
 * sites); | PYSPY_SITE_SOFT from a mark. */
static int32_t frame_phase(const struct pyspy_frame *f, const struct site *v, size_t n, uint64_t *set)
{
	int32_t best = -1;
	int soft = 0;
	long w = -1;
	*set = 0;
	if (!f->file || f->line < 0)
		return -1;
	for (size_t k = 0; k < n; k++) {
		const struct site *s = &v[k];
		if (s->dead || f->line < s->l0 || f->line > s->l1 || strcmp(s->func, f->name) || strcmp(s->file, f->file))
			continue;
		if (w < 0 || s->l1 - s->l0 < w) {
			w = s->l1 - s->l0;
			best = s->phase;
			soft = s->mark;
			*set = s->set;
		} else if (s->l1 - s->l0 == w) {
			if (s->phase != best)
				best = -1;
			*set |= s->set;
		}
	}
	if (best < 0)
		best = -1;
	return best >= 0 && soft ? best | PYSPY_SITE_SOFT : best;
}

/* A node's label from its frame's (fp, fs) and its parent's (up, us): the
 * innermost frame at a site wins; a set that an outer label meets is
 * narrowed to the common phases (the helper's caller named one). */
static void node_label(int32_t fp, uint64_t fs, int32_t up, uint64_t us, int32_t *np, uint64_t *ns)
{
	if (!fs) {
		*np = up;
		*ns = us;
		return;
	}
	if (fp < 0 && (fs & us)) {
		fs &= us;
		if (!(fs & (fs - 1)))
			fp = (int32_t)__builtin_ctzll(fs) | (up >= 0 ? (up & PYSPY_SITE_SOFT) : 0);
	}
	*np = fp;
	*ns = fs;
}

int pyspy_sites_label(const struct ring_file *rf, const struct phase_set *ph, const struct pyspy_profile *p,
		      struct pyspy_sites *out)
{
	struct site *v = NULL;
	size_t n = 0;
	int32_t *fp = NULL;
	uint64_t *fs = NULL;
	memset(out, 0, sizeof *out);
	if (collect(rf, ph, &v, &n))
		return -ENOMEM;
	for (size_t k = 0; k < n; k++) {
		out->nsites += !v[k].dead && v[k].set;
		out->nset_sites += !v[k].dead && (v[k].set & (v[k].set - 1));
	}
	if (!out->nsites) {
		free(v);
		return 0;
	}
	fp = malloc((p->frames.n ? p->frames.n : 1) * sizeof *fp);
	fs = malloc((p->frames.n ? p->frames.n : 1) * sizeof *fs);
	out->node_phase = malloc((p->stacks.n ? p->stacks.n : 1) * sizeof *out->node_phase);
	out->node_set = malloc((p->stacks.n ? p->stacks.n : 1) * sizeof *out->node_set);
	if (!fp || !fs || !out->node_phase || !out->node_set) {
		free(v);
		free(fp);
		free(fs);
		pyspy_sites_free(out);
		return -ENOMEM;
	}
	int32_t pulse = phase_set_find(ph, PYSPY_PULSE_RANGE);
	for (uint32_t f = 0; f < p->frames.n; f++) {
		if (pulse >= 0 && !strcmp(p->frames.v[f].name, PYSPY_PULSE_FRAME)) {
			fp[f] = pulse;
			fs[f] = pulse < 64 ? 1ULL << pulse : 0;
		} else {
			fp[f] = frame_phase(&p->frames.v[f], v, n, &fs[f]);
		}
		out->nframes += fs[f] != 0;
	}
	/* A node's frame is its stack's innermost: it wins over the
	 * parent's label.  Parents come before their children. */
	out->nnodes = p->stacks.n;
	for (uint32_t k = 0; k < p->stacks.n; k++) {
		const struct pyspy_node *nd = &p->stacks.v[k];
		int up_ok = k && nd->parent < k;
		int32_t up = up_ok ? out->node_phase[nd->parent] : -1;
		uint64_t us = up_ok ? out->node_set[nd->parent] : 0;
		if (!k) {
			out->node_phase[k] = -1;
			out->node_set[k] = 0;
			continue;
		}
		node_label(fp[nd->frame], fs[nd->frame], up, us, &out->node_phase[k], &out->node_set[k]);
	}
	free(v);
	free(fp);
	free(fs);
	return 0;
}

void pyspy_sites_free(struct pyspy_sites *s)
{
	free(s->node_phase);
	free(s->node_set);
	memset(s, 0, sizeof *s);
}
