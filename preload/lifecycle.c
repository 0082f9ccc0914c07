/*
 * lifecycle.c - libanchor.so's life inside someone else's process.
 *
 * Constructor: attach the ring ($ANCHOR_FILE, or a new one whose path is
 * exported to children), write PROC_START and SYNC.  Exit: main's return
 * value (by wrapping __libc_start_main, since libc calls exit() internally
 * there), exit()/_exit()/_Exit(), or a fatal signal, recorded once per
 * process.  Anything that fails disables anchoring with one stderr line;
 * the host process must behave exactly as without us.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "internal.h"
#include "ring_env.h"
#include "ring_procstart.h"
#include "ring_writer.h"

static uint32_t g_exit_pid; /* pid that already recorded its exit */

/* Real exit functions, resolved in the constructor: a vfork child calling
 * _exit must not enter dlsym (the parent may hold the loader's lock). */
static __typeof__(&exit) real_exit;
static __typeof__(&_exit) real__exit;
static __typeof__(&_Exit) real__Exit;

static void resolve_exits(void)
{
	real_exit = (__typeof__(&exit))anchor_next_sym("exit");
	real__exit = (__typeof__(&_exit))anchor_next_sym("_exit");
	real__Exit = (__typeof__(&_Exit))anchor_next_sym("_Exit");
}

void *anchor_next_sym(const char *name)
{
	return dlsym(RTLD_NEXT, name);
}

void anchor_record_exit(int status_or_sig, int is_signal, int known)
{
	uint32_t pid = (uint32_t)getpid();
	char text[32];
	int n = 0;

	anchor_sensors_stop(!is_signal);

	/* pid differs from the writer's in a vfork child (shared memory, the
	 * parent's cached pid): its record would be misattributed, skip it. */
	if (!ring_writer_attached() || pid != ring_writer_pid() ||
	    __atomic_exchange_n(&g_exit_pid, pid, __ATOMIC_RELAXED) == pid)
		return;
	if (known)
		n = anchor_fmt_kv(text, is_signal ? "signal=" : "status=", (unsigned)status_or_sig & 0xffffu);
	ring_writer_emit(ANCHOR_KIND_PROC_EXIT,
			 (uint8_t)((known ? ANCHOR_FLAG_VALUE : 0) | (is_signal ? ANCHOR_FLAG_SIGNAL : 0)),
			 (uint64_t)(int64_t)status_or_sig, text, (size_t)n, NULL, 0);
}

/* ---- process start ---------------------------------------------------- */

/* argv joined by spaces (truncated to 511 bytes), encoded with the text the
 * Python module writes too (anchors/ring_procstart.c). */
static void record_start(int argc, char **argv)
{
	char args[512];
	size_t an = 0;

	for (int i = 0; argv && i < argc && argv[i]; i++) {
		size_t l = strlen(argv[i]);
		if (an + l + 2 >= sizeof args)
			l = sizeof args - an - 2;
		if (an)
			args[an++] = ' ';
		memcpy(args + an, argv[i], l);
		an += l;
		if (an + 2 >= sizeof args)
			break;
	}
	args[an] = '\0';
	ring_procstart_emit(args, an);
}

/* ---- fatal signals ------------------------------------------------------ */

static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};

static void crash_handler(int sig)
{
	anchor_record_exit(sig, 1, 1);
	/* SA_RESETHAND restored the default action and SA_NODEFER lets it
	 * through now: the process dies of the same signal as without us. */
	raise(sig);
}

/* SIGBUS belongs to the ring's guard (ring_writer.c), which calls this
 * for a SIGBUS that is not the ring's and would kill the process. */
static void bus_crash(int sig)
{
	anchor_record_exit(sig, 1, 1);
}

static void install_crash_handlers(void)
{
	ring_writer_set_bus_crash_hook(bus_crash);
	for (size_t i = 0; i < sizeof crash_signals / sizeof crash_signals[0]; i++) {
		struct sigaction old, sa;
		if (crash_signals[i] == SIGBUS)
			continue;
		if (sigaction(crash_signals[i], NULL, &old) != 0)
			continue;
		if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler != SIG_DFL)
			continue; /* the program (or a parent's SIG_IGN) owns it */
		if ((old.sa_flags & SA_SIGINFO))
			continue;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = crash_handler;
		sa.sa_flags = SA_RESETHAND | SA_NODEFER;
		sigemptyset(&sa.sa_mask);
		sigaction(crash_signals[i], &sa, NULL);
	}
}

/* ---- Python auto mode -------------------------------------------------- */

/*
 * `LD_PRELOAD=libanchor.so python train.py` with `import anchor` in the
 * script, and ANCHOR_AUTO / ANCHOR_SYNC_PULSE with no change to it, work
 * without PYTHONPATH: Python finds the anchor package and its
 * sitecustomize.py through PYTHONPATH, so put the directory that ships
 * beside this library first on it (the build tree keeps it in
 * <libdir>/python, `make install` in <libdir>/anchor/python).  Done only
 * in a process that contains CPython (or when auto mode was asked for), and
 * before main, so the interpreter reads the new value; any other host's
 * environment is left alone.  The value is exported: child interpreters
 * find the same module (README: the PYTHONPATH row of the variables).
 */
