/* diag.c - one-line errors (see diag.h). */
#include "util/diag.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


const char *diag_prog = "anchorpost";

static const char *alias_from, *alias_to;

void diag_alias_path(const char *from, const char *to)
{
	alias_from = from;
	alias_to = to;
}

int diag_error(struct em_error *e, int code, const char *file, const char *fmt, ...)
{
	va_list ap;
	if (!e)
		return code;
	e->file = file;
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof e->msg, fmt, ap);
	va_end(ap);
	return code;
}

char *diag_error_buf(struct em_error *e, size_t *cap)
{
	if (!e) {
		*cap = 0;
		return NULL;
	}
	e->file = NULL;
	e->msg[0] = '\0';
	*cap = sizeof e->msg;
	return e->msg;
}

void diag_error_keep_file(struct em_error *e)
{
	if (!e || !e->file || e->file == e->file_own)
		return;
	snprintf(e->file_own, sizeof e->file_own, "%s", e->file);
	e->file = e->file_own;
}

void diag_vprint(const char *tag, const char *file, const char *fmt, va_list ap)
{
	size_t n = alias_from ? strlen(alias_from) : 0;
	fflush(stdout);
	fprintf(stderr, "%s: %s", diag_prog, tag);
	if (file && n && strncmp(file, alias_from, n) == 0 && (!file[n] || file[n] == '/'))
		fprintf(stderr, "%s%s: ", alias_to, file + n);
	else if (file)
		fprintf(stderr, "%s: ", file);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

void diag_warn(const char *file, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	diag_vprint("warning: ", file, fmt, ap);
	va_end(ap);
}
