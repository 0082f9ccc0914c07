/* diag.c - one-line errors (see diag.h). */
#include "diag.h"

#include <stdio.h>
#include <stdlib.h>

#include "outfile.h"

const char *diag_prog = "anchorpost";

static void vprint(const char *tag, const char *file, const char *fmt, va_list ap)
{
	fflush(stdout);
	fprintf(stderr, "%s: %s", diag_prog, tag);
	if (file)
		fprintf(stderr, "%s: ", file);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void diag_vfatal(const char *file, const char *fmt, va_list ap)
{
	vprint("", file, fmt, ap);
	outfile_abort_all();
	exit(1);
}

void diag_fatal(const char *file, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_vfatal(file, fmt, ap);
}

void diag_warn(const char *file, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vprint("warning: ", file, fmt, ap);
	va_end(ap);
}
