/* cmd_fatal.c - library calls for commands that have nothing to do after a
 * failure but say it: outfile_open / outfile_commit (outfile.h) and
 * ringload_open (ringload.h) print the error as one line and exit.  Only
 * the command layer may exit; library code returns the error. */
#include <stdlib.h>
#include <string.h>

#include "diag.h"
#include "outfile.h"
#include "ringload.h"

void outfile_open(struct outfile *o, const char *path)
{
	struct em_error e;
	if (outfile_create(o, path, &e))
		diag_fatal(e.file, "%s", e.msg);
}

void outfile_commit(struct outfile *o)
{
	struct em_error e;
	char *shown;
	if (!o->shown) {
		if (outfile_finish(o, "(stdout)", &e))
			diag_fatal(e.file, "%s", e.msg);
		return;
	}
	/* o->shown is freed by a failing finish: the message keeps a copy. */
	shown = strdup(o->shown);
	if (outfile_finish(o, shown ? shown : "(output)", &e))
		diag_fatal(e.file, "%s", e.msg);
	free(shown);
}

void ringload_open(struct ringload *rl, const char *path)
{
	char err[512];
	if (ringload_load(rl, path, err, sizeof err))
		diag_fatal(path, "%s", err);
}
