/*
 * ring_writer.c - lock-free multi-writer for the anchor ring (format in
 * ring_format.h).
 *
 * Why per-thread chunks: a single fetch_add per record makes every writer
 * in every process bounce hdr->head's cache line; claiming ANCHOR_RING_CHUNK
 * tickets at once makes that one shared write per 64 records.
 *
 * Why no CAS on commit: a writer stalled for a whole lap can race a newer
 * writer on the same slot; the check hash (ring_format.h) rejects the mixed
 * payload, so a plain store-release commit is enough.
 */
#include "ring_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "anchor_version.h"

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
#endif

#ifdef ANCHOR_TLS_INITIAL_EXEC
#define ANCHOR_TLS __thread __attribute__((tls_model("initial-exec")))
#else
#define ANCHOR_TLS __thread
#endif

#define SYNC_PERIOD_NS 1000000000ull /* lazily re-sync about once a second */
#define SYNC_TRIES 5
#define OPEN_WAIT_STEPS 200 /* x 1 ms: longest wait for a concurrent creator */

struct writer_thread {
	uint64_t next;     /* next ticket of this thread's chunk */
	uint64_t end;      /* one past the chunk */
	uint32_t tid;      /* cached gettid() */
	uint32_t gen;      /* fork generation the cache belongs to */
	uint8_t in_write;  /* reentrancy guard: a signal handler mid-write */
	uint8_t owned;     /* lane is this thread's own (plain increments) */
	uint64_t valid_ns; /* when the chunk was last known to be in the current lap */
	struct anchor_ledger_lane *lane; /* where this thread counts its records */
	struct anchor_ledger_lane spare;  /* counted into when the ring has no ledger */
};

/*
 * Two pointers to the one header, on purpose.  g_ring is where the ring
 * is mapped: set by ring_writer_open before writes are switched on, then
 * never cleared and never unmapped (after a SIGBUS the guard puts
 * anonymous memory in its place), so a writer in flight on any thread may
 * always dereference it, as it may g_slots, g_lanes and g_headp.  g_live
 * says whether records go there: ring_writer_disable and the SIGBUS guard
 * clear it from any thread at any moment, so it is tested, never
 * dereferenced (issue 23: a writer that loaded g_live->head just after
 * another thread's guard had cleared it died of SIGSEGV).
 */
static struct anchor_ring_hdr *g_ring;
static struct anchor_ring_hdr *g_live;
static struct anchor_slot *g_slots;
static uint64_t g_mask;
static uint32_t g_mode;
static uint32_t g_pid;
/*
 * Fork generation, bumped in every forked child.  The live value sits in a
 * page marked MADV_WIPEONFORK, so a child made by any fork (a raw
 * syscall(SYS_fork) too, which runs no atfork handler) reads 0 there and
 * catches up before its first write instead of writing into its parent's
 * reserved slots under its parent's pid.  The mark path loads it as it
 * loaded the plain variable before; g_gen_shadow (ordinary memory,
 * inherited) keeps the count the child continues from.
 */
static uint32_t g_gen_boot = 1;
static uint32_t *g_genp = &g_gen_boot;
static uint32_t g_gen_shadow = 1;
/* A chunk not revalidated for this long may have been lapped by the other
 * writers: nslots / 8 ns, i.e. a ring wrapped at 8 tickets per ns (far
 * beyond one shared fetch_add per 64 tickets) still cannot lap it unseen.
 * UINT64_MAX in discard mode (no laps). */
static uint64_t g_stale_ns = UINT64_MAX;
/* The ledger lanes (ring_format.h), NULL when the ring has none. */
static struct anchor_ledger_lane *g_lanes;
#ifdef ANCHOR_TEST_HOOKS
/* Tests only: called after taking a ticket (RING_HOOK_TICKET) and after
 * taking its slot (RING_HOOK_OWNED), to stall a writer there for whole
 * laps (tests/victims/lapped.c); and once the ring is published or found,
 * before anything is read through its mapping (RING_HOOK_ATTACHING,
 * ticket 0), to cut the file there (tests/victims/attach_cut.c). */
enum { RING_HOOK_TICKET, RING_HOOK_OWNED, RING_HOOK_ATTACHING };
void (*ring_writer_test_hook)(uint64_t ticket, int stage);
#endif
static int g_created; /* this process created the ring it attached */
/* The whole mapping, for the SIGBUS guard (kept after a detach). */
static char *g_map;
static size_t g_map_len;
static uint64_t g_last_sync_ns;
static ring_writer_stack_fn g_stack_fn;
static char g_path[4096];
static ANCHOR_TLS struct writer_thread t_self;

uint64_t ring_writer_now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint32_t ring_writer_pid(void)
{
	if (__builtin_expect(*g_genp == 0, 0))
		ring_writer_after_fork_child(); /* forked without atfork handlers */
	return g_pid;
}

int ring_writer_created(void)
{
	return g_created;
}

static int g_lost_said;
/* ring_writer_open between its first read through the mapping and its
 * publication: the guard only notes a loss there (g_attach_lost), and the
 * open fails with its own one line. */
static int g_attaching, g_attach_lost;

int ring_writer_lost(void)
{
	return __atomic_load_n(&g_lost_said, __ATOMIC_RELAXED);
}

int ring_writer_attached(void)
{
	return __atomic_load_n(&g_live, __ATOMIC_ACQUIRE) != NULL;
}

const char *ring_writer_path(void)
{
	return __atomic_load_n(&g_live, __ATOMIC_ACQUIRE) ? g_path : "";
}

void ring_writer_disable(void)
{
	__atomic_store_n(&g_live, NULL, __ATOMIC_RELEASE);
}

void ring_writer_set_stack_hook(ring_writer_stack_fn fn)
{
	g_stack_fn = fn;
}

static int emit_at(uint64_t ts_ns, uint8_t kind, uint8_t flags, uint64_t value, const char *text,
		   size_t len, const uint64_t *stack, unsigned nstack);
static void bus_guard_recheck(uint64_t now_ns);
static uint64_t g_bus_checked_ns;
#define BUS_RECHECK_NS 1000000ull /* chunk claims look at most once a ms */

/* A lane's owner is gone: its thread (or whole process) no longer exists.
 * Its counts stay; the next owner adds to them. */
static int lane_owner_gone(uint64_t owner)
{
	pid_t pid = (pid_t)(owner >> 32), tid = (pid_t)(owner & 0xffffffffu);

	if (owner == 0 || owner == ANCHOR_LANE_SHARED || pid <= 0 || tid <= 0)
		return 0;
	return syscall(SYS_tgkill, pid, tid, 0) != 0 && errno == ESRCH;
}

/*
 * Give this thread a lane of its own: a free one, else one whose owner is
 * gone, else the shared lane 0 (atomic adds).  First record of each
 * thread in each process only; async-signal-safe (CAS and tgkill).
 */
static void lane_acquire(struct writer_thread *t)
{
	uint64_t me = ((uint64_t)g_pid << 32) | t->tid, cur;
	int saved = errno;

	t->lane = &t->spare;
	t->owned = 1;
	if (!g_lanes)
		return;
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned i = 1; i < ANCHOR_LEDGER_LANES; i++) {
			cur = __atomic_load_n(&g_lanes[i].owner, __ATOMIC_RELAXED);
			if (cur && (pass == 0 || !lane_owner_gone(cur)))
				continue;
			/* Acquire: the previous owner's last counts (it is gone)
			 * are in before ours add to them. */
			if (__atomic_compare_exchange_n(&g_lanes[i].owner, &cur, me, 0, __ATOMIC_ACQUIRE,
							__ATOMIC_RELAXED)) {
				t->lane = &g_lanes[i];
				errno = saved;
				return;
			}
		}
	}
	__atomic_store_n(&g_lanes[0].owner, ANCHOR_LANE_SHARED, __ATOMIC_RELAXED);
	t->lane = &g_lanes[0];
	t->owned = 0;
	errno = saved;
}

static inline int kind_is_user(uint8_t kind)
{
	return kind == ANCHOR_KIND_MARK || kind == ANCHOR_KIND_BEGIN || kind == ANCHOR_KIND_END;
}

