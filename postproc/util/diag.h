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

/* Program name used in messages ("anchorpost"). */
extern const char *diag_prog;

#endif