static void python_auto_path(void)
{
	static const char *const subdirs[] = {"python", "anchor/python", NULL};
	Dl_info info;
	char *lib, *slash, dir[4096], probe[4200];
	const char *old;

	if (!ring_env_get(RING_ENV_AUTO) && !ring_env_get(RING_ENV_SYNC_PULSE) && !dlsym(RTLD_DEFAULT, "Py_BytesMain") &&
	    !dlsym(RTLD_DEFAULT, "Py_Main"))
		return;
	if (!dladdr((void *)python_auto_path, &info) || !info.dli_fname)
		return;
	lib = realpath(info.dli_fname, NULL);
	if (!lib)
		return;
	slash = strrchr(lib, '/');
	if (slash)
		*slash = '\0';
	for (int i = 0; subdirs[i]; i++) {
		snprintf(dir, sizeof dir, "%s/%s", lib, subdirs[i]);
		snprintf(probe, sizeof probe, "%s/sitecustomize.py", dir);
		if (access(probe, R_OK) == 0)
			break;
		dir[0] = '\0';
	}
	free(lib);
	if (!dir[0])
		return;
	old = getenv("PYTHONPATH");
	if (old && strstr(old, dir))
		return; /* a parent already did it */
	if (old && *old) {
		size_t n = strlen(dir) + strlen(old) + 2;
		char *v = malloc(n);
		if (!v)
			return;
		snprintf(v, n, "%s:%s", dir, old);
		setenv("PYTHONPATH", v, 1);
		free(v);
	} else {
		setenv("PYTHONPATH", dir, 1);
	}
	if (anchor_debug)
		anchor_log("Python: PYTHONPATH starts with ", dir, NULL);
}

/* ---- constructor ------------------------------------------------------- */

__attribute__((constructor)) static void anchor_ctor(int argc, char **argv, char **envp)
{
	struct ring_writer_opts o;
	char path[4096], err[512];
	const char *note;
	int saved = errno, rc, named;

	(void)envp;
	resolve_exits();
	ring_env_init();
	anchor_debug = ring_env_true(RING_ENV_DEBUG);
	if (ring_env_true(RING_ENV_DISABLE)) {
		if (anchor_debug)
			anchor_log("ANCHOR_DISABLE is set; not recording", NULL);
		goto out;
	}
	named = ring_env_ring(&o, path, sizeof path, err, sizeof err, &note);
	if (named < 0) {
		anchor_disable_once(err, NULL);
		goto out;
	}
	rc = ring_writer_open(&o, err, sizeof err);
	if (rc) {
		anchor_disable_once(err, NULL);
		goto out;
	}
	/* The size is the creator's: only it says the size was raised. */
	if (note && ring_writer_created())
		anchor_log("ANCHOR_RING_SIZE=", ring_env_get(RING_ENV_RING_SIZE), " ", note, NULL);
	/* A big ring takes its whole size on disk at once: say so, once,
	 * in the process that made it. */
	if (ring_writer_created() && o.size_bytes >= (1ull << 30)) {
		char gib[24];
		anchor_fmt_kv(gib, "", (unsigned)(o.size_bytes >> 30));
		anchor_log(o.path, ": new ring preallocates ", gib, " GiB (ANCHOR_RING_SIZE=",
			   ring_env_get(RING_ENV_RING_SIZE), ")", NULL);
	}
	/* Children (exec'd or forked) append to the same ring. */
	if (named == 1)
		ring_env_export(RING_ENV_FILE, o.path);
	if (anchor_debug)
		anchor_log("attached to ", o.path, NULL);
	record_start(argc, argv);
	ring_writer_sync();
	python_auto_path();
	if (ring_env_true(RING_ENV_STACKS))
		anchor_stacks_enable();
	anchor_sensors_start();
	{
		const char *s = ring_env_get(RING_ENV_SIGNALS);
		if (!s || strcmp(s, "0") != 0)
			install_crash_handlers();
	}
out:
	errno = saved;
}

__attribute__((destructor)) static void anchor_dtor(void)
{
	/* Reached through exit() paths we did not see (e.g. a library calling
	 * exit internally): the status is unknown. */
	anchor_record_exit(0, 0, 0);
}

/* ---- exit paths ---------------------------------------------------------- */

typedef int (*main_fn)(int, char **, char **);
static main_fn g_real_main;

static int main_wrapper(int argc, char **argv, char **envp)
{
	int rc = g_real_main(argc, argv, envp);
	anchor_record_exit(rc & 0xff, 0, 1);
	return rc;
}

typedef int (*start_main_fn)(main_fn, int, char **, void (*)(void), void (*)(void), void (*)(void), void *);

__attribute__((visibility("default"))) int __libc_start_main(main_fn main, int argc, char **argv,
							     void (*init)(void), void (*fini)(void),
							     void (*rtld_fini)(void), void *stack_end)
{
	start_main_fn real = (start_main_fn)anchor_next_sym("__libc_start_main");
	if (!real) {
		/* Cannot happen with glibc; fail the way the loader would. */
		anchor_log("cannot find __libc_start_main", NULL);
		_exit(127);
	}
	g_real_main = main;
	return real(main_wrapper, argc, argv, init, fini, rtld_fini, stack_end);
}

static __attribute__((noreturn)) void exit_now(__typeof__(&exit) real, int status)
{
	if (real)
		real(status);
	syscall(SYS_exit_group, status);
	__builtin_unreachable();
}

__attribute__((visibility("default"), noreturn)) void exit(int status)
{
	anchor_record_exit(status & 0xff, 0, 1);
	exit_now(real_exit, status);
}

__attribute__((visibility("default"), noreturn)) void _exit(int status)
{
	anchor_record_exit(status & 0xff, 0, 1);
	exit_now(real__exit, status);
}

__attribute__((visibility("default"), noreturn)) void _Exit(int status)
{
	anchor_record_exit(status & 0xff, 0, 1);
	exit_now(real__Exit, status);
}
