/* outfile.c - temp file + rename, or direct writes to streams (see outfile.h). */
#include "output/outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "output/temp_name.h"
#include "util/diag.h"
#include "util/file_ids.h"

/* Outfiles with a temp on disk.  Changed only with g_sigs blocked, so the
 * signal handler always walks a consistent list. */
static struct outfile *g_open;
static pid_t g_owner; /* a forked child must not unlink its parent's temps */
static int g_hold;    /* outfile_hold(): renames wait for outfile_release() */

static const int g_sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};

static void block_sigs(sigset_t *old)
{
	sigset_t set;
	sigemptyset(&set);
	for (size_t i = 0; i < sizeof g_sigs / sizeof g_sigs[0]; i++)
		sigaddset(&set, g_sigs[i]);
	sigprocmask(SIG_BLOCK, &set, old);
}

static void restore_sigs(const sigset_t *old)
{
	sigprocmask(SIG_SETMASK, old, NULL);
}

/* Async-signal-safe: unlink, signal, sigprocmask, raise only. */
static void on_fatal_signal(int sig)
{
	sigset_t set;
	if (getpid() == g_owner)
		for (struct outfile *o = g_open; o; o = o->next_open)
			if (o->tmp_path)
				unlink(o->tmp_path);
	signal(sig, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig); /* die of the signal, as without us */
}

/* Take over the signals that would kill us as they stand; a signal with
 * its own handler or ignored keeps it (that code decides what happens). */
static void install_cleanup(void)
{
	g_owner = getpid();
	for (size_t i = 0; i < sizeof g_sigs / sizeof g_sigs[0]; i++) {
		struct sigaction cur, sa;
		if (sigaction(g_sigs[i], NULL, &cur) != 0 || cur.sa_handler != SIG_DFL ||
		    (cur.sa_flags & SA_SIGINFO))
			continue;
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = on_fatal_signal;
		sigemptyset(&sa.sa_mask);
		for (size_t k = 0; k < sizeof g_sigs / sizeof g_sigs[0]; k++)
			sigaddset(&sa.sa_mask, g_sigs[k]);
		sigaction(g_sigs[i], &sa, NULL);
	}
}

static void list_remove(struct outfile *o)
{
	for (struct outfile **p = &g_open; *p; p = &(*p)->next_open) {
		if (*p == o) {
			*p = o->next_open;
			break;
		}
	}
	o->next_open = NULL;
}

/* Directory part of path ("." when none); malloc'd. */
static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');
	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

/* Does path reach its file through /proc (a /proc/PID/fd/N link such as
 * /dev/stdout, /dev/fd/1)?  Such a file is the caller's open stream; it is
 * written to, never replaced.  Unknown counts as yes: never replace.
 * *own_fd: N when the link is one of our own fds, else -1. */
static int via_proc_fd(const char *path, int *own_fd)
{
	char cur[PATH_MAX], link[PATH_MAX], self[64];
	*own_fd = -1;
	snprintf(self, sizeof self, "/proc/%ld/fd", (long)getpid());
	if (snprintf(cur, sizeof cur, "%s", path) >= (int)sizeof cur)
		return 1;
	for (int hop = 0; hop < 40; hop++) {
		struct stat st;
		char *dir = dir_of(cur), *real = dir ? realpath(dir, NULL) : NULL;
		ssize_t n;
		int proc = real && strncmp(real, "/proc/", 6) == 0;
		if (real && strcmp(real, self) == 0) {
			const char *base = strrchr(cur, '/');
			char *end;
			long fd = strtol(base ? base + 1 : cur, &end, 10);
			if (!*end && fd >= 0 && fd < INT_MAX)
				*own_fd = (int)fd;
		}
		free(real);
		if (proc || lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode)) {
			free(dir);
			return proc;
		}
		n = readlink(cur, link, sizeof link - 1);
		if (n < 0) {
			free(dir);
			return 1;
		}
		link[n] = '\0';
		if (link[0] == '/')
			n = snprintf(cur, sizeof cur, "%s", link);
		else
			n = snprintf(cur, sizeof cur, "%s/%s", dir ? dir : ".", link);
		free(dir);
		if (n >= (ssize_t)sizeof cur)
			return 1;
	}
	return 1;
}

static int via_proc(const char *path)
{
	int fd;
	return via_proc_fd(path, &fd);
}

/* A symlink planted by someone else in a sticky, world-writable directory
 * (/tmp) is not followed: what fs.protected_symlinks does, which not every
 * system turns on. */
