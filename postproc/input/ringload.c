/* ringload.c - load a ring with its clock and process table. */
#include "ringload.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "diag.h"

int ringload_load(struct ringload *rl, const char *path, char *err, size_t errlen)
{
	int rc;
	memset(rl, 0, sizeof *rl);
	if ((rc = ring_reader_load(path, &rl->rf, err, errlen)) != 0)
		return rc < 0 ? rc : -EINVAL;
	if (ring_clock_build(rl->rf.ev, rl->rf.nev, &rl->clock) != 0 ||
	    ring_procs_build(rl->rf.ev, rl->rf.nev, rl->rf.hdr.hostname, &rl->procs) != 0) {
		snprintf(err, errlen, "out of memory");
		ringload_close(rl);
		return -ENOMEM;
	}
	if (rl->rf.stats.truncated_slots)
		diag_warn(path, "file is truncated: %llu of %llu slots missing; reading the rest",
			  (unsigned long long)rl->rf.stats.truncated_slots,
			  (unsigned long long)rl->rf.stats.nslots);
	if (rl->clock.steps)
		diag_warn(path, "the realtime clock was stepped %u time(s) during the run (largest %.3f ms); UTC times near a step are uncertain",
			  rl->clock.steps, rl->clock.max_step_ms);
	return 0;
}

void ringload_open(struct ringload *rl, const char *path)
{
	char err[512];
	if (ringload_load(rl, path, err, sizeof err))
		diag_fatal(path, "%s", err);
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
