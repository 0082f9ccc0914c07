/* ring_procs.c - process table of a run (see ring_procs.h). */
#include "ring_procs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ring_rank.h"
static const char *const rank_keys[] = {ANCHOR_RANK_VARS, NULL};
static const char *const local_keys[] = {ANCHOR_LOCAL_RANK_VARS, NULL};

static struct ring_proc *find_mut(struct ring_procs *t, uint32_t pid)
{
	for (size_t i = t->n; i-- > 0;)
		if (t->p[i].pid == pid)
			return &t->p[i];
	return NULL;
}

const struct ring_proc *ring_procs_find(const struct ring_procs *t, uint32_t pid)
{
	return find_mut((struct ring_procs *)t, pid);
}

static struct ring_proc *add(struct ring_procs *t, uint32_t pid, const char *host)
{
	struct ring_proc *p = realloc(t->p, (t->n + 1) * sizeof *p);
	if (!p)
		return NULL;
	t->p = p;
	p = &t->p[t->n++];
	memset(p, 0, sizeof *p);
	p->pid = pid;
	p->rank = p->local_rank = p->slurm_procid = -1;
	if (host)
		strncpy(p->host, host, sizeof p->host - 1);
	return p;
}

static void copy_field(char *dst, size_t cap, const char *src)
{
	if (!src)
		return;
	strncpy(dst, src, cap - 1);
	dst[cap - 1] = '\0';
}

/* The first of keys set in e, its name into *which (NULL: none). */
static int first_int(const struct ring_event *e, const char *const *keys, const char **which)
{
	for (int i = 0; keys[i]; i++) {
		const char *v = ring_event_field(e, keys[i]);
		if (v && *v) {
			if (which)
				*which = keys[i];
			return atoi(v);
		}
	}
	return -1;
}

int ring_procs_build(const struct ring_event *ev, size_t n, const char *default_host, struct ring_procs *t)
{
	memset(t, 0, sizeof *t);
	for (size_t i = 0; i < n; i++) {
		const struct ring_event *e = &ev[i];
		struct ring_proc *p = find_mut(t, e->pid);
		if (e->kind == ANCHOR_KIND_PROC_START || e->kind == ANCHOR_KIND_FORK) {
			/* A new process (or a reused pid): start a fresh row.  A
			 * PROC_START for a pid that is still running means it
			 * exec'd (execl and posix_spawn call execve inside libc,
			 * where no wrapper sees it). */
			if (p && p->start_ns && !p->exit_ns && e->kind == ANCHOR_KIND_PROC_START) {
				p->exit_ns = e->ts_ns;
				p->execed = 1;
			}
			if (!p || p->start_ns) {
				struct ring_proc *parent = find_mut(t, (uint32_t)e->value);
				p = add(t, e->pid, default_host);
				if (!p)
					return -ENOMEM;
				parent = find_mut(t, (uint32_t)e->value); /* add() may move rows */
				if (e->kind == ANCHOR_KIND_FORK && parent && parent != p) {
					uint32_t pid = p->pid;
					*p = *parent;
					p->pid = pid;
					p->exit_ns = 0;
					p->exit_known = p->exit_signal = p->exit_value = 0;
					p->execed = 0;
					p->events = 0;
				}
			}
			p->ppid = (uint32_t)e->value;
			p->start_ns = e->ts_ns;
			p->forked = e->kind == ANCHOR_KIND_FORK;
			if (e->kind == ANCHOR_KIND_PROC_START) {
				copy_field(p->host, sizeof p->host, ring_event_field(e, "host"));
				copy_field(p->exe, sizeof p->exe, ring_event_field(e, "exe"));
				copy_field(p->argv, sizeof p->argv, ring_event_field(e, "argv"));
				static const char *const procid_key[] = {"SLURM_PROCID", NULL};
				p->rank_var = NULL;
				p->rank = first_int(e, rank_keys, &p->rank_var);
				p->local_rank = first_int(e, local_keys, NULL);
				p->slurm_procid = first_int(e, procid_key, NULL);
				copy_field(p->job_id, sizeof p->job_id, ring_event_field(e, "SLURM_JOB_ID"));
				copy_field(p->step_id, sizeof p->step_id, ring_event_field(e, "SLURM_STEP_ID"));
			}
		} else if (!p) {
			p = add(t, e->pid, default_host);
			if (!p)
				return -ENOMEM;
		}
		p->events++;
		if (e->kind == ANCHOR_KIND_PROC_EXIT) {
			p->exit_ns = e->ts_ns;
			if (e->flags & ANCHOR_FLAG_VALUE) {
				p->exit_known = 1;
				p->exit_signal = !!(e->flags & ANCHOR_FLAG_SIGNAL);
				p->exit_value = (int)(int64_t)e->value;
			}
		} else if (e->kind == ANCHOR_KIND_EXEC) {
			/* The same pid continues as a new image (its PROC_START follows). */
			p->exit_ns = e->ts_ns;
			p->execed = 1;
		} else if (e->kind == ANCHOR_KIND_CHILD_EXIT) {
			struct ring_proc *c = find_mut(t, (uint32_t)e->value);
			if (c) {
				if (!c->exit_ns)
					c->exit_ns = e->ts_ns;
				/* The parent's view is authoritative (kill -9 leaves
				 * nothing else). */
				c->exit_known = 1;
				c->exit_signal = !!(e->flags & ANCHOR_FLAG_SIGNAL);
				{
					const char *v = strchr(e->text, '=');
					c->exit_value = v ? atoi(v + 1) : 0;
				}
			}
		}
	}
	return 0;
}

void ring_procs_free(struct ring_procs *t)
{
	free(t->p);
	memset(t, 0, sizeof *t);
}
