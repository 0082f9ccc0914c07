/*
 * marker.c - victim program for the ring tests, linked with -lanchor.
 *
 *   marker threads N COUNT        N threads x COUNT marks "t<i>" value=seq
 *   marker forks N COUNT EXE      parent + N forked children marking at
 *                                 once; child 0 execs EXE (marker) instead
 *   marker loop PROGRESS_FILE [NAME [COUNT]]
 *                                 mark NAME ("loop") forever (or COUNT
 *                                 times); after each mark returns, store
 *                                 its seq in PROGRESS_FILE (mmap), so a
 *                                 test that kill -9s us knows what was
 *                                 committed
 *   marker signals COUNT          marks in a loop while a 50 us timer's
 *                                 signal handler marks too (same thread)
 *   marker stacks                 print &stack_probe, then mark from it
 *   marker crash                  mark, then segfault
 *   marker stale COUNT            thread "tA" marks once and sleeps holding
 *                                 its chunk while "tB" marks COUNT times
 *                                 (wrapping a small ring), then "tA" marks
 *                                 100 more
 *   marker rawfork N COUNT        parent "tp" marks while N children made
 *                                 with syscall(SYS_fork) (no atfork
 *                                 handlers) mark "tc<i>" COUNT times each
 *   marker dlsig SECONDS LIB      loop dlopen/dlclose of LIB while a
 *                                 100 us timer's handler marks (with
 *                                 ANCHOR_STACKS=1: no deadlock in the
 *                                 loader's lock); prints "errno kept"
 *                                 when a thread's first mark kept errno
 *   marker rawbus [OWNFILE]       install a SIGBUS handler with a raw
 *                                 rt_sigaction, mark, then truncate the
 *                                 ring and mark on (or fault on OWNFILE)
 *   marker storm SECONDS N TAG [CTL]
 *                                 N threads "TAG.t<i>" mark value=seq for
 *                                 SECONDS, then print their streams (run
 *                                 several at once on one ring: the
 *                                 overwrite storm of t_ring_lapstorm).
 *                                 CTL (a file of int64 req, go, arrived,
 *                                 gone, shared by all writers): when req
 *                                 grows, each thread, within 256 marks,
 *                                 adds one to arrived and waits until go
 *                                 reaches req (a finished thread adds
 *                                 one to gone), so the test can
 *                                 copy a ring whose last lap every
 *                                 thread wrote up to the same moment
 *   marker vforks N EXE [ARG...]  run EXE N times, one after another, each
 *                                 with vfork + execv (as make and shells
 *                                 built on posix_spawn do); print how
 *                                 many exited 0
 *   marker busy N FORKS EXE       N threads mark until the parent has
 *                                 forked FORKS children one after another
 *                                 (each marks 500 times from 3 threads,
 *                                 exits with status 3 + i % 5; every 4th
 *                                 execs EXE threads 2 500); prints what the
 *                                 children returned.  The host that
 *                                 t_host_truncated_slow truncates the
 *                                 ring under at a random moment.
 * Streams the tests check print "stream NAME COUNT" on stdout.
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "anchor.h"

static long g_count;

static void *thread_main(void *arg)
{
	char name[16];
	snprintf(name, sizeof name, "t%ld", (long)(intptr_t)arg);
	for (long i = 0; i < g_count; i++)
		anchor_mark_value(name, i);
	return NULL;
}

static int run_threads(int n)
{
	pthread_t th[256];
	if (n > 256)
		n = 256;
	for (int i = 0; i < n; i++)
		pthread_create(&th[i], NULL, thread_main, (void *)(intptr_t)i);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	return 0;
}

static int run_forks(int n, const char *exe)
{
	pid_t kids[64];
	if (n > 64)
		n = 64;
	for (int i = 0; i < n; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			if (i == 0) {
				char cnt[32];
				snprintf(cnt, sizeof cnt, "%ld", g_count);
				execl(exe, exe, "threads", "1", cnt, (char *)NULL);
				_exit(127);
			}
			thread_main((void *)(intptr_t)(100 + i));
			_exit(0);
		}
	}
	thread_main((void *)(intptr_t)99);
	int bad = 0;
	for (int i = 0; i < n; i++) {
		int st;
		waitpid(kids[i], &st, 0);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
			bad++;
	}
	return bad ? 1 : 0;
}

static int run_loop(const char *progress, const char *name, int64_t count)
{
	/* The test pre-fills the file with -1 (nothing committed yet), so a
	 * kill before our first store still reads as "none". */
	int fd = open(progress, O_RDWR);
	volatile int64_t *last;
	if (fd < 0)
		return 2;
	last = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (last == MAP_FAILED)
		return 2;
	for (int64_t i = 0; count < 0 || i < count; i++) {
		anchor_mark_value(name, i);
		/* Published only after anchor_mark returned: every seq <= *last
		 * is committed. */
		__atomic_store_n(last, i, __ATOMIC_RELEASE);
	}
	return 0;
}

