/*
 * gpucheck.c - the workload of the device check (scripts/gpu-check.sh,
 * docs/gpu-check.md), linked with libanchor's C API.
 *
 * On a GPU it runs CUDA kernels through the driver API, loaded at run time
 * (dlopen libcuda.so.1, which comes with the driver; no CUDA runtime, so
 * it builds and travels from a machine without a GPU).  With --stand-in
 * the same plan runs on a stand-in device: a host thread that executes the
 * queued kernels as timed waits and publishes each one's start and
 * (ahead of time) end into the NVML stub's phase file (tools/emulated_power), so the
 * stub's power is the workload's, with the sensor behaviour the stub is
 * configured for.
 *
 * The plan (every kernel a phase, host BEGIN/END around its launch, the
 * device's own edges from events around it, DEV_BEGIN/DEV_END):
 *   1. square waves: kernels of half-period h separated by idle of about
 *      h, for h in SQUARE_HALF_MS (none a divisor of 100 or 20 ms: every
 *      window position against the sensor's grid is visited);
 *   2. kernels of 1x, 2x, 4x work at equal power (the same grid, only the
 *      loop count differs), REPS times, idle between;
 * then the NVML calls' cost and the sampler thread's CPU time.  --mark-cost
 * (run in its own ring) times anchor_mark against clock_gettime.
 * Results: key=value lines on stdout (the script keeps them).
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include "anchor.h"

#define KIND_DEV_BEGIN 11 /* anchors/ring_format.h */
#define KIND_DEV_END 12
#define KIND_DEV_CLOCK 13
#define FLAG_VALUE 1u

static const int SQUARE_HALF_MS[] = {7, 13, 31, 55, 120};
#define SQUARE_EACH_S 2.0
#define K_BASE_MS 400.0 /* the 1x kernel: 4 counter updates at 100 ms */
#define REPS 3
#define IDLE_MS 300.0
#define MAX_EDGES 8192

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(double ms)
{
	struct timespec ts = {(time_t)(ms / 1e3), (long)((ms - 1e3 * (double)(time_t)(ms / 1e3)) * 1e6)};
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* One device: kernels and edge events on one stream, resolved later. */
struct device {
	int (*spin)(double ms);      /* enqueue a kernel of about ms of work */
	int (*edge)(int idx);        /* enqueue edge event idx */
	int (*sync)(void);           /* wait for the stream */
	int (*resolve)(int idx, uint64_t *mono); /* after sync: when edge idx ran */
	void (*batch)(int on);       /* hold the queue while a phase is enqueued (NULL: none) */
	char name[128];
};

/* ---- stand-in: a host thread runs the queue ---------------------------- */

#define PHASE_HDR 64u
#define PHASE_SLOT 16u
#define PHASE_NSLOTS 8192u
#define SI_IDLE 1u
#define SI_BUSY 2u

static struct {
	pthread_mutex_t mu;
	pthread_cond_t cv;
	struct {
		int kind; /* 0 spin, 1 edge */
		double ms;
		int idx;
	} q[MAX_EDGES];
	size_t head, tail;
	int busy, hold;
	uint64_t edge_ns[MAX_EDGES];
	unsigned char *pf; /* the phase file */
	uint64_t pcount;
} si = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* The phase file's single writer (anchor_emul/phasefile.py's layout):
 * the slot, then the count, release-ordered (the stub acquires it). */
static void si_publish(uint32_t phase, uint64_t t)
{
	unsigned char *slot = si.pf + PHASE_HDR + (si.pcount % PHASE_NSLOTS) * PHASE_SLOT;
	memcpy(slot, &t, 8);
	memcpy(slot + 8, &phase, 4);
	si.pcount++;
	__atomic_store_n((uint64_t *)(void *)(si.pf + 16), si.pcount, __ATOMIC_RELEASE);
}