/*
 * Count one record that holds a ticket (ring_format.h, "the ledger"),
 * just before the record's first store to its slot.  At the outer level,
 * on the thread's own lane: the new count and the ticket (+ 1) in one
 * store instruction, so that a kill -9 (delivered between any two
 * instructions) finds both or neither, and a reader can tell a counted
 * record that never reached its slot.  Only this thread writes that
 * line; a signal handler that writes meanwhile sees in_write and takes
 * the atomic branch.
 */
static inline void count_pair(uint64_t *pair, uint64_t count, uint64_t ticket)
{
#if defined(__x86_64__) && defined(__SSE2__)
	_mm_store_si128((__m128i *)(void *)pair, _mm_set_epi64x((long long)(ticket + 1), (long long)count));
#else
	__atomic_store_n(&pair[0], count, __ATOMIC_RELAXED);
	__atomic_store_n(&pair[1], ticket + 1, __ATOMIC_RELAXED);
#endif
}

static inline void count_record(struct writer_thread *t, uint8_t kind, int nested, uint64_t ticket)
{
	struct anchor_ledger_lane *l = t->lane;
	int user = kind_is_user(kind);

	if (!nested && t->owned) {
		uint64_t *pair = user ? &l->user : &l->other;
		count_pair(pair, __atomic_load_n(pair, __ATOMIC_RELAXED) + 1, ticket);
	} else {
		__atomic_fetch_add(user ? &l->nested_user : &l->nested_other, 1, __ATOMIC_RELAXED);
	}
}

static uint64_t *g_headp; /* &g_ring->head */

/*
 * Slot ownership (ring_format.h, "Commit word").  Ticket t's slot is
 * reused by ticket t + nslots one lap later, and a writer can be stalled
 * (preempted, stopped, its vCPU descheduled) between any two of its
 * instructions for any number of laps.  A plain store of BUSY let such a
 * writer, resuming after the others had lapped it, write over a newer
 * committed record: in an 8 x 8 overwrite storm, a thread's record N
 * vanished between N-1 and N+1 (issue 23).  No check of head before the
 * store can close that window, since the stall may come right after the
 * check.  So a writer takes each slot with one compare-and-swap of the
 * commit word from what an older lap left there to its BUSY word, and a
 * slot is written only by the writer whose swap put BUSY in it, until
 * that writer commits:
 *   - the slot holds a newer ticket's word: this ticket was lapped, its
 *     record is given up (counted in `lapped`, part of overwritten);
 *   - the slot is BUSY with an older ticket: its writer is stalled
 *     mid-record (or was killed there) and may still store into it, so
 *     the slot stays its own and this record takes the next ticket (a
 *     ticket with no record, which the reader skips as an older lap);
 *   - otherwise (empty, committed, abandoned: older laps) the swap.
 * The swap is the one atomic the mark path pays per record (price and
 * alternatives measured in BENCHMARKS.md).  Its expected value is the
 * common case, the previous lap's record head at this ticket, so a warm
 * ring pays one instruction; a miss returns what is there.  Relaxed: the
 * release fence after it orders the payload (see publish).
 */
enum slot_take { SLOT_TAKEN, SLOT_HELD, SLOT_NEWER };

