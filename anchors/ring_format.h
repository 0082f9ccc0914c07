/*
 * ring_format.h - the anchor ring file, byte by byte.
 *
 * This header is the one contract between every writer (libanchor.so, the
 * `anchor` Python module, anything linking the C API) and every reader
 * (anchorpost).  Change it only together with ANCHOR_RING_VERSION_*.
 *
 * File layout (native endian; `endian` tells a reader on another host):
 *
 *   offset 0      struct anchor_ring_hdr   (exactly 4096 bytes, one page)
 *   offset 4096   nslots x struct anchor_slot (64 bytes each, nslots = 2^k)
 *
 * Tickets.  Every slot ever written has a 64-bit ticket t, handed out in
 * increasing order from hdr->head; ticket t lives in slot (t & (nslots-1)).
 * The ring therefore holds tickets [max(0, head - nslots), head).  Writers
 * claim ANCHOR_RING_CHUNK tickets at a time into a per-thread chunk (one
 * shared atomic per 64 records, not per record) so concurrent threads and
 * processes do not bounce one cache line; a thread's records stay in ticket
 * order, and the reader merges everything by (ts_ns, ticket).
 *
 * Commit word (first 8 bytes of every slot), modelled on libbpf's BUSY bit:
 *   t + 1                       committed record head for ticket t
 *   (t + 1) | ANCHOR_SLOT_CONT  committed continuation slot for ticket t
 *   (t + 1) | ANCHOR_SLOT_BUSY  claimed, being written (still BUSY after a
 *                               crash = torn record, never surfaced)
 *   anything else               empty, abandoned, or from an older lap
 * A record of n slots has tickets t..t+n-1: the head at t, continuations at
 * t+1..t+n-1.  The writer takes each slot, head first, with one
 * compare-and-swap of its commit word from an older lap's word to its
 * BUSY word, then writes the continuations, then the head payload, then
 * commits the head last.  A slot is written only by the writer whose swap
 * put BUSY there, until it commits, so a writer stalled for any number of
 * laps never writes over a newer record: finding a newer ticket's word it
 * gives its record up (counted in hdr->lapped), finding an older ticket
 * still BUSY (a writer stalled or killed mid-record) it leaves the slot
 * to that writer and moves its record to the next ticket.  Overwrite mode
 * therefore loses only a thread's oldest records.  (Before issue 23 the
 * BUSY word was a plain store after a look at head, and a writer stalled
 * right after that look could destroy a newer record.)
 *
 * Check word.  `check` hashes the ticket and every payload byte of the head
 * and its continuations (check field itself taken as 0).  Readers surface
 * only records whose hash matches: it rejects a payload mixed from two
 * writes, which the slot ownership above rules out for these writers but
 * not for a ring damaged on disk or written by an older writer (SQLite's
 * WAL rejects torn frames the same way).
 *
 * Records (kind in the head):
 *   PROC_START  value = ppid; name = executable basename; continuations carry
 *               NUL-separated "key=value" text: exe, argv, host, rank vars.
 *   PROC_EXIT   value = exit status (flag SIGNAL: value is the fatal signal).
 *   CHILD_EXIT  written by a parent that reaped a child: value = child pid,
 *               name = "status=N" or "signal=N".
 *   FORK        written by the child: value = parent pid.
 *   EXEC        written just before execve: value = 0, name/cont = path.
 *   SYNC        ts_ns = midpoint of the narrowest bracketed monotonic read
 *               around CLOCK_REALTIME; value = CLOCK_REALTIME ns;
 *               payload = struct anchor_sync_payload in the name bytes.
 *   THREAD      first record of each thread: value = pthread_self(),
 *               name = thread name.
 *   MARK/BEGIN/END  name = user name (longer names continue in CONT slots);
 *               value valid if flag VALUE (flag F64: IEEE double bits).
 *               An END's value is a range id: it closes the open BEGIN of
 *               the same name carrying the same value (`async with
 *               anchor.phase` tags both with the asyncio task's id), else
 *               the innermost open BEGIN of that name, as an END without.
 *   SENSOR_DESC (minor 1) what the counters of SENSOR records are: text =
 *               NUL-separated "c<i>=<group>|<name>|<joules per count>|<max>"
 *               for counter i (group "cpu", "ram", "gpu"; max = the raw
 *               value the counter wraps after, 0 = never).  Group
 *               "gpu_power" is a gauge, not a counter: each value is the
 *               GPU's power reading (nvmlDeviceGetPowerUsage) and the third
 *               field is watts per count; gauges follow every counter, so
 *               an older reader finds the counters at their indexes (it
 *               sees an odd group, never wrong joules in "gpu").
 *               value = number of counters; an item "emulated=1" marks an emulated
 *               sensor (anchor_emul).  Re-emitted about once a
 *               second so an overwriting ring keeps one.
 *   SENSOR      (minor 1) one sampler tick: ts_ns = midpoint of the reads;
 *               value = number of counters n; text bytes = n raw uint64
 *               counter values in SENSOR_DESC order (trailing zero words
 *               may be trimmed by a reader: pad them back to n).
 *   DEV_BEGIN/DEV_END  (minor 1) the same phase edge as seen by an
 *               asynchronous device (a GPU stream): name = phase name,
 *               value = CLOCK_MONOTONIC ns at which the device reached the
 *               edge (calibrated from device events, flag VALUE always set);
 *               ts_ns = when the host resolved it (later, off the hot path),
 *               tid = the resolving thread.  Readers pair them by name like
 *               BEGIN/END but on the device timeline of (pid, tid).
 *   DEV_CLOCK   (minor 1) one calibration of device time against the host:
 *               value = CLOCK_MONOTONIC ns of the calibration point; name =
 *               text "dev=cuda:0 bracket_ns=N drift_ppm=X resid_ns=N"
 *               (bracket: width of the host reads around the device event;
 *               drift: device clock rate against the host's; resid: how far
 *               the previous calibration's prediction missed this one).
 *   A reader of minor 0 skips these kinds as unknown; a ring of minor 0
 *   simply has none.
 *   SITE        (minor 2) where in the source a phase runs, written once per
 *               call site at its first use (the Python module): text =
 *               NUL-separated "phase=NAME", "file=co_filename",
 *               "func=co_qualname", then "at=LINE" (the line of the `with`
 *               or of the mark() call) and/or "lines=L0-L1": that
 *               function's frame at a line in [L0, L1] runs only while
 *               the phase is open (a `with anchor.phase` body; a function
 *               decorated with `@anchor.phase`: its whole code, no at=);
 *               "why=REASON" instead of lines=: the body could not be
 *               read from this Python's bytecode (a one-line `with`);
 *               readers skip such a site (no labels, never wrong ones).
 *               "mark=1": a mark, no lines= (its segment is read as the
 *               lines after `at` up to the next site's `at` in the same
 *               function).  A profiler's stack whose innermost matching
 *               frame is there was taken inside NAME.  Readers of minor
 *               <= 1 skip it as unknown.
 *   Flag STACK: the last `nstack` continuation slots hold native return
 *   addresses, 7 uint64 per slot, innermost first, zero-padded.
 * Text that does not fit the 24 name bytes continues, NUL-padded, in the
 * first (nslots - 1 - nstack) continuation slots.
 */
