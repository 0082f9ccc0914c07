/*
 * libnvml_stub.c - a stand-in for libnvidia-ml.so with only the calls
 * libanchor's sampler makes (preload/sensors.c), for tests on machines
 * without a GPU.  NOT NVIDIA's library: "emulated sensor, not a measurement".
 *
 *   cc -shared -fPIC -o libnvml_stub.so libnvml_stub.c
 *   ANCHOR_NVML_LIB=./libnvml_stub.so ANCHOR_EMUL_NVML_ROOT=DIR ...
 *
 * GPU i is DIR/nvml/gpu<i>/ as anchor_emul's updater keeps it (updater
 * --init --gpu): energy_uj is its exact cumulative energy in µJ, which
 * nvmlDeviceGetTotalEnergyConsumption answers in mJ as NVML does (Volta
 * and later).  The same files feed the Python stub (pynvml.py) that perun
 * reads, so both see one emulated GPU.
 *
 * Exact mode (ANCHOR_EMUL_PHASE_FILE=phase.mmap ANCHOR_EMUL_GPU_W=w0,w1,..):
 * GPU 0's counter is computed at the moment of each read as the integral
 * of the phase model's power (watts per phase id, id 0 = off) over the
 * transitions the workload published in its phase file
 * (anchor_emul/phasefile.py), the same integral the updater's truth.json
 * holds.  A transition may be published ahead of its time (stamped in the
 * future): it takes effect when the clock reaches it.  A counter the updater advances every tick lags the phase edges
 * by up to a tick (DESIGN.md, "Ground truth"); this one does not, so a test
 * measures the attribution, not the emulator.
 *
 * Sensor mode (exact mode plus ANCHOR_EMUL_NVML_SENSOR=spec): GPU 0 also
 * answers nvmlDeviceGetPowerUsage, and both of its readings behave like
 * the published sensors (arXiv 2312.02741, SC24) instead of being exact:
 *   period_ms=100   the power reading changes only every period (updates
 *                   on a grid of random phase against the host's clock);
 *   window_ms=25    each update publishes the mean power over only the
 *                   last window_ms (A100/H100: 75 % of the time unseen);
 *   delay_ms=R      how long before the update that window ends: R (the
 *                   default) draws it from [0, period - window], the
 *                   "random window phase" of a board; a number fixes it;
 *   gain=1          the board's gain error, on power and counter alike
 *                   (R: drawn from [0.95, 1.05], the published ±5 %);
 *   avg_ms=1000     nvmlDeviceGetPowerUsage answers the mean over the last
 *                   avg_ms at each update (Ampere and newer: a 1 s
 *                   average, NVML's docs); the period/window/delay above
 *                   are the instant power's, nvmlDeviceGetFieldValues
 *                   field 186 (NVML_FI_DEV_POWER_INSTANT); 0: both are
 *                   the instant power;
 *   counter_ms=100  the energy counter advances only every counter_ms
 *                   (then exact up to that instant, times the gain);
 *   seed=1          for the random draws (rand_r; the same seed, the same board).
 * An empty spec is the H100 figures above.  The spec's fields are echoed
 * in the symbol anchor_emulated_sensor_spec after nvmlInit, so a test can
 * see what the stand-in was. ANCHOR_EMUL_NVML_ROOT is optional then (one GPU).
 */
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#define MAX_GPUS 8
#define NVML_SUCCESS 0
#define NVML_ERROR_UNINITIALIZED 1
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_NOT_FOUND 6
#define NVML_ERROR_UNKNOWN 999

struct gpu {
	int fd;
};

/* libanchor's sampler looks for this symbol and marks its records
 * "emulated sensor". */
const char anchor_emulated_sensor[] = "emulated sensor, not a measurement";

static struct gpu g_gpu[MAX_GPUS];
static unsigned g_n;
static int g_init;

/* Exact mode (see the opening comment). */
#define PHASE_HDR 64u
#define PHASE_SLOT 16u
#define PHASE_NSLOTS 8192u
#define MAX_PHASES 64
static const unsigned char *g_pf;  /* the mapped phase file */
static double g_w[MAX_PHASES];
static uint64_t g_seen, g_t_last_ns;
static unsigned g_phase;
static double g_acc_j;
/* The stub answers from any thread (libanchor's sampler and the workload's
 * own cost measurement): one lock around the phase model's state. */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

/* Sensor mode (see the opening comment). */
static struct {
	int on;
	double period_s, window_s, delay_s, gain, counter_s, avg_s;
	uint64_t grid0_ns, cgrid0_ns; /* update grids' origins (random phase) */
} g_sen;
char anchor_emulated_sensor_spec[256];