static int foreign_sticky_link(const char *path, const struct stat *lst)
{
	struct stat ds;
	char *dir = dir_of(path);
	int bad = 0;
	if (dir && stat(dir, &ds) == 0 && (ds.st_mode & S_ISVTX) && (ds.st_mode & S_IWOTH))
		bad = lst->st_uid != geteuid() && lst->st_uid != ds.st_uid;
	free(dir);
	return bad;
}

static mode_t file_mode(void)
{
	mode_t um = umask(0);
	umask(um);
	return (mode_t)(0666 & ~um);
}

static void random_tag(char *buf, size_t n)
{
	static const char al[] = "abcdefghijklmnopqrstuvwxyz0123456789";
	unsigned char r[32];
	size_t i;
	if (n > sizeof r)
		n = sizeof r;
	if (getrandom(r, n, GRND_NONBLOCK) != (ssize_t)n) {
		/* no entropy yet: the name need not be secret, O_EXCL is the guard */
		uint64_t x = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)buf;
		for (i = 0; i < n; i++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			r[i] = (unsigned char)(x >> 56);
		}
	}
	for (i = 0; i < n; i++)
		buf[i] = al[r[i] % (sizeof al - 1)];
	buf[n] = '\0';
}

/* "<prefix><tag>" (temp_name.h) opened O_EXCL|O_NOFOLLOW, 0600: an fd and
 * *tmp_out, or -errno. */
static int open_temp(const char *prefix_of, char **tmp_out)
{
	char tag[13], *pre = temp_name_prefix(prefix_of), *tmp;
	int fd, n;
	if (!pre)
		return -ENOMEM;
	random_tag(tag, 12);
	n = asprintf(&tmp, "%s%s", pre, tag);
	free(pre);
	if (n < 0)
		return -ENOMEM;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
	if (fd < 0) {
		n = errno;
		free(tmp);
		return -n;
	}
	*tmp_out = tmp;
	return fd;
}

/* Create the temp beside target, named for this process (temp_name.h), after
 * removing the temps that killed anchorposts left in that directory. */
static int create_temp(const char *target, char **tmp_out)
{
	char *dir = dir_of(target), *dir_slash = NULL;
	int fd = -EEXIST;
	if (!dir)
		return -ENOMEM;
	temp_name_sweep(dir);
	for (int tries = 0; tries < 100 && fd == -EEXIST; tries++) {
		fd = open_temp(target, tmp_out);
		if (fd == -ENAMETOOLONG) { /* target's name is near NAME_MAX: a short name in its directory */
			if (!dir_slash && asprintf(&dir_slash, "%s/", dir) < 0) {
				dir_slash = NULL;
				fd = -ENOMEM;
				break;
			}
			fd = open_temp(dir_slash, tmp_out);
		}
	}
	free(dir_slash);
	free(dir);
	return fd;
}

static int refuse_if_input(const char *shown, const char *path, const struct stat *st, struct em_error *e)
{
	const char *in = file_ids_same_input(path, st);
	if (in)
		return diag_error(e, -EEXIST, shown,
				  "is also an input of this command (%s): refusing to overwrite it; choose another "
				  "output", in);
	return 0;
}

/* Non-regular target: write straight into it.  One of our own fds
 * (/dev/stdout) is dup()ed, so the output shares its offset as `>&1` would
 * (a reopen would start at 0 and overwrite what stdout wrote). */