#ifndef ANCHOR_RING_FORMAT_H
#define ANCHOR_RING_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define ANCHOR_RING_MAGIC "ANCHRNG" /* 7 chars + NUL = 8 bytes */
#define ANCHOR_RING_VERSION_MAJOR 1
#define ANCHOR_RING_VERSION_MINOR 2 /* 1: writer_version, END range ids, DEV_*, SENSOR_DESC, SENSOR; 2: SITE */
#define ANCHOR_RING_ENDIAN 0x1234u
#define ANCHOR_RING_HDR_SIZE 4096u
#define ANCHOR_SLOT_SIZE 64u
#define ANCHOR_RING_CHUNK 64u /* tickets claimed per thread at a time */
#define ANCHOR_RING_MIN_SLOTS 1024u
#define ANCHOR_RING_MAX_SLOTS (1ull << 30)

#define ANCHOR_SLOT_BUSY (1ull << 63)
#define ANCHOR_SLOT_CONT (1ull << 62)
#define ANCHOR_SLOT_TICKET_MASK (ANCHOR_SLOT_CONT - 1)

enum anchor_ring_state {
	ANCHOR_RING_STATE_EMPTY = 0,
	ANCHOR_RING_STATE_INIT = 1,
	ANCHOR_RING_STATE_READY = 2,
};