static void *si_main(void *arg)
{
	uint64_t last_end = 0;
	int last_kind = -1, pending = -1;
	(void)arg;
	pthread_mutex_lock(&si.mu);
	for (;;) {
		while (si.head == si.tail || si.hold)
			pthread_cond_wait(&si.cv, &si.mu);
		si.busy = 1;
		{
			int kind = si.q[si.head % MAX_EDGES].kind, idx = si.q[si.head % MAX_EDGES].idx;
			int next_kind = si.head + 1 < si.tail ? si.q[(si.head + 1) % MAX_EDGES].kind : -1;
			double ms = si.q[si.head % MAX_EDGES].ms;
			pthread_mutex_unlock(&si.mu);
			if (kind == 1) {
				/* An edge is when the device reached it: right
				 * after the kernel before it, right before the
				 * kernel after it (the stand-in knows when each
				 * item ran; a thread preempted between two items
				 * must not stretch a phase over idle time). */
				if (last_kind == 0)
					si.edge_ns[idx] = last_end;
				else if (next_kind == 0)
					pending = idx;
				else
					si.edge_ns[idx] = mono_ns();
			} else {
				/* A kernel of ms: the stand-in's power is the
				 * phase file's, its end published ahead at the
				 * planned instant (the stub applies it when due),
				 * so a kernel lasts ms however loaded the host
				 * is, as a real one does; the thread then sleeps
				 * until it is over. */
				uint64_t t0 = mono_ns(), end = t0 + (uint64_t)(ms * 1e6);
				si_publish(SI_BUSY, t0);
				si_publish(SI_IDLE, end);
				if (pending >= 0)
					si.edge_ns[pending] = t0;
				pending = -1;
				for (uint64_t now = mono_ns(); now < end; now = mono_ns())
					sleep_ms((double)(end - now) / 1e6);
				last_end = end;
			}
			last_kind = kind;
			pthread_mutex_lock(&si.mu);
		}
		si.head++;
		si.busy = 0;
		pthread_cond_broadcast(&si.cv);
	}
	return NULL;
}

static int si_push(int kind, double ms, int idx)
{
	pthread_mutex_lock(&si.mu);
	si.q[si.tail % MAX_EDGES].kind = kind;
	si.q[si.tail % MAX_EDGES].ms = ms;
	si.q[si.tail % MAX_EDGES].idx = idx;
	si.tail++;
	pthread_cond_broadcast(&si.cv);
	pthread_mutex_unlock(&si.mu);
	return 0;
}

static int si_spin(double ms)
{
	return si_push(0, ms, 0);
}

static int si_edge(int idx)
{
	return si_push(1, 0, idx);
}

static int si_sync(void)
{
	pthread_mutex_lock(&si.mu);
	while (si.head != si.tail || si.busy)
		pthread_cond_wait(&si.cv, &si.mu);
	pthread_mutex_unlock(&si.mu);
	return 0;
}

/* A GPU reaches the edge before a kernel as it starts the kernel, the
 * launch being µs behind; a host thread woken for each item would stamp
 * the edge a scheduler wake-up (ms under load) before its busy loop.  So
 * a phase's three items are released together. */
static void si_batch(int on)
{
	pthread_mutex_lock(&si.mu);
	si.hold = on;
	pthread_cond_broadcast(&si.cv);
	pthread_mutex_unlock(&si.mu);
}

static int si_resolve(int idx, uint64_t *mono)
{
	*mono = si.edge_ns[idx];
	return 0;
}

static int standin_open(struct device *d, const char *phase_file)
{
	pthread_t th;
	int fd = open(phase_file, O_RDWR | O_CLOEXEC);
	void *m;
	if (fd < 0) {
		fprintf(stderr, "gpucheck: %s: %s\n", phase_file, strerror(errno));
		return -1;
	}
	m = mmap(NULL, PHASE_HDR + PHASE_NSLOTS * PHASE_SLOT, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED || memcmp(m, "ANCHPHS1", 8)) {
		fprintf(stderr, "gpucheck: %s: not a phase file (gpucheck --make-phase-file)\n", phase_file);
		return -1;
	}
	si.pf = m;
	si.pcount = __atomic_load_n((uint64_t *)(void *)(si.pf + 16), __ATOMIC_ACQUIRE);
	si_publish(SI_IDLE, mono_ns());
	if (pthread_create(&th, NULL, si_main, NULL))
		return -1;
	d->spin = si_spin;
	d->edge = si_edge;
	d->sync = si_sync;
	d->resolve = si_resolve;
	d->batch = si_batch;
	snprintf(d->name, sizeof d->name, "stand-in (timed host waits driving the NVML stub)");
	return 0;
}

static int make_phase_file(const char *path)
{
	FILE *f = fopen(path, "wb");
	unsigned char hdr[PHASE_HDR] = "ANCHPHS1";
	uint32_t n = PHASE_NSLOTS;
	if (!f)
		return 1;
	memcpy(hdr + 8, &n, 4);
	fwrite(hdr, 1, sizeof hdr, f);
	for (unsigned i = 0; i < PHASE_NSLOTS * PHASE_SLOT; i++)
		fputc(0, f);
	return fclose(f) != 0;
}

