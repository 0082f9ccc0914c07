/* dump_csv.c - one CSV row per ring event (see dump_csv.h). */
#include "output/dump_csv.h"

#include "model/timebase.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "model/lookup.h"
#include "output/csv.h"
#include "output/outfile.h"

static void put_value(struct csv *c, const struct ring_event *e)
{
	switch (e->kind) {
	case ANCHOR_KIND_MARK:
	case ANCHOR_KIND_BEGIN:
	case ANCHOR_KIND_END:
	case ANCHOR_KIND_PROC_EXIT:
		if (!(e->flags & ANCHOR_FLAG_VALUE)) {
			csv_empty(c);
		} else if (e->flags & ANCHOR_FLAG_F64) {
			double d;
			memcpy(&d, &e->value, sizeof d);
			csv_f64(c, d, 17);
		} else {
			csv_i64(c, (int64_t)e->value);
		}
		return;
	case ANCHOR_KIND_THREAD:
		csv_u64(c, e->value);
		return;
	default:
		csv_u64(c, e->value);
		return;
	}
}

static void put_stack(struct csv *c, const struct ring_event *e)
{
	char buf[ANCHOR_STACK_MAX * 20 + 1];
	size_t n = 0;
	buf[0] = '\0';
	for (unsigned k = 0; k < e->nstack; k++)
		n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%#llx", k ? ";" : "",
				      (unsigned long long)e->stack[k]);
	csv_str(c, buf);
}

static void put_event(struct csv *c, const struct ringload *rl, const struct ring_event *e, int stacks)
{
	const struct ring_proc *p = lookup_proc(&rl->procs, e->pid);
	int64_t unix_ns = timebase_unix_ns(&rl->clock, e->ts_ns);
	char iso[48], name[600];
	if (unix_ns) {
		timebase_iso(unix_ns, iso, sizeof iso);
		csv_str(c, iso);
		csv_i64(c, unix_ns);
	} else {
		csv_empty(c);
		csv_empty(c);
	}
	csv_u64(c, e->ts_ns);
	csv_u64(c, e->pid);
	csv_u64(c, e->tid);
	csv_str(c, lookup_kind_name(e->kind));
	lookup_event_name(e, name, sizeof name);
	csv_str(c, name);
	put_value(c, e);
	csv_str(c, p ? p->host : rl->rf.hdr.hostname);
	if (p && p->rank >= 0)
		csv_i64(c, p->rank);
	else
		csv_empty(c);
	if (stacks)
		put_stack(c, e);
	csv_row_end(c);
}

int dump_csv_write(const struct ringload *rl, const char *out, int stacks, struct em_error *e)
{
	static const char *const cols[] = {"utc_iso", "unix_ns", "mono_ns", "pid", "tid", "kind",
					   "name", "value", "host", "rank", NULL};
	static const char *const cols_stack[] = {"utc_iso", "unix_ns", "mono_ns", "pid", "tid", "kind",
						 "name", "value", "host", "rank", "stack", NULL};
	struct outfile of;
	struct csv c;
	int rc;

	if ((rc = outfile_create(&of, out, e)))
		return rc;
	csv_init(&c, of.fp);
	csv_header(&c, stacks ? cols_stack : cols);
	for (size_t i = 0; i < rl->rf.nev; i++)
		put_event(&c, rl, &rl->rf.ev[i], stacks);
	return outfile_done(&of, e);
}
