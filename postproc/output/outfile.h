/*
 * outfile.h - all-or-nothing output files that never replace what is not ours.
 *
 * A regular file (or a path that does not exist yet) is written to a temp
 * file beside it and renamed over it only on commit, so readers never see
 * a half-written CSV.  The temp name carries random characters and is
 * created with O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600 (then the usual
 * 0666 & ~umask), so a symlink planted in a shared directory is never
 * followed.  Temps are removed on failure, on diag_fatal(), on exit without commit,
 * and on SIGINT/SIGTERM/SIGHUP/SIGPIPE (the handler unlinks them and
 * re-raises the signal).
 *
 * Anything that is not a regular file - a character device (/dev/null), a
 * FIFO, /dev/stdout or another path through /proc/PID/fd - is written to
 * directly and never replaced.  A symlink to a regular file replaces the
 * file it points to, not the link.  An output that is one of this run's
 * inputs (same inode or same path) is refused with one line before
 * anything is written.  Path "-" (or NULL) writes to stdout.
 */
#ifndef ANCHORPOST_OUTFILE_H
#define ANCHORPOST_OUTFILE_H

#include <stdio.h>

struct outfile {
	FILE *fp;
	char *path;     /* the file replaced on commit; NULL for stdout and streams */
	char *tmp_path; /* temp path, NULL for stdout and streams */
	char *shown;    /* path as given, for messages and the input registry */
	int stream;     /* written directly (device, FIFO, /proc fd) */
	struct outfile *next_open;
};

#include "util/diag.h"

/* Open.  Returns 0, or a negative errno with *e naming path (nothing left
 * open). */
int outfile_create(struct outfile *o, const char *path, struct em_error *e);

/* Flush, fsync-free close and rename into place.  Returns 0, or a negative
 * errno with *e naming path (the output given to outfile_create) and the
 * temp removed. */
int outfile_finish(struct outfile *o, const char *path, struct em_error *e);

/* Remove the temp file (if any) and forget it. */
void outfile_abort(struct outfile *o);

/* 1 when path is written to directly ("-", a device, a FIFO, a path
 * through /proc): side files named after it (PATH.alignment.txt) must not
 * be created beside it (/dev/null.alignment.txt). */
int outfile_is_stream(const char *path);

/* Abort every open outfile (called by cmd_fatal.h's diag_fatal). */
void outfile_abort_all(void);

#endif
