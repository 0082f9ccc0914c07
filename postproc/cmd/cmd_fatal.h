/*
 * cmd_fatal.h - the only way out of anchorpost on an error: print one line,
 * remove the outputs still open as temp files (outfile.h), exit(1).
 *
 * Only the command layer may exit.  Everything below cmd/ returns a
 * negative errno with an em_error (util/diag.h); these wrappers are for
 * commands that have nothing left to do after a failure but say it.
 */
#ifndef ANCHORPOST_CMD_FATAL_H
#define ANCHORPOST_CMD_FATAL_H

#include <stdarg.h>

#include "input/ringload.h"
#include "model/energy_model.h"
#include "output/outfile.h"

/* Print "anchorpost: <file>: <msg>" and exit(1) after aborting outputs.
 * file may be NULL. */
void diag_fatal(const char *file, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

/* Same as diag_fatal with a va_list. */
void diag_vfatal(const char *file, const char *fmt, va_list ap) __attribute__((noreturn));

/* A command's failure it cleans up after itself: print *e's one line,
 * abort every output still open (outfile.h) and return the exit status
 * (1) for the command to return. */
int cmd_error(const struct em_error *e);

/* outfile_create / outfile_finish that print the error and exit. */
void outfile_open(struct outfile *o, const char *path);
void outfile_commit(struct outfile *o);

/* Several outputs, all or none: outfile_hold(), then after the last
 * outfile_commit this renames them all (or prints and exits). */
void outfile_commit_held(void);

/* energy_model_open / run_model_open failed with *e: without a perun file
 * first what the ring says of perun (no_energy_note.h), then the error. */
void run_open_fatal(const struct em_opts *o, const struct em_error *e) __attribute__((noreturn));

/* ringload_load or print and exit: for the commands that read only a ring. */
void ringload_open(struct ringload *rl, const char *path);

#endif
