/*
 * hdf5_probe.h - find an HDF5 file's superblock and the size it claims,
 * reading a few bytes at the offsets libhdf5 itself looks at.
 *
 * Why: the perun reader reads a file whole before libhdf5 sees it
 * (perun_guard.c parses the bytes in a child).  A 2 GiB sparse file (or a
 * log, a core dump) given as perun's input was read whole, 2.1 GB RSS and
 * 3-57 s, only to be told "no HDF5 signature".  libhdf5 looks for the
 * 8-byte signature at byte 0 and at every power of two from 512 below the
 * file's size (H5FD_locate_signature in H5FDint.c), and never addresses a
 * byte past the end-of-file address its superblock stores (H5F__super_read
 * refuses a file shorter than that address as truncated).  So at most 33
 * small reads decide whether the file is HDF5 at all, and the superblock
 * says how many bytes of it libhdf5 can use: the rest need not be read.
 *
 * The superblock (HDF5 file format spec, "Superblock"): signature, a
 * version byte, then for versions 0 and 1 (16 and 20 bytes of version
 * numbers and tree parameters, size of offsets at byte 13) and for
 * versions 2 and 3 (size of offsets at byte 9) the base address, one more
 * address and the end-of-file address, each "size of offsets" bytes,
 * little-endian; all bits set is the undefined address.
 */
#ifndef ANCHORPOST_HDF5_PROBE_H
#define ANCHORPOST_HDF5_PROBE_H

#include <stddef.h>
#include <stdint.h>

#include "util/diag.h"

struct hdf5_probe {
	uint64_t sig_off;    /* byte where the signature (and superblock) starts */
	unsigned version;    /* superblock version, 0..3 */
	uint64_t stored_eof; /* the end-of-file address: bytes libhdf5 may address
			      * (absolute, from the file's first byte) */
};

/* Probe an open file of size bytes with pread(2).  Returns 0 with *p
 * filled; -ENOENT when no offset holds the signature; -EINVAL when the
 * superblock after it is unusable (an unknown version, a bad size of
 * offsets, an undefined end-of-file address); -errno when a read fails.
 * *e gets one line without the path (file NULL) in every failing case. */
int hdf5_probe_fd(int fd, uint64_t size, struct hdf5_probe *p, struct em_error *e);

/* The same over bytes already in memory (the image libhdf5 will parse). */
int hdf5_probe_buf(const void *buf, size_t len, struct hdf5_probe *p, struct em_error *e);

#endif
