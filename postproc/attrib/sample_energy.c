/* sample_energy.c - energy per aligned py-spy sample (see sample_energy.h). */
#include "sample_energy.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "input_file.h"

/* Leaf source lines that wait rather than run.  Without --native py-spy
 * shows the Python line that called the blocking C function. */
static const char *const blocking_calls[] = {
	"sleep(", "wait(", ".join()", "acquire(", "select(", "poll(", ".recv(", "recv_into(", "accept(", NULL,
};

struct src_file {
	char *path;
	char *text;
	size_t *line_off; /* start of line i+1 */
	size_t nlines;
};

static int load_src(struct src_file *f, const char *path)
{
	/* The profile names the file: a FIFO or device there must not hang us. */
	int fd = input_file_open(path, 0, NULL, 0);
	FILE *fp = fd >= 0 ? fdopen(fd, "rb") : NULL;
	size_t cap = 0, len = 0;
	if (fd >= 0 && !fp)
		close(fd);
	f->path = strdup(path);
	f->text = NULL;
	f->line_off = NULL;
	f->nlines = 0;
	if (!f->path)
		return -ENOMEM;
	if (!fp)
		return 0; /* unknown source: the line counts as running */
	for (;;) {
		if (len + 4096 + 1 > cap) {
			cap = cap ? cap * 2 : 65536;
			char *t = realloc(f->text, cap);
			if (!t) {
				fclose(fp);
				return -ENOMEM;
			}
			f->text = t;
		}
		size_t got = fread(f->text + len, 1, 4096, fp);
		len += got;
		if (got < 4096)
			break;
	}
	fclose(fp);
	f->text[len] = '\0';
	size_t lines = 1;
	for (size_t i = 0; i < len; i++)
		lines += f->text[i] == '\n';
	f->line_off = malloc(lines * sizeof *f->line_off);
	if (!f->line_off)
		return -ENOMEM;
	f->line_off[f->nlines++] = 0;
	for (size_t i = 0; i < len; i++)
		if (f->text[i] == '\n') {
			f->text[i] = '\0';
			f->line_off[f->nlines++] = i + 1;
		}
	return 0;
}

/* py-spy's --subprocesses / --threads root pseudo-frames. */
static int pseudo_frame(const struct pyspy_frame *fr)
{
	return (!fr->file || !fr->file[0]) && (!strncmp(fr->name, "process ", 8) || !strncmp(fr->name, "thread (", 8));
}

static int classify_frames(const struct pyspy_profile *p, const char *string_src, uint8_t *blocking)
{
	struct src_file *files = NULL;
	size_t nfiles = 0;
	int rc = 0;
	for (uint32_t f = 0; f < p->frames.n && !rc; f++) {
		const struct pyspy_frame *fr = &p->frames.v[f];
		struct src_file *sf = NULL;
		const char *path = fr->file;
		blocking[f] = (uint8_t)pseudo_frame(fr);
		if (path && string_src && !strcmp(path, "<string>"))
			path = string_src;
		if (!path || fr->line <= 0)
			continue;
		for (size_t i = 0; i < nfiles && !sf; i++)
			if (!strcmp(files[i].path, path))
				sf = &files[i];
		if (!sf) {
			struct src_file *nf = realloc(files, (nfiles + 1) * sizeof *nf);
			if (!nf) {
				rc = -ENOMEM;
				break;
			}
			files = nf;
			sf = &files[nfiles++];
			if ((rc = load_src(sf, path)))
				break;
		}
		if (!sf->text || (size_t)fr->line > sf->nlines)
			continue;
		const char *line = sf->text + sf->line_off[fr->line - 1];
		for (size_t k = 0; blocking_calls[k]; k++)
			if (strstr(line, blocking_calls[k]))
				blocking[f] = 1;
	}
	for (size_t i = 0; i < nfiles; i++) {
		free(files[i].path);
		free(files[i].text);
		free(files[i].line_off);
	}
	free(files);
	return rc;
}

struct sweep_ev {
	double t;
	size_t i;
	int start;
};

static int cmp_ev(const void *x, const void *y)
{
	const struct sweep_ev *a = x, *b = y;
	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	return a->start - b->start; /* ends before starts at the same instant */
}

