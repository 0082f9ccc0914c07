/*
 * ring_check.c - verify what the marker victim wrote, through the real
 * reader (anchors/ring_reader.c).
 *
 *   ring_check seqs RING        for every (pid, name) of "t*" marks: values
 *                               are exactly 0..n-1 in order; prints
 *                               "pid name count" lines and totals
 *   ring_check account RING     stdin: "stream NAME COUNT" lines (what the
 *                               marker wrote) and "killed NAME LAST"
 *                               (a writer killed after committing LAST).
 *                               Each stream: one pid, values contiguous;
 *                               overwrite mode: a suffix (only the oldest
 *                               lost); discard mode: a prefix.  Then the
 *                               ledger: written = read + overwritten +
 *                               dropped + torn + bad_check, the writers
 *                               counted exactly the marks the test wrote
 *                               (+ in-flight marks of killed writers),
 *                               and a ring that never wrapped lost none
 *   ring_check window RING      every (pid, name) stream of marks with a
 *                               value: the values read are one contiguous
 *                               run (a ring copied while its writers were
 *                               stopped: whatever the window holds of a
 *                               thread must have no hole; only the oldest
 *                               may be lost, and the newest in flight)
 *   ring_check loop RING LAST   "loop" marks: a contiguous run of values
 *                               that ends at LAST or LAST+1 (and starts at
 *                               0 unless the ring wrapped); no gaps
 * Exit 0 when consistent, 1 with a reason otherwise.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ring_reader.h"

struct key {
	uint32_t pid;
	char name[32];
	int64_t next;
	uint64_t count;
};

static int check_seqs(struct ring_file *rf)
{
	struct key *keys = NULL;
	size_t nkeys = 0;
	uint64_t total = 0;
	for (size_t i = 0; i < rf->nev; i++) {
		const struct ring_event *e = &rf->ev[i];
		size_t k;
		if (e->kind != ANCHOR_KIND_MARK || e->text[0] != 't')
			continue;
		for (k = 0; k < nkeys; k++)
			if (keys[k].pid == e->pid && !strcmp(keys[k].name, e->text))
				break;
		if (k == nkeys) {
			keys = realloc(keys, (nkeys + 1) * sizeof *keys);
			memset(&keys[nkeys], 0, sizeof *keys);
			keys[nkeys].pid = e->pid;
			snprintf(keys[nkeys].name, sizeof keys[nkeys].name, "%s", e->text);
			nkeys++;
		}
		if ((int64_t)e->value != keys[k].next) {
			printf("FAIL pid %u %s: expected value %" PRId64 ", got %" PRId64 " (lost, duplicated or reordered)\n",
			       e->pid, e->text, keys[k].next, (int64_t)e->value);
			return 1;
		}
		keys[k].next++;
		keys[k].count++;
		total++;
	}
	for (size_t k = 0; k < nkeys; k++)
		printf("%u %s %" PRIu64 "\n", keys[k].pid, keys[k].name, keys[k].count);
	printf("total %" PRIu64 " streams %zu torn %" PRIu64 " bad_check %" PRIu64 "\n", total, nkeys,
	       rf->stats.torn, rf->stats.bad_check);
	free(keys);
	return 0;
}

static int check_window(struct ring_file *rf)
{
	struct key *keys = NULL;
	size_t nkeys = 0, k;
	uint64_t n = 0;
	int bad = 0;

	for (size_t i = 0; i < rf->nev && !bad; i++) {
		const struct ring_event *e = &rf->ev[i];
		if (e->kind != ANCHOR_KIND_MARK || !(e->flags & ANCHOR_FLAG_VALUE))
			continue;
		for (k = 0; k < nkeys; k++)
			if (keys[k].pid == e->pid && !strcmp(keys[k].name, e->text))
				break;
		if (k == nkeys) {
			struct key *nk = realloc(keys, (nkeys + 1) * sizeof *keys);
			if (!nk) {
				printf("FAIL out of memory\n");
				bad = 1;
				break;
			}
			keys = nk;
			memset(&keys[nkeys], 0, sizeof *keys);
			keys[nkeys].pid = e->pid;
			snprintf(keys[nkeys].name, sizeof keys[nkeys].name, "%s", e->text);
			keys[nkeys].next = (int64_t)e->value;
			nkeys++;
		}
		if ((int64_t)e->value != keys[k].next) {
			printf("FAIL pid %u %s: %" PRId64 " after %" PRId64 " (a hole newer than the oldest record kept)\n",
			       e->pid, e->text, (int64_t)e->value, keys[k].next - 1);
			bad = 1;
		}
		keys[k].next = (int64_t)e->value + 1;
		keys[k].count++;
		n++;
	}
	if (!bad)
		printf("ok window: %zu streams, %" PRIu64 " marks, each one contiguous run (torn %" PRIu64
		       ", bad_check %" PRIu64 ")\n",
		       nkeys, n, rf->stats.torn, rf->stats.bad_check);
	free(keys);
	return bad;
}

static int check_loop(struct ring_file *rf, int64_t last)
{
	int64_t first = -1, prev = -1;
	uint64_t n = 0;
	for (size_t i = 0; i < rf->nev; i++) {
		const struct ring_event *e = &rf->ev[i];
		if (e->kind != ANCHOR_KIND_MARK || strcmp(e->text, "loop"))
			continue;
		if (first < 0)
			first = (int64_t)e->value;
		else if ((int64_t)e->value != prev + 1) {
			printf("FAIL gap or reorder: %" PRId64 " after %" PRId64 "\n", (int64_t)e->value, prev);
			return 1;
		}
		prev = (int64_t)e->value;
		n++;
	}
	/* Discard mode: the oldest are kept and nothing is overwritten; once
	 * full, the newest are dropped (and counted), so the run ends early. */
	if (rf->hdr.mode == ANCHOR_RING_MODE_DISCARD) {
		if (rf->stats.overwritten_slots || (n && first != 0)) {
			printf("FAIL discard mode: first mark %" PRId64 ", overwritten %" PRIu64 "\n", first,
			       rf->stats.overwritten_slots);
			return 1;
		}
		if (rf->stats.dropped && last >= 0 && prev < last && (uint64_t)(last - prev) > rf->stats.dropped) {
			printf("FAIL discard mode: %" PRId64 " marks missing, %" PRIu64 " dropped\n", last - prev,
			       rf->stats.dropped);
			return 1;
		}
	}
	/* (in discard mode with drops, the end was dropped, as counted) */
	if (last >= 0 && !(rf->hdr.mode == ANCHOR_RING_MODE_DISCARD && rf->stats.dropped) &&
	    (prev < last || prev > last + 1)) {
		printf("FAIL last committed mark %" PRId64 " but ring ends at %" PRId64 "\n", last, prev);
		return 1;
	}
	if (!rf->stats.overwritten_slots && last >= 0 && first != 0) {
		printf("FAIL ring did not wrap but first mark is %" PRId64 "\n", first);
		return 1;
	}
	printf("ok loop marks %" PRIu64 " first %" PRId64 " last %" PRId64 " (committed %" PRId64
	       ") torn %" PRIu64 " overwritten %" PRIu64 "\n",
	       n, first, prev, last, rf->stats.torn, rf->stats.overwritten_slots);
	return 0;
}

