/*
 * ring_path.h - expand ANCHOR_FILE templates (%r rank, %h host, %p pid, %%),
 * see ring_path.c.  No allocation, no stdio beyond snprintf: called from a
 * constructor before anything else runs.
 */
#ifndef ANCHOR_RING_PATH_H
#define ANCHOR_RING_PATH_H

#include <stddef.h>

/* The MPI rank from the launcher's environment, or NULL. */
const char *anchor_rank_env(void);

/* Expand tmpl into out.  0, or -1 when the result does not fit. */
int anchor_expand_path(const char *tmpl, char *out, size_t cap);

#endif