struct active {
	size_t *v;
	size_t n, cap;
};

static int active_add(struct active *s, size_t i)
{
	if (s->n == s->cap) {
		size_t nc = s->cap ? s->cap * 2 : 16;
		size_t *nv = realloc(s->v, nc * sizeof *nv);
		if (!nv)
			return -ENOMEM;
		s->v = nv;
		s->cap = nc;
	}
	s->v[s->n++] = i;
	return 0;
}

static void active_del(struct active *s, size_t i)
{
	for (size_t k = 0; k < s->n; k++)
		if (s->v[k] == i) {
			s->v[k] = s->v[--s->n];
			return;
		}
}

int sample_energy_build(const struct energy_model *m, const struct pyspy_profile *p, const struct align_pyspy *a,
			const char *string_src, struct sample_energy *se)
{
	size_t n = p->nsamples, ng = m->ngroups, nev = 0;
	struct sweep_ev *ev = NULL;
	struct active busy = {0}, idle = {0};
	double *seg = NULL;
	int rc = -ENOMEM;

	memset(se, 0, sizeof *se);
	se->n = n;
	se->ngroups = ng;
	se->t0_s = malloc((n ? n : 1) * sizeof *se->t0_s);
	se->t1_s = malloc((n ? n : 1) * sizeof *se->t1_s);
	se->idle = calloc(n ? n : 1, 1);
	se->e_j = calloc((n ? n : 1) * (ng ? ng : 1), sizeof *se->e_j);
	se->attributed_j = calloc(ng ? ng : 1, sizeof *se->attributed_j);
	se->unsampled_j = calloc(ng ? ng : 1, sizeof *se->unsampled_j);
	se->span_j = calloc(ng ? ng : 1, sizeof *se->span_j);
	se->frame_blocking = calloc(p->frames.n ? p->frames.n : 1, 1);
	ev = malloc((2 * n + 2) * sizeof *ev);
	seg = calloc(ng ? ng : 1, sizeof *seg);
	if (!se->t0_s || !se->t1_s || !se->idle || !se->e_j || !se->attributed_j || !se->unsampled_j || !se->span_j ||
	    !se->frame_blocking || !ev || !seg)
		goto out;
	if ((rc = classify_frames(p, string_src, se->frame_blocking)))
		goto out;
	rc = -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		uint32_t st = p->samples[i].stack;
		align_pyspy_slice(a, p, i, &se->t0_s[i], &se->t1_s[i]);
		/* the leaf decides; a pseudo-frame leaf means no Python frame */
		se->idle[i] = !st || se->frame_blocking[pyspy_stack_leaf(&p->stacks, st)];
		se->idle_share += se->idle[i];
		if (!(se->t1_s[i] > se->t0_s[i]))
			continue;
		ev[nev++] = (struct sweep_ev){se->t0_s[i], i, 1};
		ev[nev++] = (struct sweep_ev){se->t1_s[i], i, 0};
	}
	se->idle_share = n ? se->idle_share / (double)n : 0;
	qsort(ev, nev, sizeof *ev, cmp_ev);
	for (size_t s = 0; s < m->nsen; s++)
		se->span_j[energy_model_group_of(m, &m->sen[s])] +=
			energy_model_slice_j(&m->sen[s], m->span_t0_s, m->span_t1_s);
	{
		double prev = m->span_t0_s;
		for (size_t k = 0; k <= nev; k++) {
			double t = k < nev ? ev[k].t : m->span_t1_s;
			if (t > prev) {
				struct active *who = busy.n ? &busy : idle.n ? &idle : NULL;
				memset(seg, 0, ng * sizeof *seg);
				for (size_t s = 0; s < m->nsen; s++)
					seg[energy_model_group_of(m, &m->sen[s])] +=
						energy_model_slice_j(&m->sen[s], prev, t);
				for (size_t g = 0; g < ng; g++) {
					if (!who) {
						se->unsampled_j[g] += seg[g];
						continue;
					}
					double share = seg[g] / (double)who->n;
					for (size_t j = 0; j < who->n; j++)
						se->e_j[who->v[j] * ng + g] += share;
					se->attributed_j[g] += seg[g];
				}
				prev = t;
			}
			if (k == nev)
				break;
			struct active *set = se->idle[ev[k].i] ? &idle : &busy;
			if (ev[k].start) {
				if (active_add(set, ev[k].i))
					goto out;
			} else {
				active_del(set, ev[k].i);
			}
		}
	}
	rc = 0;