static volatile long g_sig_count;

static void on_alarm(int sig)
{
	(void)sig;
	/* Marks from a signal handler interrupt marks on the same thread. */
	anchor_mark_value("t_sig", g_sig_count);
	g_sig_count++;
}

static int run_signals(long n)
{
	struct itimerval it = {{0, 50}, {0, 50}};
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	for (long i = 0; i < n; i++)
		anchor_mark_value("t_main", i);
	memset(&it, 0, sizeof it);
	setitimer(ITIMER_REAL, &it, NULL);
	printf("signal marks %ld\n", g_sig_count);
	return g_sig_count > 0 ? 0 : 1;
}

/* Not inlined: its return address must be on the captured stack. */
__attribute__((noinline)) static int stack_probe(int n)
{
	for (int i = 0; i < n; i++)
		anchor_mark_value("stack", i);
	__asm__ volatile("" ::: "memory"); /* keep the call a call, not a tail jump */
	return 0;
}

static volatile int g_b_done;

static void *stale_a(void *arg)
{
	(void)arg;
	anchor_mark_value("tA", 0);
	/* Hold the chunk claimed above while tB laps the ring. */
	while (!__atomic_load_n(&g_b_done, __ATOMIC_ACQUIRE))
		usleep(1000);
	for (int i = 1; i <= 100; i++)
		anchor_mark_value("tA", i);
	return NULL;
}

static int run_stale(long n)
{
	pthread_t a;
	pthread_create(&a, NULL, stale_a, NULL);
	usleep(20000);
	for (long i = 0; i < n; i++)
		anchor_mark_value("tB", i);
	__atomic_store_n(&g_b_done, 1, __ATOMIC_RELEASE);
	pthread_join(a, NULL);
	printf("stream tA 101\nstream tB %ld\n", n);
	return 0;
}

static int run_rawfork(int n, long count)
{
	pid_t kids[64];
	long seq = 0;
	if (n > 64)
		n = 64;
	for (int i = 0; i < n; i++) {
		/* The parent holds a chunk with room left when it forks. */
		for (int k = 0; k < 10; k++)
			anchor_mark_value("tp", seq++);
		kids[i] = (pid_t)syscall(SYS_fork);
		if (kids[i] == 0) {
			char name[16];
			snprintf(name, sizeof name, "tc%d", i);
			for (long k = 0; k < count; k++)
				anchor_mark_value(name, k);
			_exit(0);
		}
		for (long k = 0; k < count; k++)
			anchor_mark_value("tp", seq++);
	}
	int bad = 0;
	for (int i = 0; i < n; i++) {
		int st;
		waitpid(kids[i], &st, 0);
		bad += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
	}
	printf("stream tp %ld\n", seq);
	for (int i = 0; i < n; i++)
		printf("stream tc%d %ld\n", i, count);
	return bad ? 1 : 0;
}

static void raw_bus_handler(int sig)
{
	static const char msg[] = "host: its own SIGBUS handler ran\n";
	(void)sig;
	ssize_t w = write(2, msg, sizeof msg - 1);
	(void)w;
	_exit(3);
}

/* The kernel's sigaction (x86-64/arm64 layout), for a raw rt_sigaction. */
struct ksigaction {
	void *handler;
	unsigned long flags;
	void *restorer;
	uint64_t mask;
};

/*
 * A host that installs its SIGBUS handler with a raw rt_sigaction system
 * call (not through libc's sigaction, which libanchor interposes), then
 * marks, then either truncates the ring under itself and marks on
 * (survives: exit 0, "survived"), or faults on a file of its own (its
 * handler runs: exit 3).
 */
