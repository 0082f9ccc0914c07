/*
 * sensors.c - ANCHOR_SENSORS=rapl,nvml: energy counters at ms resolution.
 *
 * One sampler thread per run reads every RAPL energy_uj file (powercap,
 * root $ANCHOR_POWERCAP_ROOT, default /sys/class/powercap) and NVML's total
 * energy counter (nvmlDeviceGetTotalEnergyConsumption, mJ, libnvidia-ml
 * loaded with dlopen; $ANCHOR_NVML_LIB overrides the library) every
 * 1/$ANCHOR_SENSOR_HZ s (default 1000) and writes one SENSOR record per
 * tick into the ring, stamped with the midpoint of its reads on the ring's
 * clock.  What each counter is (device group, name, joules per count, wrap
 * point) goes in a SENSOR_DESC record, repeated about once a second so a
 * flight-recorder ring that overwrote the first still has one.  Raw values
 * are stored; the reader undoes wrap-around (ring_format.h).
 *
 * Each GPU's power reading (nvmlDeviceGetPowerUsage, mW) and its instant
 * power (field NVML_FI_DEV_POWER_INSTANT, name gpu<i>.instant) are sampled
 * beside its counter as gauges (group gpu_power): not energy, but what shows
 * how the board's power sensor updates and averages, which anchorpost
 * identifies from the run (attrib/sensor_ident.h) to model the readings
 * perun stores.  One more NVML call per GPU and tick (bench/sensor_floor.c).
 *
 * Which process samples: counters are machine-wide, so one sampler per run
 * is enough and more would only cost.  A thread does not survive fork, so
 * forked children (DataLoader workers, perun's sampler) never sample.  An
 * exec'd child inherits the environment: the sampling process exports
 * ANCHOR_SENSORS_OWNER="<pid> <ring path>" and a process that finds it
 * samples only if it is that pid (the sampler exec'd itself, its thread is
 * gone) or writes to another ring (a new run, e.g. one ring per rank).
 *
 * Host safety: setup (directory walk, dlopen) runs on the sampler thread,
 * not in the constructor; the thread blocks every signal; the tick path is
 * pread + the lock-free ring writer, no allocation, no stdio.  Any failure
 * turns the sampler off with one stderr line; the host never notices.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "ring_env.h"
#include "ring_writer.h"

#define SENSORS_MAX 16u           /* counters sampled (<= ANCHOR_SENSOR_MAX) */
#define DESC_PERIOD_NS 1000000000ull

_Static_assert(SENSORS_MAX <= ANCHOR_SENSOR_MAX, "counters fit one SENSOR record");

struct counter {
	int fd;          /* RAPL: energy_uj, kept open (-1 for NVML) */
	void *nvml_dev;  /* NVML: device handle */
	int power;       /* NVML: 1 the power reading (mW), 2 the instant power field:
			  * gauges, not the counter */
	uint64_t last;   /* last value read (kept on a failed read) */
};

/* NVML's C API, the few calls used (nvml.h; return 0 = NVML_SUCCESS). */
typedef int (*nvml_init_fn)(void);
typedef int (*nvml_count_fn)(unsigned *);
typedef int (*nvml_handle_fn)(unsigned, void **);
typedef int (*nvml_energy_fn)(void *, unsigned long long *);
typedef int (*nvml_power_fn)(void *, unsigned *);
/* nvmlFieldValue_t (nvml.h): the instant power is field 186,
 * NVML_FI_DEV_POWER_INSTANT; valueType says which union member holds it. */
struct nvml_field {
	unsigned field_id, scope_id;
	long long timestamp, latency_us;
	int value_type, nvml_return;
	union {
		double d;
		unsigned ui;
		unsigned long ul;
		unsigned long long ull;
		long long sll;
		int si;
	} value;
};
typedef int (*nvml_fields_fn)(void *, int, struct nvml_field *);
#define NVML_FI_DEV_POWER_INSTANT 186

static struct counter g_ctr[SENSORS_MAX];
static unsigned g_nctr;
static char g_desc[ANCHOR_NAME_INLINE + ANCHOR_TEXT_MAX_CONT * ANCHOR_CONT_BYTES];
static size_t g_desc_len;
static nvml_energy_fn g_nvml_energy;
static nvml_power_fn g_nvml_power;
static nvml_fields_fn g_nvml_fields;

