/* input_file.c - non-blocking, regular-files-only inputs (see input_file.h). */
#include "input/input_file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* A file this run reads or writes: identity by inode when it exists, and
 * by canonical path (an output that does not exist yet has no inode). */
struct known {
	char *raw, *canon;
	dev_t dev;
	ino_t ino;
	int has_id;
	struct known *next;
};

static struct known *g_inputs, *g_outputs;
/* mring loads rings on worker threads */
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

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

/* realpath(path), or realpath(dirname) + "/" + basename for a path that
 * does not exist yet, or a copy of path; NULL only when out of memory. */
static char *canon_path(const char *path)
{
	char *r = realpath(path, NULL), *dir, *slash, *out;
	const char *base;
	if (r)
		return r;
	dir = strdup(path);
	if (!dir)
		return NULL;
	slash = strrchr(dir, '/');
	if (slash) {
		*slash = '\0';
		base = path + (slash - dir) + 1;
		r = realpath(slash == dir ? "/" : dir, NULL);
	} else {
		base = path;
		r = realpath(".", NULL);
	}
	free(dir);
	if (!r)
		return strdup(path);
	if (asprintf(&out, "%s/%s", strcmp(r, "/") ? r : "", base) < 0)
		out = NULL;
	free(r);
	return out;
}

/* 0 or -ENOMEM (nothing remembered). */
static int remember(struct known **list, const char *path, const struct stat *st)
{
	struct known *k = calloc(1, sizeof *k);
	if (!k)
		return -ENOMEM;
	k->raw = strdup(path);
	k->canon = canon_path(path);
	if (!k->raw || !k->canon) {
		free(k->raw);
		free(k->canon);
		free(k);
		return -ENOMEM;
	}
	if (st) {
		k->dev = st->st_dev;
		k->ino = st->st_ino;
		k->has_id = 1;
	}
	k->next = *list;
	*list = k;
	return 0;
}

static const char *find(const struct known *list, const char *path, const struct stat *st)
{
	char *canon = NULL;
	const char *hit = NULL;
	for (const struct known *k = list; k && !hit; k = k->next) {
		if (st && k->has_id && k->dev == st->st_dev && k->ino == st->st_ino) {
			hit = k->canon ? k->canon : "(input)";
			break;
		}
		if (!canon)
			canon = canon_path(path);
		if (canon && k->canon && strcmp(canon, k->canon) == 0)
			hit = k->canon;
	}
	free(canon);
	return hit;
}

/* Checks shared by _open and _check once st is known. */
static int admit(const char *path, const struct stat *st, int flags, char *err, size_t errlen)
{
	const char *out;
	int rc = 0;
	if (!S_ISREG(st->st_mode))
		return set_err(err, errlen, S_ISDIR(st->st_mode) ? -EISDIR : -EINVAL,
			       "is %s, not a regular file (inputs are read from files only)",
			       input_file_kind(st->st_mode));
	if (!(flags & INPUT_FILE_REMEMBER))
		return 0;
	pthread_mutex_lock(&g_lock);
	out = find(g_outputs, path, st);
	if (!out)
		rc = remember(&g_inputs, path, st);
	pthread_mutex_unlock(&g_lock);
	if (out)
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

const char *input_file_same_input(const char *path, const struct stat *st)
{
	const char *hit;
	pthread_mutex_lock(&g_lock);
	hit = find(g_inputs, path, st); /* entries are never freed: the pointer stays valid */
	pthread_mutex_unlock(&g_lock);
	return hit;
}

void input_file_note_output(const char *path, const struct stat *st)
{
	pthread_mutex_lock(&g_lock);
	(void)remember(&g_outputs, path, st); /* lost: only a later input check */
	pthread_mutex_unlock(&g_lock);
}

void input_file_forget_output(const char *path)
{
	pthread_mutex_lock(&g_lock);
	for (struct known **p = &g_outputs; *p; p = &(*p)->next) {
		if ((*p)->raw && strcmp(path, (*p)->raw) == 0) {
			struct known *k = *p;
			*p = k->next;
			free(k->raw);
			free(k->canon);
			free(k);
			break;
		}
	}
	pthread_mutex_unlock(&g_lock);
}
