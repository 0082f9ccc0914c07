/* outfile.c - temp file + rename (see outfile.h). */
#include "outfile.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "diag.h"

static struct outfile *g_open;

static void unlink_open(struct outfile *o)
{
	struct outfile **p;
	for (p = &g_open; *p; p = &(*p)->next_open) {
		if (*p == o) {
			*p = o->next_open;
			break;
		}
	}
}

void outfile_open(struct outfile *o, const char *path)
{
	memset(o, 0, sizeof *o);
	if (!path || strcmp(path, "-") == 0) {
		o->fp = stdout;
		return;
	}
	o->path = strdup(path);
	if (asprintf(&o->tmp_path, "%s.tmp.%ld", path, (long)getpid()) < 0 || !o->path)
		diag_fatal(path, "out of memory");
	o->fp = fopen(o->tmp_path, "w");
	if (!o->fp)
		diag_fatal(path, "cannot write: %s", strerror(errno));
	setvbuf(o->fp, NULL, _IOFBF, 1 << 20);
	o->next_open = g_open;
	g_open = o;
}

void outfile_commit(struct outfile *o)
{
	if (!o->path) {
		if (fflush(stdout) != 0)
			diag_fatal("(stdout)", "write failed: %s", strerror(errno));
		return;
	}
	if (ferror(o->fp) || fclose(o->fp) != 0) {
		int e = errno;
		o->fp = NULL;
		diag_fatal(o->path, "write failed: %s", strerror(e));
	}
	o->fp = NULL;
	if (rename(o->tmp_path, o->path) != 0)
		diag_fatal(o->path, "cannot rename temp file into place: %s", strerror(errno));
	unlink_open(o);
	free(o->tmp_path);
	free(o->path);
	o->tmp_path = o->path = NULL;
}

void outfile_abort(struct outfile *o)
{
	if (o->fp && o->fp != stdout)
		fclose(o->fp);
	o->fp = NULL;
	if (o->tmp_path)
		unlink(o->tmp_path);
	unlink_open(o);
	free(o->tmp_path);
	free(o->path);
	o->tmp_path = o->path = NULL;
}

void outfile_abort_all(void)
{
	while (g_open)
		outfile_abort(g_open);
}