/* ---- CUDA through the driver API, loaded at run time ------------------- */

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext, *CUmodule, *CUfunction, *CUstream, *CUevent;
typedef unsigned long long CUdeviceptr;

static struct {
	CUresult (*Init)(unsigned);
	CUresult (*DeviceGet)(CUdevice *, int);
	CUresult (*DeviceGetName)(char *, int, CUdevice);
	CUresult (*DeviceGetAttribute)(int *, int, CUdevice);
	CUresult (*DevicePrimaryCtxRetain)(CUcontext *, CUdevice);
	CUresult (*CtxSetCurrent)(CUcontext);
	CUresult (*ModuleLoad)(CUmodule *, const char *);
	CUresult (*ModuleGetFunction)(CUfunction *, CUmodule, const char *);
	CUresult (*StreamCreate)(CUstream *, unsigned);
	CUresult (*EventCreate)(CUevent *, unsigned);
	CUresult (*EventRecord)(CUevent, CUstream);
	CUresult (*EventSynchronize)(CUevent);
	CUresult (*EventElapsedTime)(float *, CUevent, CUevent);
	CUresult (*StreamSynchronize)(CUstream);
	CUresult (*MemAlloc)(CUdeviceptr *, size_t);
	CUresult (*LaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
				 CUstream, void **, void **);
	CUfunction fn;
	CUstream s, side;
	CUevent ev[MAX_EDGES], ref;
	CUdeviceptr out;
	unsigned blocks;
	double iters_per_ms;
	uint64_t ref_ns, first_ref_ns; /* host time of the latest / first reference event */
	CUevent first_ref;
	int have_first;
} cu;

static int cu_launch(unsigned long long iters)
{
	void *args[] = {&iters, &cu.out};
	return cu.LaunchKernel(cu.fn, cu.blocks, 1, 1, 256, 1, 1, 0, cu.s, args, NULL);
}

static int cu_spin(double ms)
{
	double it = ms * cu.iters_per_ms;
	return cu_launch((unsigned long long)(it > 1 ? it : 1));
}

static int cu_edge(int idx)
{
	return cu.EventRecord(cu.ev[idx], cu.s);
}

/* A reference event on the idle side stream between two host clock reads
 * (narrowest of five): its host time is their midpoint.  DEV_CLOCK says
 * the bracket, the drift against the first reference and the miss. */
static int cu_calibrate(void)
{
	uint64_t best = UINT64_MAX, mid = 0;
	char text[160];
	for (int i = 0; i < 5; i++) {
		uint64_t t0 = mono_ns(), t1;
		if (cu.EventRecord(cu.ref, cu.side) || cu.EventSynchronize(cu.ref))
			return -1;
		t1 = mono_ns();
		if (t1 - t0 < best) {
			best = t1 - t0;
			mid = t0 + (t1 - t0) / 2;
		}
	}
	cu.ref_ns = mid;
	if (!cu.have_first) {
		if (cu.EventCreate(&cu.first_ref, 0) || cu.EventRecord(cu.first_ref, cu.side) ||
		    cu.EventSynchronize(cu.first_ref))
			return -1;
		cu.first_ref_ns = mono_ns();
		cu.have_first = 1;
		snprintf(text, sizeof text, "dev=cuda:0 bracket_ns=%llu drift_ppm=0 resid_ns=0", (unsigned long long)best);
	} else {
		float ms = 0;
		double pred, resid;
		cu.EventElapsedTime(&ms, cu.first_ref, cu.ref);
		pred = (double)cu.first_ref_ns + (double)ms * 1e6;
		resid = (double)mid - pred;
		snprintf(text, sizeof text, "dev=cuda:0 bracket_ns=%llu drift_ppm=%.3f resid_ns=%.0f",
			 (unsigned long long)best, resid / ((double)mid - (double)cu.first_ref_ns) * 1e6, resid);
	}
	anchor_event(KIND_DEV_CLOCK, text, strlen(text), FLAG_VALUE, mid);
	return 0;
}

static int cu_sync(void)
{
	if (cu.StreamSynchronize(cu.s))
		return -1;
	return cu_calibrate();
}

