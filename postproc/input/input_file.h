/*
 * input_file.h - open anchorpost's input files safely, and remember them.
 *
 * Why: open(2) of a FIFO blocks until a writer appears, and reading a
 * character device (/dev/zero, a tty) never ends, so any reader that
 * fopen()s a path the user gave could hang forever.  Every input here is
 * opened with O_NONBLOCK and refused with one line unless it is a regular
 * file (rings are mmap()ed, HDF5 seeks, py-spy profiles are read twice).
 *
 * Each input is also remembered (device, inode, canonical path) so that
 * outfile.c refuses an output that would replace one of this run's inputs
 * ("-o run.ring"), and each output target is remembered so that an input
 * read after its output was opened (`samples` streams) is refused too.
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

/* The remembered input that is the same file as st (st may be NULL when
 * the output does not exist yet) or the same canonical path as path, or
 * NULL.  Used by outfile_open. */
const char *input_file_same_input(const char *path, const struct stat *st);

/* Remember an output target (st NULL when it does not exist yet), so an
 * input opened later that is the same file is refused. */
void input_file_note_output(const char *path, const struct stat *st);

/* Forget an output target again (committed or aborted). */
void input_file_forget_output(const char *path);

#endif
