/*
 * outfile.h - all-or-nothing output files that never replace what is not ours.
 *
 * A regular file (or a path that does not exist yet) is written to a temp
 * file beside it and renamed over it only on commit, so readers never see
 * a half-written CSV.  The temp name says whose it is and carries random
 * characters (temp_name.h: FILE.tmp.anchorpost-PID-KEY-TAG) and is
 * created with O_CREAT|O_EXCL|O_NOFOLLOW, mode 0600 (then the usual
 * 0666 & ~umask), so a symlink planted in a shared directory is never
 * followed.  Temps are removed on failure, by the command that fails
 * (outfile_abort_all: cmd_fatal.h), by main for any output a command left
 * open, and on SIGINT/SIGTERM/SIGHUP/SIGPIPE (the handler unlinks them and
 * re-raises the signal); a write past `ulimit -f` fails with EFBIG (main.c
 * catches SIGXFSZ) and is one such failure.  What SIGKILL leaves, the next
 * output into the same directory removes (temp_name_sweep: only the temps
 * of processes that are gone).
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
	int held;       /* finished, waiting for outfile_release (a heap copy) */
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

/* outfile_finish with the errors naming the path o was created with
 * ("(stdout)" for stdout), kept in *e: how a writer commits one output. */
int outfile_done(struct outfile *o, struct em_error *e);

/* Hold renames: from now on outfile_finish() checks and closes each
 * output but leaves it under its temp name until outfile_release(), so a
 * command that writes several files (FILE and FILE.energy.csv,
 * FILE.alignment.txt, samples' companions) leaves all of them or none. */
void outfile_hold(void);

/* Rename every held output into place, oldest first, and stop holding.
 * 0, or a negative errno with *e; after a failed rename the held outputs
 * not yet renamed are removed. */
int outfile_release(struct em_error *e);

/* 0, or the write error o already met (ferror), as outfile_finish would
 * report it: for a writer that must stop before writing side files. */
int outfile_error(struct outfile *o, const char *path, struct em_error *e);

/* Remove the temp file (if any) and forget it. */
void outfile_abort(struct outfile *o);

/* 1 when path is written to directly ("-", a device, a FIFO, a path
 * through /proc): side files named after it (PATH.alignment.txt) must not
 * be created beside it (/dev/null.alignment.txt). */
int outfile_is_stream(const char *path);

/* Abort every open outfile: a failed command's (cmd_fatal.h), and what
 * a command left open when it returned (main.c).  No exit handler does
 * it: all or nothing is the command's own, explicit step. */
void outfile_abort_all(void);

#endif