static int cu_resolve(int idx, uint64_t *mono)
{
	float ms = 0;
	/* From the edge to the later reference: positive, as the API wants. */
	if (cu.EventElapsedTime(&ms, cu.ev[idx], cu.ref))
		return -1;
	*mono = (uint64_t)((double)cu.ref_ns - (double)ms * 1e6);
	return 0;
}

#define LOAD(f, sym)                                                                                             \
	do {                                                                                                     \
		*(void **)(&cu.f) = dlsym(h, sym);                                                                \
		if (!cu.f) {                                                                                     \
			fprintf(stderr, "gpucheck: libcuda.so.1 has no %s\n", sym);                              \
			return -1;                                                                               \
		}                                                                                                \
	} while (0)

static int cuda_open(struct device *d, const char *dir)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
	char path[4096];
	CUdevice dev;
	CUcontext ctx;
	CUmodule mod = NULL;
	int sms = 0;
	if (!h) {
		fprintf(stderr, "gpucheck: cannot load libcuda.so.1 (no NVIDIA driver?): %s\n", dlerror());
		return -1;
	}
	LOAD(Init, "cuInit");
	LOAD(DeviceGet, "cuDeviceGet");
	LOAD(DeviceGetName, "cuDeviceGetName");
	LOAD(DeviceGetAttribute, "cuDeviceGetAttribute");
	LOAD(DevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
	LOAD(CtxSetCurrent, "cuCtxSetCurrent");
	LOAD(ModuleLoad, "cuModuleLoad");
	LOAD(ModuleGetFunction, "cuModuleGetFunction");
	LOAD(StreamCreate, "cuStreamCreate");
	LOAD(EventCreate, "cuEventCreate");
	LOAD(EventRecord, "cuEventRecord");
	LOAD(EventSynchronize, "cuEventSynchronize");
	LOAD(EventElapsedTime, "cuEventElapsedTime");
	LOAD(StreamSynchronize, "cuStreamSynchronize");
	LOAD(MemAlloc, "cuMemAlloc_v2");
	LOAD(LaunchKernel, "cuLaunchKernel");
	if (cu.Init(0) || cu.DeviceGet(&dev, 0) || cu.DeviceGetName(d->name, sizeof d->name, dev) ||
	    cu.DeviceGetAttribute(&sms, 16 /* MULTIPROCESSOR_COUNT */, dev) || cu.DevicePrimaryCtxRetain(&ctx, dev) ||
	    cu.CtxSetCurrent(ctx)) {
		fprintf(stderr, "gpucheck: CUDA initialisation failed (is a GPU visible?)\n");
		return -1;
	}
	/* The fatbin (cubins for sm_80/86/89/90 from this nvcc) first; the
	 * PTX of an older ISA if the driver predates those cubins. */
	snprintf(path, sizeof path, "%s/gpucheck_kernels.fatbin", dir);
	if (cu.ModuleLoad(&mod, path)) {
		snprintf(path, sizeof path, "%s/gpucheck_kernels.ptx", dir);
		if (cu.ModuleLoad(&mod, path)) {
			fprintf(stderr, "gpucheck: cannot load the kernels from %s (fatbin nor ptx)\n", dir);
			return -1;
		}
	}
	if (cu.ModuleGetFunction(&cu.fn, mod, "spin") || cu.StreamCreate(&cu.s, 1 /* non-blocking */) ||
	    cu.StreamCreate(&cu.side, 1) || cu.EventCreate(&cu.ref, 0) || cu.MemAlloc(&cu.out, 64))
		return -1;
	for (int i = 0; i < MAX_EDGES; i++)
		if (cu.EventCreate(&cu.ev[i], 0))
			return -1;
	cu.blocks = (unsigned)(sms > 0 ? sms : 1) * 8;
	/* Calibrate: the time of a kernel of known length, twice (the first
	 * also wakes the GPU from idle clocks). */
	for (int k = 0; k < 2; k++) {
		float ms = 0;
		unsigned long long it = 2000000;
		if (cu_edge(0) || cu_launch(it) || cu_edge(1) || cu.StreamSynchronize(cu.s) ||
		    cu.EventElapsedTime(&ms, cu.ev[0], cu.ev[1]))
			return -1;
		cu.iters_per_ms = ms > 0 ? (double)it / ms : 1e5;
	}
	d->spin = cu_spin;
	d->edge = cu_edge;
	d->sync = cu_sync;
	d->resolve = cu_resolve;
	return cu_calibrate();
}

/* ---- the plan ---------------------------------------------------------- */

