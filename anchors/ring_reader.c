/*
 * ring_reader.c - validate and decode an anchor ring (see ring_reader.h).
 *
 * Untrusted input: every length and index from the file is bounded before
 * use (fuzzed by tests/fuzz/fuzz_ring.c).
 */
#include "ring_reader.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static int set_err(char *err, size_t errlen, int rc, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#include <stdarg.h>
static int set_err(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;
	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

const char *ring_kind_name(unsigned kind)
{
	static const char *const names[ANCHOR_KIND_MAX_] = {
		[ANCHOR_KIND_PROC_START] = "proc_start", [ANCHOR_KIND_PROC_EXIT] = "proc_exit",
		[ANCHOR_KIND_FORK] = "fork",             [ANCHOR_KIND_EXEC] = "exec",
		[ANCHOR_KIND_SYNC] = "sync",             [ANCHOR_KIND_MARK] = "mark",
		[ANCHOR_KIND_BEGIN] = "begin",           [ANCHOR_KIND_END] = "end",
		[ANCHOR_KIND_THREAD] = "thread",         [ANCHOR_KIND_CHILD_EXIT] = "child_exit",
		[ANCHOR_KIND_SENSOR_DESC] = "sensor_desc", [ANCHOR_KIND_SENSOR] = "sensor",
		[ANCHOR_KIND_DEV_BEGIN] = "dev_begin",   [ANCHOR_KIND_DEV_END] = "dev_end",
		[ANCHOR_KIND_DEV_CLOCK] = "dev_clock",   [ANCHOR_KIND_SITE] = "site",
	};
	static char buf[24];
	if (kind < ANCHOR_KIND_MAX_ && names[kind])
		return names[kind];
	snprintf(buf, sizeof buf, "kind%u", kind);
	return buf;
}

/* Arena of text/stack bytes; offsets are fixed up into pointers at the end
 * because the arena moves while it grows. */
static int arena_put(struct ring_file *rf, const void *p, size_t n, size_t *off)
{
	size_t need = rf->arena_len + n + 8;
	if (need > rf->arena_cap) {
		size_t cap = rf->arena_cap ? rf->arena_cap * 2 : 1 << 16;
		while (cap < need)
			cap *= 2;
		char *a = realloc(rf->arena, cap);
		if (!a)
			return -ENOMEM;
		rf->arena = a;
		rf->arena_cap = cap;
	}
	/* Keep stacks 8-byte aligned. */
	rf->arena_len = (rf->arena_len + 7) & ~(size_t)7;
	*off = rf->arena_len;
	memcpy(rf->arena + rf->arena_len, p, n);
	rf->arena_len += n;
	rf->arena[rf->arena_len++] = '\0';
	return 0;
}

static int cmp_event(const void *a, const void *b)
{
	const struct ring_event *x = a, *y = b;
	if (x->ts_ns != y->ts_ns)
		return x->ts_ns < y->ts_ns ? -1 : 1;
	return x->ticket < y->ticket ? -1 : x->ticket > y->ticket;
}

/* A ring written by one thread (or an unwrapped one scanned in ticket
 * order) is often in order already: one linear check spares the sort
 * (anchorpost reads 64 such rings per MPI job, bench/mpi_scale.sh). */
static int sorted_already(const struct ring_event *ev, size_t n)
{
	for (size_t i = 1; i < n; i++)
		if (cmp_event(&ev[i - 1], &ev[i]) > 0)
			return 0;
	return 1;
}

/* Above this no count or ticket is possible: 2^62 records at one per
 * nanosecond take 146 years (and tickets carry 62 bits, ring_format.h). */
#define IMPOSSIBLE_COUNT (1ull << 62)

/* Words a writer sets once or only counts up: values no writer can have
 * written mean a damaged header, and whatever the reader would print from
 * them (a head of 2^64-1: "overwritten 4611686018427385855 slots"; a
 * creation stamp past 2^63: dates in 1734) would be garbage. */
static int check_header_values(const struct anchor_ring_hdr *h, char *err, size_t errlen)
{
	static const char dmg[] = "the header is damaged";
	uint64_t counted = 0;
	if (h->mode != ANCHOR_RING_MODE_OVERWRITE && h->mode != ANCHOR_RING_MODE_DISCARD)
		return set_err(err, errlen, -EINVAL, "ring header has an unknown mode (%u): %s", h->mode, dmg);
	if (h->clock_id != CLOCK_MONOTONIC)
		return set_err(err, errlen, -EINVAL, "ring header names clock %u, not CLOCK_MONOTONIC: %s",
			       h->clock_id, dmg);
	if (!memchr(h->hostname, '\0', sizeof h->hostname))
		return set_err(err, errlen, -EINVAL, "ring header's host name is not terminated: %s", dmg);
	/* CLOCK_REALTIME and CLOCK_MONOTONIC are non-negative 64-bit counts */
	if (h->create_realtime_ns >= 1ull << 63 || h->create_monotonic_ns >= 1ull << 63)
		return set_err(err, errlen, -EINVAL,
			       "ring header's creation time is impossible (realtime %llu ns, monotonic %llu ns): %s",
			       (unsigned long long)h->create_realtime_ns,
			       (unsigned long long)h->create_monotonic_ns, dmg);
	if (h->head >= IMPOSSIBLE_COUNT)
		return set_err(err, errlen, -EINVAL,
			       "ring header's head (%llu) is beyond any ticket a writer hands out (2^62): %s",
			       (unsigned long long)h->head, dmg);
	/* Only discard mode refuses records, and it stops head at the ring's
	 * capacity (ring_writer.c claim_discard). */
	if (h->mode == ANCHOR_RING_MODE_OVERWRITE && (h->dropped || h->dropped_user))
		return set_err(err, errlen, -EINVAL,
			       "ring header counts %llu dropped records in overwrite mode, which drops none: %s",
			       (unsigned long long)h->dropped, dmg);
	if (h->mode == ANCHOR_RING_MODE_DISCARD && h->head > h->nslots)
		return set_err(err, errlen, -EINVAL,
			       "ring header's head (%llu) is past the ring's %llu slots in discard mode, which stops "
			       "there: %s",
			       (unsigned long long)h->head, (unsigned long long)h->nslots, dmg);
	if (h->dropped >= IMPOSSIBLE_COUNT || h->dropped_user > h->dropped || h->lapped >= IMPOSSIBLE_COUNT)
		return set_err(err, errlen, -EINVAL,
			       "ring header's counts are impossible (dropped %llu, of them user %llu, lapped %llu): %s",
			       (unsigned long long)h->dropped, (unsigned long long)h->dropped_user,
			       (unsigned long long)h->lapped, dmg);
	if (!(h->feat_mask & ANCHOR_FEAT_LEDGER))
		return 0;
	for (unsigned i = 0; i < ANCHOR_LEDGER_LANES; i++) {
		const struct anchor_ledger_lane *l = &h->lanes[i];
		const uint64_t w[4] = {l->user, l->other, l->nested_user, l->nested_other};
		for (unsigned k = 0; k < 4; k++) {
			if (w[k] >= IMPOSSIBLE_COUNT)
				return set_err(err, errlen, -EINVAL,
					       "ring header's ledger lane %u holds an impossible count (%llu): %s", i,
					       (unsigned long long)w[k], dmg);
			counted = counted + w[k] < counted ? UINT64_MAX : counted + w[k];
		}
	}
	/* Every counted record took a ticket (dropped ones are not in the
	 * lanes), and the ticket was taken before the count.  The lapped
	 * records are counted too.  (Compared with the head read after the
	 * lanes, so that a live ring's writers cannot make it look wrong.) */
	if (h->lapped > counted)
		return set_err(err, errlen, -EINVAL,
			       "ring header counts %llu lapped records but its ledger only %llu records: %s",
			       (unsigned long long)h->lapped, (unsigned long long)counted, dmg);
	return 0;
}

static int check_header(const struct anchor_ring_hdr *h, size_t len, char *err, size_t errlen)
{
	static const char zero[8];
	if (memcmp(h->magic, ANCHOR_RING_MAGIC, 8) != 0) {
		if (!memcmp(h->magic, zero, 8))
			return set_err(err, errlen, -EINVAL,
				       "not an anchor ring (header is zero-filled: creator died before init, or not a ring)");
		return set_err(err, errlen, -EINVAL, "not an anchor ring (bad magic)");
	}
	if (h->endian != ANCHOR_RING_ENDIAN)
		return set_err(err, errlen, -EINVAL, "ring was written on a host of the other byte order");
	if (h->version_major > ANCHOR_RING_VERSION_MAJOR)
		return set_err(err, errlen, -EPROTO,
			       "ring format version %u.%u is newer than this reader (%u.%u); upgrade anchorpost",
			       h->version_major, h->version_minor, ANCHOR_RING_VERSION_MAJOR,
			       ANCHOR_RING_VERSION_MINOR);
	if (h->version_major < ANCHOR_RING_VERSION_MAJOR)
		return set_err(err, errlen, -EPROTO, "ring format version %u.%u is older than this reader supports (%u.x)",
			       h->version_major, h->version_minor, ANCHOR_RING_VERSION_MAJOR);
	if (h->header_size != ANCHOR_RING_HDR_SIZE || h->slot_size != ANCHOR_SLOT_SIZE ||
	    h->data_offset != ANCHOR_RING_HDR_SIZE)
		return set_err(err, errlen, -EINVAL, "ring header has impossible geometry (header %u, slot %u, data at %llu)",
			       h->header_size, h->slot_size, (unsigned long long)h->data_offset);
	if (h->nslots < ANCHOR_RING_MIN_SLOTS || h->nslots > ANCHOR_RING_MAX_SLOTS ||
	    (h->nslots & (h->nslots - 1)))
		return set_err(err, errlen, -EINVAL, "ring header has a bad slot count (%llu)",
			       (unsigned long long)h->nslots);
	if (h->state != ANCHOR_RING_STATE_READY)
		return set_err(err, errlen, -EINVAL, "ring header was never completed (state %u)", h->state);
	(void)len;
	return check_header_values(h, err, errlen);
}

/* Decode one committed record at ticket t, n slots; 1 valid, 0 rejected. */
static int decode(struct ring_file *rf, const struct anchor_slot *slots, uint64_t mask, uint64_t avail,
		  uint64_t t, const struct anchor_slot *head, struct ring_event *ev, size_t *text_off,
		  size_t *stack_off)
{
	unsigned n = head->nslots, nstk = head->nstack, ntext, i;
	char text[ANCHOR_NAME_INLINE + ANCHOR_TEXT_MAX_CONT * ANCHOR_CONT_BYTES + 1];
	uint64_t stack[ANCHOR_STACK_MAX + 7];
	struct anchor_slot copy;
	uint64_t h;
	size_t tlen = 0;

	if (n < 1 || n > ANCHOR_RECORD_MAX_SLOTS || nstk > n - 1)
		return 0;
	ntext = n - 1 - nstk;
	if (ntext > ANCHOR_TEXT_MAX_CONT || nstk * 7 > ANCHOR_STACK_MAX + 6)
		return 0;
	memcpy(&copy, head, sizeof copy);
	copy.check = 0;
	h = anchor_check_init(t);
	{
		const uint64_t *w = (const uint64_t *)(const void *)&copy;
		for (i = 1; i < 8; i++)
			h = anchor_check_step(h, i - 1, w[i]);
	}
	memcpy(text, head->name, ANCHOR_NAME_INLINE);
	tlen = ANCHOR_NAME_INLINE;
	for (i = 1; i < n; i++) {
		const struct anchor_cont *c = (const void *)&slots[(t + i) & mask];
		uint64_t data[7];
		if (((t + i) & mask) >= avail)
			return 0; /* continuation cut off by a short file */
		if (__atomic_load_n(&c->commit, __ATOMIC_ACQUIRE) != ((t + i + 1) | ANCHOR_SLOT_CONT))
			return 0;
		memcpy(data, c->data, sizeof data);
		for (unsigned k = 0; k < 7; k++)
			h = anchor_check_step(h, 7 * i + k, data[k]);
		if (i <= ntext) {
			memcpy(text + tlen, data, ANCHOR_CONT_BYTES);
			tlen += ANCHOR_CONT_BYTES;
		} else {
			memcpy(stack + (i - 1 - ntext) * 7, data, sizeof data);
		}
	}
	if (anchor_check_fold(h) != head->check)
		return -1;

	memset(ev, 0, sizeof *ev);
	ev->ts_ns = head->ts_ns;
	ev->ticket = t;
	ev->value = head->value;
	ev->pid = head->pid;
	ev->tid = head->tid;
	ev->kind = head->kind;
	ev->flags = head->flags;
	if (head->kind == ANCHOR_KIND_SYNC) {
		ev->text_len = ANCHOR_NAME_INLINE;
	} else {
		/* Text is NUL-padded; PROC_START text holds inner NULs between
		 * its key=value fields, so trim only the trailing padding. */
		while (tlen && text[tlen - 1] == '\0')
			tlen--;
		ev->text_len = (uint32_t)tlen;
	}
	if (arena_put(rf, text, ev->text_len, text_off))
		return -2;
	if (nstk) {
		unsigned ns = 0;
		while (ns < nstk * 7 && ns < ANCHOR_STACK_MAX && stack[ns])
			ns++;
		ev->nstack = (uint16_t)ns;
		if (arena_put(rf, stack, ns * sizeof(uint64_t), stack_off))
			return -2;
	}
	return 1;
}

/*
 * What the writers counted (ring_format.h, "the ledger") against what the
 * scan found: the records it cannot see are the overwritten ones.  The
 * header copy is untrusted like the rest; sums saturate, a ledger smaller
 * than what was seen is reported as such, not wrapped.
 */
static uint64_t add_sat(uint64_t a, uint64_t b)
{
	return a + b < a ? UINT64_MAX : a + b;
}

/* A lane's last counted ticket (+ 1) that lies in the window but whose
 * slot never got the record's BUSY or commit word: its writer was killed
 * between counting and storing.  1 to take the count back. */
static int counted_unstored(uint64_t last, const struct anchor_slot *slots, uint64_t mask, uint64_t avail,
			    uint64_t lo, uint64_t hi)
{
	uint64_t t = last - 1, c;

	if (last == 0 || t < lo || t >= hi || (t & mask) >= avail)
		return 0;
	c = __atomic_load_n(&slots[t & mask].commit, __ATOMIC_ACQUIRE);
	return c != t + 1 && c != ((t + 1) | ANCHOR_SLOT_BUSY);
}

static void ledger_account(const struct anchor_ring_hdr *h, struct ring_file *rf, size_t len,
			   const struct anchor_slot *slots, uint64_t mask, uint64_t avail, uint64_t lo, uint64_t hi)
{
	struct ring_stats *st = &rf->stats;
	uint64_t counted = 0, user = 0, seen;

	if (!(h->feat_mask & ANCHOR_FEAT_LEDGER) || len < ANCHOR_RING_HDR_SIZE)
		return;
	for (unsigned i = 0; i < ANCHOR_LEDGER_LANES; i++) {
		const struct anchor_ledger_lane *l = &h->lanes[i];
		uint64_t u = add_sat(l->user, l->nested_user), o = add_sat(l->other, l->nested_other);
		int ku = counted_unstored(l->user_last, slots, mask, avail, lo, hi);
		int ko = counted_unstored(l->other_last, slots, mask, avail, lo, hi);
		u -= (uint64_t)ku <= u ? (uint64_t)ku : u;
		o -= (uint64_t)ko <= o ? (uint64_t)ko : o;
		st->unstored += (uint64_t)(ku + ko);
		user = add_sat(user, u);
		counted = add_sat(counted, add_sat(u, o));
	}
	for (size_t i = 0; i < rf->nev; i++)
		if (rf->ev[i].kind == ANCHOR_KIND_MARK || rf->ev[i].kind == ANCHOR_KIND_BEGIN ||
		    rf->ev[i].kind == ANCHOR_KIND_END)
			st->records_user++;
	st->ledger = 1;
	st->dropped_user = h->dropped_user;
	st->written = add_sat(counted, st->dropped);
	st->written_user = add_sat(user, st->dropped_user);
	st->lapped = h->lapped;
	seen = add_sat(add_sat(st->records, st->torn), st->bad_check);
	if (counted >= seen) {
		st->overwritten = counted - seen;
	} else {
		st->ledger_short = seen - counted;
		st->written = add_sat(st->written, st->ledger_short);
	}
}

/* The slots window a parse walks, and the arena offsets of each event's
 * text and stack (the arena moves while it grows: pointers come last). */
struct scan {
	const struct anchor_slot *slots;
	uint64_t mask, avail, lo, hi;
	size_t cap, *text_offs, *stack_offs;
	/* Committed heads of another lap met in the window's slots (the
	 * ticket fits the slot): the first newer than the window, the first
	 * older.  In a sound ring the newer never exist. */
	uint64_t newer_t, older_t;
	int newer, older;
};

/* The window of tickets the header's head leaves in the ring, and what a
 * short file or earlier laps took out of it. */
static void scan_window(const void *buf, size_t len, struct ring_file *rf, struct scan *sc)
{
	uint64_t nslots = rf->hdr.nslots;

	sc->mask = nslots - 1;
	sc->slots = (const void *)((const char *)buf + ANCHOR_RING_HDR_SIZE);
	sc->avail = (len - ANCHOR_RING_HDR_SIZE) / ANCHOR_SLOT_SIZE;
	rf->stats.nslots = nslots;
	rf->stats.head = rf->hdr.head;
	rf->stats.dropped = rf->hdr.dropped;
	if (sc->avail < nslots) {
		/* A short file: read the slots that are there, say how many are not. */
		rf->stats.truncated_slots = nslots - sc->avail;
	}
	sc->hi = rf->hdr.head & ANCHOR_SLOT_TICKET_MASK;
	sc->lo = sc->hi > nslots ? sc->hi - nslots : 0;
	rf->stats.overwritten_slots = sc->lo;
}

/* Room for one more event and its offsets; -ENOMEM (rf->ev kept). */
static int grow_events(struct ring_file *rf, struct scan *sc)
{
	size_t ncap = sc->cap ? sc->cap * 2 : 4096;
	struct ring_event *e = realloc(rf->ev, ncap * sizeof *e);
	size_t *to = realloc(sc->text_offs, ncap * sizeof *to);
	if (to)
		sc->text_offs = to;
	size_t *so = realloc(sc->stack_offs, ncap * sizeof *so);
	if (so)
		sc->stack_offs = so;
	if (!e || !to || !so) {
		free(e == rf->ev ? NULL : e);
		return -ENOMEM;
	}
	rf->ev = e;
	sc->cap = ncap;
	return 0;
}

/* Whether ticket t's slot holds a record head to decode (1), or counts it
 * as torn or orphaned, or skips it (0). */
static int slot_head(struct ring_file *rf, const struct anchor_slot *s, uint64_t t, uint64_t hi)
{
	uint64_t c = __atomic_load_n(&s->commit, __ATOMIC_ACQUIRE);

	if (c == ((t + 1) | ANCHOR_SLOT_BUSY)) {
		rf->stats.torn++;
		return 0;
	}
	if (c == ((t + 1) | ANCHOR_SLOT_CONT)) {
		rf->stats.orphan_slots++; /* head overwritten or torn */
		return 0;
	}
	if (c != t + 1)
		return 0; /* empty, abandoned chunk space, or older lap */
	if (t + s->nslots > hi || s->nslots == 0) {
		rf->stats.torn++;
		return 0;
	}
	return 1;
}

/* Slot of ticket t holds a committed head of ticket u != t of the same
 * slot (u = t + k * nslots): remember the first newer and the first older. */
static void note_other_lap(struct scan *sc, const struct anchor_slot *s, uint64_t t)
{
	uint64_t c = __atomic_load_n(&s->commit, __ATOMIC_ACQUIRE), u = c - 1;
	if (!c || (c & (ANCHOR_SLOT_BUSY | ANCHOR_SLOT_CONT)) || u == t || (u & sc->mask) != (t & sc->mask))
		return;
	if (u > t && !sc->newer) {
		sc->newer = 1;
		sc->newer_t = u;
	} else if (u < t && !sc->older) {
		sc->older = 1;
		sc->older_t = u;
	}
}

/* 1 when the slot of ticket u holds a whole record of that ticket whose
 * check hash holds: a record a writer wrote, not stray bytes. */
static int valid_at(struct ring_file *rf, const struct scan *sc, uint64_t u)
{
	struct ring_event ev;
	size_t toff = 0, soff = 0;
	uint64_t idx = u & sc->mask;
	const struct anchor_slot *s;
	if (idx >= sc->avail)
		return 0;
	s = &sc->slots[idx];
	if (__atomic_load_n(&s->commit, __ATOMIC_ACQUIRE) != u + 1)
		return 0;
	/* its text lands in the arena unused: at most two such records */
	return decode(rf, sc->slots, sc->mask, sc->avail, u, s, &ev, &toff, &soff) == 1;
}

/* Slots past the window of a ring that never wrapped are empty in a sound
 * ring; a damaged head that went backwards leaves records there.  Looked
 * at until this many empty slots in a row: a chunk per ledger lane may be
 * claimed and not yet (or never) written, the rest of a fresh ring file is
 * zero and need not be paged in. */
#define TAIL_EMPTY_RUN ((uint64_t)ANCHOR_RING_CHUNK * ANCHOR_LEDGER_LANES)

static void scan_tail(struct scan *sc)
{
	uint64_t run = 0;
	for (uint64_t idx = sc->hi; idx <= sc->mask && idx < sc->avail && run < TAIL_EMPTY_RUN && !sc->newer; idx++) {
		uint64_t c = __atomic_load_n(&sc->slots[idx].commit, __ATOMIC_ACQUIRE);
		run = c ? 0 : run + 1;
		if (c && !(c & (ANCHOR_SLOT_BUSY | ANCHOR_SLOT_CONT)) && ((c - 1) & sc->mask) == idx &&
		    c - 1 >= sc->hi) {
			sc->newer = 1;
			sc->newer_t = c - 1;
		}
	}
}

/* The header's head and ledger against the slots.  A live ring's writers
 * move head on while we read: the head read again now is at least what
 * every slot and lane seen so far implies, so only a damaged header fails.
 * -EINVAL when a check-valid record sits at a ticket no writer had been
 * handed, when the head's window holds nothing at all while valid records
 * sit before it (a head moved forward by a lap or more), or when the
 * ledger counts more records than tickets were handed out. */
static int head_contradicted(struct ring_file *rf, const void *buf, struct scan *sc, char *err, size_t errlen)
{
	static const char dmg[] = "the header is damaged";
	const struct anchor_ring_hdr *live = buf;
	uint64_t now = __atomic_load_n(&live->head, __ATOMIC_ACQUIRE), counted = 0;
	int empty = !rf->nev && !rf->stats.torn && !rf->stats.bad_check && !rf->stats.orphan_slots;

	if (sc->hi <= sc->mask)
		scan_tail(sc);
	if (sc->newer && (sc->newer_t >= (now & ANCHOR_SLOT_TICKET_MASK)) && valid_at(rf, sc, sc->newer_t))
		return set_err(err, errlen, -EINVAL,
			       "ring header's head (%llu) is behind a whole record at ticket %llu: %s",
			       (unsigned long long)rf->hdr.head, (unsigned long long)sc->newer_t, dmg);
	if (empty && !sc->newer && sc->older && valid_at(rf, sc, sc->older_t))
		return set_err(err, errlen, -EINVAL,
			       "ring header's head (%llu) is more than a lap past every record (one at ticket %llu): %s",
			       (unsigned long long)rf->hdr.head, (unsigned long long)sc->older_t, dmg);
	if (!(rf->hdr.feat_mask & ANCHOR_FEAT_LEDGER))
		return 0;
	for (unsigned i = 0; i < ANCHOR_LEDGER_LANES; i++) {
		const struct anchor_ledger_lane *l = &rf->hdr.lanes[i];
		counted = add_sat(counted, add_sat(add_sat(l->user, l->other), add_sat(l->nested_user, l->nested_other)));
	}
	if (counted > now)
		return set_err(err, errlen, -EINVAL,
			       "ring header's ledger counts %llu records but only %llu tickets were handed out: %s",
			       (unsigned long long)counted, (unsigned long long)now, dmg);
	return 0;
}

/* Every committed record in the window, oldest ticket first, into rf->ev
 * (text and stacks as arena offsets); torn and failing ones counted. */
static int scan_slots(struct ring_file *rf, struct scan *sc, char *err, size_t errlen)
{
	for (uint64_t t = sc->lo; t < sc->hi; t++) {
		uint64_t idx = t & sc->mask;
		const struct anchor_slot *s;
		struct ring_event ev;
		size_t toff = 0, soff = 0;
		int rc;

		if (idx >= sc->avail)
			continue;
		s = &sc->slots[idx];
		if (!slot_head(rf, s, t, sc->hi)) {
			note_other_lap(sc, s, t);
			continue;
		}
		rc = decode(rf, sc->slots, sc->mask, sc->avail, t, s, &ev, &toff, &soff);
		if (rc == -2)
			return set_err(err, errlen, -ENOMEM, "out of memory reading ring");
		if (rc == 0) {
			rf->stats.torn++; /* a continuation never committed */
			continue;
		}
		if (rc < 0) {
			rf->stats.bad_check++;
			continue;
		}
		if (rf->nev == sc->cap && grow_events(rf, sc))
			return set_err(err, errlen, -ENOMEM, "out of memory reading ring");
		ev.ring = 0;
		sc->text_offs[rf->nev] = toff;
		sc->stack_offs[rf->nev] = soff;
		rf->ev[rf->nev++] = ev;
		t += s->nslots - 1;
	}
	return 0;
}

int ring_reader_parse(const void *buf, size_t len, struct ring_file *rf, char *err, size_t errlen)
{
	struct scan sc = { 0 };
	int rc;

	if (len < ANCHOR_RING_HDR_SIZE)
		return set_err(err, errlen, -EINVAL,
			       len == 0 ? "empty file, not an anchor ring"
					: "file too short for a ring header (%zu of 4096 bytes): truncated or not a ring",
			       len);
	memcpy(&rf->hdr, buf, sizeof rf->hdr);
	rc = check_header(&rf->hdr, len, err, errlen);
	if (rc)
		return rc;
	scan_window(buf, len, rf, &sc);
	rc = scan_slots(rf, &sc, err, errlen);
	if (!rc)
		rc = head_contradicted(rf, buf, &sc, err, errlen);
	if (rc) {
		free(sc.text_offs);
		free(sc.stack_offs);
		return rc;
	}
	for (size_t i = 0; i < rf->nev; i++) {
		rf->ev[i].text = rf->arena ? rf->arena + sc.text_offs[i] : "";
		rf->ev[i].stack =
			rf->ev[i].nstack ? (const uint64_t *)(const void *)(rf->arena + sc.stack_offs[i]) : NULL;
	}
	free(sc.text_offs);
	free(sc.stack_offs);
	rf->stats.records = rf->nev;
	ledger_account(&rf->hdr, rf, len, sc.slots, sc.mask, sc.avail, sc.lo, sc.hi);
	if (rf->nev && !sorted_already(rf->ev, rf->nev))
		qsort(rf->ev, rf->nev, sizeof *rf->ev, cmp_event);
	return 0;
}

static int load(const char *path, struct ring_file *rf, char *err, size_t errlen);

int ring_reader_load(const char *path, struct ring_file *rf, char *err, size_t errlen)
{
	int rc = load(path, rf, err, errlen);
	if (rc)
		ring_reader_free(rf); /* callers free only what loaded */
	return rc;
}

static int load(const char *path, struct ring_file *rf, char *err, size_t errlen)
{
	struct stat st;
	void *map = NULL;
	int fd, rc;

	memset(rf, 0, sizeof *rf);
	rf->path = strdup(path);
	if (!rf->path)
		return set_err(err, errlen, -ENOMEM, "out of memory");
	/* O_NONBLOCK: a FIFO without a writer would block open() for good
	 * (and a ring is mmap()ed: only a regular file will do). */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return set_err(err, errlen, -errno, "cannot open: %s", strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
		int isdir = S_ISDIR(st.st_mode);
		const char *what = S_ISFIFO(st.st_mode) ? "a FIFO (pipe)" : S_ISCHR(st.st_mode) ? "a character device"
				   : S_ISBLK(st.st_mode) ? "a block device" : S_ISSOCK(st.st_mode) ? "a socket"
				   : isdir ? "a directory" : "not a regular file";
		close(fd);
		return set_err(err, errlen, isdir ? -EISDIR : -EINVAL,
			       "is %s, not a regular file (a ring is a file that libanchor wrote)", what);
	}
	if (st.st_size > 0) {
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (map == MAP_FAILED) {
			rc = -errno;
			close(fd);
			return set_err(err, errlen, rc, "cannot map: %s", strerror(-rc));
		}
	}
	close(fd);
	rc = ring_reader_parse(map ? map : "", (size_t)st.st_size, rf, err, errlen);
	if (map)
		munmap(map, (size_t)st.st_size);
	return rc;
}

void ring_reader_free(struct ring_file *rf)
{
	free(rf->path);
	free(rf->ev);
	free(rf->arena);
	memset(rf, 0, sizeof *rf);
}

int ring_event_sync(const struct ring_event *ev, struct anchor_sync_payload *out)
{
	if (ev->kind != ANCHOR_KIND_SYNC || ev->text_len < sizeof *out)
		return 0;
	memcpy(out, ev->text, sizeof *out);
	return 1;
}

unsigned ring_event_sensor(const struct ring_event *ev, uint64_t *vals, unsigned max)
{
	unsigned n;
	if (ev->kind != ANCHOR_KIND_SENSOR || !ev->value || ev->value > ANCHOR_SENSOR_MAX || ev->value > max ||
	    ev->text_len > ev->value * 8)
		return 0;
	n = (unsigned)ev->value;
	/* The reader trimmed trailing NUL padding: zero words come back as 0. */
	memset(vals, 0, n * sizeof *vals);
	memcpy(vals, ev->text, ev->text_len);
	return n;
}

const char *ring_event_field(const struct ring_event *ev, const char *key)
{
	size_t klen = strlen(key);
	const char *p = ev->text, *end = ev->text + ev->text_len;
	while (p < end) {
		size_t n = strnlen(p, (size_t)(end - p));
		if (n > klen && !memcmp(p, key, klen) && p[klen] == '=')
			return p + klen + 1;
		p += n + 1;
	}
	return NULL;
}
