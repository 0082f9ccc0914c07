/*
 * run_warnings.c - the warnings every command that reads a run prints once
 * (see run_warnings.h).
 */
#include "cmd/run_warnings.h"

#include <stdio.h>
#include <string.h>

#include "anchors/ring_procs.h"
#include "input/perun_spelling.h"
#include "util/diag.h"

/* What perun's command line (the ring) or the file's config spell the
 * old way, said once: a --sampling_rate perun 1.0 ignored explains why the
 * samples are 1 s apart.  Only the process that wrote this file when the
 * stamps name it (several runs in one ring). */
static void spelling_notes(const struct energy_model *m, const struct em_opts *o)
{
	const struct ring_proc *sampler = m->align.hook_pid ? ring_procs_find(&m->rl.procs, m->align.hook_pid) : NULL;
	char buf[2048];
	for (size_t i = 0; i < m->rl.procs.n; i++) {
		const struct ring_proc *p = &m->rl.procs.p[i];
		if (p->execed || p->forked || (sampler && p->pid != sampler->ppid) || !perun_spelling_is_monitor(p->argv))
			continue;
		buf[0] = '\0';
		if (!perun_spelling_argv(p->argv, m->run, buf, sizeof buf))
			continue;
		for (char *s = buf, *e; *s && (e = strchr(s, '\n')); s = e + 1)
			diag_warn(o->ring, "perun's command line (pid %u): %.*s", p->pid, (int)(e - s), s);
	}
	buf[0] = '\0';
	if (m->run && perun_spelling_config(m->run, buf, sizeof buf))
		for (char *s = buf, *e; *s && (e = strchr(s, '\n')); s = e + 1)
			diag_warn(o->perun, "%.*s", (int)(e - s), s);
}

void run_warnings(const struct energy_model *m, const struct em_opts *o)
{
	if (!m->times_only)
		spelling_notes(m, o);
	if (!m->nsen && !m->times_only)
		diag_warn(o->perun, "the file holds no power sensors (psutil only: no RAPL or GPU was readable), "
				    "so no energy can be attributed; reporting phase times only");
	if (m->ph.unmatched_end || m->ph.unclosed_begin)
		diag_warn(o->ring, "%llu end(s) without a begin ignored, %llu range(s) still open at process "
				   "end closed there",
			  (unsigned long long)m->ph.unmatched_end, (unsigned long long)m->ph.unclosed_begin);
	if (m->pf.app && !strncmp(m->pf.app, "failed_", 7))
		diag_warn(o->perun, "perun saved this run as failed (the script raised or called exit): "
				    "analysing the samples it kept up to the failure");
	if (m->ph.marks_in_range)
		diag_warn(o->ring, "%llu mark(s) kept as instants, not phases: made inside an open range, or after a "
				   "thread's last range (a mark starts a phase only outside ranges and lasts until the "
				   "thread's next mark or range begin)",
			  (unsigned long long)m->ph.marks_in_range);
}