static struct {
	int idx;
	int kind;
	char name[32];
} g_edges[MAX_EDGES];
static int g_nedges;

/* One kernel as a phase: host BEGIN/END around the launch, device edges
 * around the kernel. */
static int kernel_phase(struct device *d, const char *name, double ms)
{
	int b = g_nedges, e = g_nedges + 1;
	if (g_nedges + 2 > MAX_EDGES)
		return -1;
	g_edges[b].idx = b;
	g_edges[b].kind = KIND_DEV_BEGIN;
	g_edges[e].idx = e;
	g_edges[e].kind = KIND_DEV_END;
	snprintf(g_edges[b].name, sizeof g_edges[b].name, "%s", name);
	snprintf(g_edges[e].name, sizeof g_edges[e].name, "%s", name);
	g_nedges += 2;
	anchor_begin(name);
	if (d->batch)
		d->batch(1);
	if (d->edge(b) || d->spin(ms) || d->edge(e))
		return -1;
	if (d->batch)
		d->batch(0);
	anchor_end(name);
	return 0;
}

/* After a sync: every edge so far into the ring, in order. */
static int flush_edges(struct device *d, int *done)
{
	for (; *done < g_nedges; (*done)++) {
		uint64_t t;
		if (d->resolve(g_edges[*done].idx, &t))
			return -1;
		anchor_event(g_edges[*done].kind, g_edges[*done].name, strlen(g_edges[*done].name), FLAG_VALUE, t);
	}
	/* Event slots are reused from the start once resolved. */
	if (g_nedges > MAX_EDGES - 64)
		g_nedges = *done = 0;
	return 0;
}

/* CPU seconds of this process's thread named name (utime + stime). */
static double thread_cpu_s(const char *want)
{
	DIR *dir = opendir("/proc/self/task");
	struct dirent *e;
	double s = -1;
	long hz = sysconf(_SC_CLK_TCK);
	while (dir && (e = readdir(dir))) {
		char path[300], buf[1024];
		FILE *f;
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%s/comm", e->d_name);
		if (!(f = fopen(path, "r")))
			continue;
		buf[0] = 0;
		if (!fgets(buf, sizeof buf, f))
			buf[0] = 0;
		fclose(f);
		buf[strcspn(buf, "\n")] = 0;
		if (strcmp(buf, want))
			continue;
		snprintf(path, sizeof path, "/proc/self/task/%s/stat", e->d_name);
		if ((f = fopen(path, "r"))) {
			size_t n = fread(buf, 1, sizeof buf - 1, f);
			char *p;
			unsigned long ut = 0, st = 0;
			buf[n] = 0;
			p = strrchr(buf, ')');
			/* fields after ") ": state(3) ... utime(14) stime(15) */
			if (p && sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &st) == 2)
				s = (double)(ut + st) / (double)hz;
			fclose(f);
		}
	}
	if (dir)
		closedir(dir);
	return s;
}