static int run_rawbus(const char *own)
{
	struct sigaction sa;
	struct ksigaction k;

	anchor_mark("a");
	/* Borrow libc's signal-return trampoline from an action libc set. */
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = raw_bus_handler;
	sigaction(SIGUSR2, &sa, NULL);
	if (syscall(SYS_rt_sigaction, SIGUSR2, NULL, &k, sizeof k.mask) != 0)
		return 2;
	k.handler = (void *)raw_bus_handler;
	k.mask = 0;
	if (syscall(SYS_rt_sigaction, SIGBUS, &k, NULL, sizeof k.mask) != 0)
		return 2;
	/* Go on marking for a few ms, as a host does. */
	usleep(5000);
	for (int i = 0; i < 200; i++)
		anchor_mark_value("b", i);
	if (own) {
		int fd = open(own, O_RDWR | O_CREAT | O_TRUNC, 0600);
		char *m;
		if (fd < 0 || ftruncate(fd, 8192) != 0)
			return 2;
		m = mmap(NULL, 8192, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED || ftruncate(fd, 0) != 0)
			return 2;
		m[4096] = 1;
		return 4; /* not reached */
	}
	if (truncate(anchor_ring_path(), 0) != 0)
		return 2;
	for (int i = 0; i < 100000; i++)
		anchor_mark_value("after", i);
	printf("survived\n");
	return 0;
}

struct storm_thread {
	pthread_t th;
	char name[24];
	double secs;
	long count;
};

static int64_t *g_storm_ctl; /* req, go, arrived, gone (see the usage above) */

/* A pause the test asked for: arrive, wait until it lets us go on. */
static void storm_pause(int64_t *seen)
{
	int64_t req = __atomic_load_n(&g_storm_ctl[0], __ATOMIC_ACQUIRE);
	struct timespec ms = {0, 1000000};

	if (req <= *seen)
		return;
	*seen = req;
	__atomic_fetch_add(&g_storm_ctl[2], 1, __ATOMIC_ACQ_REL);
	while (__atomic_load_n(&g_storm_ctl[1], __ATOMIC_ACQUIRE) < req)
		nanosleep(&ms, NULL);
}

static void *storm_thread_main(void *arg)
{
	struct storm_thread *st = arg;
	struct timespec t0, t;
	int64_t seen = 0;
	long i = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (;;) {
		/* The clock every 256 marks: the loop is the marks. */
		for (int k = 0; k < 256; k++)
			anchor_mark_value(st->name, i++);
		if (g_storm_ctl)
			storm_pause(&seen);
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) * 1e-9 >= st->secs)
			break;
	}
	st->count = i;
	/* Gone: later pauses do not wait for this thread. */
	if (g_storm_ctl)
		__atomic_fetch_add(&g_storm_ctl[3], 1, __ATOMIC_ACQ_REL);
	return NULL;
}

static int run_storm(double secs, int n, const char *tag, const char *ctl)
{
	static struct storm_thread th[64];

	if (n > 64)
		n = 64;
	if (ctl) {
		int fd = open(ctl, O_RDWR);
		void *m = fd < 0 ? MAP_FAILED : mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED) {
			perror(ctl);
			return 2;
		}
		g_storm_ctl = m;
	}
	for (int i = 0; i < n; i++) {
		snprintf(th[i].name, sizeof th[i].name, "%.12s.t%u", tag, (unsigned)i & 63);
		th[i].secs = secs;
		pthread_create(&th[i].th, NULL, storm_thread_main, &th[i]);
	}
	for (int i = 0; i < n; i++)
		pthread_join(th[i].th, NULL);
	for (int i = 0; i < n; i++)
		printf("stream %s %ld\n", th[i].name, th[i].count);
	return 0;
}

/* One vfork + execv (its own function: the loop's variables then live in
 * the caller, out of the shared frame's reach). */
static int vfork_exec(char **argv)
{
	int st;
	pid_t pid = vfork();

	if (pid == 0) {
		execv(argv[0], argv);
		_exit(127);
	}
	return pid > 0 && waitpid(pid, &st, 0) == pid && WIFEXITED(st) && WEXITSTATUS(st) == 0;
}

static int run_vforks(int n, char **argv)
{
	int ok = 0;

	for (int i = 0; i < n; i++)
		ok += vfork_exec(argv);
	printf("children exited 0: %d of %d\n", ok, n);
	return ok == n ? 0 : 1;
}

static int g_busy_stop;

static void *busy_thread(void *arg)
{
	long i = 0;
	(void)arg;
	while (!__atomic_load_n(&g_busy_stop, __ATOMIC_RELAXED))
		anchor_mark_value("busy", i++);
	return NULL;
}

static void *busy_child_thread(void *arg)
{
	for (long i = 0; i < 500; i++)
		anchor_mark_value((const char *)arg, i);
	return NULL;
}

