/*
 * results.c - the results stage (see results.h).
 */
#include "model/results.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/diag.h"

/* Rows of a scope depend on its timelines alone: the primary thread and
 * the device timeline of its process (phase_results.c). */
static int same_timeline(const struct energy_model *m, const struct phase_scope *a, long thr, uint32_t pid)
{
	return a->row && a->thr == thr && phase_set_device_of(&m->ph, a->pid) == phase_set_device_of(&m->ph, pid);
}

static int copy_scope(const struct energy_model *m, const struct phase_scope *from, struct phase_scope *to)
{
	size_t ng = m->ngroups ? m->ngroups : 1, nrow = (m->ph.nnames + 1) * ng;
	to->row = malloc(nrow * sizeof *to->row);
	to->total_j = malloc(ng * sizeof *to->total_j);
	if (!to->row || !to->total_j)
		return -ENOMEM;
	memcpy(to->row, from->row, nrow * sizeof *to->row);
	memcpy(to->total_j, from->total_j, ng * sizeof *to->total_j);
	return 0;
}

/* Process pid's entry, added when new (ring order for RESULTS_PROCS, the
 * samples' order after them). */
static struct proc_result *proc_slot(struct run_results *res, uint32_t pid, int *added)
{
	struct proc_result *n;
	*added = 0;
	for (size_t i = 0; i < res->nproc; i++)
		if (res->proc[i].pid == pid)
			return &res->proc[i];
	n = realloc(res->proc, (res->nproc + 1) * sizeof *n);
	if (!n)
		return NULL;
	res->proc = n;
	n = &res->proc[res->nproc++];
	memset(n, 0, sizeof *n);
	n->pid = pid;
	*added = 1;
	return n;
}

/* Attribute process pid once.  strict: a failure is the command's error;
 * else the process is left without a scope (functions: too few windows
 * for its phases is no error of functions). */
static int add_proc(struct run_results *res, const struct energy_model *m, const struct results_opts *o, uint32_t pid,
		    int strict, struct em_error *e)
{
	int added, rc;
	struct proc_result *pr = proc_slot(res, pid, &added);
	long thr;
	if (!pr)
		return diag_error(e, -ENOMEM, NULL, "out of memory");
	if (!added)
		return 0;
	thr = phase_set_primary_of(&m->ph, pid);
	pr->sr.thr = thr;
	if (thr < 0)
		return 0;
	pr->sr.thr = thr;
	pr->sr.pid = pid;
	if (same_timeline(m, &res->all, thr, pid)) {
		if (copy_scope(m, &res->all, &pr->sr))
			return diag_error(e, -ENOMEM, NULL, "out of memory");
		pr->ok = 1;
		return 0;
	}
	rc = phase_scope_attribute(m, o->method, o->ao, &pr->sr, e);
	if (rc && (strict || rc == -ENOMEM))
		return rc;
	if (rc)
		phase_scope_free(&pr->sr);
	pr->ok = !rc;
	return 0;
}

int results_compute(struct run_results *res, const struct energy_model *m, const struct run_model *rm,
		    const struct results_opts *o, struct em_error *e)
{
	int rc;
	memset(res, 0, sizeof *res);
	res->all.thr = m->ph.nthr && !o->all_no_energy ? (long)m->ph.primary : -1;
	res->all.pid = o->all_pid;
	if ((o->what & RESULTS_ALL) && (rc = phase_scope_attribute(m, o->method, o->ao, &res->all, e)))
		return rc;
	if (o->what & RESULTS_PROCS)
		for (size_t p = 0; p < m->rl.procs.n; p++)
			if ((rc = add_proc(res, m, o, m->rl.procs.p[p].pid, 1, e)))
				return rc;
	if ((o->what & RESULTS_FUNCTIONS) && rm && rm->have_profile)
		for (size_t i = 0; i < rm->p.nsamples; i++) {
			long th = sample_energy_thread(m, &rm->al, rm->p.samples[i].thread);
			if (th >= 0 && (rc = add_proc(res, m, o, m->ph.thr[th].pid, 0, e)))
				return rc;
		}
	if ((o->what & RESULTS_FUNCTIONS) && rm && rm->have_profile) {
		if (fn_energy_build(&res->fn_energy, rm))
			return diag_error(e, -ENOMEM, NULL, "out of memory");
		if ((rc = fn_phases_build(&res->fn_phases, rm, res, e)))
			return rc;
	}
	if ((o->what & RESULTS_COUNTERS) && (rc = counter_results_build(&res->counters, m, e)))
		return rc;
	if ((o->what & RESULTS_OPS) && (o->what & RESULTS_ALL) && rm && rm->have_profile && rm->p.meta.torch &&
	    (rc = op_energy_build(&res->ops, rm, &res->all)))
		return diag_error(e, rc, NULL, "out of memory");
	if ((o->what & RESULTS_OCCURRENCES) && (rc = occ_energy_build(m, &res->occ, e)))
		return rc;
	return 0;
}

void results_free(struct run_results *res)
{
	phase_scope_free(&res->all);
	for (size_t i = 0; i < res->nproc; i++)
		phase_scope_free(&res->proc[i].sr);
	free(res->proc);
	counter_results_free(&res->counters);
	occ_energy_free(&res->occ);
	op_energy_free(&res->ops);
	fn_phases_free(&res->fn_phases);
	fn_energy_free(&res->fn_energy);
	memset(res, 0, sizeof *res);
}

const struct phase_scope *results_proc(const struct run_results *res, uint32_t pid)
{
	for (size_t i = 0; i < res->nproc; i++)
		if (res->proc[i].pid == pid)
			return res->proc[i].ok ? &res->proc[i].sr : NULL;
	return NULL;
}
