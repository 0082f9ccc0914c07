/*
 * backend.c - pick the writer the extension calls, once, at import.
 *
 * Preloaded: dlsym(RTLD_DEFAULT, "anchor_event") finds libanchor.so's API
 * and every call goes through it.  Two writers on one ring in one process
 * would work (the format allows any number), but they would announce the
 * thread twice, sync twice and race two fork handlers; one is cleaner.
 *
 * Not preloaded: the module's own copy of ring_writer.c (writer.c) attaches
 * to $ANCHOR_FILE, or creates ./anchor-<UTC stamp>-<pid>.ring (absolute
 * path, exported as ANCHOR_FILE so children append to it), and writes
 * PROC_START + SYNC like libanchor.so's constructor.  Failure leaves the
 * module importable with anchoring disabled, after one stderr line.
 *
 * The own writer attaches lazily, at the first call that needs the ring
 * (an event, sync(), enabled(), ring_path()), not at import: importing for
 * help() or type checking, or a helper process started with ANCHOR_AUTO
 * that never marks, must leave no ring behind (issue 12).  PROC_START is
 * then stamped at that first call, not at interpreter start.  The import
 * only names the ring (exports ANCHOR_FILE), so children share it.
 */
#include "pyanchor.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "ring_path.h"
#include "ring_writer.h"

struct pya_backend pya;

/* setenv() does not reach os.environ (a copy made at start-up): mirror
 * the exported path there too, so subprocess calls that pass
 * env=os.environ.copy() also hand the ring to their children. */
static void mirror_environ(const char *path)
{
	PyObject *os = PyImport_ImportModule("os"), *environ = NULL, *v = NULL;

	if (os)
		environ = PyObject_GetAttrString(os, "environ");
	if (environ)
		v = PyUnicode_DecodeFSDefault(path);
	if (v && PyMapping_SetItemString(environ, "ANCHOR_FILE", v) < 0) {
		Py_DECREF(v);
		v = NULL;
	}
	if (!v)
		PyErr_Clear(); /* the C environment already has it */
	Py_XDECREF(v);
	Py_XDECREF(environ);
	Py_XDECREF(os);
}

static int env_true(const char *name)
{
	const char *v = getenv(name);
	return v && *v && strcmp(v, "0") != 0 && strcasecmp(v, "false") != 0 && strcasecmp(v, "no") != 0;
}

/* "64M", "1G", "1048576" -> bytes; 0 when unparsable (as libanchor.so). */
/* The one parser libanchor.so uses too (anchors/ring_path.c): overflow
 * and sizes above 64G refused, below 64K raised with a note. */
static uint64_t parse_size(const char *s)
{
	uint64_t v = 0;
	const char *why;
	int rc = anchor_parse_ring_size(s, &v, &why);

	if (rc > 0)
		fprintf(stderr, "anchor[%ld]: ANCHOR_RING_SIZE=%s %s\n", (long)getpid(), s, why);
	return rc < 0 ? 0 : v;
}

static void warn(const char *what, const char *detail)
{
	fprintf(stderr, "anchor[%ld]: %s%s; anchoring disabled\n", (long)getpid(), what, detail ? detail : "");
}

/* PROC_EXIT at interpreter finalization.  The exit status is not known
 * here (sys.exit's code is consumed later), so the record carries none,
 * like libanchor.so's destructor path.  A forked child that leaves with
 * os._exit() skips this; anchorpost treats such a process as open-ended. */
static void own_exit(void)
{
	if (ring_writer_attached() && ring_writer_pid() == (uint32_t)getpid())
		ring_writer_emit(ANCHOR_KIND_PROC_EXIT, 0, 0, NULL, 0, NULL, 0);
}

/* ./anchor-<UTC stamp>-<pid>.ring, absolute, so children that chdir
 * still find the same ring. */
