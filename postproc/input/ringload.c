/* ringload.c - load a ring with its clock and process table. */
#include "input/ringload.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "input/input_file.h"
#include "util/diag.h"

int ringload_read(struct ringload *rl, const char *path, struct em_error *e)
{
	size_t errlen;
	char *err = diag_error_buf(e, &errlen);
	int rc;
	memset(rl, 0, sizeof *rl);
	if ((rc = input_file_check(path, INPUT_FILE_REMEMBER, e)) != 0)
		return rc < 0 ? rc : -EINVAL;
	if ((rc = ring_reader_load(path, &rl->rf, err, errlen)) != 0)
		return rc < 0 ? rc : -EINVAL;
	if (ring_clock_build(rl->rf.ev, rl->rf.nev, &rl->clock) != 0 ||
	    ring_procs_build(rl->rf.ev, rl->rf.nev, rl->rf.hdr.hostname, &rl->procs) != 0) {
		snprintf(err, errlen, "out of memory");
		ringload_close(rl);
		return -ENOMEM;
	}
	ring_clock_use_creation(&rl->clock, &rl->rf.hdr);
	return 0;
}

int ringload_load(struct ringload *rl, const char *path, struct em_error *e)
{
	int rc = ringload_read(rl, path, e);
	if (rc)
		return rc;
	if (rl->rf.stats.truncated_slots)
		diag_warn(path, "file is truncated: %llu of %llu slots missing; reading the rest",
			  (unsigned long long)rl->rf.stats.truncated_slots,
			  (unsigned long long)rl->rf.stats.nslots);
	{
		/* Torn, orphan or failing records: what they held is missing from
		 * every table built on this ring, so say so even when the rest
		 * still aligns (a number from a damaged ring is not silent). */
		const struct ring_stats *st = &rl->rf.stats;
		if (st->torn || st->orphan_slots || st->bad_check)
			diag_warn(path, "damaged ring: %llu torn record(s), %llu orphan continuation(s), %llu failing "
					"their check; what they held (phase edges, marks) is missing from every table",
				  (unsigned long long)st->torn, (unsigned long long)st->orphan_slots,
				  (unsigned long long)st->bad_check);
	}
	if (rl->clock.steps)
		diag_warn(path, "the realtime clock was stepped %u time(s) during the run (largest %.3f ms); UTC times near a step are uncertain",
			  rl->clock.steps, rl->clock.max_step_ms);
	return 0;
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
	case ANCHOR_KIND_SENSOR: {
		/* Raw counter values, ';'-separated, in SENSOR_DESC order. */
		uint64_t val[ANCHOR_SENSOR_MAX];
		unsigned n = ring_event_sensor(e, val, ANCHOR_SENSOR_MAX);
		size_t k = 0;
		for (unsigned i = 0; i < n && k < cap; i++)
			k += (size_t)snprintf(buf + k, cap - k, "%s%llu", i ? ";" : "", (unsigned long long)val[i]);
		return;
	}
	case ANCHOR_KIND_SENSOR_DESC:
	case ANCHOR_KIND_SITE: {
		/* NUL-separated items: show them ';'-separated (a SITE's
		 * phase=;file=;func=;lines= all, not only its first). */
		size_t n = e->text_len < cap ? e->text_len : cap - 1;
		while (e->kind == ANCHOR_KIND_SITE && n && !e->text[n - 1])
			n--;
		for (size_t i = 0; i < n; i++)
			buf[i] = e->text[i] ? e->text[i] : ';';
		buf[n] = '\0';
		return;
	}
	default:
		snprintf(buf, cap, "%.*s", (int)e->text_len, e->text);
		return;
	}
}

int ringload_damage(const struct ring_file *rf, char *buf, size_t cap)
{
	const struct ring_stats *st = &rf->stats;
	const struct {
		unsigned long long n;
		const char *what;
	} parts[] = {
		{st->torn, "torn record(s)"},
		{st->orphan_slots, "orphan continuation(s)"},
		{st->bad_check, "record(s) failing their check"},
		{st->truncated_slots, "slot(s) missing (file truncated)"},
	};
	size_t len = 0;
	if (cap)
		buf[0] = '\0';
	for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
		int k;
		if (!parts[i].n || len >= cap)
			continue;
		k = snprintf(buf + len, cap - len, "%s%llu %s", len ? ", " : "", parts[i].n, parts[i].what);
		if (k > 0)
			len += (size_t)k;
	}
	return len > 0;
}
