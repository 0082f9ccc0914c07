/*
 * cmd_info.c - `anchorpost info RING`: what a ring holds.
 *
 * Header (version, size, mode, host, creation time), the processes with
 * their command line, rank and fate, the UTC time span, record counts by
 * kind, and what was lost: overwritten, dropped, torn, failed checks.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cmd_fatal.h"
#include "cmd/commands.h"
#include "cmd/options.h"
#include "input/ringload.h"
#include "util/diag.h"

static void print_proc(const struct ring_proc *p)
{
	char fate[48] = "running or unknown";
	if (p->exit_known)
		snprintf(fate, sizeof fate, "%s %d", p->exit_signal ? "killed by signal" : "exit status",
			 p->exit_value);
	else if (p->execed)
		snprintf(fate, sizeof fate, "replaced by exec");
	else if (p->exit_ns)
		snprintf(fate, sizeof fate, "exited (status unknown)");
	printf("  pid %-7u ppid %-7u %-5s", p->pid, p->ppid, p->forked ? "fork" : "exec");
	if (p->rank >= 0)
		printf(" rank %-3d", p->rank);
	{
		/* Command lines can hold newlines (python -c): one line each. */
		char cmd[101];
		const char *src = p->argv[0] ? p->argv : p->exe;
		size_t i;
		for (i = 0; src[i] && i < sizeof cmd - 1; i++)
			cmd[i] = (src[i] == '\n' || src[i] == '\r' || src[i] == '\t') ? ' ' : src[i];
		cmd[i] = '\0';
		printf(" %-8" PRIu64 " events  %-22s  %s%s\n", p->events, fate, cmd, src[i] ? "..." : "");
	}
}

static const struct cmd_usage info_usage = {
	.name = "info",
	.usage = "[--ring] RING",
	.about = "  header, processes, time span, record counts and losses of a ring\n",
};

int cmd_info(int argc, char **argv)
{
	struct ringload rl;
	uint64_t by_kind[ANCHOR_KIND_MAX_ + 1] = {0};
	const struct ring_stats *s;
	char a[48], b[48];

	const char *ring = NULL;
	const struct option opts[] = {
		OPT_STRING(0, "ring", &ring, "RING", "the ring (or give it as the only argument)"),
		OPT_END(),
	};
	int npos = options_parse(argc, argv, opts, &info_usage, 0);

	ring = options_input(&info_usage, npos, argv, ring, "--ring");
	ringload_open(&rl, ring);
	s = &rl.rf.stats;
	ring_clock_iso((int64_t)rl.rf.hdr.create_realtime_ns, a, sizeof a);
	printf("ring       %s\n", ring);
	printf("format     %u.%u, %" PRIu64 " slots of 64 B (%.1f MiB), %s mode\n", rl.rf.hdr.version_major,
	       rl.rf.hdr.version_minor, s->nslots, (double)s->nslots * 64 / 1048576.0,
	       rl.rf.hdr.mode == ANCHOR_RING_MODE_DISCARD ? "discard" : "overwrite");
	printf("created    %s on %s by pid %u\n", a, rl.rf.hdr.hostname, rl.rf.hdr.creator_pid);
	/* Format 1.0 rings predate the field: all zero. */
	printf("writer     %s%.*s\n", rl.rf.hdr.writer_version[0] ? "anchor " : "not recorded (format 1.0)",
	       (int)sizeof rl.rf.hdr.writer_version, rl.rf.hdr.writer_version);
	if (rl.rf.nev) {
		int64_t t0 = ring_clock_unix_ns(&rl.clock, rl.rf.ev[0].ts_ns);
		int64_t t1 = ring_clock_unix_ns(&rl.clock, rl.rf.ev[rl.rf.nev - 1].ts_ns);
		ring_clock_iso(t0, a, sizeof a);
		ring_clock_iso(t1, b, sizeof b);
		printf("span       %s .. %s (%.6f s)\n", a, b,
		       (double)(rl.rf.ev[rl.rf.nev - 1].ts_ns - rl.rf.ev[0].ts_ns) / 1e9);
	}
	if (rl.clock.from_creation)
		printf("clock      0 sync records (all overwritten): UTC from the ring's creation stamp\n");
	else
		printf("clock      %zu sync records, widest bracket %.3f us, %u realtime step(s)\n", rl.clock.n,
		       rl.clock.max_bracket_us, rl.clock.steps);
	printf("processes  %zu\n", rl.procs.n);
	for (size_t i = 0; i < rl.procs.n; i++)
		print_proc(&rl.procs.p[i]);
	for (size_t i = 0; i < rl.rf.nev; i++)
		by_kind[rl.rf.ev[i].kind < ANCHOR_KIND_MAX_ ? rl.rf.ev[i].kind : ANCHOR_KIND_MAX_]++;
	printf("records    %" PRIu64 ":", s->records);
	for (unsigned k = 1; k <= ANCHOR_KIND_MAX_; k++)
		if (by_kind[k])
			printf(" %s %" PRIu64, k == ANCHOR_KIND_MAX_ ? "other" : ring_kind_name(k), by_kind[k]);
	printf("\n");
	if (s->ledger)
		printf("written    %" PRIu64 " = read %" PRIu64 " + overwritten %" PRIu64 " (%" PRIu64
		       " lapped) + dropped %" PRIu64 " + torn %" PRIu64 " + bad check %" PRIu64
		       "; user events %" PRIu64 ", read %" PRIu64 "\n",
		       s->written, s->records, s->overwritten, s->lapped, s->dropped, s->torn, s->bad_check,
		       s->written_user, s->records_user);
	if (s->ledger_short)
		printf("warning    %" PRIu64 " record(s) seen beyond the writers' ledger (header damaged, or "
		       "written by an older anchor)\n", s->ledger_short);
	printf("lost       overwritten %" PRIu64 " slots, dropped %" PRIu64 ", torn %" PRIu64
	       ", bad check %" PRIu64 ", orphan continuations %" PRIu64 ", truncated %" PRIu64 " slots\n",
	       s->overwritten_slots, s->dropped, s->torn, s->bad_check, s->orphan_slots, s->truncated_slots);
	ringload_close(&rl);
	return 0;
}