/* Every "stack" mark carries a native stack holding a return address
 * inside stack_probe (within 256 bytes of its start). */
static int check_stacks(struct ring_file *rf, uint64_t probe)
{
	int n = 0;
	for (size_t i = 0; i < rf->nev; i++) {
		const struct ring_event *e = &rf->ev[i];
		int hit = 0;
		if (e->kind != ANCHOR_KIND_MARK || strcmp(e->text, "stack"))
			continue;
		for (unsigned k = 0; k < e->nstack; k++)
			hit |= e->stack[k] >= probe && e->stack[k] < probe + 256;
		if (!e->nstack || !hit) {
			printf("FAIL mark %d: %u frames, none inside stack_probe (%#llx)\n", n, e->nstack,
			       (unsigned long long)probe);
			return 1;
		}
		n++;
	}
	printf("ok %d stack marks, each with stack_probe on its stack\n", n);
	return n == 3 ? 0 : 1;
}

/* The ledger's identity (ring_format.h) as anchorpost info prints it, and
 * what the writers' counts imply whatever the test wrote. */
static int check_identity(const struct ring_stats *st, int disc)
{
	int bad = 0;

	printf("written %" PRIu64 " = read %" PRIu64 " + overwritten %" PRIu64 " (lapped %" PRIu64 ") + dropped %" PRIu64
	       " + torn %" PRIu64 " + bad_check %" PRIu64 "; user written %" PRIu64 " read %" PRIu64 " dropped %" PRIu64
	       "; overwritten slots %" PRIu64 "; counted never stored %" PRIu64 "\n",
	       st->written, st->records, st->overwritten, st->lapped, st->dropped, st->torn, st->bad_check,
	       st->written_user, st->records_user, st->dropped_user, st->overwritten_slots, st->unstored);
	if (!st->ledger) {
		printf("FAIL ring has no ledger\n");
		return 1;
	}
	if (st->ledger_short) {
		printf("FAIL %" PRIu64 " records seen beyond the ledger\n", st->ledger_short);
		bad = 1;
	}
	if (st->written != st->records + st->overwritten + st->dropped + st->torn + st->bad_check) {
		printf("FAIL counts do not add up\n");
		bad = 1;
	}
	/* Nothing can be lost to wrap-around in a ring that never wrapped
	 * (discard mode never does): the ledger and the scan must agree. */
	if ((disc || st->overwritten_slots == 0) && st->overwritten) {
		printf("FAIL %" PRIu64 " records missing from a ring that never wrapped\n", st->overwritten);
		bad = 1;
	}
	if (st->overwritten > st->overwritten_slots) {
		printf("FAIL more records overwritten than slots\n");
		bad = 1;
	}
	if (!disc && st->dropped) {
		printf("FAIL overwrite mode ring reports drops\n");
		bad = 1;
	}
	return bad;
}