/* Transitions seen, for the energy at any past instant: (time, energy at
 * that time, phase from then on).  A window looks back at most a second or
 * so; 16384 transitions is more than any pattern puts in that. */
#define HIST 16384u
static struct {
	uint64_t t_ns;
	double e_j;
	unsigned phase;
} g_hist[HIST];
static uint64_t g_nhist;

static void exact_setup(void)
{
	const char *pf = getenv("ANCHOR_EMUL_PHASE_FILE"), *w = getenv("ANCHOR_EMUL_GPU_W");
	size_t len = PHASE_HDR + PHASE_NSLOTS * PHASE_SLOT;
	void *m;
	int fd, i = 0;
	if (!pf || !w)
		return;
	fd = open(pf, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return;
	m = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (m == MAP_FAILED || memcmp(m, "ANCHPHS1", 8))
		return;
	while (*w && i < MAX_PHASES) {
		char *end;
		double v = strtod(w, &end);
		if (end == w)
			break;
		g_w[i++] = v;
		w = *end == ',' ? end + 1 : end;
	}
	g_pf = m;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Energy (J) up to now: transitions published so far, then the current
 * phase's power until now.  Reading the clock after the count: every
 * transition counted was stamped before now (the publisher stamps first). */
static double exact_energy_j(void)
{
	uint64_t count = __atomic_load_n((const uint64_t *)(const void *)(g_pf + 16), __ATOMIC_ACQUIRE);
	uint64_t now = mono_ns();
	for (; g_seen < count; g_seen++) {
		const unsigned char *slot = g_pf + PHASE_HDR + (g_seen % PHASE_NSLOTS) * PHASE_SLOT;
		uint64_t t;
		uint32_t ph;
		memcpy(&t, slot, 8);
		memcpy(&ph, slot + 8, 4);
		/* A transition stamped in the future (a stand-in device queue
		 * publishes when its kernel will end) waits until it is due. */
		if (t > now)
			break;
		if (g_t_last_ns && t > g_t_last_ns)
			g_acc_j += g_w[g_phase < MAX_PHASES ? g_phase : 0] * (double)(t - g_t_last_ns) / 1e9;
		if (t > g_t_last_ns)
			g_t_last_ns = t;
		g_phase = ph;
		g_hist[g_nhist % HIST].t_ns = g_t_last_ns;
		g_hist[g_nhist % HIST].e_j = g_acc_j;
		g_hist[g_nhist % HIST].phase = ph;
		g_nhist++;
	}
	if (!g_t_last_ns)
		return 0;
	return g_acc_j + (now > g_t_last_ns ? g_w[g_phase < MAX_PHASES ? g_phase : 0] * (double)(now - g_t_last_ns) / 1e9 : 0);
}

/* True energy (J) at a past instant x (after exact_energy_j brought the
 * history up to now): the last transition at or before x, then its
 * phase's power; 0 before the first transition (the GPU was off). */
static double energy_at_j(uint64_t x)
{
	uint64_t lo = g_nhist > HIST ? g_nhist - HIST : 0, hi = g_nhist;
	if (!g_nhist || x < g_hist[lo % HIST].t_ns)
		return 0;
	while (hi - lo > 1) {
		uint64_t mid = lo + (hi - lo) / 2;
		if (g_hist[mid % HIST].t_ns <= x)
			lo = mid;
		else
			hi = mid;
	}
	return g_hist[lo % HIST].e_j +
	       g_w[g_hist[lo % HIST].phase < MAX_PHASES ? g_hist[lo % HIST].phase : 0] *
		       (double)(x - g_hist[lo % HIST].t_ns) / 1e9;
}

/* The latest point of a grid (origin g0, step) at or before now. */
static uint64_t grid_last(uint64_t g0, double step_s, uint64_t now)
{
	uint64_t step = (uint64_t)(step_s * 1e9);
	if (now < g0 || !step)
		return g0;
	return g0 + (now - g0) / step * step;
}

static double spec_num(const char *spec, const char *key, double dflt, unsigned *seed, double lo, double hi)
{
	const char *p = spec ? strstr(spec, key) : NULL;
	char *end;
	double v;
	if (!p)
		return dflt;
	p += strlen(key);
	if (*p == 'R' && seed)
		return lo + (hi - lo) * (double)rand_r(seed) / (double)RAND_MAX;
	v = strtod(p, &end);
	return end == p ? dflt : v;
}

static void sensor_setup(uint64_t now)
{
	const char *spec = getenv("ANCHOR_EMUL_NVML_SENSOR");
	unsigned seed;
	if (!spec || !g_pf)
		return;
	seed = (unsigned)spec_num(spec, "seed=", 1, NULL, 0, 0);
	g_sen.period_s = spec_num(spec, "period_ms=", 100, &seed, 0, 0) / 1e3;
	g_sen.window_s = spec_num(spec, "window_ms=", 25, &seed, 0, 0) / 1e3;
	if (!(g_sen.period_s > 0) || g_sen.window_s < 0 || g_sen.window_s > g_sen.period_s)
		return; /* nonsense: stay in exact mode rather than invent */
	g_sen.delay_s = strstr(spec, "delay_ms=") && !strstr(spec, "delay_ms=R")
				? spec_num(spec, "delay_ms=", 0, &seed, 0, 0) / 1e3
				: spec_num("delay_ms=R", "delay_ms=", 0, &seed, 0,
					   (g_sen.period_s - g_sen.window_s) * 1e3) / 1e3;
	g_sen.gain = strstr(spec, "gain=R") ? spec_num(spec, "gain=", 1, &seed, 0.95, 1.05)
					    : spec_num(spec, "gain=", 1, &seed, 0, 0);
	g_sen.counter_s = spec_num(spec, "counter_ms=", 100, &seed, 0, 0) / 1e3;
	g_sen.avg_s = spec_num(spec, "avg_ms=", 1000, &seed, 0, 0) / 1e3;
	/* The grids' phase is drawn on the absolute clock, not from the
	 * moment of init: every process that loads the stub with the same
	 * seed (the workload's sampler, perun's through pynvml.py) reads one
	 * board. */
	(void)now;
	g_sen.grid0_ns = (uint64_t)(g_sen.period_s * 1e9 * (double)rand_r(&seed) / (double)RAND_MAX);
	g_sen.cgrid0_ns = g_sen.counter_s > 0 ? (uint64_t)(g_sen.counter_s * 1e9 * (double)rand_r(&seed) / (double)RAND_MAX)
					      : 0;
	snprintf(anchor_emulated_sensor_spec, sizeof anchor_emulated_sensor_spec,
		 "period_ms=%.3f window_ms=%.3f delay_ms=%.3f gain=%.5f counter_ms=%.3f avg_ms=%.3f", g_sen.period_s * 1e3,
		 g_sen.window_s * 1e3, g_sen.delay_s * 1e3, g_sen.gain, g_sen.counter_s * 1e3, g_sen.avg_s * 1e3);
	g_sen.on = 1;
}

/* Sensor mode's power reading (W): the mean over the window of the last
 * update, times the gain. */
static double sensor_power_w(void)
{
	uint64_t now, u, b, a;
	exact_energy_j();
	now = mono_ns();
	u = grid_last(g_sen.grid0_ns, g_sen.period_s, now);
	b = u - (uint64_t)(g_sen.delay_s * 1e9);
	if (!(g_sen.window_s > 0)) {
		/* A point reading: the power of the phase in force at b. */
		double e1 = energy_at_j(b + 1000000), e0 = energy_at_j(b);
		return g_sen.gain * (e1 - e0) / 1e-3;
	}
	a = b - (uint64_t)(g_sen.window_s * 1e9);
	return g_sen.gain * (energy_at_j(b) - energy_at_j(a)) / ((double)(b - a) / 1e9);
}

/* Sensor mode's "average" reading (W): the mean over the avg_s before
 * the last update, times the gain. */
static double sensor_avg_w(void)
{
	uint64_t now, u;
	exact_energy_j();
	now = mono_ns();
	u = grid_last(g_sen.grid0_ns, g_sen.period_s, now);
	return g_sen.gain * (energy_at_j(u) - energy_at_j(u - (uint64_t)(g_sen.avg_s * 1e9))) / g_sen.avg_s;
}

/* Sensor mode's counter (J): exact at its last update, times the gain. */
static double sensor_energy_j(void)
{
	uint64_t now;
	double e = exact_energy_j();
	if (!(g_sen.counter_s > 0))
		return g_sen.gain * e;
	now = mono_ns();
	return g_sen.gain * energy_at_j(grid_last(g_sen.cgrid0_ns, g_sen.counter_s, now));
}

int nvmlInit_v2(void)
{
	const char *root = getenv("ANCHOR_EMUL_NVML_ROOT");
	char path[4096];
	if (g_init)
		return NVML_SUCCESS; /* NVML counts inits: a second caller (the
				      * workload timing the calls) must not reset the board */
	g_n = 0;
	if (!root) {
		/* Sensor mode needs no updater tree: one GPU, the phase model. */
		exact_setup();
		sensor_setup(mono_ns());
		if (!g_sen.on)
			return NVML_ERROR_UNKNOWN;
		g_gpu[0].fd = -1;
		g_n = 1;
		g_init = 1;
		return NVML_SUCCESS;
	}
	for (unsigned i = 0; root && i < MAX_GPUS; i++) {
		int fd;
		snprintf(path, sizeof path, "%s/nvml/gpu%u/energy_uj", root, i);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			break;
		g_gpu[g_n++].fd = fd;
	}
	exact_setup();
	sensor_setup(mono_ns());
	g_init = 1;
	return NVML_SUCCESS;
}

int nvmlShutdown(void)
{
	for (unsigned i = 0; i < g_n; i++)
		if (g_gpu[i].fd >= 0)
			close(g_gpu[i].fd);
	g_n = 0;
	g_init = 0;
	return NVML_SUCCESS;
}

int nvmlDeviceGetCount_v2(unsigned *count)
{
	if (!g_init)
		return NVML_ERROR_UNINITIALIZED;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	*count = g_n;
	return NVML_SUCCESS;
}

int nvmlDeviceGetHandleByIndex_v2(unsigned index, void **device)
{
	if (!g_init)
		return NVML_ERROR_UNINITIALIZED;
	if (index >= g_n || !device)
		return NVML_ERROR_INVALID_ARGUMENT;
	*device = &g_gpu[index];
	return NVML_SUCCESS;
}

int nvmlDeviceGetTotalEnergyConsumption(void *device, unsigned long long *energy_mj)
{
	struct gpu *g = device;
	char buf[32];
	unsigned long long v = 0;
	ssize_t n;
	if (!g_init)
		return NVML_ERROR_UNINITIALIZED;
	if (!g || !energy_mj)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (g_pf && g == &g_gpu[0]) {
		pthread_mutex_lock(&g_lock);
		*energy_mj = (unsigned long long)((g_sen.on ? sensor_energy_j() : exact_energy_j()) * 1e3);
		pthread_mutex_unlock(&g_lock);
		return NVML_SUCCESS;
	}
	n = pread(g->fd, buf, sizeof buf, 0);
	if (n <= 0)
		return NVML_ERROR_UNKNOWN;
	for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; i++)
		v = v * 10 + (unsigned long long)(buf[i] - '0');
	*energy_mj = v / 1000;
	return NVML_SUCCESS;
}

/* nvmlDeviceGetPowerUsage (mW): sensor mode's GPU 0 only; every other GPU
 * has no power reading here (NVML_ERROR_NOT_SUPPORTED, as old boards answer). */
int nvmlDeviceGetPowerUsage(void *device, unsigned *power_mw)
{
	struct gpu *g = device;
	double w;
	if (!g_init)
		return NVML_ERROR_UNINITIALIZED;
	if (!g || !power_mw)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!g_sen.on || g != &g_gpu[0])
		return NVML_ERROR_NOT_SUPPORTED;
	pthread_mutex_lock(&g_lock);
	w = g_sen.avg_s > 0 ? sensor_avg_w() : sensor_power_w();
	pthread_mutex_unlock(&g_lock);
	*power_mw = w > 0 ? (unsigned)lround(w * 1e3) : 0;
	return NVML_SUCCESS;
}

