/* train_procs.c - the training processes of a ring (see train_procs.h). */
#include "model/train_procs.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Programs that start or watch the training and never are it. */
static const char *const tool_programs[] = {
	"py-spy", "mpirun", "mpiexec", "orterun", "orted", "prterun", "prted", "prte", "hydra_pmi_proxy",
	"mpiexec.hydra", "srun", "slurmstepd", "torchrun", NULL,
};

/* Python entry points of launchers: `python .../torchrun`, `python -m
 * torch.distributed.run`, and perun running `anchorpost record`'s
 * launcher script (cmd_record.c). */
static const char *const tool_args[] = {
	"torch.distributed.run", "torch/distributed/run.py", "torch.distributed.launch", ".anchor_launch.py", NULL,
};

static const char *base_of(const char *s, size_t len, char *buf, size_t cap)
{
	const char *b = s;
	for (size_t i = 0; i < len; i++)
		if (s[i] == '/')
			b = s + i + 1;
	len -= (size_t)(b - s);
	if (len >= cap)
		len = cap - 1;
	memcpy(buf, b, len);
	buf[len] = '\0';
	return buf;
}

static int is_tool_program(const char *name)
{
	for (int i = 0; tool_programs[i]; i++)
		if (!strcmp(name, tool_programs[i]))
			return 1;
	return 0;
}

int train_procs_tool(const struct ring_proc *p)
{
	char buf[64];
	/* The argv text is the arguments joined by spaces: each word's
	 * basename (the interpreter, then the script of `python SCRIPT`). */
	for (const char *a = p->argv; *a;) {
		size_t len = strcspn(a, " ");
		if (len && is_tool_program(base_of(a, len, buf, sizeof buf)))
			return 1;
		if (a != p->argv && len && a[0] != '-')
			break; /* past the program and its script: arguments */
		a += len + (a[len] == ' ');
	}
	if (p->exe[0] && is_tool_program(base_of(p->exe, strlen(p->exe), buf, sizeof buf)))
		return 1;
	for (int i = 0; tool_args[i]; i++)
		if (strstr(p->argv, tool_args[i]))
			return 1;
	return 0;
}

/* Time of thread thr in the user's phases. */
static uint64_t user_ns(const struct phase_set *ps, long thr)
{
	return thr >= 0 ? ps->thr[thr].user_ns : 0;
}

/* Is q (a pid) root or below it? */
static int below(const struct ring_procs *procs, uint32_t q, uint32_t root)
{
	for (int depth = 0; q && depth < 64; depth++) {
		const struct ring_proc *p;
		if (q == root)
			return 1;
		if (!(p = ring_procs_find(procs, q)))
			return 0;
		q = p->ppid;
	}
	return 0;
}

static int cmp_train(const void *a, const void *b)
{
	const struct train_proc *x = a, *y = b;
	unsigned xr = (unsigned)x->proc->rank, yr = (unsigned)y->proc->rank; /* -1 last */
	if (xr != yr)
		return xr < yr ? -1 : 1;
	if (x->proc->start_ns != y->proc->start_ns)
		return x->proc->start_ns < y->proc->start_ns ? -1 : 1;
	return x->proc->pid < y->proc->pid ? -1 : x->proc->pid > y->proc->pid;
}

int train_procs_find(const struct ring_procs *procs, const struct phase_set *ps, uint32_t root_pid,
		     struct train_procs *t)
{
	char *cand;
	size_t n = 0;
	memset(t, 0, sizeof *t);
	if (!procs->n)
		return 0;
	if (!(cand = calloc(procs->n, 1)) || !(t->p = calloc(procs->n, sizeof *t->p))) {
		free(cand);
		return -ENOMEM;
	}
	/* Candidates: the latest image of each pid (a forked row that then
	 * exec'd is the exec'd program), with time in the user's phases. */
	for (size_t i = 0; i < procs->n; i++) {
		const struct ring_proc *p = &procs->p[i];
		long thr = phase_set_primary_of(ps, p->pid);
		cand[i] = ring_procs_find(procs, p->pid) == p && user_ns(ps, thr) > 0 && !train_procs_tool(p) &&
			  (!root_pid || below(procs, p->pid, root_pid));
		t->ranked |= cand[i] && p->rank >= 0;
	}
	for (size_t i = 0; i < procs->n; i++) {
		const struct ring_proc *p = &procs->p[i];
		int fork_of_cand = 0;
		if (!cand[i] || (t->ranked && p->rank < 0))
			continue;
		/* A forked child of a training process is part of it. */
		for (uint32_t q = p->forked ? p->ppid : 0; q && !fork_of_cand;) {
			const struct ring_proc *a = ring_procs_find(procs, q);
			if (!a)
				break;
			fork_of_cand = cand[a - procs->p];
			q = a->forked ? a->ppid : 0;
		}
		if (fork_of_cand)
			continue;
		t->p[n].proc = p;
		t->p[n].thr = phase_set_primary_of(ps, p->pid);
		n++;
	}
	t->n = n;
	free(cand);
	qsort(t->p, t->n, sizeof *t->p, cmp_train);
	return 0;
}

void train_procs_free(struct train_procs *t)
{
	free(t->p);
	memset(t, 0, sizeof *t);
}
