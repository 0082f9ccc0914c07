/*
 * perun_guard.c - perun_load_guarded(): read a perun file once in a forked
 * child so that a crash inside libhdf5 on a corrupt file is reported, not
 * suffered.
 *
 * Why: Debian's libhdf5 1.10.8 dereferences corrupt global-heap addresses
 * (H5HG_read) while converting variable-length string attributes, and h5dump
 * dies on the same files (measured in tests/perun/t_perun_corrupt_slow.py).  We
 * cannot fix libhdf5, and a signal handler inside the process would also
 * swallow our own bugs; a child that only walks the file keeps both apart.
 * The parent reads the file's bytes once (perun_read_bytes) and never
 * calls libhdf5 on them: the child parses the memory image (libhdf5's core
 * driver, perun_load_image) and sends the parsed model back through the
 * pipe (perun_pack.h), so the file is opened once and a libhdf5 crash can
 * never reach the parent.  libhdf5 also loops forever on some corrupt
 * global heaps (H5HG_read -> H5C_protect), so the child gets a time limit:
 * 20 s plus 1 s per MB of file (a 1 h perun file of 6.4 MB reads in 0.3 s
 * here), or $ANCHORPOST_PERUN_TIMEOUT_S.
 */
#include "input/perun.h"
#include "input/perun_pack.h"

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

static void write_all(int fd, const char *p, size_t len)
{
	size_t off = 0;
	while (off < len) {
		ssize_t k = write(fd, p + off, len - off);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		off += (size_t)k;
	}
}

/* Child: parse the image; send the packed model up the pipe and exit 0,
 * or the error text and exit with -rc. */
static void __attribute__((noreturn)) child_walk(const char *buf, size_t len, int wfd)
{
	struct perun_file pf;
	struct em_error e;
	char *packed;
	size_t plen;
	int rc = perun_load_image(buf, len, &pf, &e);
	if (rc == 0 && (rc = perun_pack(&pf, &packed, &plen)) < 0)
		snprintf(e.msg, sizeof e.msg, "out of memory");
	if (rc < 0) {
		write_all(wfd, e.msg, strlen(e.msg));
		_exit(-rc > 0 && -rc < 126 ? -rc : EINVAL);
	}
	write_all(wfd, packed, plen);
	_exit(0);
}

/* Seconds the child may take for this file. */
static double time_limit_s(size_t len)
{
	const char *env = getenv("ANCHORPOST_PERUN_TIMEOUT_S");
	if (env && *env) {
		char *end;
		double v = strtod(env, &end);
		if (!*end && v > 0)
			return v;
	}
	return 20.0 + (double)len / 1e6;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Read what the child sends until it closes its end of the pipe (it
 * exited: at once, no polling interval) or limit_s passes.  Returns 0 at
 * the end, 1 on timeout, -ENOMEM.  *out is malloc'd, NUL-terminated. */
static int read_until_closed(int fd, double limit_s, char **out, size_t *len)
{
	double t0 = now_s();
	size_t cap = 1 << 16;
	*len = 0;
	if (!(*out = malloc(cap)))
		return -ENOMEM;
	for (;;) {
		double left = limit_s - (now_s() - t0);
		struct pollfd pf = {fd, POLLIN, 0};
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
		if (cap - *len < 4096) {
			char *nb = realloc(*out, cap * 2);
			if (!nb)
				return -ENOMEM;
			*out = nb;
			cap *= 2;
		}
		k = read(fd, *out + *len, cap - *len - 1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			(*out)[*len] = '\0';
			return 0;
		}
		*len += (size_t)k;
	}
}

static void reap(pid_t pid, int *status)
{
	while (waitpid(pid, status, 0) < 0) {
		if (errno != EINTR) {
			*status = 0;
			break;
		}
	}
}

/* What the child's end says: its exit, its signal or its parsed model. */
static int child_result(int status, const char *msg, size_t mlen, struct perun_file *pf, char *err, size_t errlen)
{
	unsigned maj = 0, min = 0, rel = 0;
	int rc;
	if (WIFSIGNALED(status)) {
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
	if ((rc = perun_unpack(msg, mlen, pf)) < 0)
		snprintf(err, errlen, rc == -ENOMEM ? "out of memory" :
			 "the process reading the file sent a malformed model (%zu bytes)", mlen);
	return rc;
}

int perun_load_guarded(const char *path, struct perun_file *pf, struct em_error *e)
{
	size_t errlen;
	char *err = diag_error_buf(e, &errlen);
	int fds[2], status, rc;
	char *buf, *msg = NULL;
	size_t len, mlen = 0;
	pid_t pid;

	memset(pf, 0, sizeof *pf);
	if ((rc = perun_read_bytes(path, &buf, &len, e)))
		return rc;
	if (pipe(fds) < 0)
		goto unguarded;
	/* Output buffered before the fork must not be written twice. */
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(fds[0]);
		close(fds[1]);
		goto unguarded;
	}
	if (pid == 0) {
		close(fds[0]);
		child_walk(buf, len, fds[1]);
	}
	close(fds[1]);
	double limit_s = time_limit_s(len);
	rc = read_until_closed(fds[0], limit_s, &msg, &mlen);
	close(fds[0]);
	if (rc) {
		unsigned maj = 0, min = 0, rel = 0;
		kill(pid, SIGKILL);
		reap(pid, &status);
		free(msg);
		free(buf);
		if (rc < 0) {
			snprintf(err, errlen, "out of memory");
			return rc;
		}
		H5get_libversion(&maj, &min, &rel);
		snprintf(err, errlen,
			 "libhdf5 %u.%u.%u did not finish reading this file in %.0f s (it loops on some corrupt files, see docs/perun-format.md; $ANCHORPOST_PERUN_TIMEOUT_S raises the limit)",
			 maj, min, rel, limit_s);
		return -ETIMEDOUT;
	}
	reap(pid, &status);
	rc = child_result(status, msg, mlen, pf, err, errlen);
	free(msg);
	free(buf);
	return rc;
unguarded:
	/* no pipe or no process to spare: parse here, unguarded */
	rc = perun_load_image(buf, len, pf, e);
	free(buf);
	return rc;
}
