/* temp_name.c - owned temp names and the sweep of dead owners' temps (see temp_name.h). */
#include "output/temp_name.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Tags: outfile.c's random characters (12) and mkdtemp's XXXXXX (6). */
#define TAG_MIN 6
#define TAG_MAX 32

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static char g_key[9];     /* 8 hex digits */
static int g_key_complete; /* host, boot id and pid namespace all read */

struct swept {
	dev_t dev;
	ino_t ino;
	struct swept *next;
};
static struct swept *g_swept;
static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER; /* mring opens outputs from one thread, but be safe */

static uint32_t fnv1a(uint32_t h, const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)s[i];
		h *= 16777619u;
	}
	return h;
}

/* Read a small file or link into buf; its length, or -1. */
static long read_small(const char *path, int is_link, char *buf, size_t cap)
{
	ssize_t n;
	if (is_link) {
		n = readlink(path, buf, cap - 1);
	} else {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return -1;
		n = read(fd, buf, cap - 1);
		close(fd);
	}
	if (n <= 0)
		return -1;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	return n;
}

static void make_key(void)
{
	char host[HOST_NAME_MAX + 1] = "", boot[64], ns[64];
	long nb, nn;
	uint32_t h = 2166136261u;
	if (gethostname(host, sizeof host) != 0)
		host[0] = '\0';
	host[sizeof host - 1] = '\0';
	nb = read_small("/proc/sys/kernel/random/boot_id", 0, boot, sizeof boot);
	nn = read_small("/proc/self/ns/pid", 1, ns, sizeof ns);
	h = fnv1a(h, host, strlen(host));
	h = fnv1a(h, "/", 1);
	if (nb > 0)
		h = fnv1a(h, boot, (size_t)nb);
	h = fnv1a(h, "/", 1);
	if (nn > 0)
		h = fnv1a(h, ns, (size_t)nn);
	snprintf(g_key, sizeof g_key, "%08x", (unsigned)h);
	/* Without the boot id or the namespace a pid could be another
	 * boot's or container's: then nobody's temps are ours to judge. */
	g_key_complete = nb > 0 && nn > 0;
}

char *temp_name_prefix(const char *target)
{
	char *s;
	pthread_once(&g_once, make_key);
	if (asprintf(&s, "%s" TEMP_NAME_MARK "%ld-%s-", target, (long)getpid(), g_key) < 0)
		return NULL;
	return s;
}

/* pid when name is "<anything>.tmp.anchorpost-<pid>-<our key>-<tag>", else 0. */
static pid_t our_temp_pid(const char *name)
{
	const char *m = NULL, *p, *q;
	long pid = 0;
	size_t tag;
	for (q = strstr(name, TEMP_NAME_MARK); q; q = strstr(q + 1, TEMP_NAME_MARK))
		m = q; /* the last one: a target may itself look like a temp */
	if (!m)
		return 0;
	p = m + strlen(TEMP_NAME_MARK);
	for (q = p; *q >= '0' && *q <= '9' && q - p < 10; q++)
		pid = pid * 10 + (*q - '0');
	if (q == p || *q != '-' || pid <= 0 || pid > INT_MAX)
		return 0;
	q++;
	if (strncmp(q, g_key, 8) != 0 || q[8] != '-')
		return 0;
	q += 9;
	for (tag = 0; q[tag]; tag++) {
		char c = q[tag];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')))
			return 0;
	}
	return tag >= TAG_MIN && tag <= TAG_MAX ? (pid_t)pid : 0;
}

static int owner_is_gone(pid_t pid)
{
	/* EPERM: alive, another user's; 0: alive */
	return pid != getpid() && kill(pid, 0) != 0 && errno == ESRCH;
}

/* report's build directory: only regular files inside, each removed, then
 * the directory; anything else inside and it stays. */
static int remove_flat_dir(int dfd, const char *name)
{
	int fd = openat(dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	DIR *d;
	struct dirent *de;
	int ok = 1;
	if (fd < 0 || !(d = fdopendir(fd))) {
		if (fd >= 0)
			close(fd);
		return 0;
	}
	while ((de = readdir(d))) {
		struct stat st;
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode) ||
		    unlinkat(dirfd(d), de->d_name, 0) != 0)
			ok = 0;
	}
	closedir(d);
	return ok && unlinkat(dfd, name, AT_REMOVEDIR) == 0;
}

/* Once per directory per process. */
static int first_visit(const struct stat *ds)
{
	int first = 1;
	pthread_mutex_lock(&g_lock);
	for (struct swept *s = g_swept; s; s = s->next)
		if (s->dev == ds->st_dev && s->ino == ds->st_ino)
			first = 0;
	if (first) {
		struct swept *s = malloc(sizeof *s);
		if (s) {
			s->dev = ds->st_dev;
			s->ino = ds->st_ino;
			s->next = g_swept;
			g_swept = s;
		}
	}
	pthread_mutex_unlock(&g_lock);
	return first;
}

size_t temp_name_sweep(const char *dir)
{
	struct stat ds;
	struct dirent *de;
	size_t removed = 0;
	DIR *d;
	int saved = errno;

	pthread_once(&g_once, make_key);
	if (!g_key_complete || !(d = opendir(dir)))
		return 0;
	if (fstat(dirfd(d), &ds) != 0 || !first_visit(&ds)) {
		closedir(d);
		return 0;
	}
	while ((de = readdir(d))) {
		struct stat st;
		pid_t pid = our_temp_pid(de->d_name);
		if (!pid || !owner_is_gone(pid))
			continue;
		if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || st.st_uid != geteuid())
			continue;
		if (S_ISREG(st.st_mode))
			removed += unlinkat(dirfd(d), de->d_name, 0) == 0;
		else if (S_ISDIR(st.st_mode))
			removed += remove_flat_dir(dirfd(d), de->d_name);
	}
	closedir(d);
	errno = saved;
	return removed;
}
