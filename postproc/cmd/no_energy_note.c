/* no_energy_note.c - why there are no joules (see no_energy_note.h). */
#include "cmd/no_energy_note.h"

#include <stdio.h>
#include <string.h>

#include "input/perun_absent.h"
#include "input/ringload.h"
#include "util/diag.h"

/* What the ring says of perun, indented under the caller's line. */
static void explain_perun(const struct ringload *rl)
{
	char buf[8192] = "";
	perun_absent_explain(rl, buf, sizeof buf);
	for (char *s = buf, *e; *s && (e = strchr(s, '\n')); s = e + 1)
		fprintf(stderr, "  %.*s\n", (int)(e - s), s);
}

void no_energy_note(const struct energy_model *m, const char *why)
{
	/* stdout first: the note must not land in the middle of a table. */
	fflush(stdout);
	fprintf(stderr, "%s: no energy: %s; phase times only (count, total, mean, p50, p95 per phase and process)\n",
		diag_prog, why);
	explain_perun(&m->rl);
}

void no_energy_note_ring(const char *ring, const char *why)
{
	struct ringload rl;
	fflush(stdout);
	fprintf(stderr, "%s: no energy: %s; phase times only\n", diag_prog, why);
	/* Unreadable: its own error follows when it is opened. */
	if (!ringload_read(&rl, ring, NULL)) {
		explain_perun(&rl);
		ringload_close(&rl);
	}
}

void no_energy_note_open_failed(const struct em_opts *o)
{
	struct ringload rl;
	if (!o->perun && o->ring && !ringload_read(&rl, o->ring, NULL)) {
		fflush(stdout);
		fprintf(stderr, "%s: no perun file, and the ring's account of perun:\n", diag_prog);
		explain_perun(&rl);
		ringload_close(&rl);
	}
}
