/*
 * cmd_dump.c - `anchorpost dump RING [-o FILE.csv]`: one CSV row per event.
 *
 * Columns: utc_iso, unix_ns, mono_ns, pid, tid, kind, name, value, host, rank.
 * value: the mark's value (integer or float), SYNC's realtime ns, FORK's
 * parent pid, PROC_EXIT's status or signal, empty when there is none.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cmd_fatal.h"
#include "cmd/commands.h"
#include "cmd/options.h"
#include "input/ringload.h"
#include "output/csv.h"
#include "output/outfile.h"
#include "util/diag.h"

static const struct cmd_usage dump_usage = {
	.name = "dump",
	.usage = "[--ring] RING [-o FILE.csv] [--stacks]",
	.about = "  one CSV row per event: utc_iso,unix_ns,mono_ns,pid,tid,kind,name,value,host,rank\n",
};

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

int cmd_dump(int argc, char **argv)
{
	static const char *const cols[] = {"utc_iso", "unix_ns", "mono_ns", "pid", "tid", "kind",
					   "name", "value", "host", "rank", NULL};
	static const char *const cols_stack[] = {"utc_iso", "unix_ns", "mono_ns", "pid", "tid", "kind",
						 "name", "value", "host", "rank", "stack", NULL};
	const char *ring = NULL, *out = "-";
	int stacks = 0;
	struct ringload rl;
	struct outfile of;
	struct csv c;

	const struct option opts[] = {
		OPT_STRING(0, "ring", &ring, "RING", "the ring (or give it as the only argument)"),
		OPT_STRING('o', "out", &out, "FILE", "the CSV (-: stdout) [-]"),
		OPT_BOOL(0, "stacks", &stacks, "add a column 'stack': native return addresses (ANCHOR_STACKS=1), "
					    "innermost first, hex, ';'-separated"),
		OPT_END(),
	};
	int npos = options_parse(argc, argv, opts, &dump_usage, 0);

	ring = options_input(&dump_usage, npos, argv, ring, "--ring");
	ringload_open(&rl, ring);
	outfile_open(&of, out);
	csv_init(&c, of.fp);
	csv_header(&c, stacks ? cols_stack : cols);
	for (size_t i = 0; i < rl.rf.nev; i++) {
		const struct ring_event *e = &rl.rf.ev[i];
		const struct ring_proc *p = ring_procs_find(&rl.procs, e->pid);
		int64_t unix_ns = ring_clock_unix_ns(&rl.clock, e->ts_ns);
		char iso[48], name[600];
		if (unix_ns) {
			ring_clock_iso(unix_ns, iso, sizeof iso);
			csv_str(&c, iso);
			csv_i64(&c, unix_ns);
		} else {
			csv_empty(&c);
			csv_empty(&c);
		}
		csv_u64(&c, e->ts_ns);
		csv_u64(&c, e->pid);
		csv_u64(&c, e->tid);
		csv_str(&c, ring_kind_name(e->kind));
		ringload_event_name(e, name, sizeof name);
		csv_str(&c, name);
		put_value(&c, e);
		csv_str(&c, p ? p->host : rl.rf.hdr.hostname);
		if (p && p->rank >= 0)
			csv_i64(&c, p->rank);
		else
			csv_empty(&c);
		if (stacks) {
			char buf[ANCHOR_STACK_MAX * 20 + 1];
			size_t n = 0;
			buf[0] = '\0';
			for (unsigned k = 0; k < e->nstack; k++)
				n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%#llx", k ? ";" : "",
						      (unsigned long long)e->stack[k]);
			csv_str(&c, buf);
		}
		csv_row_end(&c);
	}
	outfile_commit(&of);
	ringload_close(&rl);
	return 0;
}
