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
 * holds.  A counter the updater advances every tick lags the phase edges
 * by up to a tick (DESIGN.md, "Ground truth"); this one does not, so a test
 * measures the attribution, not the emulator.
 */
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
		if (g_t_last_ns && t > g_t_last_ns)
			g_acc_j += g_w[g_phase < MAX_PHASES ? g_phase : 0] * (double)(t - g_t_last_ns) / 1e9;
		if (t > g_t_last_ns)
			g_t_last_ns = t;
		g_phase = ph;
	}
	if (!g_t_last_ns)
		return 0;
	return g_acc_j + (now > g_t_last_ns ? g_w[g_phase < MAX_PHASES ? g_phase : 0] * (double)(now - g_t_last_ns) / 1e9 : 0);
}

int nvmlInit_v2(void)
{
	const char *root = getenv("ANCHOR_EMUL_NVML_ROOT");
	char path[4096];
	if (!root)
		return NVML_ERROR_UNKNOWN;
	g_n = 0;
	for (unsigned i = 0; i < MAX_GPUS; i++) {
		int fd;
		snprintf(path, sizeof path, "%s/nvml/gpu%u/energy_uj", root, i);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			break;
		g_gpu[g_n++].fd = fd;
	}
	exact_setup();
	g_init = 1;
	return NVML_SUCCESS;
}

int nvmlShutdown(void)
{
	for (unsigned i = 0; i < g_n; i++)
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
		*energy_mj = (unsigned long long)(exact_energy_j() * 1e3);
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