enum anchor_ring_mode {
	ANCHOR_RING_MODE_OVERWRITE = 0, /* flight recorder: newest wins */
	ANCHOR_RING_MODE_DISCARD = 1,   /* keep the oldest, count drops */
};

enum anchor_kind {
	ANCHOR_KIND_PROC_START = 1,
	ANCHOR_KIND_PROC_EXIT = 2,
	ANCHOR_KIND_FORK = 3,
	ANCHOR_KIND_EXEC = 4,
	ANCHOR_KIND_SYNC = 5,
	ANCHOR_KIND_MARK = 6,
	ANCHOR_KIND_BEGIN = 7,
	ANCHOR_KIND_END = 8,
	ANCHOR_KIND_THREAD = 9,
	ANCHOR_KIND_CHILD_EXIT = 10,
	/* Minor 1 (all additive: a minor-0 reader skips them as unknown). */
	ANCHOR_KIND_DEV_BEGIN = 11,
	ANCHOR_KIND_DEV_END = 12,
	ANCHOR_KIND_DEV_CLOCK = 13,
	/* Minor 2. */
	ANCHOR_KIND_SITE = 14,
	/* 15 free. */
	ANCHOR_KIND_SENSOR_DESC = 16,
	ANCHOR_KIND_SENSOR = 17,
	ANCHOR_KIND_MAX_ = 18,
};

enum anchor_flag {
	ANCHOR_FLAG_VALUE = 1u << 0,  /* value is meaningful */
	ANCHOR_FLAG_F64 = 1u << 1,    /* value holds IEEE-754 double bits */
	ANCHOR_FLAG_TRUNC = 1u << 2,  /* name or text was truncated */
	ANCHOR_FLAG_STACK = 1u << 3,  /* stack continuation slots follow text */
	ANCHOR_FLAG_SIGNAL = 1u << 4, /* PROC_EXIT/CHILD_EXIT: value is a signal */
};

/* Feature bits in hdr->feat_mask. */
#define ANCHOR_FEAT_CHECK (1ull << 0) /* every head carries `check` */
#define ANCHOR_FEAT_LEDGER (1ull << 1) /* lanes, lapped, dropped_user kept */

/*
 * The ledger (feature LEDGER): how many records were written, so that a
 * reader can say what it cannot see.  Every thread that writes owns one
 * lane (claimed by a CAS on `owner`, taken over once its owner is gone)
 * and counts each record in it just before the record's first store to
 * its slot (the BUSY mark): one 16-byte store of the new count and the
 * record's ticket (+ 1) into a line nobody else writes, so the mark path
 * pays no atomic.  A writer that a signal handler interrupts mid-record
 * counts the handler's records with atomic adds into nested_*; threads
 * that find no free lane share lane 0 the same way.  Records that got no
 * ticket (discard mode, ring full) are in hdr->dropped instead.  Then
 *   written     = sum over lanes + dropped
 *   overwritten = written - read - torn - bad_check - dropped
 * exactly, whatever the interleaving of writers, wraps and kill -9.  A
 * writer killed between counting a record and storing it leaves a count
 * for a record that never reached its slot: the lane's *_last names it,
 * and a reader that finds that ticket in the window without its BUSY or
 * commit word takes the count back (once that ticket has been lapped,
 * nobody can tell, and it counts as written and overwritten).  The count
 * and its ticket go in one store instruction (x86-64 SSE2; two stores
 * elsewhere), so a kill finds both or neither.  Not covered: the atomic
 * adds (nested_*, lane 0) are not paired with a ticket.  A record given up
 * because a stall left its ticket a lap behind (lapped) is counted and
 * overwritten.
 */
#define ANCHOR_LEDGER_LANES 44u
#define ANCHOR_LANE_SHARED (~0ull) /* owner word of the shared lane 0 */

