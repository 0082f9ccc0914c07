/*
 * ring_path.h - expand ANCHOR_FILE templates (%r rank, %h host, %p pid, %%),
 * see ring_path.c.  No allocation, no stdio beyond snprintf: called from a
 * constructor before anything else runs.
 */
#ifndef ANCHOR_RING_PATH_H
#define ANCHOR_RING_PATH_H

#include <stddef.h>
#include <stdint.h>

/* The MPI rank from the launcher's environment, or NULL. */
const char *anchor_rank_env(void);

/* Expand tmpl into out.  0, or -1 when the result does not fit.  %r and
 * %h expand to one harmless file-name component (no '/', never ".."). */
int anchor_expand_path(const char *tmpl, char *out, size_t cap);

/* Parse ANCHOR_RING_SIZE ("64M", "1G", "1GiB", "65536").  0: *bytes set.
 * 1: set, but adjusted (below the smallest ring); *why says how.  -1:
 * refused (*why: not a size, or too large, overflow included). */
int anchor_parse_ring_size(const char *s, uint64_t *bytes, const char **why);

#endif