/* nvmlFieldValue_t, as nvml.h lays it out. */
struct field_value {
	unsigned field_id, scope_id;
	long long timestamp, latency_us;
	int value_type, nvml_return;
	union {
		double d;
		unsigned ui;
		unsigned long long ull;
	} value;
};

/* nvmlDeviceGetFieldValues: field 186 (NVML_FI_DEV_POWER_INSTANT, mW,
 * unsigned int) on sensor mode's GPU 0; every other field NOT_SUPPORTED. */
int nvmlDeviceGetFieldValues(void *device, int count, struct field_value *v)
{
	if (!g_init)
		return NVML_ERROR_UNINITIALIZED;
	if (!device || count < 0 || (count && !v))
		return NVML_ERROR_INVALID_ARGUMENT;
	for (int i = 0; i < count; i++) {
		double w;
		v[i].nvml_return = NVML_ERROR_NOT_SUPPORTED;
		if (v[i].field_id != 186 || !g_sen.on || device != &g_gpu[0])
			continue;
		pthread_mutex_lock(&g_lock);
		w = sensor_power_w();
		pthread_mutex_unlock(&g_lock);
		v[i].value_type = 1; /* NVML_VALUE_TYPE_UNSIGNED_INT */
		v[i].value.ui = w > 0 ? (unsigned)lround(w * 1e3) : 0;
		v[i].timestamp = (long long)(mono_ns() / 1000);
		v[i].nvml_return = NVML_SUCCESS;
	}
	return NVML_SUCCESS;
}
