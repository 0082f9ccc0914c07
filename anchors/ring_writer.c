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
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "anchor_version.h"

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
};

static struct anchor_ring_hdr *g_hdr;
static struct anchor_slot *g_slots;
static uint64_t g_mask;
static uint32_t g_mode;
static uint32_t g_pid;
static uint32_t g_gen = 1; /* bumped in every forked child */
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
	return g_pid;
}

int ring_writer_attached(void)
{
	return __atomic_load_n(&g_hdr, __ATOMIC_ACQUIRE) != NULL;
}

const char *ring_writer_path(void)
{
	return g_hdr ? g_path : "";
}

void ring_writer_disable(void)
{
	__atomic_store_n(&g_hdr, NULL, __ATOMIC_RELEASE);
}

void ring_writer_set_stack_hook(ring_writer_stack_fn fn)
{
	g_stack_fn = fn;
}

static int emit_at(uint64_t ts_ns, uint8_t kind, uint8_t flags, uint64_t value, const char *text,
		   size_t len, const uint64_t *stack, unsigned nstack);

/* 1 when this is the thread's first record in this process. */
static int thread_init(struct writer_thread *t)
{
	if (t->gen == g_gen)
		return 0;
	/* First record of this thread (or first after fork): the chunk
	 * cursor belongs to another process or to nobody. */
	t->gen = g_gen;
	t->tid = (uint32_t)syscall(SYS_gettid);
	t->next = t->end = 0;
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
 * Claim n consecutive tickets.  Normal path: from this thread's chunk.
 * Reentered (a signal handler interrupted a write on this thread): take
 * exactly n straight from head, so the interrupted writer's cursor is
 * untouched.  Returns 0, or -ENOSPC in discard mode when the ring is full.
 */
static int claim(struct writer_thread *t, unsigned n, int nested, uint64_t *ticket)
{
	uint64_t base;
	unsigned take = nested ? n : ANCHOR_RING_CHUNK;

	if (!nested && t->end - t->next >= n) {
		*ticket = t->next;
		t->next += n;
		return 0;
	}
	/* Relaxed: tickets only need to be unique; ordering of the data is
	 * carried by each slot's commit word. */
	base = __atomic_fetch_add(&g_hdr->head, take, __ATOMIC_RELAXED);
	if (g_mode == ANCHOR_RING_MODE_DISCARD && base + take > g_mask + 1) {
		__atomic_fetch_add(&g_hdr->dropped, 1, __ATOMIC_RELAXED);
		return -ENOSPC;
	}
	*ticket = base;
	if (!nested) {
		t->next = base + n;
		t->end = base + take;
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

static int emit_at(uint64_t ts_ns, uint8_t kind, uint8_t flags, uint64_t value, const char *text,
		   size_t len, const uint64_t *stack, unsigned nstack)
{
	struct anchor_ring_hdr *hdr = __atomic_load_n(&g_hdr, __ATOMIC_ACQUIRE);
	struct writer_thread *t = &t_self;
	struct anchor_slot head;
	struct anchor_cont cont[ANCHOR_RECORD_MAX_SLOTS - 1];
	unsigned ntext, nstk, ncont, i;
	size_t maxtext;
	uint64_t ticket, h;
	int saved_errno = errno, nested, rc, first;

	if (!hdr)
		return -ENODEV;
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
	head.kind = kind;
	head.value = value;

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
	head.flags = flags;
	head.nslots = (uint8_t)(1 + ncont);
	head.nstack = (uint8_t)nstk;
	if (len)
		memcpy(head.name, text, len < ANCHOR_NAME_INLINE ? len : ANCHOR_NAME_INLINE);
	if (ncont)
		memset(cont, 0, sizeof(cont[0]) * ncont);
	for (i = 0; i < ntext; i++) {
		size_t off = ANCHOR_NAME_INLINE + (size_t)i * ANCHOR_CONT_BYTES;
		size_t n = len - off < ANCHOR_CONT_BYTES ? len - off : ANCHOR_CONT_BYTES;
		memcpy(cont[i].data, text + off, n);
	}
	if (nstk)
		memcpy(cont[ntext].data, stack, nstack * sizeof(uint64_t));

	rc = claim(t, 1 + ncont, nested, &ticket);
	if (rc)
		goto out;

	h = anchor_check_init(ticket);
	{
		const uint64_t *w = (const uint64_t *)(const void *)&head;
		for (i = 1; i < 8; i++)
			h = anchor_check_step(h, i - 1, w[i]);
	}
	for (i = 0; i < ncont; i++) {
		const uint64_t *w = (const uint64_t *)(const void *)cont[i].data;
		for (unsigned k = 0; k < 7; k++)
			h = anchor_check_step(h, 7 + 7 * i + k, w[k]);
	}
	head.check = anchor_check_fold(h);

	{
		struct anchor_slot *dst = slot_at(ticket);
		__atomic_store_n(&dst->commit, (ticket + 1) | ANCHOR_SLOT_BUSY, __ATOMIC_RELAXED);
		/* Release fence: the BUSY mark is ordered before every payload
		 * store below; pairs with the acquire fence a live reader takes
		 * after loading commit (ring_reader.c, slot_load). */
		__atomic_thread_fence(__ATOMIC_RELEASE);
		for (i = 0; i < ncont; i++) {
			struct anchor_cont *c = (struct anchor_cont *)(void *)slot_at(ticket + 1 + i);
			__atomic_store_n(&c->commit, (ticket + 2 + i) | ANCHOR_SLOT_BUSY, __ATOMIC_RELAXED);
			__atomic_thread_fence(__ATOMIC_RELEASE); /* pairs as above */
			store_words((uint64_t *)(void *)c->data, (const uint64_t *)(const void *)cont[i].data, 7);
			/* Store-release: payload before commit; pairs with the
			 * reader's load-acquire of this commit word. */
			__atomic_store_n(&c->commit, (ticket + 2 + i) | ANCHOR_SLOT_CONT, __ATOMIC_RELEASE);
		}
		store_words((uint64_t *)(void *)dst + 1, (const uint64_t *)(const void *)&head + 1, 7);
		/* Store-release: head payload and all continuations before the
		 * commit; pairs with the reader's load-acquire of head commit. */
		__atomic_store_n(&dst->commit, ticket + 1, __ATOMIC_RELEASE);
	}

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

static int event_one_slot(uint8_t kind, const char *name, size_t len, uint8_t flags, uint64_t value)
{
	struct writer_thread *t = &t_self;
	uint64_t w1, w2, w3, w4, w5, w6, w7, ticket, h, ts_ns;
	uint64_t *dst;

	/* errno: nothing below sets it (the vDSO clock read cannot fail, the
	 * fallbacks and ring_writer_sync preserve it themselves). */
	if (t->in_write)
		return ring_writer_emit(kind, flags, value, name, len, NULL, 0);
	/* Guard the chunk cursor before looking at it: a signal handler that
	 * marks between our check and our t->next++ would take the ticket (or
	 * the chunk's last one) from under us.  With the guard set it claims
	 * from head instead (emit_at's nested path). */
	t->in_write = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (t->gen != g_gen || t->end - t->next < 1) {
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		t->in_write = 0;
		return ring_writer_emit(kind, flags, value, name, len, NULL, 0);
	}
	ts_ns = ring_writer_now_ns();
	ticket = t->next++;
	w1 = ts_ns;
	w2 = (uint64_t)g_pid | ((uint64_t)t->tid << 32);
	/* kind, flags, nslots = 1, nstack = 0, check = 0 (filled below). */
	w3 = (uint64_t)kind | ((uint64_t)flags << 8) | (1ull << 16);
	w4 = value;
	name_words(name, len, &w5, &w6, &w7);
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
	__atomic_store_n(&dst[0], (ticket + 1) | ANCHOR_SLOT_BUSY, __ATOMIC_RELAXED);
	/* Release fence: BUSY before the payload; pairs with the acquire in
	 * ring_reader.c (see emit_at). */
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

	if (!__atomic_load_n(&g_hdr, __ATOMIC_ACQUIRE))
		return -ENODEV;
	if (!g_stack_fn && len <= ANCHOR_NAME_INLINE)
		return event_one_slot(kind, name, len, flags, value);
	if (g_stack_fn)
		n = g_stack_fn(ips, (int)ANCHOR_STACK_MAX);
	return ring_writer_emit(kind, flags, value, name, len, ips, n > 0 ? (unsigned)n : 0);
}

int ring_writer_sync(void)
{
	struct anchor_sync_payload p;
	uint64_t best_a = 0, best_b = 0, best_rt = 0, best_raw = 0, width = UINT64_MAX;

	if (!ring_writer_attached())
		return -ENODEV;
	/* Claim the period first so concurrent threads do not all sync. */
	__atomic_store_n(&g_last_sync_ns, ring_writer_now_ns(), __ATOMIC_RELAXED);
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
	g_gen++;
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

/* Creator path: we made the file with O_EXCL, so nobody else initialises. */
static int create_ring(int fd, const struct ring_writer_opts *o, char *err, size_t errlen,
		       struct anchor_ring_hdr **out, uint64_t *out_len)
{
	uint64_t nslots = pow2_slots(o->size_bytes ? o->size_bytes : RING_WRITER_DEFAULT_BYTES);
	uint64_t len = ANCHOR_RING_HDR_SIZE + nslots * ANCHOR_SLOT_SIZE;
	struct anchor_ring_hdr *hdr;
	int rc;

	if (ftruncate(fd, (off_t)len) != 0)
		return fail(err, errlen, -errno, "cannot size ring file", o->path);
	/* Allocate the blocks now: a write into a sparse hole on a full disk
	 * would SIGBUS the host process later. */
	rc = posix_fallocate(fd, 0, (off_t)len);
	if (rc != 0 && rc != EOPNOTSUPP && rc != EINVAL)
		return fail(err, errlen, -rc, "cannot allocate ring file (disk full?)", o->path);
	hdr = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (hdr == MAP_FAILED)
		return fail(err, errlen, -errno, "cannot map ring file", o->path);
	memcpy(hdr->magic, ANCHOR_RING_MAGIC, 8);
	hdr->endian = ANCHOR_RING_ENDIAN;
	hdr->version_major = ANCHOR_RING_VERSION_MAJOR;
	hdr->version_minor = ANCHOR_RING_VERSION_MINOR;
	hdr->header_size = ANCHOR_RING_HDR_SIZE;
	hdr->slot_size = ANCHOR_SLOT_SIZE;
	hdr->mode = o->mode;
	hdr->nslots = nslots;
	hdr->data_offset = ANCHOR_RING_HDR_SIZE;
	hdr->feat_mask = ANCHOR_FEAT_CHECK;
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

static int attach_ring(int fd, const struct ring_writer_opts *o, char *err, size_t errlen,
		       struct anchor_ring_hdr **out, uint64_t *out_len)
{
	struct anchor_ring_hdr probe;
	struct stat st;
	uint64_t len;
	void *map;

	for (int i = 0;; i++) {
		ssize_t k = pread(fd, &probe, sizeof probe, 0);
		if (k == (ssize_t)sizeof probe && __atomic_load_n(&probe.state, __ATOMIC_ACQUIRE) ==
							  ANCHOR_RING_STATE_READY)
			break;
		if (k > 0 && k >= 8 && memcmp(probe.magic, ANCHOR_RING_MAGIC, 8) != 0 &&
		    memchr(probe.magic, 0, 8) != probe.magic)
			return fail(err, errlen, -EINVAL, "exists and is not an anchor ring (bad magic)",
				    o->path);
		if (i >= OPEN_WAIT_STEPS)
			return fail(err, errlen, -ETIMEDOUT,
				    "ring header never became ready (creator died?)", o->path);
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
	}
	if (memcmp(probe.magic, ANCHOR_RING_MAGIC, 8) != 0)
		return fail(err, errlen, -EINVAL, "exists and is not an anchor ring (bad magic)", o->path);
	if (probe.endian != ANCHOR_RING_ENDIAN)
		return fail(err, errlen, -EINVAL, "ring written with the other byte order", o->path);
	if (probe.version_major != ANCHOR_RING_VERSION_MAJOR)
		return fail(err, errlen, -EPROTO, "ring has a different major version", o->path);
	if (probe.slot_size != ANCHOR_SLOT_SIZE || probe.header_size != ANCHOR_RING_HDR_SIZE ||
	    probe.nslots < ANCHOR_RING_MIN_SLOTS || probe.nslots > ANCHOR_RING_MAX_SLOTS ||
	    (probe.nslots & (probe.nslots - 1)) != 0)
		return fail(err, errlen, -EINVAL, "ring header has impossible geometry", o->path);
	len = ANCHOR_RING_HDR_SIZE + probe.nslots * ANCHOR_SLOT_SIZE;
	if (fstat(fd, &st) != 0 || (uint64_t)st.st_size < len)
		return fail(err, errlen, -EINVAL, "ring file is shorter than its header says", o->path);
	map = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED)
		return fail(err, errlen, -errno, "cannot map ring file", o->path);
	*out = map;
	*out_len = len;
	return 0;
}

int ring_writer_open(const struct ring_writer_opts *o, char *err, size_t errlen)
{
	static int atfork_done;
	struct anchor_ring_hdr *hdr = NULL;
	struct stat st;
	uint64_t len = 0;
	int fd, rc, saved_errno = errno;

	if (!o->path || !o->path[0] || strlen(o->path) >= sizeof g_path)
		return fail(err, errlen, -EINVAL, "bad ring path", o->path ? o->path : "(null)");
	/* O_NOFOLLOW: never write through a symlink planted at our path. */
	fd = open(o->path, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd >= 0) {
		rc = create_ring(fd, o, err, errlen, &hdr, &len);
		if (rc)
			unlink(o->path);
	} else if (errno == EEXIST) {
		fd = open(o->path, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0) {
			rc = fail(err, errlen, -errno,
				  errno == ELOOP ? "is a symlink; refusing to follow it"
						 : "cannot open ring file",
				  o->path);
			goto out;
		}
		if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
			rc = fail(err, errlen, -EINVAL, "is not a regular file", o->path);
		} else if (st.st_uid != geteuid()) {
			rc = fail(err, errlen, -EPERM, "belongs to another user; refusing it", o->path);
		} else {
			rc = attach_ring(fd, o, err, errlen, &hdr, &len);
		}
	} else {
		rc = fail(err, errlen, -errno, "cannot create ring file", o->path);
		goto out;
	}
	close(fd);
	if (rc)
		goto out;

	memcpy(g_path, o->path, strlen(o->path) + 1);
	g_slots = (struct anchor_slot *)(void *)((char *)hdr + ANCHOR_RING_HDR_SIZE);
	g_mask = hdr->nslots - 1;
	g_mode = hdr->mode;
	g_pid = (uint32_t)getpid();
	/* Callers write PROC_START then an explicit SYNC; no lazy one before. */
	g_last_sync_ns = ring_writer_now_ns();
	__atomic_store_n(&g_hdr, hdr, __ATOMIC_RELEASE);
	if (!atfork_done) {
		atfork_done = 1;
		pthread_atfork(NULL, NULL, after_fork_child_handler);
	}
	(void)len;
	rc = 0;
out:
	errno = saved_errno;
	return rc;
}