struct anchor_ledger_lane {
	uint64_t owner;        /*  0: (pid << 32) | tid; 0 free */
	uint64_t reserved;     /*  8 */
	uint64_t user;         /* 16: MARK/BEGIN/END counted by the owner */
	uint64_t user_last;    /* 24: ticket + 1 of the last one counted */
	uint64_t other;        /* 32: every other kind, counted by the owner */
	uint64_t other_last;   /* 40: ticket + 1 of the last one counted */
	uint64_t nested_user;  /* 48: atomic adds: handlers mid-record, lane 0 */
	uint64_t nested_other; /* 56 */
};

struct anchor_ring_hdr {
	char magic[8];             /*   0: ANCHOR_RING_MAGIC */
	uint16_t endian;           /*   8: ANCHOR_RING_ENDIAN as written */
	uint16_t version_major;    /*  10: reader refuses a newer major */
	uint16_t version_minor;    /*  12: additive changes */
	uint16_t header_size;      /*  14: 4096 */
	uint32_t slot_size;        /*  16: 64 */
	uint32_t mode;             /*  20: enum anchor_ring_mode */
	uint64_t nslots;           /*  24: power of two */
	uint64_t data_offset;      /*  32: 4096 */
	uint64_t feat_mask;        /*  40: ANCHOR_FEAT_* */
	uint8_t session_id[16];    /*  48: random, names the run */
	uint32_t clock_id;         /*  64: CLOCK_MONOTONIC */
	uint32_t state;            /*  68: enum anchor_ring_state, store-release */
	uint64_t create_realtime_ns;  /*  72 */
	uint64_t create_monotonic_ns; /*  80 */
	uint32_t creator_pid;      /*  88 */
	uint32_t reserved0;        /*  92 */
	char hostname[64];         /*  96: creator's host, NUL-terminated */
	char writer_version[32];   /* 160: ANCHOR_VERSION of the creating writer,
				    * NUL-terminated (minor >= 1; zero before) */
	uint8_t reserved1[1024 - 192]; /* 192: room to grow, zero */
	/* Hot, written by every chunk claim: own cache line. */
	uint64_t head;             /* 1024: next ticket (fetch_add) */
	uint8_t pad_head[56];
	uint64_t dropped;          /* 1088: records refused (discard mode full) */
	uint64_t dropped_user;     /* 1096: of those, MARK/BEGIN/END (LEDGER) */
	uint8_t pad_dropped[48];
	uint64_t lapped;           /* 1152: records given up because a newer lap
				    * had taken their slot while their writer
				    * was stalled (LEDGER; part of overwritten) */
	uint8_t pad_lapped[56];
	struct anchor_ledger_lane lanes[ANCHOR_LEDGER_LANES]; /* 1216 (LEDGER) */
	uint8_t reserved2[4096 - 1216 - 64 * ANCHOR_LEDGER_LANES];
};

struct anchor_slot {
	uint64_t commit;  /*  0: see "Commit word" */
	uint64_t ts_ns;   /*  8: CLOCK_MONOTONIC */
	uint32_t pid;     /* 16 */
	uint32_t tid;     /* 20: OS thread id (gettid) */
	uint8_t kind;     /* 24: enum anchor_kind */
	uint8_t flags;    /* 25: enum anchor_flag */
	uint8_t nslots;   /* 26: 1 + continuation slots (text, then stack) */
	uint8_t nstack;   /* 27: of those, trailing slots holding a stack */
	uint32_t check;   /* 28: see "Check word" */
	uint64_t value;   /* 32: kind-specific */
	char name[24];    /* 40: NUL-padded (not terminated when 24 long) */
};

/* A continuation slot: the commit word, then 56 payload bytes. */
struct anchor_cont {
	uint64_t commit;
	uint8_t data[56];
};

/* SYNC payload, stored in the head's name bytes. */
struct anchor_sync_payload {
	uint64_t monotonic_raw_ns; /* diagnostic only (not NTP-slewed) */
	uint32_t bracket_ns;       /* width of the monotonic bracket */
	uint32_t tries;            /* reads taken, narrowest kept */
	uint64_t reserved;
};