/* The instant power (mW) through nvmlDeviceGetFieldValues; -1 if none. */
static int read_instant(void *dev, uint64_t *mw)
{
	struct nvml_field f;
	memset(&f, 0, sizeof f);
	f.field_id = NVML_FI_DEV_POWER_INSTANT;
	if (!g_nvml_fields || g_nvml_fields(dev, 1, &f) != 0 || f.nvml_return != 0)
		return -1;
	switch (f.value_type) {
	case 0: *mw = f.value.d > 0 ? (uint64_t)f.value.d : 0; return 0;
	case 1: *mw = f.value.ui; return 0;
	case 2: *mw = f.value.ul; return 0;
	case 3: *mw = f.value.ull; return 0;
	case 4: *mw = f.value.sll > 0 ? (uint64_t)f.value.sll : 0; return 0;
	case 5: *mw = f.value.si > 0 ? (uint64_t)f.value.si : 0; return 0;
	default: return -1;
	}
}
static uint64_t g_period_ns;
/* Copied in the constructor: the host may setenv() (which can move
 * environ) while the sampler thread sets up, so the thread never calls
 * getenv. */
/* What could not be sampled, said in one stderr line once setup is done. */
static char g_why[900];

static void why_put(const char *s)
{
	size_t n = strlen(g_why), l = strlen(s);
	if (l > sizeof g_why - 1 - n)
		l = sizeof g_why - 1 - n; /* truncated, still one line */
	memcpy(g_why + n, s, l);
	g_why[n + l] = '\0';
}

static void why_add(const char *a, const char *b, const char *c)
{
	if (g_why[0])
		why_put("; ");
	why_put(a);
	why_put(b);
	why_put(c);
}

static int g_emulated;
/* Exit handshake (anchor_sensors_stop): Dekker-style with seq_cst, the
 * sampler raises g_in_tick then checks g_stop, the stopper raises g_stop
 * then waits while g_in_tick, so no read is in flight once it returns. */
static int g_stop, g_in_tick, g_running;
static uint32_t g_sampler_pid; /* anchor_emul's tree or NVML stub: say so in the desc */
static char g_want[64], g_powercap_root[2048], g_nvml_lib[2048];

static uint64_t now_ns(void)
{
	return ring_writer_now_ns();
}

/* Decimal at the start of buf (sysfs: digits then '\n', the emulator
 * zero-pads); -EINVAL if none. */
static int parse_u64(const char *buf, ssize_t n, uint64_t *out)
{
	uint64_t v = 0;
	ssize_t i = 0;
	while (i < n && buf[i] == ' ')
		i++;
	if (i >= n || buf[i] < '0' || buf[i] > '9')
		return -EINVAL;
	for (; i < n && buf[i] >= '0' && buf[i] <= '9'; i++)
		v = v * 10 + (uint64_t)(buf[i] - '0');
	*out = v;
	return 0;
}

static int read_fd_u64(int fd, uint64_t *out)
{
	char buf[32];
	ssize_t n = pread(fd, buf, sizeof buf, 0);
	if (n <= 0)
		return -EIO;
	return parse_u64(buf, n, out);
}

static int read_file(const char *path, char *buf, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;
	if (fd < 0)
		return -errno;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		return -EIO;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	return 0;
}

static void desc_add(const char *group, const char *name, const char *j_per_count, uint64_t max)
{
	char item[160];
	int n = snprintf(item, sizeof item, "c%u=%s|%s|%s|%llu", g_nctr, group, name, j_per_count,
			 (unsigned long long)max);
	if (n <= 0 || (size_t)n + 1 > sizeof g_desc - g_desc_len)
		return;
	memcpy(g_desc + g_desc_len, item, (size_t)n + 1);
	g_desc_len += (size_t)n + 1;
}

/* One powercap domain directory: package-N -> cpu, dram -> ram (the
 * groups perun uses); core/uncore/psys are parts or supersets of those and
 * would count twice. */
static void rapl_domain(const char *dir, unsigned *denied)
{
	char path[4200], name[64], maxs[32];
	const char *group;
	uint64_t max = 0, v;
	int fd;

	if (g_nctr >= SENSORS_MAX)
		return;
	snprintf(path, sizeof path, "%s/name", dir);
	if (read_file(path, name, sizeof name))
		return;
	if (!strncmp(name, "package", 7))
		group = "cpu";
	else if (!strcmp(name, "dram"))
		group = "ram";
	else
		return;
	snprintf(path, sizeof path, "%s/max_energy_range_uj", dir);
	if (!read_file(path, maxs, sizeof maxs))
		parse_u64(maxs, (ssize_t)strlen(maxs), &max);
	snprintf(path, sizeof path, "%s/energy_uj", dir);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		(*denied)++;
		return;
	}
	if (read_fd_u64(fd, &v)) {
		close(fd);
		(*denied)++;
		return;
	}
	g_ctr[g_nctr].fd = fd;
	g_ctr[g_nctr].nvml_dev = NULL;
	g_ctr[g_nctr].last = v;
	desc_add(group, name, "1e-6", max);
	g_nctr++;
}

