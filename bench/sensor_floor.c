/*
 * sensor_floor.c - where a 1 kHz sampler tick's CPU time goes.
 *
 *   cc -O2 -o sensor_floor bench/sensor_floor.c -ldl
 *   ./sensor_floor ROUNDS SECONDS HZ [NVML_STUB.so] FILE...
 *
 * (bench/sensor_cost.py --floor builds and runs it on the emulated tree.)
 * Part 1, warm costs: each operation of a tick in a tight loop, ns per call.
 * Part 2, per tick at HZ: a thread waking on clock_nanosleep(TIMER_ABSTIME)
 * and doing one of the variants below; its own CPU time
 * (CLOCK_THREAD_CPUTIME_ID) per tick.  The variants alternate within every
 * round, so load on the machine hits them alike; the median over rounds
 * is printed.  Wake-only is the floor no sampler at HZ can go below;
 * the timerfd variants wait on a periodic timerfd instead.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

typedef int (*energy_fn)(void *, unsigned long long *);
typedef int (*init_fn)(void);
typedef int (*handle_fn)(unsigned, void **);

static int g_nf, g_fd[16];
static const char *g_path[16];
static energy_fn g_energy;
static void *g_dev;
static volatile uint64_t g_sink;

static uint64_t ns(clockid_t id)
{
	struct timespec ts;
	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static uint64_t parse(const char *b, ssize_t n)
{
	uint64_t v = 0;
	for (ssize_t i = 0; i < n && b[i] >= '0' && b[i] <= '9'; i++)
		v = v * 10 + (uint64_t)(b[i] - '0');
	return v;
}

static void op_clock(void)
{
	g_sink += ns(CLOCK_MONOTONIC);
}

static void op_pread(void)
{
	char b[32];
	for (int i = 0; i < g_nf; i++)
		g_sink += parse(b, pread(g_fd[i], b, sizeof b, 0));
}

static void op_open_read(void)
{
	char b[32];
	for (int i = 0; i < g_nf; i++) {
		int fd = open(g_path[i], O_RDONLY | O_CLOEXEC);
		g_sink += parse(b, read(fd, b, sizeof b));
		close(fd);
	}
}

static void op_nvml(void)
{
	unsigned long long v = 0;
	if (g_energy)
		g_energy(g_dev, &v);
	g_sink += v;
}

static void op_none(void)
{
}

static void op_tick(void)
{
	op_clock();
	op_pread();
	op_nvml();
	op_clock();
}

struct variant {
	const char *name;
	void (*fn)(void);
	double per_tick[64];
	int timerfd;
	long slack_ns; /* PR_SET_TIMERSLACK for the thread; 0: the default (50 us) */
};

static double warm(void (*fn)(void), int n)
{
	uint64_t t = ns(CLOCK_THREAD_CPUTIME_ID);
	for (int i = 0; i < n; i++)
		fn();
	return (double)(ns(CLOCK_THREAD_CPUTIME_ID) - t) / n;
}

