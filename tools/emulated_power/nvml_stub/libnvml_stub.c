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
 */
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

static struct gpu g_gpu[MAX_GPUS];
static unsigned g_n;
static int g_init;

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
	n = pread(g->fd, buf, sizeof buf, 0);
	if (n <= 0)
		return NVML_ERROR_UNKNOWN;
	for (ssize_t i = 0; i < n && buf[i] >= '0' && buf[i] <= '9'; i++)
		v = v * 10 + (unsigned long long)(buf[i] - '0');
	*energy_mj = v / 1000;
	return NVML_SUCCESS;
}