/* intel-rapl:N at the root, intel-rapl:N:M inside it (real sysfs also
 * links the subdomains at the root: those are skipped there). */
static void rapl_setup(void)
{
	const char *root = g_powercap_root;
	char sub[4300];
	unsigned denied = 0, before = g_nctr;
	DIR *d, *d2;
	struct dirent *e, *e2;

	{
		char marker[2100];
		snprintf(marker, sizeof marker, "%s/EMULATED_SENSOR.txt", root);
		if (access(marker, F_OK) == 0)
			g_emulated = 1;
	}
	d = opendir(root);
	if (!d) {
		why_add("RAPL not sampled: no powercap tree at ", root, "");
		return;
	}
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "intel-rapl:", 11) || strchr(e->d_name + 11, ':'))
			continue;
		if ((size_t)snprintf(sub, sizeof sub, "%s/%s", root, e->d_name) >= sizeof sub)
			continue;
		rapl_domain(sub, &denied);
		d2 = opendir(sub);
		if (!d2)
			continue;
		while ((e2 = readdir(d2))) {
			char sub2[4600];
			if (strncmp(e2->d_name, e->d_name, strlen(e->d_name)) || e2->d_name[strlen(e->d_name)] != ':')
				continue;
			if ((size_t)snprintf(sub2, sizeof sub2, "%s/%s", sub, e2->d_name) >= sizeof sub2)
				continue;
			rapl_domain(sub2, &denied);
		}
		closedir(d2);
	}
	closedir(d);
	if (g_nctr == before)
		why_add("RAPL not sampled: no readable package/dram energy_uj under ", root,
			denied ? " (not readable: root only since Linux 5.10)" : "");
}

static void nvml_setup(void)
{
	const char *lib = g_nvml_lib;
	nvml_init_fn init;
	nvml_count_fn count;
	nvml_handle_fn handle;
	unsigned n = 0, before = g_nctr;
	void *h;

	h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		why_add("GPU energy not sampled: cannot load ", lib, " (no NVIDIA driver?)");
		return;
	}
	init = (nvml_init_fn)dlsym(h, "nvmlInit_v2");
	count = (nvml_count_fn)dlsym(h, "nvmlDeviceGetCount_v2");
	handle = (nvml_handle_fn)dlsym(h, "nvmlDeviceGetHandleByIndex_v2");
	g_nvml_energy = (nvml_energy_fn)dlsym(h, "nvmlDeviceGetTotalEnergyConsumption");
	g_nvml_power = (nvml_power_fn)dlsym(h, "nvmlDeviceGetPowerUsage");
	g_nvml_fields = (nvml_fields_fn)dlsym(h, "nvmlDeviceGetFieldValues");
	if (dlsym(h, "anchor_emulated_sensor"))
		g_emulated = 1; /* tools/emulated_power/nvml_stub */
	if (!init || !count || !handle || !g_nvml_energy || init() != 0 || count(&n) != 0) {
		why_add("GPU energy not sampled: ", lib, " has no usable energy counter API");
		return;
	}
	for (unsigned i = 0; i < n && g_nctr < SENSORS_MAX; i++) {
		unsigned long long mj;
		void *dev = NULL;
		char name[16];
		if (handle(i, &dev) != 0 || g_nvml_energy(dev, &mj) != 0)
			continue; /* pre-Volta GPUs have no energy counter */
		g_ctr[g_nctr].fd = -1;
		g_ctr[g_nctr].nvml_dev = dev;
		g_ctr[g_nctr].power = 0;
		g_ctr[g_nctr].last = mj;
		snprintf(name, sizeof name, "gpu%u", i);
		desc_add("gpu", name, "1e-3", 0);
		g_nctr++;
	}
	/* The power readings after all counters, so a reader that knows no
	 * gauge still finds the counters where they were. */
	for (unsigned i = 0, k = before, nc = g_nctr; (g_nvml_power || g_nvml_fields) && k < nc && g_nctr < SENSORS_MAX;
	     i++) {
		unsigned mw;
		uint64_t inst;
		void *dev = NULL;
		char name[16];
		if (handle(i, &dev) != 0)
			break;
		if (dev != g_ctr[k].nvml_dev)
			continue; /* a GPU without counter: not sampled at all */
		k++;
		if (g_nvml_power && g_nvml_power(dev, &mw) == 0) {
			g_ctr[g_nctr].fd = -1;
			g_ctr[g_nctr].nvml_dev = dev;
			g_ctr[g_nctr].power = 1;
			g_ctr[g_nctr].last = mw;
			snprintf(name, sizeof name, "gpu%u", i);
			desc_add("gpu_power", name, "1e-3", 0);
			g_nctr++;
		}
		/* The instant power beside it: on Ampere and newer the reading
		 * above is a 1 s average (NVML's docs), this the 100 ms field. */
		if (g_nctr < SENSORS_MAX && !read_instant(dev, &inst)) {
			g_ctr[g_nctr].fd = -1;
			g_ctr[g_nctr].nvml_dev = dev;
			g_ctr[g_nctr].power = 2;
			g_ctr[g_nctr].last = inst;
			snprintf(name, sizeof name, "gpu%u.instant", i);
			desc_add("gpu_power", name, "1e-3", 0);
			g_nctr++;
		}
	}
	if (g_nctr == before)
		why_add("GPU energy not sampled: NVML found no GPU with an energy counter (Volta or later)", "", "");
	/* The library stays loaded for the life of the process: a sampler
	 * reading it at exit must not find it unmapped. */
}

