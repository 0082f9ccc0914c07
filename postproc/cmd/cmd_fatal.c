/* cmd_fatal.c - print one line and exit (see cmd_fatal.h). */
#include "cmd/cmd_fatal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cmd/no_energy_note.h"
#include "util/diag.h"

void diag_vfatal(const char *file, const char *fmt, va_list ap)
{
	diag_vprint("", file, fmt, ap);
	outfile_abort_all();
	exit(1);
}

static void print_line(const char *file, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_vprint("", file, fmt, ap);
	va_end(ap);
}

int cmd_error(const struct em_error *e)
{
	print_line(e->file, "%s", e->msg);
	outfile_abort_all();
	return 1;
}

void diag_fatal(const char *file, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_vfatal(file, fmt, ap);
}

void outfile_open(struct outfile *o, const char *path)
{
	struct em_error e;
	if (outfile_create(o, path, &e))
		diag_fatal(e.file, "%s", e.msg);
}

void outfile_commit(struct outfile *o)
{
	struct em_error e;
	if (outfile_done(o, &e))
		diag_fatal(e.file, "%s", e.msg);
}

void outfile_commit_held(void)
{
	struct em_error e;
	if (outfile_release(&e))
		diag_fatal(e.file, "%s", e.msg);
}

void ringload_open(struct ringload *rl, const char *path)
{
	struct em_error e;
	if (ringload_load(rl, path, &e))
		diag_fatal(path, "%s", e.msg);
}

void run_open_fatal(const struct em_opts *o, const struct em_error *e)
{
	no_energy_note_open_failed(o);
	diag_fatal(e->file, "%s", e->msg);
}