/* The marks the test says it wrote, one entry per writer (stream). */
struct streams {
	char names[256][32];
	long counts[256], first[256], last[256], nread[256];
	int killed[256];
	uint32_t pids[256];
	int ns, nkilled;
};

/*
 * stdin: "stream NAME COUNT" (a writer that wrote COUNT marks and ended)
 * and "killed NAME LAST" (a writer killed by SIGKILL after committing
 * marks 0..LAST; its mark LAST+1 was in flight: it may be in the ring,
 * torn, or counted and never stored, or not counted at all).
 */
static void read_streams(struct streams *s)
{
	char line[256];

	s->ns = s->nkilled = 0;
	while (s->ns < 256 && fgets(line, sizeof line, stdin)) {
		int ns = s->ns;
		long c;
		s->killed[ns] = 0;
		if (sscanf(line, "stream %31s %ld", s->names[ns], &c) == 2 ||
		    (sscanf(line, "killed %31s %ld", s->names[ns], &c) == 2 && (s->killed[ns] = 1, c++, 1))) {
			s->counts[ns] = c;
			s->first[ns] = s->last[ns] = -1;
			s->nread[ns] = 0;
			s->pids[ns] = 0;
			s->nkilled += s->killed[ns];
			s->ns++;
		}
	}
}

/* Each stream's marks in the ring: one pid, consecutive values; records
 * the first, last and count read.  Returns 1 on a gap or reorder. */
static int match_marks(struct ring_file *rf, struct streams *s)
{
	for (size_t i = 0; i < rf->nev; i++) {
		const struct ring_event *e = &rf->ev[i];
		int k;
		if (e->kind != ANCHOR_KIND_MARK)
			continue;
		for (k = 0; k < s->ns; k++)
			if (!strcmp(s->names[k], e->text))
				break;
		if (k == s->ns)
			continue;
		if (s->pids[k] && s->pids[k] != e->pid) {
			printf("FAIL %s: marks under pids %u and %u\n", s->names[k], s->pids[k], e->pid);
			return 1;
		}
		s->pids[k] = e->pid;
		if (s->last[k] >= 0 && (int64_t)e->value != s->last[k] + 1) {
			printf("FAIL %s: %" PRId64 " after %ld (gap or reorder in the middle)\n", s->names[k],
			       (int64_t)e->value, s->last[k]);
			return 1;
		}
		if (s->first[k] < 0)
			s->first[k] = (long)e->value;
		s->last[k] = (long)e->value;
		s->nread[k]++;
	}
	return 0;
}

/* Per stream: which end survived (a suffix in overwrite mode, a prefix in
 * discard mode); sums what the test knows was written, read and lost. */
