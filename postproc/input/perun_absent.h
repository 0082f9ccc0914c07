/*
 * perun_absent.h - why a run has no perun file, from what the ring saw.
 *
 * perun 1.0.0 writes its HDF5 file only when the script it runs returns
 * normally (perun/monitoring/monitor.py, core.py): a script that raises or
 * calls sys.exit(N != 0) makes it wait monitor.queue_timeout (60 s) for
 * samples its stopped sampler never sends, write nothing and exit 1; Ctrl-C
 * (SIGINT), SIGTERM or SIGKILL end it without a file; an option it does not
 * know can make it run no script at all (perun_spelling.h).  When perun ran
 * under libanchor, the ring holds its process (command line, exit status
 * or signal, or no exit record at all) and says which of these happened;
 * when it holds none, perun did not run under libanchor for this ring.
 */
#ifndef ANCHORPOST_PERUN_ABSENT_H
#define ANCHORPOST_PERUN_ABSENT_H

#include <stddef.h>

#include "input/ringload.h"

/* The findings, one line each ending in '\n', appended to buf (cut at
 * cap): each `perun monitor` process of the ring with how it ended, what
 * that means for its file and where it writes it, its command line's old
 * spellings; and what to run instead.  Returns the number of perun
 * processes found. */
size_t perun_absent_explain(const struct ringload *rl, char *buf, size_t cap);

#endif
