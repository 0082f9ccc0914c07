/*
 * ring_mark.c - cost of anchor_mark() from C, side by side in one run:
 *   clock_gettime(CLOCK_MONOTONIC)          the floor every timestamp pays
 *   anchor_mark, warm ring                  steady state (pages mapped)
 *   anchor_mark, first lap                  includes one minor page fault
 *                                           per 64 records on a fresh ring
 *   1 thread vs 2 threads marking at once   aggregate throughput
 * Run with ANCHOR_FILE set (bench/ring.sh); ANCHOR_DISABLE=1 measures the
 * no-ring cost.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "anchor.h"

/* RING_MARK_CPU_TIME=1 times the single-thread loops in this thread's
 * CPU time: on a loaded machine wall time mostly measures preemption.
 * The thread rates are always timed in wall time. */
static clockid_t g_timer = CLOCK_MONOTONIC;

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(g_timer, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static long g_n;
static volatile uint64_t g_sink;

static void *marker(void *arg)
{
	(void)arg;
	for (long i = 0; i < g_n; i++)
		anchor_mark("bench");
	return NULL;
}

static double wall_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double threads_rate(int nt)
{
	pthread_t th[8];
	double t0 = wall_s();
	for (int i = 0; i < nt; i++)
		pthread_create(&th[i], NULL, marker, NULL);
	for (int i = 0; i < nt; i++)
		pthread_join(th[i], NULL);
	return (double)g_n * nt / (wall_s() - t0);
}

static double median(double *v, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
			double t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
	return v[n / 2];
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 5000000;
	long lap = argc > 2 ? atol(argv[2]) : 1 << 20; /* slots in the ring */
	double clk[7], mark[7], r1[5], r2[5], t0, first;
	struct timespec ts;

	if (getenv("RING_MARK_CPU_TIME"))
		g_timer = CLOCK_THREAD_CPUTIME_ID;
	printf("ring attached: %s (%s)\n", anchor_enabled() ? "yes" : "no", anchor_ring_path());
	/* First lap on a fresh ring: every 64th record touches a new page. */
	t0 = now_s();
	for (long i = 0; i < lap; i++)
		anchor_mark("bench");
	first = (now_s() - t0) / (double)lap * 1e9;
	for (int r = 0; r < 7; r++) {
		t0 = now_s();
		for (long i = 0; i < n; i++) {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			g_sink += (uint64_t)ts.tv_nsec;
		}
		clk[r] = (now_s() - t0) / (double)n * 1e9;
		t0 = now_s();
		for (long i = 0; i < n; i++)
			anchor_mark("bench");
		mark[r] = (now_s() - t0) / (double)n * 1e9;
	}
	g_n = n;
	for (int r = 0; r < 5; r++) {
		r1[r] = threads_rate(1);
		r2[r] = threads_rate(2);
	}
	double c = median(clk, 7), m = median(mark, 7), a = median(r1, 5), b = median(r2, 5);
	printf("clock_gettime(CLOCK_MONOTONIC)  %7.1f ns/op\n", c);
	printf("anchor_mark, warm ring          %7.1f ns/op   %.2fx the clock read (target <= 2x)\n", m, m / c);
	printf("anchor_mark, first lap          %7.1f ns/op   (fresh pages: one minor fault per 64 records)\n", first);
	printf("1 thread                        %7.1f M marks/s\n", a / 1e6);
	printf("2 threads                       %7.1f M marks/s   %.2fx one thread (target >= 1.6x)\n", b / 1e6, b / a);
	return 0;
}
