/*
 * ring_env.c - the writers' environment, one table (see ring_env.h).
 *
 * Values are pointers into the environment as ring_env_init found it:
 * glibc never frees a string that environ pointed to (setenv keeps the
 * ones it replaces), so they stay valid; ring_env_export points the table
 * at the string it put in.  Variables absent from this table are not read
 * by libanchor or the module's writer (tests/unit/t_unit_env.sh checks that no
 * other C file of theirs calls getenv on an ANCHOR_ name).
 */
#include "ring_env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/auxv.h>
#include <time.h>
#include <unistd.h>

#include "ring_path.h"

/* secure: a file or library path, refused where AT_SECURE is set (a
 * setuid/setgid or capability-raised program: the caller of lower
 * privilege chose its environment). */
static struct {
	const char *name;
	int secure;
	const char *value;
} g_env[RING_ENV_COUNT_] = {
	[RING_ENV_FILE] = {"ANCHOR_FILE", 1, NULL},
	[RING_ENV_RING_SIZE] = {"ANCHOR_RING_SIZE", 0, NULL},
	[RING_ENV_RING_MODE] = {"ANCHOR_RING_MODE", 0, NULL},
	[RING_ENV_DISABLE] = {"ANCHOR_DISABLE", 0, NULL},
	[RING_ENV_DEBUG] = {"ANCHOR_DEBUG", 0, NULL},
	[RING_ENV_STACKS] = {"ANCHOR_STACKS", 0, NULL},
	[RING_ENV_SIGNALS] = {"ANCHOR_SIGNALS", 0, NULL},
	[RING_ENV_AUTO] = {"ANCHOR_AUTO", 0, NULL},
	[RING_ENV_SYNC_PULSE] = {"ANCHOR_SYNC_PULSE", 0, NULL},
	[RING_ENV_LAYERS_DEPTH] = {"ANCHOR_LAYERS_DEPTH", 0, NULL},
	[RING_ENV_MPI] = {"ANCHOR_MPI", 0, NULL},
	[RING_ENV_SENSORS] = {"ANCHOR_SENSORS", 0, NULL},
	[RING_ENV_SENSOR_HZ] = {"ANCHOR_SENSOR_HZ", 0, NULL},
	[RING_ENV_SENSORS_OWNER] = {"ANCHOR_SENSORS_OWNER", 0, NULL},
	[RING_ENV_POWERCAP_ROOT] = {"ANCHOR_POWERCAP_ROOT", 1, NULL},
	[RING_ENV_NVML_LIB] = {"ANCHOR_NVML_LIB", 1, NULL},
	[RING_ENV_SAID] = {"ANCHOR_SAID", 0, NULL},
};

void ring_env_init(void)
{
	int secure = getauxval(AT_SECURE) != 0;

	for (int i = 0; i < RING_ENV_COUNT_; i++)
		g_env[i].value = g_env[i].secure && secure ? NULL : getenv(g_env[i].name);
}

const char *ring_env_get(enum ring_env v)
{
	return (unsigned)v < RING_ENV_COUNT_ ? g_env[v].value : NULL;
}

const char *ring_env_name(enum ring_env v)
{
	return (unsigned)v < RING_ENV_COUNT_ ? g_env[v].name : "";
}

int ring_env_true(enum ring_env v)
{
	const char *s = ring_env_get(v);
	return s && *s && strcmp(s, "0") != 0 && strcasecmp(s, "false") != 0 && strcasecmp(s, "no") != 0;
}

int ring_env_export(enum ring_env v, const char *value)
{
	if ((unsigned)v >= RING_ENV_COUNT_ || setenv(g_env[v].name, value, 1) != 0)
		return -1;
	g_env[v].value = getenv(g_env[v].name);
	return 0;
}

int ring_env_say(int debug)
{
	const char *s = ring_env_get(RING_ENV_SAID);
	return debug || !s || !*s;
}

void ring_env_said(void)
{
	char pid[24];

	if (ring_env_get(RING_ENV_SAID))
		return; /* a parent's mark: keep it */
	snprintf(pid, sizeof pid, "%ld", (long)getpid());
	ring_env_export(RING_ENV_SAID, pid);
}

void ring_env_default_path(char *out, size_t cap)
{
	time_t now = time(NULL);
	struct tm tm;
	char stamp[32], cwd[3072];

	gmtime_r(&now, &tm);
	strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
	if (!getcwd(cwd, sizeof cwd))
		strcpy(cwd, ".");
	snprintf(out, cap, "%s/anchor-%s-%ld.ring", cwd, stamp, (long)getpid());
}

int ring_env_ring(struct ring_writer_opts *o, char *path, size_t cap, char *why, size_t whylen,
		  const char **note)
{
	const char *file = ring_env_get(RING_ENV_FILE), *size = ring_env_get(RING_ENV_RING_SIZE);
	const char *mode = ring_env_get(RING_ENV_RING_MODE), *size_why;
	int rc = 0;

	memset(o, 0, sizeof *o);
	*note = NULL;
	if (file && *file && strchr(file, '%')) {
		/* A template (%r, %h, %p): one ring per rank; children keep the
		 * template and expand it the same way. */
		if (anchor_expand_path(file, path, cap)) {
			snprintf(why, whylen, "ANCHOR_FILE expands to a path too long: %.200s", file);
			return -1;
		}
	} else if (file && *file) {
		if (strlen(file) >= cap) {
			snprintf(why, whylen, "ANCHOR_FILE is too long: %.200s", file);
			return -1;
		}
		memcpy(path, file, strlen(file) + 1);
	} else {
		ring_env_default_path(path, cap);
		rc = 1;
	}
	o->path = path;
	if (size) {
		int prc = anchor_parse_ring_size(size, &o->size_bytes, &size_why);
		if (prc < 0) {
			snprintf(why, whylen, "ANCHOR_RING_SIZE=%.64s %s", size, size_why);
			return -1;
		}
		if (prc > 0)
			*note = size_why;
	}
	if (mode && !strcmp(mode, "discard"))
		o->mode = ANCHOR_RING_MODE_DISCARD;
	return rc;
}