static void default_path(char *path, size_t cap)
{
	char cwd[3072], stamp[32];
	time_t now = time(NULL);
	struct tm tm;

	gmtime_r(&now, &tm);
	strftime(stamp, sizeof stamp, "%Y%m%dT%H%M%SZ", &tm);
	if (!getcwd(cwd, sizeof cwd))
		strcpy(cwd, ".");
	snprintf(path, cap, "%s/anchor-%s-%ld.ring", cwd, stamp, (long)getpid());
}

/* At import: name the ring (ANCHOR_FILE, exported) without creating it,
 * so a child forked or spawned before this process's first event appends
 * to the same ring instead of starting its own (the writer's O_EXCL
 * create makes whoever comes first the creator). */
static void own_name_ring(void)
{
	char path[4096];
	const char *file = getenv("ANCHOR_FILE");

	if (env_true("ANCHOR_DISABLE") || (file && *file))
		return;
	default_path(path, sizeof path);
	setenv("ANCHOR_FILE", path, 1);
	mirror_environ(path);
}

/* 0 when a ring is attached. */
static int own_attach(void)
{
	struct ring_writer_opts o = {0};
	char path[4096], err[512];
	const char *file = getenv("ANCHOR_FILE");
	const char *size = getenv("ANCHOR_RING_SIZE");
	const char *mode = getenv("ANCHOR_RING_MODE");

	if (env_true("ANCHOR_DISABLE"))
		return -1;
	if (file && *file && strchr(file, '%')) {
		/* %r/%h/%p template (docs/mpi.md): one ring per rank. */
		if (anchor_expand_path(file, path, sizeof path)) {
			warn("ANCHOR_FILE expands to a path too long: ", file);
			return -1;
		}
		o.path = path;
	} else if (file && *file) {
		o.path = file;
	} else { /* someone unset ANCHOR_FILE after import */
		default_path(path, sizeof path);
		o.path = path;
	}
	if (size) {
		o.size_bytes = parse_size(size);
		if (!o.size_bytes) {
			warn("ANCHOR_RING_SIZE is not a size like 64M: ", size);
			return -1;
		}
	}
	if (mode && !strcmp(mode, "discard"))
		o.mode = ANCHOR_RING_MODE_DISCARD;
	if (ring_writer_open(&o, err, sizeof err) != 0) {
		warn(err, NULL);
		return -1;
	}
	if (!file || !*file) {
		setenv("ANCHOR_FILE", o.path, 1);
		mirror_environ(o.path);
	}
	pya_record_start();
	ring_writer_sync();
	Py_AtExit(own_exit);
	return 0;
}

/* 0: not tried yet, 1: attached, -1: disabled or failed (said once).
 * Every caller holds the GIL, and own_attach runs no Python code before
 * the state is final, so two threads cannot both attach. */
static int own_state;

static int own_ensure(void)
{
	if (own_state == 0) {
		own_state = -1;
		/* From now on events go straight to the writer's own check. */
		pya.event = pya_own_event;
		if (own_attach() == 0)
			own_state = 1;
	}
	return own_state > 0 && ring_writer_attached();
}

static int lazy_event(int kind, const char *name, size_t len, unsigned flags, uint64_t value)
{
	own_ensure();
	return pya_own_event(kind, name, len, flags, value);
}

static void lazy_sync(void)
{
	if (own_ensure())
		ring_writer_sync();
}

void pya_backend_init(void)
{
	void *ev = dlsym(RTLD_DEFAULT, "anchor_event");
	void *sy = dlsym(RTLD_DEFAULT, "anchor_sync");
	void *en = dlsym(RTLD_DEFAULT, "anchor_enabled");
	void *pa = dlsym(RTLD_DEFAULT, "anchor_ring_path");

	if (ev && sy && en && pa) {
		/* POSIX guarantees data/function pointer round trips for dlsym. */
		*(void **)&pya.event = ev;
		*(void **)&pya.sync = sy;
		*(void **)&pya.enabled = en;
		*(void **)&pya.path = pa;
		pya.preloaded = 1;
		return;
	}
	pya.event = lazy_event;
	pya.sync = lazy_sync;
	pya.enabled = own_ensure;
	pya.path = ring_writer_path;
	pya.preloaded = 0;
	own_name_ring();
}
