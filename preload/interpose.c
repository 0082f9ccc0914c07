/*
 * interpose.c - see children come and go without changing what they do.
 *
 * exec family: an EXEC record just before the real call (the new image's
 * constructor then writes its own PROC_START).  wait family: a CHILD_EXIT
 * record with the status the real call returned, so a child killed by
 * SIGKILL, which cannot record anything itself, is still accounted for.
 * Every wrapper passes arguments and results through untouched.
 */
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"
#include "ring_env.h"
#include "ring_writer.h"

extern char **environ;

/* Resolve the real function once; __typeof__ keeps its exact prototype. */
#define REAL(name)                                                                                 \
	static __typeof__(&name) real_##name;                                                      \
	if (!real_##name)                                                                          \
		real_##name = (__typeof__(&name))anchor_next_sym(#name);                           \
	if (!real_##name) {                                                                        \
		errno = ENOSYS;                                                                    \
		return -1;                                                                         \
	}

static void record_exec(const char *path)
{
	/* Skip in a vfork child: it would be stamped with the parent's pid. */
	if (!ring_writer_attached() || (uint32_t)getpid() != ring_writer_pid())
		return;
	ring_writer_emit(ANCHOR_KIND_EXEC, 0, 0, path ? path : "", path ? strlen(path) : 0, NULL, 0);
}

static void record_child(pid_t pid, int status)
{
	char text[24];
	int n, sig = WIFSIGNALED(status);

	if (pid <= 0 || !ring_writer_attached() || !(WIFEXITED(status) || WIFSIGNALED(status)))
		return;
	n = anchor_fmt_kv(text, sig ? "signal=" : "status=",
			  sig ? (unsigned)WTERMSIG(status) : (unsigned)WEXITSTATUS(status));
	ring_writer_emit(ANCHOR_KIND_CHILD_EXIT, (uint8_t)(ANCHOR_FLAG_VALUE | (sig ? ANCHOR_FLAG_SIGNAL : 0)),
			 (uint64_t)pid, text, (size_t)n, NULL, 0);
}

/* After a wait-family call: record a reaped child, hand its status to the
 * caller (who may have passed NULL), keep the call's errno. */
static pid_t after_wait(pid_t r, int st, int *status)
{
	int e = errno;
	if (r > 0) {
		record_child(r, st);
		if (status)
			*status = st;
	}
	errno = e;
	return r;
}

/*
 * "anchoring disabled" once per run (ring_env.h, ring_env_say): a process
 * whose SIGBUS guard said its ring was lost could not export the run's
 * mark then (a signal handler may not setenv), so its exec'd children get
 * ANCHOR_SAID=<pid> appended to the environment they inherit from it, in
 * an array on the stack (this may be a vfork child: no malloc, no
 * setenv).  Only the process's own environment is extended: one that the
 * program built for the child is left as it is.
 */
#define SAID_ENV_MAX 65536 /* entries; beyond that the stack copy is not worth it */

static size_t said_env_count(char *const envp[])
{
	size_t n = 0;

	if (envp != environ || !ring_writer_lost() || ring_env_get(RING_ENV_SAID))
		return 0;
	while (envp[n] && n <= SAID_ENV_MAX)
		n++;
	return n <= SAID_ENV_MAX ? n + 1 : 0;
}

/* kv: room for "ANCHOR_SAID=" (anchor_fmt_kv takes keys of 12 bytes at
 * most) and a pid: the writer's, the process that said it, also in a
 * vfork child. */
static void said_env_fill(char **out, char *const envp[], size_t n, char kv[40])
{
	int k = anchor_fmt_kv(kv, "ANCHOR_SAID=", ring_writer_pid());

	kv[k] = '\0';
	memcpy(out, envp, (n - 1) * sizeof *out);
	out[n - 1] = kv;
	out[n] = NULL;
}

__attribute__((visibility("default"))) int execve(const char *path, char *const argv[], char *const envp[])
{
	REAL(execve);
	size_t n = said_env_count(envp);
	record_exec(path);
	if (n) {
		char kv[40], *env[n + 1];
		said_env_fill(env, envp, n, kv);
		return real_execve(path, argv, env);
	}
	return real_execve(path, argv, envp);
}

__attribute__((visibility("default"))) int execv(const char *path, char *const argv[])
{
	REAL(execv);
	size_t n = said_env_count(environ);
	if (n)
		return execve(path, argv, environ); /* extends it */
	record_exec(path);
	return real_execv(path, argv);
}

__attribute__((visibility("default"))) int execvpe(const char *file, char *const argv[], char *const envp[])
{
	REAL(execvpe);
	size_t n = said_env_count(envp);
	record_exec(file);
	if (n) {
		char kv[40], *env[n + 1];
		said_env_fill(env, envp, n, kv);
		return real_execvpe(file, argv, env);
	}
	return real_execvpe(file, argv, envp);
}

__attribute__((visibility("default"))) int execvp(const char *file, char *const argv[])
{
	REAL(execvp);
	if (said_env_count(environ))
		return execvpe(file, argv, environ); /* extends it */
	record_exec(file);
	return real_execvp(file, argv);
}

/*
 * execl family: variadic, and glibc's versions call execve internally where
 * no wrapper sees them; rebuild argv on the stack (no malloc: we may be in
 * a vfork child) and go through the wrappers above.
 */
#define COLLECT_ARGS(arg0, ap, argv, n)                                                            \
	do {                                                                                       \
		va_list cnt_;                                                                      \
		va_copy(cnt_, ap);                                                                 \
		n = 1;                                                                             \
		while (va_arg(cnt_, char *))                                                       \
			n++;                                                                       \
		va_end(cnt_);                                                                      \
	} while (0)

static void fill_args(char **argv, size_t n, const char *arg0, va_list ap)
{
	argv[0] = (char *)arg0;
	for (size_t i = 1; i < n; i++)
		argv[i] = va_arg(ap, char *);
	argv[n] = NULL;
}

__attribute__((visibility("default"))) int execl(const char *path, const char *arg, ...)
{
	va_list ap;
	size_t n;
	va_start(ap, arg);
	COLLECT_ARGS(arg, ap, argv, n);
	if (n > 65536) {
		va_end(ap);
		errno = E2BIG;
		return -1;
	}
	char *argv[n + 1];
	fill_args(argv, n, arg, ap);
	va_end(ap);
	return execv(path, argv);
}

__attribute__((visibility("default"))) int execlp(const char *file, const char *arg, ...)
{
	va_list ap;
	size_t n;
	va_start(ap, arg);
	COLLECT_ARGS(arg, ap, argv, n);
	if (n > 65536) {
		va_end(ap);
		errno = E2BIG;
		return -1;
	}
	char *argv[n + 1];
	fill_args(argv, n, arg, ap);
	va_end(ap);
	return execvp(file, argv);
}

__attribute__((visibility("default"))) int execle(const char *path, const char *arg, ...)
{
	va_list ap;
	size_t n;
	char *const *envp;
	va_start(ap, arg);
	COLLECT_ARGS(arg, ap, argv, n);
	if (n > 65536) {
		va_end(ap);
		errno = E2BIG;
		return -1;
	}
	char *argv[n + 1];
	fill_args(argv, n, arg, ap);
	envp = va_arg(ap, char *const *);
	va_end(ap);
	return execve(path, argv, envp);
}

__attribute__((visibility("default"))) pid_t waitpid(pid_t pid, int *status, int options)
{
	REAL(waitpid);
	int st = 0;
	pid_t r = real_waitpid(pid, &st, options);
	return after_wait(r, st, status); /* st is set only after the call */
}

__attribute__((visibility("default"))) pid_t wait(int *status)
{
	REAL(wait);
	int st = 0;
	pid_t r = real_wait(&st);
	return after_wait(r, st, status); /* st is set only after the call */
}

__attribute__((visibility("default"))) pid_t wait4(pid_t pid, int *status, int options, struct rusage *ru)
{
	REAL(wait4);
	int st = 0;
	pid_t r = real_wait4(pid, &st, options, ru);
	return after_wait(r, st, status); /* st is set only after the call */
}

__attribute__((visibility("default"))) int waitid(idtype_t idtype, id_t id, siginfo_t *info, int options)
{
	REAL(waitid);
	int r = real_waitid(idtype, id, info, options);
	int e = errno;
	/* WNOWAIT leaves the child waitable: the real reaping call records it. */
	if (r == 0 && info && info->si_pid > 0 && !(options & WNOWAIT)) {
		if (info->si_code == CLD_EXITED)
			record_child(info->si_pid, (info->si_status & 0xff) << 8);
		else if (info->si_code == CLD_KILLED || info->si_code == CLD_DUMPED)
			record_child(info->si_pid, info->si_status & 0x7f);
	}
	errno = e;
	return r;
}
