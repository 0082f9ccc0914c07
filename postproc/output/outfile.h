/*
 * outfile.h - all-or-nothing output files.
 *
 * Output goes to "<path>.tmp.<pid>" beside the target and is renamed over
 * it only on commit, so readers never see a half-written CSV.  Open
 * outfiles are tracked so diag_fatal() can remove them.  Path "-" (or
 * NULL) writes to stdout directly.
 */
#ifndef ANCHORPOST_OUTFILE_H
#define ANCHORPOST_OUTFILE_H

#include <stdio.h>

struct outfile {
	FILE *fp;
	char *path;     /* final path, NULL for stdout */
	char *tmp_path; /* temp path, NULL for stdout */
	struct outfile *next_open;
};

/* Open; on failure calls diag_fatal naming the path. */
void outfile_open(struct outfile *o, const char *path);

/* Flush, fsync-free close and rename into place; diag_fatal on error. */
void outfile_commit(struct outfile *o);

/* Remove the temp file (if any) and forget it. */
void outfile_abort(struct outfile *o);

/* Abort every open outfile (called by diag_fatal). */
void outfile_abort_all(void);

#endif