#define ANCHOR_NAME_INLINE 24u
#define ANCHOR_CONT_BYTES 56u
/* Names: 24 bytes inline plus one continuation = 79 chars + NUL. */
#define ANCHOR_NAME_MAX 79u
/* PROC_START text: at most this many continuation slots (448 bytes). */
#define ANCHOR_TEXT_MAX_CONT 8u
/* Native stacks: at most this many return addresses (7 per cont slot). */
#define ANCHOR_STACK_MAX 28u
/* SENSOR records: at most this many counters (head + 8 continuations). */
#define ANCHOR_SENSOR_MAX ((ANCHOR_NAME_INLINE + ANCHOR_TEXT_MAX_CONT * ANCHOR_CONT_BYTES) / 8u)
/* Upper bound on slots in one record (head + text + stack). */
#define ANCHOR_RECORD_MAX_SLOTS (1u + ANCHOR_TEXT_MAX_CONT + ANCHOR_STACK_MAX / 7u)

_Static_assert(sizeof(struct anchor_ring_hdr) == ANCHOR_RING_HDR_SIZE, "header is one page");
_Static_assert(offsetof(struct anchor_ring_hdr, hostname) == 96, "hostname offset");
_Static_assert(offsetof(struct anchor_ring_hdr, writer_version) == 160, "writer_version offset");
_Static_assert(offsetof(struct anchor_ring_hdr, head) == 1024, "head offset");
_Static_assert(offsetof(struct anchor_ring_hdr, dropped) == 1088, "dropped offset");
_Static_assert(offsetof(struct anchor_ring_hdr, lapped) == 1152, "lapped offset");
_Static_assert(offsetof(struct anchor_ring_hdr, lanes) == 1216, "lanes offset");
_Static_assert(sizeof(struct anchor_ledger_lane) == 64, "a lane is one cache line");
_Static_assert(offsetof(struct anchor_ledger_lane, user) % 16 == 0 &&
		       offsetof(struct anchor_ledger_lane, other) % 16 == 0,
	       "count and ticket pairs are 16-byte aligned (one store)");
_Static_assert(sizeof(struct anchor_slot) == ANCHOR_SLOT_SIZE, "slot is 64 bytes");
_Static_assert(offsetof(struct anchor_slot, kind) == 24, "kind offset");
_Static_assert(offsetof(struct anchor_slot, nstack) == 27, "nstack offset");
_Static_assert(offsetof(struct anchor_slot, check) == 28, "check offset");
_Static_assert(offsetof(struct anchor_slot, value) == 32, "value offset");
_Static_assert(offsetof(struct anchor_slot, name) == 40, "name offset");
_Static_assert(sizeof(struct anchor_cont) == ANCHOR_SLOT_SIZE, "cont is 64 bytes");
_Static_assert(sizeof(struct anchor_sync_payload) == ANCHOR_NAME_INLINE, "sync payload fits name");
_Static_assert(ANCHOR_RECORD_MAX_SLOTS <= ANCHOR_RING_CHUNK, "a record fits one chunk");

/*
 * The check hash: a weighted sum over the ticket and the payload words
 * (head bytes 8..63 with `check` zeroed are words 0..6, continuation c's
 * 56 data bytes are words 7 + 7c ..), each word times its own odd
 * constant, folded to 32 bits.  The multiplies are independent, so the
 * mark path pays a few cycles, not a chain of seven; a payload mixed from
 * two writes changes the sum unless the differences cancel exactly.
 * Shared by writer and reader.
 */
static inline uint64_t anchor_check_init(uint64_t ticket)
{
	return ticket * 0x9e3779b97f4a7c15ull;
}

static inline uint64_t anchor_check_step(uint64_t h, unsigned i, uint64_t w)
{
	return h + w * (0xff51afd7ed558ccdull + 2ull * i * 0x9e3779b97f4a7c15ull);
}

static inline uint32_t anchor_check_fold(uint64_t h)
{
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	return (uint32_t)(h ^ (h >> 32));
}

#endif /* ANCHOR_RING_FORMAT_H */
