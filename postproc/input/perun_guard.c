/*
 * perun_guard.c - perun_load_guarded(): read a perun file once in a forked
 * child so that a crash inside libhdf5 on a corrupt file is reported, not
 * suffered.
 *
 * Why: Debian's libhdf5 1.10.8 dereferences corrupt global-heap addresses
 * (H5HG_read) while converting variable-length string attributes, and h5dump
 * dies on the same files (measured in tests/t_perun_corrupt_slow.py).  We
 * cannot fix libhdf5, and a signal handler inside the process would also
 * swallow our own bugs; a child that only walks the file keeps both apart.
 * The parent has not touched libhdf5 before the fork, so the child starts
 * with a clean library state.  libhdf5 also loops forever on some corrupt
 * global heaps (H5HG_read -> H5C_protect), so the child gets a time limit:
 * 20 s plus 1 s per MB of file (a 1 h perun file of 6.4 MB reads in 0.3 s
 * here), or $ANCHORPOST_PERUN_TIMEOUT_S.
 */
#include "perun.h"

#include <errno.h>
#include <hdf5.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

/* Child: load, send the error text (if any) up the pipe, exit with -rc. */
static void __attribute__((noreturn)) child_walk(const char *path, int wfd)
{
	struct perun_file pf;
	char err[1024];
	int rc = perun_load(path, &pf, err, sizeof err);
	if (rc < 0) {
		size_t len = strlen(err), off = 0;
		while (off < len) {
			ssize_t k = write(wfd, err + off, len - off);
			if (k <= 0)
				break;
			off += (size_t)k;
		}
		_exit(-rc > 0 && -rc < 126 ? -rc : EINVAL);
	}
	perun_free(&pf);
	_exit(0);
}

/* Seconds the child may take for this file. */
static double time_limit_s(const char *path)
{
	struct stat st;
	const char *env = getenv("ANCHORPOST_PERUN_TIMEOUT_S");
	if (env && *env) {
		char *end;
		double v = strtod(env, &end);
		if (!*end && v > 0)
			return v;
	}
	return 20.0 + (stat(path, &st) == 0 ? (double)st.st_size / 1e6 : 0.0);
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Read the child's message until it closes its end of the pipe (it exited:
 * at once, no polling interval) or limit_s passes.  Returns 0 at the end,
 * 1 on timeout. */
static int read_until_closed(int fd, double limit_s, char *msg, size_t cap, size_t *len)
{
	double t0 = now_s();
	for (;;) {
		double left = limit_s - (now_s() - t0);
		struct pollfd pf = {fd, POLLIN, 0};
		char buf[256];
		ssize_t k;
		int n;
		if (left <= 0)
			return 1;
		n = poll(&pf, 1, (int)(left * 1000) + 1);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return 0; /* cannot wait on the pipe: waitpid decides */
		if (n == 0)
			continue;
		k = read(fd, buf, sizeof buf);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return 0;
		for (ssize_t i = 0; i < k && *len + 1 < cap; i++)
			msg[(*len)++] = buf[i];
	}
}

int perun_load_guarded(const char *path, struct perun_file *pf, char *err, size_t errlen)
{
	int fds[2], status;
	char msg[1024];
	size_t mlen = 0;
	pid_t pid;

	memset(pf, 0, sizeof *pf);
	if (pipe(fds) < 0)
		return perun_load(path, pf, err, errlen);
	/* Output buffered before the fork must not be written twice. */
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		return perun_load(path, pf, err, errlen);
	}
	if (pid == 0) {
		close(fds[0]);
		child_walk(path, fds[1]);
	}
	close(fds[1]);
	double limit_s = time_limit_s(path);
	if (read_until_closed(fds[0], limit_s, msg, sizeof msg, &mlen)) {
		unsigned maj = 0, min = 0, rel = 0;
		close(fds[0]);
		kill(pid, SIGKILL);
		while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
			;
		H5get_libversion(&maj, &min, &rel);
		snprintf(err, errlen,
			 "libhdf5 %u.%u.%u did not finish reading this file in %.0f s (it loops on some corrupt files, see docs/perun-format.md; $ANCHORPOST_PERUN_TIMEOUT_S raises the limit)",
			 maj, min, rel, limit_s);
		return -ETIMEDOUT;
	}
	msg[mlen] = '\0';
	close(fds[0]);
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			status = 0;
			break;
		}
	}
	if (WIFSIGNALED(status)) {
		unsigned maj = 0, min = 0, rel = 0;
		H5get_libversion(&maj, &min, &rel);
		snprintf(err, errlen,
			 "libhdf5 %u.%u.%u crashed (%s) reading this file: it is corrupt (a libhdf5 bug, see docs/perun-format.md)",
			 maj, min, rel, strsignal(WTERMSIG(status)));
		return -EIO;
	}
	if (WEXITSTATUS(status) != 0) {
		if (mlen) {
			snprintf(err, errlen, "%s", msg);
			return -WEXITSTATUS(status);
		}
		snprintf(err, errlen, "the process checking the file exited with status %d",
			 WEXITSTATUS(status));
		return -EIO;
	}
	return perun_load(path, pf, err, errlen);
}
