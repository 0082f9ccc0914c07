/*
 * input_file.h - open anchorpost's input files safely, and remember them.
 *
 * Why: open(2) of a FIFO blocks until a writer appears, and reading a
 * character device (/dev/zero, a tty) never ends, so any reader that
 * fopen()s a path the user gave could hang forever.  Every input here is
 * opened with O_NONBLOCK and refused with one line unless it is a regular
 * file (rings are mmap()ed, HDF5 seeks, py-spy profiles are read twice).
 *
 * Each input is also remembered (util/file_ids.h: device, inode,
 * canonical path) so that outfile.c refuses an output that would replace
 * one of this run's inputs ("-o run.ring"), and an input that is the
 * target of an output already opened (`samples` streams) is refused too.
 */
#ifndef ANCHORPOST_INPUT_FILE_H
#define ANCHORPOST_INPUT_FILE_H

#include <stddef.h>
#include <sys/stat.h>

#include "util/diag.h"

/* input_file_open/_check flags */
#define INPUT_FILE_REMEMBER 1 /* one of this run's inputs: no output may replace it */

/* Open path read-only without blocking; refuse anything but a regular
 * file.  Returns an fd (blocking mode restored, O_CLOEXEC) or a negative
 * errno with a one-line reason (without the path) in *e (e may be NULL). */
int input_file_open(const char *path, int flags, struct em_error *e);

/* The same checks for a reader that opens the file by name itself
 * (libhdf5, the ring reader): stat() only, never opens, never blocks.
 * Returns 0 or a negative errno with the reason in *e (e may be NULL). */
int input_file_check(const char *path, int flags, struct em_error *e);

/* What st is, in words ("a FIFO", "a character device", ...). */
const char *input_file_kind(mode_t mode);

#endif
