/* ringload.c - load a ring with its clock and process table. */
#include "ringload.h"

#include <stdio.h>
#include <string.h>

#include "diag.h"

void ringload_open(struct ringload *rl, const char *path)
{
	char err[512];
	memset(rl, 0, sizeof *rl);
	if (ring_reader_load(path, &rl->rf, err, sizeof err) != 0)
		diag_fatal(path, "%s", err);
	if (ring_clock_build(rl->rf.ev, rl->rf.nev, &rl->clock) != 0 ||
	    ring_procs_build(rl->rf.ev, rl->rf.nev, rl->rf.hdr.hostname, &rl->procs) != 0)
		diag_fatal(path, "out of memory");
	ring_clock_use_creation(&rl->clock, &rl->rf.hdr);
	if (rl->rf.stats.truncated_slots)
		diag_warn(path, "file is truncated: %llu of %llu slots missing; reading the rest",
			  (unsigned long long)rl->rf.stats.truncated_slots,
			  (unsigned long long)rl->rf.stats.nslots);
	if (rl->clock.steps)
		diag_warn(path, "the realtime clock was stepped %u time(s) during the run (largest %.3f ms); UTC times near a step are uncertain",
			  rl->clock.steps, rl->clock.max_step_ms);
}

void ringload_close(struct ringload *rl)
{
	ring_procs_free(&rl->procs);
	ring_clock_free(&rl->clock);
	ring_reader_free(&rl->rf);
}

void ringload_event_name(const struct ring_event *e, char *buf, size_t cap)
{
	const char *v;
	buf[0] = '\0';
	switch (e->kind) {
	case ANCHOR_KIND_SYNC:
		return;
	case ANCHOR_KIND_PROC_START:
		v = ring_event_field(e, "argv");
		snprintf(buf, cap, "%s", v ? v : "");
		return;
	default:
		snprintf(buf, cap, "%.*s", (int)e->text_len, e->text);
		return;
	}
}
