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
 * The own writer attaches lazily, at the first call that writes (an event,
 * sync()), not at import: importing for
 * help() or type checking, or a helper process started with ANCHOR_AUTO
 * that never marks, must leave no ring behind (issue 12).  PROC_START is
 * then stamped at that first call, not at interpreter start.  The import
 * only names the ring (exports ANCHOR_FILE), so children share it.
 * enabled() and ring_path() are queries and create nothing either (issue
 * 22: a notebook that asks would otherwise get a ring per kernel): before
 * the first write they answer from the environment, what that write would
 * do.
 */
#include "pyanchor.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ring_env.h"
#include "ring_writer.h"

struct pya_backend pya;

/* setenv() does not reach os.environ (a copy made at start-up): mirror
 * an exported variable (the ring's path, ANCHOR_SAID) there too, so
 * subprocess calls that pass env=os.environ.copy() also hand it on. */
static void mirror_environ(const char *name, const char *value)
{
	PyObject *os = PyImport_ImportModule("os"), *environ = NULL, *v = NULL;

	if (os)
		environ = PyObject_GetAttrString(os, "environ");
	if (environ)
		v = PyUnicode_DecodeFSDefault(value);
	if (v && PyMapping_SetItemString(environ, name, v) < 0) {
		Py_DECREF(v);
		v = NULL;
	}
	if (!v)
		PyErr_Clear(); /* the C environment already has it */
	Py_XDECREF(v);
	Py_XDECREF(environ);
	Py_XDECREF(os);
}

/* Exported once this process has said why anchoring is off: the run's
 * mark (ring_env_say), in the C environment and in os.environ. */
static void mark_said(void)
{
	if (ring_env_get(RING_ENV_SAID))
		return;
	ring_env_said();
	if (ring_env_get(RING_ENV_SAID))
		mirror_environ(ring_env_name(RING_ENV_SAID), ring_env_get(RING_ENV_SAID));
}

/* One line per run (ring_env_say), like libanchor.so's. */
static void warn(const char *what, const char *detail)
{
	if (!ring_env_say(ring_env_true(RING_ENV_DEBUG)))
		return;
	fprintf(stderr, "anchor[%ld]: %s%s; anchoring disabled\n", (long)getpid(), what, detail ? detail : "");
	mark_said();
}

void pya_own_detached(void)
{
	static int done;

	/* The SIGBUS guard said "ring file lost its pages" from a signal
	 * handler, where the mark cannot be exported: export it at this
	 * first call after (the GIL is held, no handler is running). */
	if (!done && ring_writer_lost()) {
		done = 1;
		mark_said();
	}
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

/* At import: name the ring (ANCHOR_FILE, exported) without creating it,
 * so a child forked or spawned before this process's first event appends
 * to the same ring instead of starting its own (the writer's O_EXCL
 * create makes whoever comes first the creator). */
static void own_name_ring(void)
{
	const char *file;
	char path[4096];

	ring_env_init();
	file = ring_env_get(RING_ENV_FILE);
	if (ring_env_true(RING_ENV_DISABLE) || (file && *file))
		return;
	ring_env_default_path(path, sizeof path);
	ring_env_export(RING_ENV_FILE, path);
	mirror_environ(ring_env_name(RING_ENV_FILE), path);
}

/* 0 when a ring is attached. */
static int own_attach(void)
{
	struct ring_writer_opts o;
	char path[4096], err[512];
	const char *note;
	int named;

	/* Read again at the first event: the program may have set os.environ
	 * (ANCHOR_FILE, ANCHOR_RING_SIZE) between the import and now. */
	ring_env_init();
	if (ring_env_true(RING_ENV_DISABLE))
		return -1;
	/* named == 1: someone unset ANCHOR_FILE after import. */
	named = ring_env_ring(&o, path, sizeof path, err, sizeof err, &note);
	if (named < 0) {
		warn(err, NULL);
		return -1;
	}
	if (ring_writer_open(&o, err, sizeof err) != 0) {
		warn(err, NULL);
		return -1;
	}
	/* The size is the creator's: only it says the size was raised. */
	if (note && ring_writer_created())
		fprintf(stderr, "anchor[%ld]: ANCHOR_RING_SIZE=%s %s\n", (long)getpid(),
			ring_env_get(RING_ENV_RING_SIZE), note);
	if (named == 1) {
		ring_env_export(RING_ENV_FILE, o.path);
		mirror_environ(ring_env_name(RING_ENV_FILE), o.path);
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

/* enabled() without attaching: before the first write, 1 unless
 * ANCHOR_DISABLE is set (a ring that then fails to attach turns it 0). */
static int own_query(void)
{
	if (own_state == 0) {
		ring_env_init(); /* os.environ may have changed since import */
		return !ring_env_true(RING_ENV_DISABLE);
	}
	return own_state > 0 && ring_writer_attached();
}

/* ring_path() without attaching: the path the first write will open. */
static const char *own_path(void)
{
	static char path[4096];
	struct ring_writer_opts o;
	char resolved[4096], err[512];
	const char *note;
	size_t n = 0;

	if (own_state != 0)
		return ring_writer_path();
	if (ring_env_ring(&o, resolved, sizeof resolved, err, sizeof err, &note) < 0)
		return "";
	if (resolved[0] != '/' && getcwd(path, sizeof path - 1)) {
		n = strlen(path);
		path[n++] = '/';
	}
	snprintf(path + n, sizeof path - n, "%s", resolved);
	return path;
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
	pya.enabled = own_query;
	pya.path = own_path;
	pya.preloaded = 0;
	own_name_ring();
}