static int run_busy(int n, int forks, const char *exe)
{
	pthread_t th[64], ct[2];
	int ok = 0, wrong = 0;

	if (n > 64)
		n = 64;
	for (int i = 0; i < n; i++)
		pthread_create(&th[i], NULL, busy_thread, NULL);
	for (int i = 0; i < forks; i++) {
		pid_t pid = fork();
		int st, want = i % 4 == 3 ? 0 : 3 + i % 5;
		if (pid == 0) {
			if (i % 4 == 3) {
				execl(exe, exe, "threads", "2", "500", (char *)NULL);
				_exit(127);
			}
			pthread_create(&ct[0], NULL, busy_child_thread, "c0");
			pthread_create(&ct[1], NULL, busy_child_thread, "c1");
			busy_child_thread("cm");
			pthread_join(ct[0], NULL);
			pthread_join(ct[1], NULL);
			exit(want);
		}
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != want) {
			wrong++;
			fprintf(stderr, "busy: child %d: %s %d (wanted exit %d)\n", i,
				pid > 0 && WIFSIGNALED(st) ? "killed by signal" : "exit status",
				pid > 0 && WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st), want);
		} else {
			ok++;
		}
	}
	__atomic_store_n(&g_busy_stop, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	printf("children as expected %d of %d\n", ok, forks);
	return wrong ? 1 : 0;
}

static volatile long g_dl_sigs;

static void on_dl_alarm(int sig)
{
	(void)sig;
	anchor_mark("in-handler");
	g_dl_sigs++;
}

static void *first_mark_errno(void *arg)
{
	errno = 1234;
	anchor_mark("first");
	*(int *)arg = errno;
	return NULL;
}

static int run_dlsig(double secs, const char *lib)
{
	struct itimerval it = {{0, 100}, {0, 100}};
	struct sigaction sa;
	struct timespec t0, t;
	long loops = 0;
	pthread_t th;
	int e = 0;

	pthread_create(&th, NULL, first_mark_errno, &e);
	pthread_join(th, NULL);
	printf("%s\n", e == 1234 ? "errno kept" : "errno changed");
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_dl_alarm;
	sa.sa_flags = SA_RESTART;
	sigaction(SIGALRM, &sa, NULL);
	setitimer(ITIMER_REAL, &it, NULL);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
		if (h)
			dlclose(h);
		loops++;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) * 1e-9 < secs);
	memset(&it, 0, sizeof it);
	setitimer(ITIMER_REAL, &it, NULL);
	printf("dlopen loops %ld, signal marks %ld\n", loops, g_dl_sigs);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "threads")) {
		g_count = atol(argv[3]);
		return run_threads(atoi(argv[2]));
	}
	if (argc >= 5 && !strcmp(argv[1], "forks")) {
		g_count = atol(argv[3]);
		return run_forks(atoi(argv[2]), argv[4]);
	}
	if (argc >= 5 && !strcmp(argv[1], "storm"))
		return run_storm(atof(argv[2]), atoi(argv[3]), argv[4], argc >= 6 ? argv[5] : NULL);
	if (argc >= 4 && !strcmp(argv[1], "vforks"))
		return run_vforks(atoi(argv[2]), argv + 3);
	if (argc >= 5 && !strcmp(argv[1], "busy"))
		return run_busy(atoi(argv[2]), atoi(argv[3]), argv[4]);
	if (argc >= 4 && !strcmp(argv[1], "dlsig"))
		return run_dlsig(atof(argv[2]), argv[3]);
	if (argc >= 3 && !strcmp(argv[1], "stale"))
		return run_stale(atol(argv[2]));
	if (argc >= 4 && !strcmp(argv[1], "rawfork"))
		return run_rawfork(atoi(argv[2]), atol(argv[3]));
	if (argc >= 3 && !strcmp(argv[1], "loop"))
		return run_loop(argv[2], argc >= 4 ? argv[3] : "loop", argc >= 5 ? atoll(argv[4]) : -1);
	if (argc >= 2 && !strcmp(argv[1], "rawbus"))
		return run_rawbus(argc >= 3 ? argv[2] : NULL);
	if (argc >= 3 && !strcmp(argv[1], "signals"))
		return run_signals(atol(argv[2]));
	if (argc >= 2 && !strcmp(argv[1], "stacks")) {
		/* Print the probe's address so the checker can find it on the
		 * captured stacks (ANCHOR_STACKS=1). */
		printf("%p\n", (void *)stack_probe);
		fflush(stdout);
		return stack_probe(3);
	}
	if (argc >= 2 && !strcmp(argv[1], "crash")) {
		anchor_mark("before-crash");
		raise(SIGSEGV);
		return 0;
	}
	fprintf(stderr, "usage: marker threads N COUNT | forks N COUNT EXE | loop FILE | crash\n");
	return 2;
}
