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

#include "commands.h"
#include "csv.h"
#include "diag.h"
#include "outfile.h"
#include "ringload.h"

static void usage(FILE *fp)
{
	fprintf(fp, "usage: anchorpost dump RING [-o FILE.csv] [--stacks]\n"
		    "  one CSV row per event: utc_iso,unix_ns,mono_ns,pid,tid,kind,name,value,host,rank\n"
		    "  --stacks  add a column 'stack': native return addresses (ANCHOR_STACKS=1),\n"
		    "            innermost first, hex, ';'-separated\n");
}

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

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-o") && i + 1 < argc) {
			out = argv[++i];
		} else if (!strcmp(argv[i], "--stacks")) {
			stacks = 1;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			usage(stderr);
			diag_fatal(NULL, "dump: unknown option '%s'", argv[i]);
		} else if (!ring) {
			ring = argv[i];
		} else {
			diag_fatal(NULL, "dump: more than one ring given ('%s')", argv[i]);
		}
	}
	if (!ring) {
		usage(stderr);
		return 2;
	}
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
