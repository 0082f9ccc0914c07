/*
 * diag.h - one-line errors and warnings for anchorpost.
 *
 * Every error is one line, "anchorpost: FILE: what is wrong", and a
 * non-zero exit; outputs still open as temp files are removed first
 * (outfile.h), so a failed run never leaves a half-written file.
 */
#ifndef ANCHORPOST_DIAG_H
#define ANCHORPOST_DIAG_H

#include <stdarg.h>

/* Print "anchorpost: <file>: <msg>" and exit(1) after aborting outputs.
 * file may be NULL. */
void diag_fatal(const char *file, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

/* Print "anchorpost: warning: <file>: <msg>" and go on. */
void diag_warn(const char *file, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Same as diag_fatal with a va_list. */
void diag_vfatal(const char *file, const char *fmt, va_list ap) __attribute__((noreturn));

/* A library failure: the file it concerns (NULL: none; a string that
 * outlives the error, usually the caller's path) and one line saying why.
 * Library code fills one and returns a negative errno; only cmd_*.c turn
 * it into "anchorpost: FILE: msg" and an exit. */
struct em_error {
	const char *file;
	char msg[1024];
};

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
