/*
 * faultshim.c - LD_PRELOAD before libanchor.so: fail (or kill -9 the
 * process at) the Nth call of one libc function made from libanchor.
 *
 *   FAULT_FN=mmap FAULT_NTH=2 [FAULT_MODE=fail|kill]
 *
 * Only calls whose return address lies in libanchor.so count, so the host
 * program's own calls are untouched.  A failed call returns what the real
 * one returns on error (-1 / MAP_FAILED / an errno value for
 * posix_fallocate) with errno EIO, or ENOSPC where that is the realistic
 * failure.  Used by tests/ring/t_host_faults.sh.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

static int g_count;

/* 1 when this call (from `caller`) is the one to fail. */
static int hit(const char *fn, void *caller)
{
	const char *want = getenv("FAULT_FN");
	const char *mode;
	Dl_info info;

	if (!want || strcmp(want, fn) != 0)
		return 0;
	if (!dladdr(caller, &info) || !info.dli_fname || !strstr(info.dli_fname, "libanchor"))
		return 0;
	if (++g_count != atoi(getenv("FAULT_NTH") ? getenv("FAULT_NTH") : "1"))
		return 0;
	mode = getenv("FAULT_MODE");
	if (mode && !strcmp(mode, "kill"))
		raise(SIGKILL);
	return 1;
}

#define NEXT(name) ((__typeof__(&name))dlsym(RTLD_NEXT, #name))
#define CALLER __builtin_return_address(0)

int open(const char *path, int flags, ...)
{
	va_list ap;
	mode_t m = 0;
	va_start(ap, flags);
	if (flags & (O_CREAT | __O_TMPFILE))
		m = (mode_t)va_arg(ap, int);
	va_end(ap);
	if (hit("open", CALLER)) {
		errno = EIO;
		return -1;
	}
	return NEXT(open)(path, flags, m);
}

int close(int fd)
{
	if (hit("close", CALLER)) {
		NEXT(close)(fd); /* close(2) releases the fd even when it fails */
		errno = EIO;
		return -1;
	}
	return NEXT(close)(fd);
}

int fstat(int fd, struct stat *st)
{
	if (hit("fstat", CALLER)) {
		errno = EIO;
		return -1;
	}
	return NEXT(fstat)(fd, st);
}

int fstatvfs(int fd, struct statvfs *st)
{
	if (hit("fstatvfs", CALLER)) {
		errno = EIO;
		return -1;
	}
	return NEXT(fstatvfs)(fd, st);
}

int ftruncate(int fd, off_t len)
{
	if (hit("ftruncate", CALLER)) {
		errno = EFBIG;
		return -1;
	}
	return NEXT(ftruncate)(fd, len);
}

int fallocate(int fd, int mode, off_t off, off_t len)
{
	if (hit("fallocate", CALLER)) {
		errno = ENOSPC;
		return -1;
	}
	return NEXT(fallocate)(fd, mode, off, len);
}

int posix_fallocate(int fd, off_t off, off_t len)
{
	if (hit("posix_fallocate", CALLER))
		return ENOSPC;
	return NEXT(posix_fallocate)(fd, off, len);
}

void *mmap(void *addr, size_t len, int prot, int flags, int fd, off_t off)
{
	if (hit("mmap", CALLER)) {
		errno = ENOMEM;
		return MAP_FAILED;
	}
	return NEXT(mmap)(addr, len, prot, flags, fd, off);
}

int madvise(void *addr, size_t len, int advice)
{
	if (hit("madvise", CALLER)) {
		errno = EINVAL;
		return -1;
	}
	return NEXT(madvise)(addr, len, advice);
}

int link(const char *a, const char *b)
{
	if (hit("link", CALLER)) {
		errno = EIO;
		return -1;
	}
	return NEXT(link)(a, b);
}

int linkat(int fa, const char *a, int fb, const char *b, int flags)
{
	if (hit("linkat", CALLER)) {
		errno = EIO;
		return -1;
	}
	return NEXT(linkat)(fa, a, fb, b, flags);
}

int unlink(const char *p)
{
	if (hit("unlink", CALLER)) {
		errno = EIO;
		return -1;
	}
	return NEXT(unlink)(p);
}

ssize_t pread(int fd, void *buf, size_t n, off_t off)
{
	if (hit("pread", CALLER)) {
		errno = EIO;
		return -1;
	}
	return NEXT(pread)(fd, buf, n, off);
}

ssize_t read(int fd, void *buf, size_t n)
{
	if (hit("read", CALLER)) {
		errno = EIO;
		return -1;
	}
	return NEXT(read)(fd, buf, n);
}

ssize_t write(int fd, const void *buf, size_t n)
{
	if (hit("write", CALLER)) {
		errno = EIO;
		return -1;
	}
	return NEXT(write)(fd, buf, n);
}

int getrlimit(__rlimit_resource_t r, struct rlimit *rl)
{
	if (hit("getrlimit", CALLER)) {
		errno = EIO;
		return -1;
	}
	return NEXT(getrlimit)(r, rl);
}

int sigaction(int sig, const struct sigaction *sa, struct sigaction *old)
{
	if (hit("sigaction", CALLER)) {
		errno = EINVAL;
		return -1;
	}
	return NEXT(sigaction)(sig, sa, old);
}

ssize_t readlink(const char *p, char *buf, size_t n)
{
	if (hit("readlink", CALLER)) {
		errno = EIO;
		return -1;
	}
	return NEXT(readlink)(p, buf, n);
}

char *getcwd(char *buf, size_t n)
{
	if (hit("getcwd", CALLER)) {
		errno = ENOENT;
		return NULL;
	}
	return NEXT(getcwd)(buf, n);
}

int gethostname(char *buf, size_t n)
{
	if (hit("gethostname", CALLER)) {
		errno = EIO;
		return -1;
	}
	return NEXT(gethostname)(buf, n);
}