static double run_at(void (*fn)(void), double secs, long hz, long slack_ns)
{
	struct timespec next;
	long period = 1000000000L / hz, ticks = (long)(secs * hz);
	long old_slack = prctl(PR_GET_TIMERSLACK, 0, 0, 0, 0);
	uint64_t c0 = ns(CLOCK_THREAD_CPUTIME_ID);
	if (slack_ns > 0)
		prctl(PR_SET_TIMERSLACK, (unsigned long)slack_ns, 0, 0, 0);
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (long i = 0; i < ticks; i++) {
		fn();
		next.tv_nsec += period;
		while (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
	if (slack_ns > 0)
		prctl(PR_SET_TIMERSLACK, (unsigned long)old_slack, 0, 0, 0);
	return (double)(ns(CLOCK_THREAD_CPUTIME_ID) - c0) / ticks;
}

/* The same, woken by a periodic timerfd (one read per tick) instead of
 * clock_nanosleep: the other way a sampler can wait. */
static double run_at_timerfd(void (*fn)(void), double secs, long hz, long slack_ns)
{
	long period = 1000000000L / hz, ticks = (long)(secs * hz);
	struct itimerspec its = {{0, period}, {0, period}};
	int fd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC);
	uint64_t c0 = ns(CLOCK_THREAD_CPUTIME_ID), n;
	if (fd < 0 || timerfd_settime(fd, 0, &its, NULL))
		return -1;
	for (long i = 0; i < ticks;) {
		fn();
		if (read(fd, &n, sizeof n) == (ssize_t)sizeof n)
			i += (long)n; /* expirations missed while descheduled count */
	}
	close(fd);
	return (double)(ns(CLOCK_THREAD_CPUTIME_ID) - c0) / ticks;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
	int rounds, a = 4;
	double secs;
	long hz;
	if (argc < 5) {
		fprintf(stderr, "usage: sensor_floor ROUNDS SECONDS HZ [STUB.so] FILE...\n");
		return 2;
	}
	rounds = atoi(argv[1]);
	secs = atof(argv[2]);
	hz = atol(argv[3]);
	if (rounds < 1 || rounds > 64 || hz < 1)
		return 2;
	if (strstr(argv[a], ".so")) {
		void *h = dlopen(argv[a], RTLD_NOW);
		init_fn init = h ? (init_fn)dlsym(h, "nvmlInit_v2") : NULL;
		handle_fn handle = h ? (handle_fn)dlsym(h, "nvmlDeviceGetHandleByIndex_v2") : NULL;
		g_energy = h ? (energy_fn)dlsym(h, "nvmlDeviceGetTotalEnergyConsumption") : NULL;
		if (!init || !handle || !g_energy || init() || handle(0, &g_dev)) {
			fprintf(stderr, "sensor_floor: %s: no usable NVML stub\n", argv[a]);
			return 1;
		}
		a++;
	}
	for (; a < argc && g_nf < 16; a++) {
		g_path[g_nf] = argv[a];
		g_fd[g_nf] = open(argv[a], O_RDONLY | O_CLOEXEC);
		if (g_fd[g_nf] < 0) {
			perror(argv[a]);
			return 1;
		}
		g_nf++;
	}
	printf("warm, ns per call (100000 calls): clock_gettime %.0f, %d x pread+parse %.0f, "
	       "%d x open+read+close %.0f, NVML stub energy %.0f\n",
	       warm(op_clock, 100000), g_nf, warm(op_pread, 100000), g_nf, warm(op_open_read, 100000),
	       warm(op_nvml, 100000));

	struct variant v[] = {
		{"wake only", op_none, {0}, 0, 0},
		{"wake only (timerfd)", op_none, {0}, 1, 0},
		{"full tick (timerfd)", op_tick, {0}, 1, 0},
		{"wake + preads", op_pread, {0}, 0, 0},
		{"wake + NVML stub", op_nvml, {0}, 0, 0},
		{"wake + full tick reads", op_tick, {0}, 0, 0},
		{"wake + open/read/close", op_open_read, {0}, 0, 0},
		/* A wider timer slack lets the kernel fire the sleep together with
		 * an interrupt that comes anyway (the scheduler tick), instead of
		 * programming the timer for it alone: fewer exits on a VM. */
		{"wake only, slack 500us", op_none, {0}, 0, 500000},
		{"full tick, slack 500us", op_tick, {0}, 0, 500000},
	};
	int nv = (int)(sizeof v / sizeof v[0]);
	for (int r = 0; r < rounds; r++)
		for (int i = 0; i < nv; i++)
			v[i].per_tick[r] = (v[i].timerfd ? run_at_timerfd : run_at)(v[i].fn, secs, hz, v[i].slack_ns);
	printf("at %ld Hz, %d rounds x %.1f s each, thread CPU per tick (median [min, max]) and %% of one core:\n", hz,
	       rounds, secs);
	for (int i = 0; i < nv; i++) {
		qsort(v[i].per_tick, (size_t)rounds, sizeof(double), cmp);
		double med = v[i].per_tick[rounds / 2];
		printf("  %-24s %6.1f us [%5.1f, %5.1f]  %5.2f %%\n", v[i].name, med / 1e3, v[i].per_tick[0] / 1e3,
		       v[i].per_tick[rounds - 1] / 1e3, med * hz / 1e7);
	}
	return 0;
}
