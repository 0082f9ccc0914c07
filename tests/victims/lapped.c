/*
 * lapped.c - a writer stalled for whole laps of the ring, made to happen
 * (issues 15 and 23): ring_writer.c built with ANCHOR_TEST_HOOKS calls a
 * hook after a writer took its ticket and again after it took the
 * ticket's slot.  Thread A marks, then stalls in the hook on its next
 * mark (one slot: the mark fast path) while thread B laps a 1024-slot
 * ring one and a half times; then again on a mark with a long name
 * (continuation slots: emit_record).
 *
 *   lapped RING ticket   stall after the ticket: B takes the slot first,
 *                        A finds B's newer record there and gives its own
 *                        up (counted: lapped)
 *   lapped RING owned    stall after A took the slot (BUSY): B must leave
 *                        it to A and write its records beside it; A then
 *                        commits a record of an old lap (counted: lost
 *                        as overwritten).  A writer that stored over
 *                        whatever the slot held (before issue 23) wrote
 *                        into one of B's newest records here: a gap
 *
 * Prints "stream NAME COUNT" lines for ring_check account.
 */
#include <pthread.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "ring_writer.h"

extern void (*ring_writer_test_hook)(uint64_t ticket, int stage);

#define LAP_MARKS 1536 /* 1.5 laps: the slot of the stalled ticket holds one of B's newest */
#define LONG_NAME "tA_long_name_over_24_bytes"

static sem_t g_stalled, g_go;
static pthread_t g_a;
static int g_armed;

static int g_stage; /* ring_writer.c: 0 after the ticket, 1 after the slot */

static void stall(uint64_t ticket, int stage)
{
	(void)ticket;
	if (stage != g_stage || !__atomic_load_n(&g_armed, __ATOMIC_ACQUIRE) || !pthread_equal(pthread_self(), g_a))
		return;
	__atomic_store_n(&g_armed, 0, __ATOMIC_RELEASE);
	sem_post(&g_stalled);
	while (sem_wait(&g_go) != 0)
		;
}

static void mark(const char *name, uint64_t v)
{
	ring_writer_event(ANCHOR_KIND_MARK, name, strlen(name), ANCHOR_FLAG_VALUE, v);
}

static void *thread_a(void *arg)
{
	(void)arg;
	mark("tA", 0);
	mark(LONG_NAME, 0);
	__atomic_store_n(&g_armed, 1, __ATOMIC_RELEASE);
	mark("tA", 1); /* stalls: one-slot fast path */
	__atomic_store_n(&g_armed, 1, __ATOMIC_RELEASE);
	mark(LONG_NAME, 1); /* stalls: continuation slots */
	for (uint64_t i = 2; i <= 10; i++) {
		mark("tA", i);
		mark(LONG_NAME, i);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct ring_writer_opts o = {argc > 1 ? argv[1] : "lapped.ring", 64 << 10, ANCHOR_RING_MODE_OVERWRITE};
	char err[512];
	uint64_t b = 0;

	g_stage = argc > 2 && !strcmp(argv[2], "owned");
	if (ring_writer_open(&o, err, sizeof err)) {
		fprintf(stderr, "lapped: %s\n", err);
		return 2;
	}
	sem_init(&g_stalled, 0, 0);
	sem_init(&g_go, 0, 0);
	ring_writer_test_hook = stall;
	pthread_create(&g_a, NULL, thread_a, NULL);
	for (int round = 0; round < 2; round++) {
		while (sem_wait(&g_stalled) != 0)
			;
		for (int i = 0; i < LAP_MARKS; i++)
			mark("tB", b++);
		sem_post(&g_go);
	}
	pthread_join(g_a, NULL);
	printf("stream tA 11\nstream %s 11\nstream tB %llu\n", LONG_NAME, (unsigned long long)b);
	return 0;
}