static inline enum slot_take slot_take(uint64_t *commit, uint64_t ticket, uint64_t busy_word)
{
	uint64_t c = ticket > g_mask ? ticket - g_mask : 0; /* (ticket - nslots) + 1 */

	for (;;) {
		if (__atomic_compare_exchange_n(commit, &c, busy_word, 0, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
			return SLOT_TAKEN;
		if ((c & ANCHOR_SLOT_TICKET_MASK) > ticket) /* holder's ticket + 1 > ticket */
			return SLOT_NEWER;
		if (c & ANCHOR_SLOT_BUSY)
			return SLOT_HELD;
	}
}

static void give_up_lapped(struct writer_thread *t, int nested)
{
	if (g_lanes)
		__atomic_fetch_add(&g_ring->lapped, 1, __ATOMIC_RELAXED);
	if (!nested)
		t->next = t->end;
}

/* 1 when this is the thread's first record in this process. */
static int thread_init(struct writer_thread *t)
{
	uint32_t gen = *g_genp;
	if (t->gen == gen)
		return 0;
	/* First record of this thread (or first after fork): the chunk
	 * cursor and the lane belong to another process or to nobody.  The
	 * generation goes in last: a signal handler that writes meanwhile
	 * initialises for itself (it may take a lane of its own, whose count
	 * stays in the ledger) and never counts through a stale lane. */
	t->lane = &t->spare;
	t->owned = 0;
	t->tid = (uint32_t)syscall(SYS_gettid);
	t->next = t->end = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	lane_acquire(t);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->gen = gen;
	return 1;
}

/* THREAD record: lets readers map pthread ids (py-spy chrometrace tids)
 * and thread names to OS tids. */
static void announce_thread(void)
{
	char name[17] = {0};
	prctl(PR_GET_NAME, (unsigned long)name, 0, 0, 0);
	emit_at(ring_writer_now_ns(), ANCHOR_KIND_THREAD, ANCHOR_FLAG_VALUE,
		(uint64_t)pthread_self(), name, strnlen(name, 16), NULL, 0);
}

/*
 * A chunk held across a pause (a thread that marks once a minute, or one
 * descheduled mid-chunk) can be lapped by other writers: its tickets then
 * name slots that newer records own, and writing them would destroy those
 * and be invisible itself (an older lap).  Revalidate against head once
 * the chunk is older than g_stale_ns; abandon it when the ring has moved
 * half a lap past it.  Relaxed load: head only grows, a stale value errs
 * towards keeping the chunk, and the margin of half a lap covers it.
 */
static int chunk_current(struct writer_thread *t, uint64_t now_ns)
{
	uint64_t head;

	if (now_ns - t->valid_ns <= g_stale_ns)
		return 1;
	head = __atomic_load_n(g_headp, __ATOMIC_RELAXED);
	if (head - t->next > (g_mask + 1) / 2)
		return 0;
	t->valid_ns = now_ns;
	return 1;
}

/*
 * Discard mode: claim only what fits, so a full ring stops head where it
 * is (the reader keeps every record written before it filled) and each
 * refused record counts once in `dropped`.  A CAS, not a fetch_add: the
 * one claim per chunk pays it, the mark path does not.
 */
static int claim_discard(unsigned n, unsigned want, uint64_t *base, unsigned *took, int user)
{
	uint64_t cur = __atomic_load_n(g_headp, __ATOMIC_RELAXED), room;
	unsigned take;

	do {
		room = cur < g_mask + 1 ? g_mask + 1 - cur : 0;
		if (room < n) {
			__atomic_fetch_add(&g_ring->dropped, 1, __ATOMIC_RELAXED);
			if (user && g_lanes)
				__atomic_fetch_add(&g_ring->dropped_user, 1, __ATOMIC_RELAXED);
			return -ENOSPC;
		}
		take = room < want ? (unsigned)room : want;
		/* Relaxed: as the fetch_add below, tickets need only be unique. */
	} while (!__atomic_compare_exchange_n(g_headp, &cur, cur + take, 1, __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	*base = cur;
	*took = take;
	return 0;
}

/*
 * Claim n consecutive tickets.  Normal path: from this thread's chunk.
 * Reentered (a signal handler interrupted a write on this thread): take
 * exactly n straight from head, so the interrupted writer's cursor is
 * untouched.  Returns 0, or -ENOSPC in discard mode when the ring is full.
 */
static int claim(struct writer_thread *t, unsigned n, int nested, uint64_t now_ns, uint64_t *ticket,
		 uint8_t kind)
{
	uint64_t base;
	unsigned take = nested ? n : ANCHOR_RING_CHUNK;

	if (!nested && t->end - t->next >= n) {
		if (chunk_current(t, now_ns)) {
			*ticket = t->next;
			t->next += n;
			return 0;
		}
		t->next = t->end; /* lapped: abandon the rest */
	}
	if (g_mode == ANCHOR_RING_MODE_DISCARD) {
		if (claim_discard(n, take, &base, &take, kind_is_user(kind)))
			return -ENOSPC;
	} else {
		/* Relaxed: tickets only need to be unique; ordering of the
		 * data is carried by each slot's commit word. */
		base = __atomic_fetch_add(g_headp, take, __ATOMIC_RELAXED);
	}
	*ticket = base;
	if (!nested) {
		t->next = base + n;
		t->end = base + take;
		t->valid_ns = now_ns;
		if (now_ns - __atomic_load_n(&g_bus_checked_ns, __ATOMIC_RELAXED) > BUS_RECHECK_NS)
			bus_guard_recheck(now_ns);
	}
	return 0;
}

static inline struct anchor_slot *slot_at(uint64_t ticket)
{
	return &g_slots[ticket & g_mask];
}

static void store_words(uint64_t *dst, const uint64_t *src, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		__atomic_store_n(&dst[i], src[i], __ATOMIC_RELAXED);
}

/*
 * emit_at's stages, each static inline: this is the hot mark path
 * (bench/ring.sh), and the split is measured to cost nothing there.
 */

/* The record in local memory: the head slot's fields after pid/tid, the
 * text past the inline name and the stack (7 words a slot) in cont[].
 * Truncates text to what the kind may carry.  Returns the number of
 * continuation slots. */
static inline unsigned build_record(struct anchor_slot *head, struct anchor_cont *cont, uint8_t kind,
				    uint8_t flags, uint64_t value, const char *text, size_t len,
				    const uint64_t *stack, unsigned nstack)
{
	unsigned ntext, nstk, ncont, i;
	size_t maxtext;

	head->kind = kind;
	head->value = value;
	if (nstack > ANCHOR_STACK_MAX)
		nstack = ANCHOR_STACK_MAX;
	nstk = (nstack + 6) / 7;
	maxtext = ANCHOR_NAME_INLINE + (size_t)ANCHOR_TEXT_MAX_CONT * ANCHOR_CONT_BYTES;
	if (kind == ANCHOR_KIND_MARK || kind == ANCHOR_KIND_BEGIN || kind == ANCHOR_KIND_END)
		maxtext = ANCHOR_NAME_MAX;
	if (len > maxtext) {
		len = maxtext;
		flags |= ANCHOR_FLAG_TRUNC;
	}
	ntext = len > ANCHOR_NAME_INLINE
			? (unsigned)((len - ANCHOR_NAME_INLINE + ANCHOR_CONT_BYTES - 1) / ANCHOR_CONT_BYTES)
			: 0;
	ncont = ntext + nstk;
	if (nstk)
		flags |= ANCHOR_FLAG_STACK;
	head->flags = flags;
	head->nslots = (uint8_t)(1 + ncont);
	head->nstack = (uint8_t)nstk;
	if (len)
		memcpy(head->name, text, len < ANCHOR_NAME_INLINE ? len : ANCHOR_NAME_INLINE);
	if (ncont)
		memset(cont, 0, sizeof(cont[0]) * ncont);
	for (i = 0; i < ntext; i++) {
		size_t off = ANCHOR_NAME_INLINE + (size_t)i * ANCHOR_CONT_BYTES;
		size_t n = len - off < ANCHOR_CONT_BYTES ? len - off : ANCHOR_CONT_BYTES;
		memcpy(cont[i].data, text + off, n);
	}
	if (nstk)
		memcpy(cont[ntext].data, stack, nstack * sizeof(uint64_t));
	return ncont;
}

/* The record's check word over its ticket, head words 1..7 and every
 * continuation word (ring_format.h). */
static inline uint64_t record_check(uint64_t ticket, const struct anchor_slot *head,
				    const struct anchor_cont *cont, unsigned ncont)
{
	uint64_t h = anchor_check_init(ticket);
	const uint64_t *w = (const uint64_t *)(const void *)head;
	unsigned i;

	for (i = 1; i < 8; i++)
		h = anchor_check_step(h, i - 1, w[i]);
	for (i = 0; i < ncont; i++) {
		const uint64_t *cw = (const uint64_t *)(const void *)cont[i].data;
		for (unsigned k = 0; k < 7; k++)
			h = anchor_check_step(h, 7 + 7 * i + k, cw[k]);
	}
	return anchor_check_fold(h);
}

/* Takes the record's slots (slot_take), head first: SLOT_TAKEN, or what
 * stopped it, with the slots it had taken emptied again (0: an older lap
 * for every other writer and the reader). */
static inline enum slot_take take_slots(uint64_t ticket, unsigned ncont)
{
	enum slot_take r = slot_take(&slot_at(ticket)->commit, ticket, (ticket + 1) | ANCHOR_SLOT_BUSY);

	for (unsigned i = 0; i < ncont && r == SLOT_TAKEN; i++) {
		r = slot_take(&slot_at(ticket + 1 + i)->commit, ticket + 1 + i, (ticket + 2 + i) | ANCHOR_SLOT_BUSY);
		if (r != SLOT_TAKEN)
			for (unsigned k = 0; k <= i; k++)
				__atomic_store_n(&slot_at(ticket + k)->commit, 0, __ATOMIC_RELAXED);
	}
	return r;
}

/* Stores the record into the slots take_slots gave it: each
 * continuation's payload and commit, then the head's payload and commit. */
static inline void publish(uint64_t ticket, const struct anchor_slot *head, const struct anchor_cont *cont,
			   unsigned ncont)
{
	struct anchor_slot *dst = slot_at(ticket);
	/* Release fence: the BUSY words are ordered before every payload
	 * store below; pairs with the acquire fence a live reader takes
	 * after loading commit (ring_reader.c, slot_load). */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	for (unsigned i = 0; i < ncont; i++) {
		struct anchor_cont *c = (struct anchor_cont *)(void *)slot_at(ticket + 1 + i);
		store_words((uint64_t *)(void *)c->data, (const uint64_t *)(const void *)cont[i].data, 7);
		/* Store-release: payload before commit; pairs with the
		 * reader's load-acquire of this commit word. */
		__atomic_store_n(&c->commit, (ticket + 2 + i) | ANCHOR_SLOT_CONT, __ATOMIC_RELEASE);
	}
	store_words((uint64_t *)(void *)dst + 1, (const uint64_t *)(const void *)head + 1, 7);
	/* Store-release: head payload and all continuations before the
	 * commit; pairs with the reader's load-acquire of head commit. */
	__atomic_store_n(&dst->commit, ticket + 1, __ATOMIC_RELEASE);
}

/* Count the record again under a new ticket (the count itself is
 * already in): a kill -9 then finds the ticket the record went to. */
static inline void recount_record(struct writer_thread *t, uint8_t kind, int nested, uint64_t ticket)
{
	uint64_t *pair = kind_is_user(kind) ? &t->lane->user : &t->lane->other;

	if (!nested && t->owned)
		count_pair(pair, __atomic_load_n(pair, __ATOMIC_RELAXED), ticket);
}

/* A record moves past at most this many tickets whose slots stalled (or
 * killed) writers hold before it is given up as lapped: each such slot
 * is one writer stopped mid-record, so more than a few in a row means
 * the ring is tiny and its writers are descheduled. */
#define TAKE_TRIES 8

static int emit_record(uint64_t ts_ns, uint8_t kind, uint8_t flags, uint64_t value, const char *text,
		       size_t len, const uint64_t *stack, unsigned nstack, int counted)
{
	struct writer_thread *t = &t_self;
	struct anchor_slot head;
	struct anchor_cont cont[ANCHOR_RECORD_MAX_SLOTS - 1];
	unsigned ncont;
	uint64_t ticket;
	enum slot_take took = SLOT_HELD;
	int saved_errno = errno, nested, rc = 0, first;

	if (!__atomic_load_n(&g_live, __ATOMIC_ACQUIRE))
		return -ENODEV;
	if (__builtin_expect(*g_genp == 0, 0))
		ring_writer_after_fork_child(); /* forked without atfork handlers */
	nested = t->in_write;
	t->in_write = 1;
	/* Compiler barrier: a signal handler on this thread must see the guard
	 * before we touch the chunk cursor. */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);

	memset(&head, 0, sizeof head);
	head.ts_ns = ts_ns;
	head.pid = g_pid;
	first = thread_init(t);
	head.tid = t->tid;
	ncont = build_record(&head, cont, kind, flags, value, text, len, stack, nstack);

	for (int try = 0; took == SLOT_HELD && try < TAKE_TRIES; try++) {
		rc = claim(t, 1 + ncont, nested, ts_ns, &ticket, kind);
		if (rc)
			goto out;
#ifdef ANCHOR_TEST_HOOKS
		if (ring_writer_test_hook && !nested)
			ring_writer_test_hook(ticket, RING_HOOK_TICKET);
#endif
		/* The count goes in before the first store to the slots. */
		if (counted++)
			recount_record(t, kind, nested, ticket);
		else
			count_record(t, kind, nested, ticket);
		took = take_slots(ticket, ncont);
	}
	if (took != SLOT_TAKEN) {
		give_up_lapped(t, nested);
		goto out;
	}
#ifdef ANCHOR_TEST_HOOKS
	if (ring_writer_test_hook && !nested)
		ring_writer_test_hook(ticket, RING_HOOK_OWNED);
#endif
	head.check = record_check(ticket, &head, cont, ncont);
	publish(ticket, &head, cont, ncont);

out:
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->in_write = (uint8_t)nested;
	if (first && !nested && kind != ANCHOR_KIND_THREAD)
		announce_thread();
	/* Lazy periodic SYNC: one relaxed load on the hot path. */
	if (!rc && !nested && kind != ANCHOR_KIND_SYNC &&
	    (int64_t)(ts_ns - __atomic_load_n(&g_last_sync_ns, __ATOMIC_RELAXED)) > (int64_t)SYNC_PERIOD_NS)
		ring_writer_sync();
	errno = saved_errno;
	return rc;
}

static int emit_at(uint64_t ts_ns, uint8_t kind, uint8_t flags, uint64_t value, const char *text,
		   size_t len, const uint64_t *stack, unsigned nstack)
{
	return emit_record(ts_ns, kind, flags, value, text, len, stack, nstack, 0);
}

int ring_writer_emit(uint8_t kind, uint8_t flags, uint64_t value, const char *text, size_t len,
		     const uint64_t *stack, unsigned nstack)
{
	return emit_at(ring_writer_now_ns(), kind, flags, value, text, len, stack, nstack);
}

int ring_writer_emit_at(uint64_t ts_ns, uint8_t kind, uint8_t flags, uint64_t value, const char *text,
			size_t len)
{
	return emit_at(ts_ns, kind, flags, value, text, len, NULL, 0);
}

/*
 * The mark path: one slot, name within the 24 inline bytes, no stack.
 * Same protocol as emit_at, with the payload built in registers instead
 * of a zeroed struct, and no continuation handling.
 */
/*
 * The name as three little-endian words, NUL-padded, built in registers:
 * storing bytes into a buffer and loading it back as words stalls on
 * store forwarding.  When the 24 bytes at src lie within one page they
 * are loaded whole and masked (the bytes past the end are never used);
 * otherwise byte by byte.  The whole-load reads past the string, which is
 * safe within a page but not what ASan allows: it is exempt.
 */
static inline uint64_t keep_low(uint64_t w, size_t nbytes)
{
	return nbytes >= 8 ? w : nbytes == 0 ? 0 : w & ((1ull << (8 * nbytes)) - 1);
}

__attribute__((no_sanitize_address)) static inline void name_words(const char *src, size_t len,
								   uint64_t *w5, uint64_t *w6, uint64_t *w7)
{
	uint64_t a = 0, b = 0, c = 0;
	if (((uintptr_t)src & 4095) <= 4096 - 24) {
		memcpy(&a, src, 8);
		memcpy(&b, src + 8, 8);
		memcpy(&c, src + 16, 8);
	} else {
		unsigned char buf[24] = {0};
		for (size_t i = 0; i < len; i++)
			buf[i] = (unsigned char)src[i];
		memcpy(&a, buf, 8);
		memcpy(&b, buf + 8, 8);
		memcpy(&c, buf + 16, 8);
	}
	*w5 = keep_low(a, len);
	*w6 = len > 8 ? keep_low(b, len - 8) : 0;
	*w7 = len > 16 ? keep_low(c, len - 16) : 0;
}

/* The mark path's way out to the general writer: a nested write, a chunk
 * to claim or revalidate, a slot an older writer holds.  Out of line, so
 * the mark path keeps a small frame; the name's length, not needed by a
 * record that fits one slot, is found here (NAME_LEN_UNKNOWN). */
#define NAME_LEN_UNKNOWN ((size_t)-1)

static __attribute__((noinline)) int mark_slow(uint64_t ts_ns, uint8_t kind, const char *name, size_t len,
					       uint8_t flags, uint64_t value, int nested, int counted)
{
	if (len == NAME_LEN_UNKNOWN)
		len = strnlen(name, ANCHOR_NAME_MAX + 1);
	if (nested)
		return ring_writer_emit(kind, flags, value, name, len, NULL, 0);
	return emit_record(ts_ns, kind, flags, value, name, len, NULL, 0, counted);
}

/*
 * The mark path: one slot, the name's three words (NUL-padded, w5..w7)
 * built by the caller, no stack.  Same protocol as emit_record with the
 * payload in registers instead of a zeroed struct.  Inlined into both
 * entries (ring_writer_mark, ring_writer_event): no call on the way.
 */
static inline __attribute__((always_inline)) int event_one_slot(uint8_t kind, const char *name, size_t len,
								uint8_t flags, uint64_t value, uint64_t w5,
								uint64_t w6, uint64_t w7)
{
	struct writer_thread *t = &t_self;
	uint64_t w1, w2, w3, w4, ticket, h, ts_ns;
	uint64_t *dst, *cnt;

	/* errno: nothing below sets it (the vDSO clock read cannot fail, the
	 * fallbacks and ring_writer_sync preserve it themselves). */
	if (t->in_write)
		return mark_slow(0, kind, name, len, flags, value, 1, 0);
	/* Guard the chunk cursor before looking at it: a signal handler that
	 * marks between our check and our t->next++ would take the ticket (or
	 * the chunk's last one) from under us.  With the guard set it claims
	 * from head instead (emit_record's nested path). */
	t->in_write = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	ts_ns = ring_writer_now_ns();
	/* A chunk older than g_stale_ns is checked against head here (one
	 * load; only small rings do it often) and left to the slow path only
	 * when lapped. */
	if (t->gen != *g_genp || t->end - t->next < 1 || !t->owned ||
	    (ts_ns - t->valid_ns > g_stale_ns && !chunk_current(t, ts_ns))) {
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		t->in_write = 0;
		return mark_slow(ts_ns, kind, name, len, flags, value, 0, 0);
	}
	ticket = t->next++;
#ifdef ANCHOR_TEST_HOOKS
	if (ring_writer_test_hook)
		ring_writer_test_hook(ticket, RING_HOOK_TICKET);
#endif
	w1 = ts_ns;
	w2 = (uint64_t)g_pid | ((uint64_t)t->tid << 32);
	/* kind, flags, nslots = 1, nstack = 0, check = 0 (filled below). */
	w3 = (uint64_t)kind | ((uint64_t)flags << 8) | (1ull << 16);
	w4 = value;
	h = anchor_check_init(ticket);
	h = anchor_check_step(h, 0, w1);
	h = anchor_check_step(h, 1, w2);
	h = anchor_check_step(h, 2, w3);
	h = anchor_check_step(h, 3, w4);
	h = anchor_check_step(h, 4, w5);
	h = anchor_check_step(h, 5, w6);
	h = anchor_check_step(h, 6, w7);
	w3 |= (uint64_t)anchor_check_fold(h) << 32;

	dst = (uint64_t *)(void *)slot_at(ticket);
	cnt = kind_is_user(kind) ? &t->lane->user : &t->lane->other;
	count_pair(cnt, __atomic_load_n(cnt, __ATOMIC_RELAXED) + 1, ticket); /* count_record */
	switch (slot_take(&dst[0], ticket, (ticket + 1) | ANCHOR_SLOT_BUSY)) {
	case SLOT_TAKEN:
		break;
	case SLOT_NEWER:
		give_up_lapped(t, 0);
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		t->in_write = 0;
		return 0;
	case SLOT_HELD: /* rare: emit_record takes the next ticket */
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		t->in_write = 0;
		return mark_slow(ts_ns, kind, name, len, flags, value, 0, 1);
	}
#ifdef ANCHOR_TEST_HOOKS
	if (ring_writer_test_hook)
		ring_writer_test_hook(ticket, RING_HOOK_OWNED);
#endif
	/* Release fence: BUSY before the payload; pairs with the acquire in
	 * ring_reader.c (see publish). */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	__atomic_store_n(&dst[1], w1, __ATOMIC_RELAXED);
	__atomic_store_n(&dst[2], w2, __ATOMIC_RELAXED);
	__atomic_store_n(&dst[3], w3, __ATOMIC_RELAXED);
	__atomic_store_n(&dst[4], w4, __ATOMIC_RELAXED);
	__atomic_store_n(&dst[5], w5, __ATOMIC_RELAXED);
	__atomic_store_n(&dst[6], w6, __ATOMIC_RELAXED);
	__atomic_store_n(&dst[7], w7, __ATOMIC_RELAXED);
	/* Store-release: payload before commit; pairs with the reader's
	 * load-acquire of commit. */
	__atomic_store_n(&dst[0], ticket + 1, __ATOMIC_RELEASE);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t->in_write = 0;
	if ((int64_t)(ts_ns - __atomic_load_n(&g_last_sync_ns, __ATOMIC_RELAXED)) > (int64_t)SYNC_PERIOD_NS)
		ring_writer_sync();
	return 0;
}

int ring_writer_event(uint8_t kind, const char *name, size_t len, uint8_t flags, uint64_t value)
{
	uint64_t ips[ANCHOR_STACK_MAX];
	int n = 0;

	if (!__atomic_load_n(&g_live, __ATOMIC_ACQUIRE))
		return -ENODEV;
	if (!g_stack_fn && len <= ANCHOR_NAME_INLINE) {
		uint64_t w5, w6, w7;
		name_words(name, len, &w5, &w6, &w7);
		return event_one_slot(kind, name, len, flags, value, w5, w6, w7);
	}
	if (g_stack_fn)
		n = g_stack_fn(ips, (int)ANCHOR_STACK_MAX);
	return ring_writer_emit(kind, flags, value, name, len, ips, n > 0 ? (unsigned)n : 0);
}

/* Bytes of w that are zero, as their top bits (the classic word-at-a-time
 * test: exact for the lowest zero byte, which is all we use). */
static inline uint64_t zero_bytes(uint64_t w)
{
	return (w - 0x0101010101010101ull) & ~w & 0x8080808080808080ull;
}

/*
 * The C API's entry (anchor_mark and kin): a NUL-terminated name, one call
 * from api.c.  Its length comes from the same three words name_words
 * loads (within one page, so no fault), not from a strnlen call; a name
 * of 24 bytes or more, one across a page end, or a stack to capture takes
 * the general path.  The stack walk here skips this frame as it does
 * ring_writer_event's (stacks.c).
 */
/* The stack-capturing and long-name ways of ring_writer_mark. */
static __attribute__((noinline)) int mark_general(uint8_t kind, const char *name, uint8_t flags, uint64_t value)
{
	uint64_t ips[ANCHOR_STACK_MAX];
	size_t len = strnlen(name, ANCHOR_NAME_MAX + 1);
	int n = 0;

	if (!g_stack_fn && len <= ANCHOR_NAME_INLINE) {
		uint64_t w5, w6, w7;
		name_words(name, len, &w5, &w6, &w7);
		return event_one_slot(kind, name, len, flags, value, w5, w6, w7);
	}
	/* The stack walk skips two frames (stacks.c): its own and this one;
	 * ring_writer_mark's tail call leaves no frame of its own. */
	if (g_stack_fn)
		n = g_stack_fn(ips, (int)ANCHOR_STACK_MAX);
	return ring_writer_emit(kind, flags, value, name, len, ips, n > 0 ? (unsigned)n : 0);
}

/* Keep the bytes of w below its first zero byte (z: zero_bytes(w), not
 * 0): (z - 1) & ~z sets every bit below z's lowest, whose byte is zero
 * in w anyway. */
static inline uint64_t below_zero(uint64_t w, uint64_t z)
{
	return w & ((z - 1) & ~z);
}

/*
 * The C API's entry (anchor_mark and kin): a NUL-terminated name, one call
 * from api.c.  The name's three payload words come from one load each
 * (within one page, so no fault) and are cut at the first NUL found in
 * them: no strnlen call, no length at all (a one-slot record does not
 * store it).  A name of 24 bytes or more, one across a page end, or a
 * stack to capture goes to mark_general.
 */
__attribute__((no_sanitize_address)) int ring_writer_mark(uint8_t kind, const char *name, uint8_t flags,
							  uint64_t value)
{
	uint64_t a, b, c, z;

	if (!__atomic_load_n(&g_live, __ATOMIC_ACQUIRE) || !name)
		return -ENODEV;
	if (g_stack_fn || ((uintptr_t)name & 4095) > 4096 - 24)
		return mark_general(kind, name, flags, value);
	memcpy(&a, name, 8);
	memcpy(&b, name + 8, 8);
	memcpy(&c, name + 16, 8);
	if ((z = zero_bytes(a)) != 0) {
		a = below_zero(a, z);
		b = c = 0;
	} else if ((z = zero_bytes(b)) != 0) {
		b = below_zero(b, z);
		c = 0;
	} else if ((z = zero_bytes(c)) != 0) {
		c = below_zero(c, z);
	} else {
		return mark_general(kind, name, flags, value);
	}
	return event_one_slot(kind, name, NAME_LEN_UNKNOWN, flags, value, a, b, c);
}

int ring_writer_sync(void)
{
	struct anchor_sync_payload p;
	uint64_t best_a = 0, best_b = 0, best_rt = 0, best_raw = 0, width = UINT64_MAX;

	if (!ring_writer_attached())
		return -ENODEV;
	/* Claim the period first so concurrent threads do not all sync. */
	__atomic_store_n(&g_last_sync_ns, ring_writer_now_ns(), __ATOMIC_RELAXED);
	bus_guard_recheck(ring_writer_now_ns());
	for (int i = 0; i < SYNC_TRIES; i++) {
		uint64_t a = clock_ns(CLOCK_MONOTONIC);
		uint64_t rt = clock_ns(CLOCK_REALTIME);
		uint64_t raw = clock_ns(CLOCK_MONOTONIC_RAW);
		uint64_t b = clock_ns(CLOCK_MONOTONIC);
		if (b - a < width) {
			width = b - a;
			best_a = a;
			best_b = b;
			best_rt = rt;
			best_raw = raw;
		}
	}
	memset(&p, 0, sizeof p);
	p.monotonic_raw_ns = best_raw;
	p.bracket_ns = width > UINT32_MAX ? UINT32_MAX : (uint32_t)width;
	p.tries = SYNC_TRIES;
	/* ts_ns is the bracket midpoint: the best estimate of the monotonic
	 * instant at which CLOCK_REALTIME was read. */
	return emit_at(best_a + (best_b - best_a) / 2, ANCHOR_KIND_SYNC, 0, best_rt,
		       (const char *)&p, sizeof p, NULL, 0);
}

static void after_fork_child_handler(void)
{
	ring_writer_after_fork_child();
}

void ring_writer_after_fork_child(void)
{
	uint32_t ppid = g_pid;

	g_pid = (uint32_t)getpid();
	/* Before any write below: emit_at must not take this path again. */
	g_gen_shadow++;
	__atomic_store_n(g_genp, g_gen_shadow, __ATOMIC_RELAXED);
	/* The explicit SYNC below is this process's first; keep the lazy
	 * check from adding another. */
	__atomic_store_n(&g_last_sync_ns, ring_writer_now_ns(), __ATOMIC_RELAXED);
	if (!ring_writer_attached())
		return;
	ring_writer_emit(ANCHOR_KIND_FORK, 0, ppid, NULL, 0, NULL, 0);
	ring_writer_sync();
}

static int fail(char *err, size_t errlen, int rc, const char *what, const char *path)
{
	if (err && errlen) {
		size_t n = 0;
		const char *parts[] = {path, ": ", what, NULL};
		for (int i = 0; parts[i] && n + 1 < errlen; i++) {
			size_t k = strlen(parts[i]);
			if (k > errlen - 1 - n)
				k = errlen - 1 - n;
			memcpy(err + n, parts[i], k);
			n += k;
		}
		err[n] = '\0';
	}
	return rc;
}

static uint64_t pow2_slots(uint64_t bytes)
{
	uint64_t n = ANCHOR_RING_MIN_SLOTS;
	while (n < ANCHOR_RING_MAX_SLOTS && n * ANCHOR_SLOT_SIZE < bytes)
		n <<= 1;
	return n;
}

static void fill_random(uint8_t *p, size_t n)
{
	int fd = open("/dev/urandom", O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		ssize_t k = read(fd, p, n);
		close(fd);
		if (k == (ssize_t)n)
			return;
	}
	uint64_t x = clock_ns(CLOCK_REALTIME) ^ ((uint64_t)getpid() << 32);
	for (size_t i = 0; i < n; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		p[i] = (uint8_t)(x >> 56);
	}
}

/* ---- the SIGBUS guard ------------------------------------------------- */

/*
 * A shared file mapping faults with SIGBUS when its page is gone: another
 * process truncated the file, or a hole could not be filled because the
 * filesystem is full.  The host must not die of our file.  The guard
 * recognises faults inside the ring's mapping, puts anonymous memory in
 * its place (the faulting store is retried and lands there, as do the
 * stores of other threads mid-write), detaches, says so once, and
 * returns.  Every other SIGBUS goes to the handler that was installed
 * before us, or dies of the default action as it would without us.
 * mmap and write are plain system calls (mmap is not on POSIX's list of
 * async-signal-safe functions, but glibc's wrapper is a bare syscall).
 */
static struct sigaction g_prev_bus;
static void (*g_bus_crash_hook)(int);

void ring_writer_set_bus_crash_hook(void (*fn)(int))
{
	g_bus_crash_hook = fn;
}

static size_t put_str(char *buf, size_t n, size_t cap, const char *s)
{
	while (*s && n < cap)
		buf[n++] = *s++;
	return n;
}

static void say_lost(void)
{
	char buf[4096 + 256], digits[12];
	size_t n = 0;
	unsigned v = (unsigned)getpid();
	int k = 0;

	n = put_str(buf, n, sizeof buf - 1, "anchor[");
	do {
		digits[k++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (k && n < sizeof buf - 1)
		buf[n++] = digits[--k];
	n = put_str(buf, n, sizeof buf - 1, "]: ");
	n = put_str(buf, n, sizeof buf - 1, g_path);
	n = put_str(buf, n, sizeof buf - 1,
		    ": ring file lost its pages (truncated by another process, or its filesystem is full);"
		    " anchoring stopped");
	buf[n++] = '\n';
	ssize_t w = write(2, buf, n);
	(void)w;
}

static void bus_guard(int sig, siginfo_t *si, void *uc)
{
	char *base = __atomic_load_n(&g_map, __ATOMIC_ACQUIRE);
	int e = errno;

	if (base && si && si->si_code > 0 && (char *)si->si_addr >= base &&
	    (char *)si->si_addr < base + g_map_len) {
		__atomic_store_n(&g_live, NULL, __ATOMIC_RELEASE);
		if (mmap(base, g_map_len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1,
			 0) != MAP_FAILED) {
			if (__atomic_load_n(&g_attaching, __ATOMIC_ACQUIRE))
				__atomic_store_n(&g_attach_lost, 1, __ATOMIC_RELEASE);
			else if (!__atomic_exchange_n(&g_lost_said, 1, __ATOMIC_RELAXED))
				say_lost();
			errno = e;
			return;
		}
	}
	errno = e;
	if (g_prev_bus.sa_flags & SA_SIGINFO) {
		g_prev_bus.sa_sigaction(sig, si, uc);
		return;
	}
	if (g_prev_bus.sa_handler == SIG_IGN && (!si || si->si_code <= 0))
		return; /* sent by kill/raise and ignored before we came */
	if (g_prev_bus.sa_handler != SIG_DFL && g_prev_bus.sa_handler != SIG_IGN) {
		g_prev_bus.sa_handler(sig);
		return;
	}
	/* The default action, as without us: a fault re-executes and dies,
	 * a sent signal is pending (blocked in here) and kills on return.
	 * The raw system call: libanchor interposes sigaction(SIGBUS). */
	if (g_bus_crash_hook)
		g_bus_crash_hook(sig);
	{
		struct {
			void *handler;
			unsigned long flags;
			void *restorer;
			uint64_t mask;
		} dfl = {SIG_DFL, 0, NULL, 0};
		syscall(SYS_rt_sigaction, sig, &dfl, NULL, sizeof dfl.mask);
	}
	if (!si || si->si_code <= 0)
		raise(sig);
}

static int g_guard_on;

/* The kernel's view of a signal action (rt_sigaction(2) without libc):
 * x86-64 and arm64 share this layout. */
struct kernel_sigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};
/* The guard as the kernel holds it (with libc's restorer), to put back. */
static struct kernel_sigaction g_guard_kact;
static int g_rewrapping;

static void install_bus_guard(void)
{
	static int done;
	struct sigaction sa;

	if (done)
		return;
	done = 1;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = bus_guard;
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGBUS, &sa, &g_prev_bus) == 0 &&
	    syscall(SYS_rt_sigaction, SIGBUS, NULL, &g_guard_kact, sizeof g_guard_kact.mask) == 0 &&
	    g_guard_kact.handler == (void *)bus_guard)
		__atomic_store_n(&g_guard_on, 1, __ATOMIC_RELEASE);
}

/*
 * Keep the guard first when the program replaced it behind libanchor's
 * sigaction: with a raw rt_sigaction system call, or through libc itself
 * when no LD_PRELOAD interposes it (the Python module's own writer,
 * after faulthandler.enable() or signal.signal(SIGBUS, ...)).  The
 * program's action becomes the one the guard chains to, and the guard
 * goes back in.  Called from ring_writer_sync (about once a second) and
 * from chunk claims at most once a millisecond: one system call, off the
 * mark path.  A handler installed less than that before the ring's file
 * loses its pages still sees the ring's SIGBUS (README).
 */
static void bus_guard_recheck(uint64_t now_ns)
{
	struct kernel_sigaction cur;
	sigset_t bus, saved;

	if (!__atomic_load_n(&g_guard_on, __ATOMIC_ACQUIRE))
		return;
	__atomic_store_n(&g_bus_checked_ns, now_ns, __ATOMIC_RELAXED);
	if (syscall(SYS_rt_sigaction, SIGBUS, NULL, &cur, sizeof cur.mask) != 0 ||
	    cur.handler == (void *)bus_guard)
		return;
	if (__atomic_exchange_n(&g_rewrapping, 1, __ATOMIC_ACQUIRE))
		return; /* another thread is at it */
	/* No SIGBUS on this thread while the chained action is half copied. */
	sigemptyset(&bus);
	sigaddset(&bus, SIGBUS);
	pthread_sigmask(SIG_BLOCK, &bus, &saved);
	memset(&g_prev_bus, 0, sizeof g_prev_bus);
	g_prev_bus.sa_handler = (void (*)(int))cur.handler; /* one union with sa_sigaction */
	g_prev_bus.sa_flags = (int)cur.flags;
	memcpy(&g_prev_bus.sa_mask, &cur.mask, sizeof cur.mask);
	syscall(SYS_rt_sigaction, SIGBUS, &g_guard_kact, NULL, sizeof g_guard_kact.mask);
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	__atomic_store_n(&g_rewrapping, 0, __ATOMIC_RELEASE);
}

/* Uninstrumented: reached from a sanitizer runtime's own initialisation
 * through libanchor's sigaction (preload/sigbus.c). */
#if defined(__has_attribute)
#if __has_attribute(disable_sanitizer_instrumentation)
__attribute__((disable_sanitizer_instrumentation))
#endif
#endif
int ring_writer_bus_chain(const struct sigaction *act, struct sigaction *old)
{
	sigset_t bus, saved;

	if (!__atomic_load_n(&g_guard_on, __ATOMIC_ACQUIRE))
		return 0;
	/* No SIGBUS on this thread while the chained action is half copied. */
	sigemptyset(&bus);
	sigaddset(&bus, SIGBUS);
	pthread_sigmask(SIG_BLOCK, &bus, &saved);
	if (old)
		*old = g_prev_bus;
	if (act)
		g_prev_bus = *act;
	pthread_sigmask(SIG_SETMASK, &saved, NULL);
	return 1;
}

/* ---- creating and attaching ------------------------------------------ */

/* Format "<what> (<a> MiB ...)" style messages: not on any hot path. */
static int failf(char *err, size_t errlen, int rc, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static int failf(char *err, size_t errlen, int rc, const char *path, const char *fmt, ...)
{
	char what[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	return fail(err, errlen, rc, what, path);
}

/* "<what> (<errno's text>)", -errno: for the failures of a system call,
 * whose reason ("Permission denied", "No such file or directory") is
 * what the user needs to fix it. */
static int fail_errno(char *err, size_t errlen, const char *what, const char *path)
{
	int e = errno;
	return failf(err, errlen, -e, path, "%s (%s)", what, strerror(e));
}

/* Size and fill a new ring in fd (a file nobody else can see yet). */
static int create_ring(int fd, const struct ring_writer_opts *o, char *err, size_t errlen,
		       struct anchor_ring_hdr **out, uint64_t *out_len)
{
	uint64_t nslots = pow2_slots(o->size_bytes ? o->size_bytes : RING_WRITER_DEFAULT_BYTES);
	uint64_t len = ANCHOR_RING_HDR_SIZE + nslots * ANCHOR_SLOT_SIZE;
	struct anchor_ring_hdr *hdr;
	struct rlimit rl;
	struct statvfs vfs;
	int rc;

	/* Growing a file past RLIMIT_FSIZE raises SIGXFSZ, which kills the
	 * host: check first and refuse instead. */
	if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && len > rl.rlim_cur)
		return failf(err, errlen, -EFBIG, o->path,
			     "a ring of %llu KiB exceeds the file size limit (ulimit -f: %llu KiB)",
			     (unsigned long long)(len >> 10), (unsigned long long)(rl.rlim_cur >> 10));
	if (fstatvfs(fd, &vfs) == 0 && vfs.f_frsize &&
	    len / vfs.f_frsize > (uint64_t)vfs.f_bavail)
		return failf(err, errlen, -ENOSPC, o->path,
			     "a ring of %llu MiB does not fit the %llu MiB free on its filesystem",
			     (unsigned long long)(len >> 20),
			     (unsigned long long)((uint64_t)vfs.f_bavail * vfs.f_frsize >> 20));
	if (ftruncate(fd, (off_t)len) != 0)
		return fail_errno(err, errlen, "cannot size ring file", o->path);
	/* Allocate the blocks now: a write into a sparse hole on a full disk
	 * would SIGBUS the host process later. */
	rc = posix_fallocate(fd, 0, (off_t)len);
	if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL)
		return fail(err, errlen, -rc, "cannot allocate ring file (disk full?)", o->path);
	hdr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (hdr == MAP_FAILED)
		return fail_errno(err, errlen, "cannot map ring file", o->path);
	memcpy(hdr->magic, ANCHOR_RING_MAGIC, 8);
	hdr->endian = ANCHOR_RING_ENDIAN;
	hdr->version_major = ANCHOR_RING_VERSION_MAJOR;
	hdr->version_minor = ANCHOR_RING_VERSION_MINOR;
	hdr->header_size = ANCHOR_RING_HDR_SIZE;
	hdr->slot_size = ANCHOR_SLOT_SIZE;
	hdr->mode = o->mode;
	hdr->nslots = nslots;
	hdr->data_offset = ANCHOR_RING_HDR_SIZE;
	hdr->feat_mask = ANCHOR_FEAT_CHECK | ANCHOR_FEAT_LEDGER;
	fill_random(hdr->session_id, sizeof hdr->session_id);
	hdr->clock_id = CLOCK_MONOTONIC;
	hdr->create_realtime_ns = clock_ns(CLOCK_REALTIME);
	hdr->create_monotonic_ns = clock_ns(CLOCK_MONOTONIC);
	hdr->creator_pid = (uint32_t)getpid();
	gethostname(hdr->hostname, sizeof hdr->hostname - 1);
	snprintf(hdr->writer_version, sizeof hdr->writer_version, "%s", ANCHOR_VERSION);
	/* Store-release: header fields before READY; pairs with the
	 * load-acquire of state in attach_ring and ring_reader_open. */
	__atomic_store_n(&hdr->state, ANCHOR_RING_STATE_READY, __ATOMIC_RELEASE);
	*out = hdr;
	*out_len = len;
	return 0;
}

/*
 * Make a complete ring where nobody can see it, then publish it with
 * link(2), which fails rather than replace.  The path therefore names
 * either nothing or a ring whose header is READY: a creator killed half
 * way (kill -9, SIGXFSZ, a full disk) leaves no half-made file for every
 * later process to wait on.  O_TMPFILE where the filesystem has it, else
 * a named temporary beside the ring.  -EEXIST: another process published
 * first; attach to its ring.
 */
static int create_and_publish(const struct ring_writer_opts *o, char *err, size_t errlen,
			      struct anchor_ring_hdr **out, uint64_t *out_len)
{
	char dir[4096], tmp[4096 + 32], proc[64];
	const char *slash = strrchr(o->path, '/');
	size_t dn = slash ? (slash == o->path ? 1 : (size_t)(slash - o->path)) : 0;
	int fd, rc;

	if (dn) {
		memcpy(dir, o->path, dn);
		dir[dn] = '\0';
	} else {
		strcpy(dir, ".");
	}
	*out = NULL;
	fd = open(dir, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	if (fd >= 0) {
		rc = create_ring(fd, o, err, errlen, out, out_len);
		if (!rc) {
			snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
			rc = linkat(AT_FDCWD, proc, AT_FDCWD, o->path, AT_SYMLINK_FOLLOW) ? -errno : 0;
			if (rc)
				munmap(*out, *out_len);
		}
		close(fd);
		/* Created and linked, lost to another creator (-EEXIST), or
		 * could not be made (err says why): done.  A link that failed
		 * otherwise (no /proc mounted) tries a named temporary. */
		if (rc == 0 || rc == -EEXIST || (rc && *out == NULL))
			return rc;
	}
	*out = NULL;
	snprintf(tmp, sizeof tmp, "%s.new.%ld", o->path, (long)getpid());
	fd = open(tmp, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return fail_errno(err, errlen, "cannot create ring file", o->path);
	rc = create_ring(fd, o, err, errlen, out, out_len);
	if (!rc) {
		rc = link(tmp, o->path) ? -errno : 0;
		if (rc)
			munmap(*out, *out_len);
		if (rc && rc != -EEXIST)
			failf(err, errlen, rc, o->path, "cannot create ring file (%s)", strerror(-rc));
	}
	unlink(tmp);
	close(fd);
	return rc;
}

static int attach_ring(int fd, const struct ring_writer_opts *o, char *err, size_t errlen,
		       struct anchor_ring_hdr **out, uint64_t *out_len)
{
	struct anchor_ring_hdr probe;
	struct stat st;
	uint64_t len;
	void *map;

	/* Rings are published complete (create_and_publish), so a header
	 * that is not READY belongs to a creator that died: refuse at once
	 * (every later process of the run would pay any wait). */
	{
		ssize_t k = pread(fd, &probe, sizeof probe, 0);
		if (k >= 8 && memcmp(probe.magic, ANCHOR_RING_MAGIC, 8) != 0 &&
		    memchr(probe.magic, 0, 8) != probe.magic)
			return fail(err, errlen, -EINVAL, "exists and is not an anchor ring (bad magic)",
				    o->path);
		if (k < 0)
			return fail_errno(err, errlen, "cannot read ring header", o->path);
		if (k != (ssize_t)sizeof probe ||
		    __atomic_load_n(&probe.state, __ATOMIC_ACQUIRE) != ANCHOR_RING_STATE_READY)
			return fail(err, errlen, -EINVAL,
				    k <= 0 ? "is an empty file, not a ring (delete it)"
					   : "is a ring whose creator never finished it, or zero-filled (delete it)",
				    o->path);
	}
	if (memcmp(probe.magic, ANCHOR_RING_MAGIC, 8) != 0)
		return fail(err, errlen, -EINVAL, "exists and is not an anchor ring (bad magic)", o->path);
	if (probe.endian != ANCHOR_RING_ENDIAN)
		return fail(err, errlen, -EINVAL, "ring written with the other byte order", o->path);
	if (probe.version_major != ANCHOR_RING_VERSION_MAJOR)
		return failf(err, errlen, -EPROTO, o->path,
			     "ring has format version %u.%u, this writer writes %u.%u (different major version)",
			     probe.version_major, probe.version_minor, ANCHOR_RING_VERSION_MAJOR,
			     ANCHOR_RING_VERSION_MINOR);
	if (probe.slot_size != ANCHOR_SLOT_SIZE || probe.header_size != ANCHOR_RING_HDR_SIZE ||
	    probe.nslots < ANCHOR_RING_MIN_SLOTS || probe.nslots > ANCHOR_RING_MAX_SLOTS ||
	    (probe.nslots & (probe.nslots - 1)) != 0)
		return fail(err, errlen, -EINVAL, "ring header has impossible geometry", o->path);
	len = ANCHOR_RING_HDR_SIZE + probe.nslots * ANCHOR_SLOT_SIZE;
	if (fstat(fd, &st) != 0)
		return fail_errno(err, errlen, "cannot stat ring file", o->path);
	if ((uint64_t)st.st_size < len)
		return fail(err, errlen, -EINVAL, "ring file is shorter than its header says", o->path);
	/* A sparse ring (copied with cp --sparse, or made by a writer that
	 * could not preallocate): fill its holes now, while a full disk is
	 * an error we can report, not a SIGBUS in the host later.  KEEP_SIZE:
	 * the size does not change, so RLIMIT_FSIZE is not involved. */
	if ((uint64_t)st.st_blocks * 512 < len) {
		if (fallocate(fd, FALLOC_FL_KEEP_SIZE, 0, (off_t)len) != 0 && errno != EOPNOTSUPP &&
		    errno != ENOSYS)
			return fail(err, errlen, -errno,
				    errno == ENOSPC || errno == EDQUOT
					    ? "ring file is sparse and its filesystem is full"
					    : "cannot allocate the holes of a sparse ring file",
				    o->path);
	}
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return fail_errno(err, errlen, "cannot map ring file", o->path);
	*out = map;
	*out_len = len;
	return 0;
}

static int open_existing(int fd, const struct ring_writer_opts *o, char *err, size_t errlen,
			 struct anchor_ring_hdr **out, uint64_t *out_len)
{
	struct stat st;

	if (fstat(fd, &st) != 0)
		return fail_errno(err, errlen, "cannot stat ring file", o->path);
	if (!S_ISREG(st.st_mode))
		return fail(err, errlen, -EINVAL, "is not a regular file", o->path);
	if (st.st_uid != geteuid())
		return fail(err, errlen, -EPERM, "belongs to another user; refusing it", o->path);
	return attach_ring(fd, o, err, errlen, out, out_len);
}

/* The fork-generation page (see g_genp); ordinary memory where the
 * kernel lacks MADV_WIPEONFORK (Linux < 4.14). */
static void setup_fork_page(void)
{
	uint32_t *p;

	if (g_genp != &g_gen_boot)
		return;
	p = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return;
	if (madvise(p, 4096, MADV_WIPEONFORK) != 0) {
		munmap(p, 4096);
		return;
	}
	*p = g_gen_shadow;
	g_genp = p;
}

int ring_writer_open(const struct ring_writer_opts *o, char *err, size_t errlen)
{
	static int atfork_done;
	struct anchor_ring_hdr *hdr = NULL;
	uint64_t len = 0;
	int fd, rc = -EEXIST, saved_errno = errno;

	if (!o->path || !o->path[0] || strlen(o->path) >= sizeof g_path)
		return fail(err, errlen, -EINVAL, "bad ring path", o->path ? o->path : "(null)");
	/* One mapping per process for its whole life: writers in flight on
	 * other threads hold g_slots and g_mask (see g_ring). */
	if (__atomic_load_n(&g_ring, __ATOMIC_ACQUIRE))
		return fail(err, errlen, -EALREADY, "this process has a ring mapped already", o->path);
	g_created = 0;
	/* Attach first (every process but the first finds the ring); else
	 * create and publish; if another process published first, attach
	 * to its ring. */
	for (int attempt = 0; attempt < 2 && rc == -EEXIST; attempt++) {
		/* O_NOFOLLOW: never write through a symlink planted at our path. */
		fd = open(o->path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		if (fd >= 0) {
			rc = open_existing(fd, o, err, errlen, &hdr, &len);
			close(fd);
		} else if (errno == ENOENT) {
			rc = create_and_publish(o, err, errlen, &hdr, &len);
			g_created = rc == 0;
		} else {
			rc = errno == ELOOP ? fail(err, errlen, -errno, "is a symlink; refusing to follow it", o->path)
					    : fail_errno(err, errlen, "cannot open ring file", o->path);
		}
	}
	if (rc == -EEXIST)
		rc = fail(err, errlen, rc, "cannot create ring file (appears and vanishes)", o->path);
	if (rc)
		goto out;

#ifdef ANCHOR_TEST_HOOKS
	if (ring_writer_test_hook)
		ring_writer_test_hook(0, RING_HOOK_ATTACHING);
#endif
	memcpy(g_path, o->path, strlen(o->path) + 1);
	setup_fork_page();
	/* The guard before the first read through the mapping: the ring is
	 * published (or found), so another process may truncate it from now
	 * on, and an unguarded read of its geometry below killed a Python
	 * host beside stress-ng --cpu 4 (tests/ring/t_host_truncated_slow.py,
	 * 1 round of 30).  A loss while attaching fails the open. */
	__atomic_store_n(&g_attaching, 1, __ATOMIC_RELEASE);
	g_map_len = len;
	__atomic_store_n(&g_map, (char *)hdr, __ATOMIC_RELEASE);
	install_bus_guard();
	g_slots = (struct anchor_slot *)(void *)((char *)hdr + ANCHOR_RING_HDR_SIZE);
	g_mask = hdr->nslots - 1;
	g_mode = hdr->mode;
	g_stale_ns = g_mode == ANCHOR_RING_MODE_DISCARD ? UINT64_MAX : hdr->nslots / 8;
	g_lanes = (hdr->feat_mask & ANCHOR_FEAT_LEDGER) ? hdr->lanes : NULL;
	g_headp = &hdr->head;
	__atomic_store_n(&g_attaching, 0, __ATOMIC_RELEASE);
	if (__atomic_load_n(&g_attach_lost, __ATOMIC_ACQUIRE)) {
		/* What was read may be the guard's zero page: nothing of it is
		 * used.  The mapping goes, the guard stops claiming its range. */
		__atomic_store_n(&g_map, NULL, __ATOMIC_RELEASE);
		munmap(hdr, len);
		rc = fail(err, errlen, -EIO,
			  "ring file lost its pages while attaching (truncated by another process, or its filesystem "
			  "is full)",
			  o->path);
		goto out;
	}
	g_ring = hdr;
	g_pid = (uint32_t)getpid();
	/* Callers write PROC_START then an explicit SYNC; no lazy one before. */
	g_last_sync_ns = ring_writer_now_ns();
	/* Release: every pointer above before writers may use them; pairs
	 * with the acquire loads of g_live in emit_at and ring_writer_event. */
	__atomic_store_n(&g_live, hdr, __ATOMIC_RELEASE);
	if (!atfork_done) {
		atfork_done = 1;
		pthread_atfork(NULL, NULL, after_fork_child_handler);
	}
	rc = 0;
out:
	errno = saved_errno;
	return rc;
}