/* Mean µs of n calls of NVML's power and energy reads on GPU 0. */
static void nvml_cost(void)
{
	const char *lib = getenv("ANCHOR_NVML_LIB");
	void *h = dlopen(lib && *lib ? lib : "libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
	int (*init)(void), (*handle)(unsigned, void **), (*power)(void *, unsigned *),
		(*energy)(void *, unsigned long long *);
	const char *spec;
	void *dev = NULL;
	if (!h) {
		printf("nvml=absent\n");
		return;
	}
	*(void **)&init = dlsym(h, "nvmlInit_v2");
	*(void **)&handle = dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
	*(void **)&power = dlsym(h, "nvmlDeviceGetPowerUsage");
	*(void **)&energy = dlsym(h, "nvmlDeviceGetTotalEnergyConsumption");
	spec = dlsym(h, "anchor_emulated_sensor_spec");
	if (spec && *spec)
		printf("stub_spec=%s\n", spec);
	if (!init || !handle || init() || handle(0, &dev))
		return;
	for (int which = 0; which < 2; which++) {
		uint64_t t0 = mono_ns();
		int n = 200, ok = 1;
		for (int i = 0; i < n && ok; i++) {
			unsigned mw;
			unsigned long long mj;
			ok = which ? (energy && !energy(dev, &mj)) : (power && !power(dev, &mw));
		}
		if (ok)
			printf("%s=%.3f\n", which ? "nvml_energy_call_us" : "nvml_power_call_us",
			       (double)(mono_ns() - t0) / n / 1e3);
	}
}

static int mark_cost(void)
{
	enum { N = 200000 };
	uint64_t t0, t1, t2;
	struct timespec ts;
	volatile long sink = 0;
	if (!anchor_enabled()) {
		fprintf(stderr, "gpucheck: no ring attached (libanchor)\n");
		return 1;
	}
	for (int rep = 0; rep < 2; rep++) { /* the first warms up */
		t0 = mono_ns();
		for (int i = 0; i < N; i++) {
			clock_gettime(CLOCK_MONOTONIC, &ts);
			sink += ts.tv_nsec;
		}
		t1 = mono_ns();
		for (int i = 0; i < N; i++)
			anchor_mark("gpucheck.cost");
		t2 = mono_ns();
		if (rep)
			printf("clock_gettime_ns=%.2f\nanchor_mark_ns=%.2f\n", (double)(t1 - t0) / N, (double)(t2 - t1) / N);
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct device d;
	const char *phase_file = NULL, *dir = ".";
	int standin = 0, done = 0;
	double cpu0, cpu1;
	uint64_t t_start, t_end;

	memset(&d, 0, sizeof d);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--stand-in") && i + 1 < argc) {
			standin = 1;
			phase_file = argv[++i];
		} else if (!strcmp(argv[i], "--kernels") && i + 1 < argc) {
			dir = argv[++i];
		} else if (!strcmp(argv[i], "--make-phase-file") && i + 1 < argc) {
			return make_phase_file(argv[i + 1]);
		} else if (!strcmp(argv[i], "--mark-cost")) {
			return mark_cost();
		} else {
			fprintf(stderr, "usage: gpucheck [--stand-in PHASEFILE | --kernels DIR] | --mark-cost | "
					"--make-phase-file PATH\n");
			return 2;
		}
	}
	if (!anchor_enabled()) {
		fprintf(stderr, "gpucheck: no ring attached (libanchor): nothing would be recorded\n");
		return 1;
	}
	if (standin ? standin_open(&d, phase_file) : cuda_open(&d, dir))
		return 1;
	printf("device=%s\nbackend=%s\n", d.name, standin ? "stand-in" : "cuda");
	if (!standin)
		printf("iters_per_ms=%.1f\nblocks=%u\n", cu.iters_per_ms, cu.blocks);
	cpu0 = thread_cpu_s("anchor-sensors");
	t_start = mono_ns();
	sleep_ms(500); /* idle before: the sensor's baseline */
	for (size_t k = 0; k < sizeof SQUARE_HALF_MS / sizeof SQUARE_HALF_MS[0]; k++) {
		char name[32];
		uint64_t end = mono_ns() + (uint64_t)(SQUARE_EACH_S * 1e9);
		double h = SQUARE_HALF_MS[k];
		snprintf(name, sizeof name, "sq%dms", SQUARE_HALF_MS[k]);
		while (mono_ns() < end) {
			if (kernel_phase(&d, name, h) || d.sync() || flush_edges(&d, &done))
				goto fail;
			sleep_ms(h);
		}
	}
	sleep_ms(IDLE_MS);
	for (int r = 0; r < REPS; r++)
		for (int m = 1; m <= 4; m *= 2) {
			char name[8];
			snprintf(name, sizeof name, "k%dx", m);
			if (kernel_phase(&d, name, K_BASE_MS * m) || d.sync() || flush_edges(&d, &done))
				goto fail;
			sleep_ms(IDLE_MS);
		}
	t_end = mono_ns();
	cpu1 = thread_cpu_s("anchor-sensors");
	printf("square_half_ms=");
	for (size_t k = 0; k < sizeof SQUARE_HALF_MS / sizeof SQUARE_HALF_MS[0]; k++)
		printf("%s%d", k ? "," : "", SQUARE_HALF_MS[k]);
	printf("\nk_base_ms=%.0f\nreps=%d\nrun_s=%.3f\n", K_BASE_MS, REPS, (double)(t_end - t_start) / 1e9);
	if (cpu0 >= 0 && cpu1 >= 0)
		printf("sampler_cpu_s=%.3f\nsampler_cpu_pct=%.3f\n", cpu1 - cpu0,
		       100 * (cpu1 - cpu0) / ((double)(t_end - t_start) / 1e9));
	else
		printf("sampler_cpu_s=absent\n");
	nvml_cost();
	return 0;
fail:
	fprintf(stderr, "gpucheck: a device call failed\n");
	return 1;
}
