/*
 * diag.h - one-line errors and warnings for anchorpost.
 *
 * Every error is one line, "anchorpost: FILE: what is wrong", and a
 * non-zero exit.  Library code below cmd/ only fills an em_error and
 * returns; the exit (after removing the outputs still open as temp files,
 * so a failed run never leaves a half-written file) is cmd/cmd_fatal.h's.
 */
#ifndef ANCHORPOST_DIAG_H
#define ANCHORPOST_DIAG_H

#include <stdarg.h>
#include <stddef.h>

/* Print "anchorpost: warning: <file>: <msg>" and go on. */
void diag_warn(const char *file, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Print "anchorpost: <tag><file>: <msg>" (file may be NULL) on stderr,
 * after flushing stdout: what diag_warn and cmd_fatal.h's diag_fatal print. */
void diag_vprint(const char *tag, const char *file, const char *fmt, va_list ap);

/* A library failure: the file it concerns (NULL: none; a string that
 * outlives the error, usually the caller's path) and one line saying why.
 * Library code fills one and returns a negative errno; only cmd_*.c turn
 * it into "anchorpost: FILE: msg" and an exit. */
struct em_error {
	const char *file;
	char msg[1024];
	char file_own[4096]; /* diag_error_keep_file's copy of file */
};

/* For code that formats its message into a char buffer (a reader's
 * static helpers): e's msg and its size in *cap (NULL and 0 when e is
 * NULL), file set to NULL (the caller names the file it gave). */
char *diag_error_buf(struct em_error *e, size_t *cap);

/* Point e->file at a copy inside *e: for a writer about to free the path
 * (an asprintf'd OUT.alignment.txt) that its error names.  e may be NULL. */
void diag_error_keep_file(struct em_error *e);

/* Fill *e (when e is not NULL) and return code, so that a failure path
 * reads `return diag_error(e, -ENOMEM, NULL, "out of memory");`. */
int diag_error(struct em_error *e, int code, const char *file, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

/* Messages name `to` where a path starts with `from` (a directory): report
 * builds its files in OUTDIR.tmp.XXXXXX, the user knows OUTDIR.  NULL
 * clears it.  Both strings must outlive the alias. */
void diag_alias_path(const char *from, const char *to);

/* Program name used in messages ("anchorpost"). */
extern const char *diag_prog;

#endif
