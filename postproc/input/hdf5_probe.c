/* hdf5_probe.c - HDF5 signature and stored end of file (see hdf5_probe.h). */
#include "input/hdf5_probe.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static const unsigned char g_sig[8] = {0x89, 'H', 'D', 'F', '\r', '\n', 0x1a, '\n'};

/* Bytes enough for any superblock's fixed fields up to its end-of-file
 * address: version 1's 28 bytes plus three addresses of at most 32 bytes. */
#define SUPER_HEAD 128

/* Where the bytes come from: a file (fd) or memory (buf). */
struct src {
	int fd;
	const unsigned char *buf;
	uint64_t size;
};

/* Read up to n bytes at off; the count read (short at the end), or -errno. */
static long src_read(const struct src *s, uint64_t off, unsigned char *dst, size_t n)
{
	size_t got = 0;
	if (off >= s->size)
		return 0;
	if (n > s->size - off)
		n = (size_t)(s->size - off);
	if (s->buf) {
		memcpy(dst, s->buf + off, n);
		return (long)n;
	}
	while (got < n) {
		ssize_t k = pread(s->fd, dst + got, n - got, (off_t)(off + got));
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break; /* shrank since fstat */
		got += (size_t)k;
	}
	return (long)got;
}

/* Little-endian address of w bytes; UINT64_MAX for the undefined address
 * (all bits set) and for one that does not fit 64 bits. */
static uint64_t decode_addr(const unsigned char *p, unsigned w)
{
	uint64_t v = 0;
	int all_ones = 1;
	for (unsigned i = 0; i < w; i++)
		all_ones &= p[i] == 0xff;
	if (all_ones)
		return UINT64_MAX;
	for (unsigned i = w; i-- > 0;) {
		if (i >= 8 && p[i])
			return UINT64_MAX;
		if (i < 8)
			v = (v << 8) | p[i];
	}
	return v;
}

__attribute__((format(printf, 4, 5))) static int set_err(char *err, size_t errlen, int rc, const char *fmt, ...)
{
	va_list ap;
	if (errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return rc;
}

/* The superblock at p->sig_off: version, size of offsets, end of file. */
static int read_super(const struct src *s, struct hdf5_probe *p, char *err, size_t errlen)
{
	unsigned char h[SUPER_HEAD];
	unsigned long long at = (unsigned long long)p->sig_off;
	unsigned w, eof_at;
	long n = src_read(s, p->sig_off, h, sizeof h);
	if (n < 0)
		return set_err(err, errlen, (int)n, "read failed: %s", strerror((int)-n));
	if (n < 9)
		return set_err(err, errlen, -EINVAL, "HDF5 superblock at byte %llu is cut short (truncated file?)", at);
	p->version = h[8];
	switch (p->version) {
	case 0:
	case 1:
		w = n > 13 ? h[13] : 0;
		/* fixed fields (24 or 28 bytes), then base and free-space addresses */
		eof_at = (p->version == 0 ? 24u : 28u) + 2 * w;
		break;
	case 2:
	case 3:
		w = n > 9 ? h[9] : 0;
		eof_at = 12 + 2 * w;
		break;
	default:
		return set_err(err, errlen, -EINVAL,
			       "HDF5 superblock version %u at byte %llu: libhdf5 knows versions 0 to 3 (corrupt file?)",
			       p->version, at);
	}
	if (w != 2 && w != 4 && w != 8 && w != 16 && w != 32)
		return set_err(err, errlen, -EINVAL,
			       "HDF5 superblock at byte %llu: size of offsets %u (HDF5 allows 2, 4, 8, 16, 32: corrupt file)",
			       at, w);
	if ((long)(eof_at + w) > n)
		return set_err(err, errlen, -EINVAL, "HDF5 superblock at byte %llu is cut short (truncated file?)", at);
	p->stored_eof = decode_addr(h + eof_at, w);
	if (p->stored_eof == UINT64_MAX)
		return set_err(err, errlen, -EINVAL,
			       "HDF5 superblock at byte %llu holds no valid end-of-file address (corrupt file)", at);
	return 0;
}

static int probe(const struct src *s, struct hdf5_probe *p, char *err, size_t errlen)
{
	unsigned char b[8];
	unsigned tried = 0;
	memset(p, 0, sizeof *p);
	/* H5FD_locate_signature's order: 0, then 512, 1024, ... below the end */
	for (uint64_t off = 0; off + 8 <= s->size; off = off ? off * 2 : 512) {
		long n = src_read(s, off, b, sizeof b);
		tried++;
		if (n < 0)
			return set_err(err, errlen, (int)n, "read failed: %s", strerror((int)-n));
		if (n == 8 && !memcmp(b, g_sig, 8)) {
			p->sig_off = off;
			return read_super(s, p, err, errlen);
		}
		if (off > UINT64_MAX / 2)
			break;
	}
	if (!tried)
		return set_err(err, errlen, -ENOENT, "not an HDF5 file (no HDF5 signature: %llu bytes)",
			       (unsigned long long)s->size);
	return set_err(err, errlen, -ENOENT,
		       "not an HDF5 file (no HDF5 signature at byte 0%s, where libhdf5 looks; %llu bytes)",
		       tried > 1 ? " nor at any power of two from 512 below the end" : "",
		       (unsigned long long)s->size);
}

int hdf5_probe_fd(int fd, uint64_t size, struct hdf5_probe *p, struct em_error *e)
{
	size_t errlen;
	char *err = diag_error_buf(e, &errlen);
	struct src s = {fd, NULL, size};
	return probe(&s, p, err, errlen);
}

int hdf5_probe_buf(const void *buf, size_t len, struct hdf5_probe *p, struct em_error *e)
{
	size_t errlen;
	char *err = diag_error_buf(e, &errlen);
	struct src s = {-1, buf, len};
	return probe(&s, p, err, errlen);
}
