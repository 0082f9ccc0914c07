/*
 * temp_name.h - names for anchorpost's temp files and directories that say
 * whose they are, and the sweep that removes those of dead processes.
 *
 * Why: an output is written to a temp beside it and renamed into place
 * (outfile.h); `report` builds its files in a directory beside OUTDIR.  A
 * SIGKILL (the OOM killer, a batch system's hard limit) leaves them
 * behind, and nothing knew they were garbage.  Every temp is now named
 *
 *     <target>.tmp.anchorpost-<pid>-<key>-<tag>
 *
 * <pid> the creating process, <key> 8 hex digits hashing the host name,
 * the kernel's boot id and the pid namespace (a pid means the same process
 * only on the same host, boot and namespace: a directory on NFS or shared
 * by containers holds names from other pid spaces), <tag> random
 * characters (O_EXCL is the guard; the tag only makes names unguessable).
 *
 * temp_name_sweep() removes an entry of a directory only when all of these
 * hold: its name has exactly that form, its key is ours, kill(pid, 0) says
 * no such process, it is a regular file (or, for report's build directory,
 * a directory holding only regular files) and its owner is our effective
 * uid.  A planted symlink, another user's file, a live or foreign process's
 * temp, or an older temp without a pid is never touched.  When the key
 * cannot be computed (no /proc), nothing is swept.
 */
#ifndef ANCHORPOST_TEMP_NAME_H
#define ANCHORPOST_TEMP_NAME_H

#include <stddef.h>

/* The marker every temp name holds, after "<target>". */
#define TEMP_NAME_MARK ".tmp.anchorpost-"

/* "<target>.tmp.anchorpost-<pid>-<key>-" into a malloc'd string: the caller
 * appends the tag (random characters, or mkdtemp's XXXXXX).  NULL when out
 * of memory. */
char *temp_name_prefix(const char *target);

/* Remove dead processes' temps in dir (see above); best effort, silent.
 * Each directory is swept once per process.  Returns how many entries were
 * removed. */
size_t temp_name_sweep(const char *dir);

#endif