out:
	free(ev);
	free(seg);
	free(busy.v);
	free(idle.v);
	if (rc)
		sample_energy_free(se);
	return rc;
}

void sample_energy_free(struct sample_energy *se)
{
	free(se->t0_s);
	free(se->t1_s);
	free(se->idle);
	free(se->e_j);
	free(se->attributed_j);
	free(se->unsampled_j);
	free(se->span_j);
	free(se->frame_blocking);
	memset(se, 0, sizeof *se);
}

static int seg_phase(const struct phase_thread *th, uint64_t ts)
{
	size_t lo = 0, hi = th->nseg;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (th->seg[mid].t0_ns <= ts)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || th->seg[lo - 1].t1_ns <= ts)
		return -1;
	return th->seg[lo - 1].phase;
}

int sample_energy_phase_at(const struct energy_model *m, const struct align_pyspy *a, uint32_t thread, double t_s)
{
	const struct phase_set *ph = &m->ph;
	uint32_t pid = a->thr[thread].ring_pid, tid = a->thr[thread].ring_tid;
	long th = -1;
	double ns = t_s * 1e9 + (double)m->base_ns;
	if (ns < 0)
		return -1;
	for (size_t i = 0; i < ph->nthr && pid; i++)
		if (ph->thr[i].pid == pid && ph->thr[i].tid == tid)
			th = (long)i;
	if (th < 0 && pid)
		th = phase_set_primary_of(ph, pid);
	if (th < 0 && ph->nthr)
		th = (long)ph->primary;
	if (th < 0)
		return -1;
	return seg_phase(&ph->thr[th], (uint64_t)ns);
}

const char *sample_energy_perun_script(const struct ringload *rl, char *buf, size_t cap)
{
	/* From the PROC_START records themselves: ring_procs keeps only the
	 * first 512 bytes of argv, and perun's options come before the script. */
	for (size_t i = 0; i < rl->rf.nev; i++) {
		const struct ring_event *e = &rl->rf.ev[i];
		if (e->kind != ANCHOR_KIND_PROC_START)
			continue;
		const char *a = ring_event_field(e, "argv"), *mon;
		if (!a || !(mon = strstr(a, " monitor ")) || !strstr(a, "perun"))
			continue;
		/* argv is space-joined: the first token ending in .py after it */
		const char *t = mon + 9;
		while (*t) {
			const char *end = strchr(t, ' ');
			size_t len = end ? (size_t)(end - t) : strlen(t);
			if (len > 3 && !memcmp(t + len - 3, ".py", 3) && len < cap) {
				memcpy(buf, t, len);
				buf[len] = '\0';
				if (input_file_check(buf, 0, NULL, 0) == 0)
					return buf;
				break;
			}
			if (!end)
				break;
			t = end + 1;
		}
	}
	return NULL;
}

/* Is `name` defined in the script (a "def name(" line), or its module body? */
static int script_defines(const char *script, const char *name, int32_t line)
{
	char buf[4096], pat[300];
	int n = 0, found = !strcmp(name, "<module>");
	FILE *fp = fopen(script, "r");
	if (!fp)
		return 0;
	snprintf(pat, sizeof pat, "def %s(", name);
	while (fgets(buf, sizeof buf, fp)) {
		if (strchr(buf, '\n'))
			n++;
		if (!found && strstr(buf, pat))
			found = 1;
	}
	fclose(fp);
	/* the frame's line must exist in the script */
	return found && line <= n + 1;
}

size_t sample_energy_name_script(const struct ringload *rl, struct pyspy_profile *p, char *buf, size_t cap)
{
	const char *script = sample_energy_perun_script(rl, buf, cap);
	size_t renamed = 0;
	if (!script)
		return 0;
	for (uint32_t f = 0; f < p->frames.n; f++) {
		struct pyspy_frame *fr = &p->frames.v[f];
		if (fr->file && !strcmp(fr->file, "<string>") && script_defines(script, fr->name, fr->line)) {
			fr->file = script;
			renamed++;
		}
	}
	return renamed;
}