/* Widest read bracket accepted: a sampler preempted between its first and
 * last read would stamp values read far apart with one time; such a tick
 * is read again (at most twice more), then taken as it is. */
#define TICK_BRACKET_NS 100000ull

/* Returns the clock at the end of the reads: the loop reuses it for its
 * own bookkeeping instead of reading the clock again (bench/sensor_floor.c:
 * the tick's CPU time is the wake-up and the reads' syscalls; everything
 * else in the loop is kept to arithmetic). */
static uint64_t tick(void)
{
	uint64_t v[SENSORS_MAX], t0 = 0, t1 = 0;
	for (int attempt = 0; attempt < 3; attempt++) {
		t0 = now_ns();
		for (unsigned i = 0; i < g_nctr; i++) {
			struct counter *c = &g_ctr[i];
			uint64_t x;
			if (c->fd >= 0) {
				if (!read_fd_u64(c->fd, &x))
					c->last = x;
			} else if (c->power == 2) {
				if (!read_instant(c->nvml_dev, &x))
					c->last = x;
			} else if (c->power) {
				unsigned mw;
				if (g_nvml_power(c->nvml_dev, &mw) == 0)
					c->last = mw;
			} else {
				unsigned long long mj;
				if (g_nvml_energy(c->nvml_dev, &mj) == 0)
					c->last = mj;
			}
			v[i] = c->last;
		}
		t1 = now_ns();
		if (t1 - t0 <= TICK_BRACKET_NS)
			break;
	}
	ring_writer_emit_at(t0 + (t1 - t0) / 2, ANCHOR_KIND_SENSOR, ANCHOR_FLAG_VALUE, g_nctr, (const char *)v,
			    g_nctr * sizeof v[0]);
	return t1;
}

static void *sampler_main(void *arg)
{
	const char *want = g_want;
	struct timespec next;
	uint64_t last_desc = 0, next_ns, t;

	if (strstr(want, "rapl"))
		rapl_setup();
	if (strstr(want, "nvml"))
		nvml_setup();
	if (!g_nctr) {
		anchor_log("sensors: ", g_why, "; sampler off", NULL);
		return NULL;
	}
	if (g_why[0])
		anchor_log("sensors: ", g_why, NULL);
	__atomic_store_n(&g_running, 1, __ATOMIC_SEQ_CST);
	if (g_emulated && g_desc_len + sizeof "emulated=1" <= sizeof g_desc) {
		memcpy(g_desc + g_desc_len, "emulated=1", sizeof "emulated=1");
		g_desc_len += sizeof "emulated=1";
	}
	clock_gettime(CLOCK_MONOTONIC, &next);
	next_ns = (uint64_t)next.tv_sec * 1000000000ull + (uint64_t)next.tv_nsec;
	t = next_ns;
	for (;;) {
		if (!ring_writer_attached())
			return NULL; /* anchoring was disabled: stop quietly */
		/* The description before the first sample, then about once a
		 * second (t: the previous tick's clock, CLOCK_MONOTONIC). */
		if (t - last_desc >= DESC_PERIOD_NS) {
			ring_writer_emit(ANCHOR_KIND_SENSOR_DESC, ANCHOR_FLAG_VALUE, g_nctr, g_desc, g_desc_len, NULL,
					 0);
			last_desc = t;
		}
		__atomic_store_n(&g_in_tick, 1, __ATOMIC_SEQ_CST);
		if (__atomic_load_n(&g_stop, __ATOMIC_SEQ_CST)) {
			__atomic_store_n(&g_in_tick, 0, __ATOMIC_SEQ_CST);
			return NULL;
		}
		t = tick();
		__atomic_store_n(&g_in_tick, 0, __ATOMIC_SEQ_CST);
		next_ns += g_period_ns;
		/* Fell behind by more than a period (descheduled): restart the
		 * schedule from now rather than firing a burst of late ticks. */
		if (next_ns + g_period_ns < t)
			next_ns = t + g_period_ns;
		next.tv_sec = (time_t)(next_ns / 1000000000ull);
		next.tv_nsec = (long)(next_ns % 1000000000ull);
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL) == EINTR)
			;
	}
	return NULL;
}