static int open_stream(struct outfile *o, const char *path, struct em_error *e)
{
	struct stat st;
	int fd, own, rc;
	fflush(stdout); /* our own stdout may be the same stream */
	if (via_proc_fd(path, &own) && own >= 0)
		fd = fcntl(own, F_DUPFD_CLOEXEC, 3);
	else
		fd = open(path, O_WRONLY | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return diag_error(e, -errno, path, "cannot write: %s", strerror(errno));
	if (fstat(fd, &st) == 0 && (rc = refuse_if_input(path, path, &st, e))) {
		close(fd);
		return rc;
	}
	o->fp = fdopen(fd, "w");
	if (!o->fp) {
		rc = errno;
		close(fd);
		return diag_error(e, -rc, path, "cannot write: %s", strerror(rc));
	}
	o->stream = 1;
	return 0;
}

int outfile_is_stream(const char *path)
{
	struct stat lst, st;
	if (!path || strcmp(path, "-") == 0)
		return 1;
	if (lstat(path, &lst) != 0 || S_ISREG(lst.st_mode) || S_ISDIR(lst.st_mode))
		return 0;
	if (!S_ISLNK(lst.st_mode))
		return 1;
	if (stat(path, &st) != 0)
		return 0;
	return !S_ISREG(st.st_mode) || via_proc(path);
}

/* Where a path that exists is written: *target the regular file to replace
 * (malloc'd), or 1 when it is a stream opened into o, or a negative errno. */
static int resolve_existing(struct outfile *o, const char *path, const struct stat *lst, char **target,
			    struct stat *st, const struct stat **have, struct em_error *e)
{
	if (S_ISREG(lst->st_mode)) {
		*have = lst;
		return (*target = strdup(path)) ? 0 : diag_error(e, -ENOMEM, path, "out of memory");
	}
	if (S_ISDIR(lst->st_mode))
		return diag_error(e, -EISDIR, path, "is a directory");
	if (!S_ISLNK(lst->st_mode)) {
		int rc = open_stream(o, path, e); /* device, FIFO, socket: never replaced */
		return rc ? rc : 1;
	}
	if (foreign_sticky_link(path, lst))
		return diag_error(e, -ELOOP, path,
				  "is a symlink owned by another user in a sticky directory: not followed");
	if (stat(path, st) != 0)
		return diag_error(e, -errno, path, "cannot write through the symlink: %s", strerror(errno));
	if (S_ISDIR(st->st_mode))
		return diag_error(e, -EISDIR, path, "is a directory");
	if (!S_ISREG(st->st_mode) || via_proc(path)) {
		int rc = open_stream(o, path, e);
		return rc ? rc : 1;
	}
	*target = realpath(path, NULL); /* replace the file, keep the link */
	if (!*target)
		return diag_error(e, -errno, path, "cannot resolve the symlink: %s", strerror(errno));
	*have = st;
	return 0;
}

int outfile_create(struct outfile *o, const char *path, struct em_error *e)
{
	struct stat lst, st;
	const struct stat *have = NULL;
	char *target = NULL;
	sigset_t old;
	int fd, rc;

	memset(o, 0, sizeof *o);
	if (!path || strcmp(path, "-") == 0) {
		o->fp = stdout;
		return 0;
	}
	o->shown = strdup(path);
	if (!o->shown)
		return diag_error(e, -ENOMEM, path, "out of memory");
	if (lstat(path, &lst) != 0) {
		if (errno != ENOENT) {
			rc = diag_error(e, -errno, path, "cannot write: %s", strerror(errno));
			goto fail;
		}
		if (!(target = strdup(path))) { /* a new file */
			rc = diag_error(e, -ENOMEM, path, "out of memory");
			goto fail;
		}
	} else if ((rc = resolve_existing(o, path, &lst, &target, &st, &have, e)) != 0) {
		if (rc > 0)
			return 0; /* a stream, open */
		goto fail;
	}
	if ((rc = refuse_if_input(path, target, have, e)))
		goto fail;

	block_sigs(&old);
	install_cleanup();
	fd = create_temp(target, &o->tmp_path);
	if (fd < 0) {
		restore_sigs(&old);
		rc = diag_error(e, fd, path, "cannot write: %s", strerror(-fd));
		goto fail;
	}
	o->path = target;
	o->next_open = g_open;
	g_open = o;
	restore_sigs(&old);

	file_ids_note_output(o->shown, have);
	if (fchmod(fd, file_mode()) != 0 || !(o->fp = fdopen(fd, "w"))) {
		int err = errno;
		if (!o->fp)
			close(fd);
		outfile_abort(o);
		return diag_error(e, -err, path, "cannot write: %s", strerror(err));
	}
	setvbuf(o->fp, NULL, _IOFBF, 1 << 20);
	return 0;
fail:
	/* not yet noted as an output: nothing to forget in input_file */
	free(target);
	free(o->shown);
	o->shown = NULL;
	return rc;
}

static void forget(struct outfile *o)
{
	if (o->shown)
		file_ids_forget_output(o->shown);
	free(o->tmp_path);
	free(o->path);
	free(o->shown);
	o->tmp_path = o->path = o->shown = NULL;
}

/* Why a write to fd failed.  errno after ferror() may come from a later
 * call; a regular file that reached RLIMIT_FSIZE (ulimit -f) is EFBIG
 * whatever errno says: the kernel writes up to the limit, then refuses. */
static int write_errno(int fd, int err)
{
	struct rlimit rl;
	struct stat st;
	if (fd >= 0 && getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY && fstat(fd, &st) == 0 &&
	    S_ISREG(st.st_mode) && (rlim_t)st.st_size >= rl.rlim_cur)
		return EFBIG;
	return err ? err : EIO;
}

static int write_failed(struct em_error *e, int err, const char *path)
{
	struct rlimit rl;
	if (err == EFBIG && getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		return diag_error(e, -err, path, "write failed: %s (the file size limit, ulimit -f, is %llu bytes)",
				  strerror(err), (unsigned long long)rl.rlim_cur);
	return diag_error(e, -err, path, "write failed: %s", strerror(err));
}

int outfile_error(struct outfile *o, const char *path, struct em_error *e)
{
	if (!o->fp || !ferror(o->fp))
		return 0;
	return write_failed(e, write_errno(fileno(o->fp), errno), path);
}

/* Move o, written and closed, to the held list: a heap copy, so that the
 * caller's struct may go out of scope; the temp stays until release. */
static int hold(struct outfile *o, const char *path, struct em_error *e)
{
	sigset_t old;
	struct outfile *h = malloc(sizeof *h);
	if (!h) {
		outfile_abort(o);
		return diag_error(e, -ENOMEM, path, "out of memory");
	}
	block_sigs(&old);
	list_remove(o);
	*h = *o;
	h->held = 1;
	h->next_open = g_open;
	g_open = h;
	restore_sigs(&old);
	memset(o, 0, sizeof *o); /* owns nothing now */
	return 0;
}

static char g_failed[PATH_MAX]; /* the output a failed release names */

void outfile_hold(void)
{
	g_hold = 1;
}

int outfile_release(struct em_error *e)
{
	struct outfile *v[256], *o;
	size_t n = 0;
	int rc = 0;
	g_hold = 0;
	for (;;) {
		/* oldest first: the list is newest first */
		struct outfile *last = NULL;
		n = 0;
		for (o = g_open; o; o = o->next_open)
			if (o->held && n < sizeof v / sizeof *v)
				v[n++] = o;
		if (!n)
			return rc;
		last = v[n - 1];
		if (rc == 0) {
			sigset_t old;
			block_sigs(&old);
			if (rename(last->tmp_path, last->path) != 0) {
				int err = errno;
				restore_sigs(&old);
				/* e->file must outlive last, aborted below */
				snprintf(g_failed, sizeof g_failed, "%s", last->shown ? last->shown : "(output)");
				rc = diag_error(e, -err, g_failed, "cannot rename temp file into place: %s",
						strerror(err));
				outfile_abort(last);
				continue;
			}
			list_remove(last);
			restore_sigs(&old);
			forget(last);
			free(last);
		} else {
			outfile_abort(last); /* one rename failed: none of the rest */
		}
	}
}

/* Errors name path, the caller's string (o->shown is freed on failure). */
int outfile_finish(struct outfile *o, const char *path, struct em_error *e)
{
	sigset_t old;
	if (o->fp == stdout) {
		if (fflush(stdout) != 0 || ferror(stdout))
			return write_failed(e, write_errno(STDOUT_FILENO, errno), "(stdout)");
		return 0;
	}
	if (!o->fp)
		return 0;
	errno = 0;
	if (ferror(o->fp) | fflush(o->fp)) {
		int err = write_errno(fileno(o->fp), errno);
		fclose(o->fp);
		o->fp = NULL;
		outfile_abort(o);
		return write_failed(e, err, path);
	}
	if (fclose(o->fp)) {
		int err = errno ? errno : EIO;
		o->fp = NULL;
		outfile_abort(o);
		return write_failed(e, err, path);
	}
	o->fp = NULL;
	if (o->stream) {
		forget(o);
		return 0;
	}
	if (g_hold)
		return hold(o, path, e);
	block_sigs(&old);
	if (rename(o->tmp_path, o->path) != 0) {
		int err = errno;
		restore_sigs(&old);
		outfile_abort(o);
		return diag_error(e, -err, path, "cannot rename temp file into place: %s", strerror(err));
	}
	list_remove(o);
	restore_sigs(&old);
	forget(o);
	return 0;
}

int outfile_done(struct outfile *o, struct em_error *e)
{
	char *shown;
	int rc;
	if (!o->shown)
		return outfile_finish(o, "(stdout)", e);
	/* o->shown is freed by a failing finish: the message keeps a copy. */
	if (!(shown = strdup(o->shown))) {
		outfile_abort(o);
		return diag_error(e, -ENOMEM, NULL, "out of memory");
	}
	if ((rc = outfile_finish(o, shown, e)))
		diag_error_keep_file(e);
	free(shown);
	return rc;
}

void outfile_abort(struct outfile *o)
{
	sigset_t old;
	if (o->fp && o->fp != stdout)
		fclose(o->fp);
	o->fp = NULL;
	block_sigs(&old);
	/* a forked child that exits or fails leaves its parent's temps alone */
	if (o->tmp_path && getpid() == g_owner)
		unlink(o->tmp_path);
	list_remove(o);
	restore_sigs(&old);
	forget(o);
	if (o->held)
		free(o);
}

void outfile_abort_all(void)
{
	while (g_open)
		outfile_abort(g_open);
}