static int check_streams(const struct streams *s, int disc, uint64_t *known, uint64_t *read, uint64_t *lost)
{
	int bad = 0;

	for (int k = 0; k < s->ns; k++) {
		/* A killed writer's in-flight mark, found committed, was written. */
		long wrote = s->counts[k] + (s->killed[k] && s->last[k] == s->counts[k]);
		printf("%s pid %u read %ld of %ld%s (%ld..%ld)\n", s->names[k], s->pids[k], s->nread[k], wrote,
		       s->killed[k] ? " (killed)" : "", s->first[k], s->last[k]);
		/* Overwrite mode keeps a suffix of each stream, discard mode a
		 * prefix; either may be empty. */
		if (!disc && s->nread[k] && s->last[k] != wrote - 1) {
			printf("FAIL %s: newest marks lost (ends at %ld, wrote up to %ld)\n", s->names[k], s->last[k],
			       wrote - 1);
			bad = 1;
		}
		if (disc && s->nread[k] && s->first[k] != 0) {
			printf("FAIL %s: discard mode lost its oldest marks (starts at %ld)\n", s->names[k],
			       s->first[k]);
			bad = 1;
		}
		*known += (uint64_t)wrote;
		*read += (uint64_t)s->nread[k];
		*lost += (uint64_t)(wrote - s->nread[k]);
	}
	return bad;
}

/* The ledger's user counts against what the test knows it wrote and read. */
static int check_ledger(const struct ring_stats *st, int disc, int nkilled, uint64_t known, uint64_t read,
			uint64_t lost)
{
	int bad = 0;

	/* The writers counted every mark the test knows of, plus at most the
	 * in-flight mark of each killed writer that was counted but never
	 * committed; the test's marks are the only user events. */
	if (st->written_user < known || st->written_user > known + (uint64_t)nkilled) {
		printf("FAIL ledger counts %" PRIu64 " user events, the test wrote %" PRIu64 " (+ up to %d in flight)\n",
		       st->written_user, known, nkilled);
		bad = 1;
	}
	if (st->records_user != read) {
		printf("FAIL %" PRIu64 " user events read, %" PRIu64 " of them the test's\n", st->records_user, read);
		bad = 1;
	}
	/* Discard mode loses only what it refuses, and counts each. */
	if (disc && !nkilled && lost != st->dropped_user) {
		printf("FAIL discard mode lost %" PRIu64 " marks, dropped %" PRIu64 "\n", lost, st->dropped_user);
		bad = 1;
	}
	if (st->unstored > (uint64_t)nkilled) {
		printf("FAIL %" PRIu64 " records counted and never stored, %d writers killed\n", st->unstored, nkilled);
		bad = 1;
	}
	if (!nkilled && (st->torn || st->bad_check)) {
		printf("FAIL torn or failing records without a killed writer\n");
		bad = 1;
	}
	return bad;
}

/* Exact accounting of the streams on stdin against the ring's ledger. */
static int check_account(struct ring_file *rf)
{
	static struct streams s;
	int bad, disc = rf->hdr.mode == ANCHOR_RING_MODE_DISCARD;
	uint64_t known = 0, read = 0, lost = 0;

	read_streams(&s);
	if (match_marks(rf, &s))
		return 1;
	bad = check_streams(&s, disc, &known, &read, &lost);
	bad |= check_identity(&rf->stats, disc);
	printf("test wrote %" PRIu64 " marks (%d writers killed), read %" PRIu64 ", lost %" PRIu64 "\n", known,
	       s.nkilled, read, lost);
	bad |= check_ledger(&rf->stats, disc, s.nkilled, known, read, lost);
	printf(bad ? "FAIL account\n" : "ok account exact\n");
	return bad;
}

int main(int argc, char **argv)
{
	struct ring_file rf;
	char err[256];
	int rc;
	if (argc < 3) {
		fprintf(stderr, "usage: ring_check seqs RING | loop RING LAST\n");
		return 2;
	}
	if (ring_reader_load(argv[2], &rf, err, sizeof err)) {
		/* Killed before the creator finished the header: acceptable
		 * only if nothing was committed. */
		if (!strcmp(argv[1], "loop") && argc >= 4 && atoll(argv[3]) < 0) {
			printf("ok no ring yet and nothing committed (%s)\n", err);
			return 0;
		}
		printf("FAIL %s: %s\n", argv[2], err);
		return 1;
	}
	if (!strcmp(argv[1], "seqs"))
		rc = check_seqs(&rf);
	else if (!strcmp(argv[1], "stacks") && argc >= 4)
		rc = check_stacks(&rf, strtoull(argv[3], NULL, 16));
	else if (!strcmp(argv[1], "window"))
		rc = check_window(&rf);
	else if (!strcmp(argv[1], "account"))
		rc = check_account(&rf);
	else if (!strcmp(argv[1], "loop") && argc >= 4)
		rc = check_loop(&rf, atoll(argv[3]));
	else
		rc = 2;
	ring_reader_free(&rf);
	return rc;
}