/*
 * Called first on every exit path (lifecycle.c, anchor_record_exit).  Exit
 * runs library destructors (libnvidia-ml's among them) while this thread
 * would go on reading: stop it first, waiting at most ~10 ms for a read in
 * flight, then take one last sample so the run's last phase is closed.
 * From a fatal signal handler (final == 0) only the stop: NVML is not
 * async-signal-safe.
 */
void anchor_sensors_stop(int final)
{
	int saved = errno;
	if (!g_sampler_pid || g_sampler_pid != (uint32_t)getpid() || __atomic_exchange_n(&g_stop, 1, __ATOMIC_SEQ_CST))
		goto out;
	for (int i = 0; i < 200 && __atomic_load_n(&g_in_tick, __ATOMIC_SEQ_CST); i++) {
		struct timespec ts = {0, 50000};
		nanosleep(&ts, NULL);
	}
	if (final && !__atomic_load_n(&g_in_tick, __ATOMIC_SEQ_CST) && __atomic_load_n(&g_running, __ATOMIC_SEQ_CST))
		tick();
out:
	errno = saved;
}

/* 1 when this process should sample (see the opening comment). */
static int this_process_samples(void)
{
	const char *owner = ring_env_get(RING_ENV_SENSORS_OWNER);
	const char *path = ring_writer_path();
	char *end;
	long pid;

	if (!owner || !*owner)
		return 1;
	pid = strtol(owner, &end, 10);
	if (*end == ' ')
		end++;
	if (pid == (long)getpid())
		return 1;
	return strcmp(end, path) != 0;
}

void anchor_sensors_start(void)
{
	const char *s = ring_env_get(RING_ENV_SENSORS), *hz = ring_env_get(RING_ENV_SENSOR_HZ);
	const char *root = ring_env_get(RING_ENV_POWERCAP_ROOT), *lib = ring_env_get(RING_ENV_NVML_LIB);
	char owner[4200];
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t th;
	long f = 1000;
	int saved = errno, rc;

	if (!s || !*s || !strcmp(s, "0") || !ring_writer_attached() || !this_process_samples())
		goto out;
	if (hz && *hz) {
		char *end;
		f = strtol(hz, &end, 10);
		if (*end || f < 1 || f > 10000) {
			anchor_log("sensors: ANCHOR_SENSOR_HZ must be 1..10000, not ", hz, "; sampler off", NULL);
			goto out;
		}
	}
	if (!strstr(s, "rapl") && !strstr(s, "nvml")) {
		anchor_log("sensors: ANCHOR_SENSORS knows rapl and nvml, not ", s, "; sampler off", NULL);
		goto out;
	}
	g_period_ns = 1000000000ull / (uint64_t)f;
	snprintf(g_want, sizeof g_want, "%s", s);
	snprintf(g_powercap_root, sizeof g_powercap_root, "%s", root && *root ? root : "/sys/class/powercap");
	snprintf(g_nvml_lib, sizeof g_nvml_lib, "%s", lib && *lib ? lib : "libnvidia-ml.so.1");
	snprintf(owner, sizeof owner, "%ld %s", (long)getpid(), ring_writer_path());
	ring_env_export(RING_ENV_SENSORS_OWNER, owner);
	/* The thread takes no signal meant for the host.  Except SIGBUS: the
	 * ring's guard must catch the fault of a SENSOR record written into a
	 * truncated ring, and the kernel kills the whole process for a
	 * synchronous fault on a thread that blocks it (issue 23). */
	sigfillset(&all);
	sigdelset(&all, SIGBUS);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	rc = pthread_create(&th, &attr, sampler_main, NULL);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc) {
		anchor_log("sensors: cannot start the sampler thread: ", strerror(rc), NULL);
		goto out;
	}
	g_sampler_pid = (uint32_t)getpid();
	pthread_setname_np(th, "anchor-sensors");
	if (anchor_debug)
		anchor_log("sensors: sampler started for ", s, NULL);
out:
	errno = saved;
}
