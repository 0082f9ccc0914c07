/* input_file.c - non-blocking, regular-files-only inputs (see input_file.h). */
#include "input/input_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "util/file_ids.h"

static int set_err(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;
	if (errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

const char *input_file_kind(mode_t mode)
{
	if (S_ISDIR(mode))
		return "a directory";
	if (S_ISFIFO(mode))
		return "a FIFO (pipe)";
	if (S_ISCHR(mode))
		return "a character device";
	if (S_ISBLK(mode))
		return "a block device";
	if (S_ISSOCK(mode))
		return "a socket";
	if (S_ISREG(mode))
		return "a regular file";
	return "not a regular file";
}

/* Checks shared by _open and _check once st is known. */
static int admit(const char *path, const struct stat *st, int flags, char *err, size_t errlen)
{
	int rc;
	if (!S_ISREG(st->st_mode))
		return set_err(err, errlen, S_ISDIR(st->st_mode) ? -EISDIR : -EINVAL,
			       "is %s, not a regular file (inputs are read from files only)",
			       input_file_kind(st->st_mode));
	if (!(flags & INPUT_FILE_REMEMBER))
		return 0;
	rc = file_ids_note_input(path, st);
	if (rc == -EEXIST)
		return set_err(err, errlen, -EEXIST,
			       "is also the output of this command: refusing to overwrite an input; choose another output");
	/* The input is read anyway only if it is known: else no output
	 * could be checked against it. */
	if (rc)
		return set_err(err, errlen, rc, "out of memory");
	return 0;
}

int input_file_open(const char *path, int flags, struct em_error *e)
{
	size_t errlen;
	char *err = diag_error_buf(e, &errlen);
	struct stat st;
	int fd, rc, fl;

	/* O_NONBLOCK: opening a FIFO without a writer would block for good;
	 * on a regular file it changes nothing.  O_NOCTTY: a tty given as
	 * input must not become our controlling terminal. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return set_err(err, errlen, -errno, "cannot open: %s", strerror(errno));
	if (fstat(fd, &st) != 0) {
		rc = -errno;
		close(fd);
		return set_err(err, errlen, rc, "cannot stat: %s", strerror(-rc));
	}
	rc = admit(path, &st, flags, err, errlen);
	if (rc) {
		close(fd);
		return rc;
	}
	fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		(void)fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
	return fd;
}

int input_file_check(const char *path, int flags, struct em_error *e)
{
	size_t errlen;
	char *err = diag_error_buf(e, &errlen);
	struct stat st;
	if (stat(path, &st) != 0)
		return set_err(err, errlen, -errno, "cannot open: %s", strerror(errno));
	return admit(path, &st, flags, err, errlen);
}
