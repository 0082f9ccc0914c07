/*
 * ring_path.c - ANCHOR_FILE placeholders, so one environment serves every
 * rank of an MPI job (shared by libanchor.so and the Python module's own
 * writer, like ring_writer.c):
 *
 *   %r  the rank (first set of OMPI_COMM_WORLD_RANK, PMIX_RANK, PMI_RANK,
 *       SLURM_PROCID, RANK), "norank" when none is set
 *   %h  the short host name (up to the first dot)
 *   %p  the pid
 *   %%  a literal %
 *
 * Why per rank and not one ring per node (docs/mpi.md): one file per rank
 * keeps writers of different ranks off each other's cache lines and pages
 * entirely, a rank that dies leaves its own file, and a ring's size bounds
 * one rank's history instead of being shared out by however many ranks a
 * node runs.  Expansion happens in the constructor, before the process can
 * write anything; children inherit the unexpanded template and, having the
 * same rank variables, expand it to the same file.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ring_format.h"
#include "ring_path.h"
#include "ring_rank.h"

const char *anchor_rank_env(void)
{
	static const char *const vars[] = {ANCHOR_RANK_VARS, NULL};
	for (int i = 0; vars[i]; i++) {
		const char *v = getenv(vars[i]);
		if (v && *v)
			return v;
	}
	return NULL;
}

/* Append s[0..len) with every byte that could change the directory made
 * harmless: a rank or host value is one file-name component, never "/",
 * "." or ".." (RANK=../x with ANCHOR_FILE=%r.ring stays in its directory).
 * Anything outside [A-Za-z0-9._-] becomes '_', and so does a value made
 * only of dots. */
static size_t put_component(char *out, size_t n, size_t cap, const char *s, size_t len)
{
	int dots = 1;
	if (n >= cap || len >= cap - n)
		return cap;
	for (size_t i = 0; i < len; i++)
		dots &= s[i] == '.';
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		int keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			   c == '-' || c == '_' || (c == '.' && !dots);
		out[n + i] = keep ? c : '_';
	}
	return n + len;
}

/* Append s[0..len) if it fits; returns the new length or cap on overflow. */
static size_t put(char *out, size_t n, size_t cap, const char *s, size_t len)
{
	if (n >= cap || len >= cap - n)
		return cap;
	memcpy(out + n, s, len);
	return n + len;
}

int anchor_expand_path(const char *tmpl, char *out, size_t cap)
{
	size_t n = 0;
	char buf[256];

	if (!cap)
		return -1;
	for (const char *p = tmpl; *p && n < cap; p++) {
		const char *s = buf;
		size_t len;
		if (*p != '%' || !p[1]) {
			n = put(out, n, cap, p, 1);
			continue;
		}
		switch (*++p) {
		case 'r':
			s = anchor_rank_env();
			if (!s)
				s = "norank";
			len = strlen(s);
			break;
		case 'h':
			buf[0] = '\0';
			gethostname(buf, sizeof buf - 1);
			buf[sizeof buf - 1] = '\0';
			len = strcspn(buf, ".");
			break;
		case 'p':
			len = (size_t)snprintf(buf, sizeof buf, "%ld", (long)getpid());
			break;
		case '%':
			s = "%";
			len = 1;
			break;
		default: /* not ours: keep it as written */
			buf[0] = '%';
			buf[1] = *p;
			len = 2;
			break;
		}
		n = (p[0] == 'r' || p[0] == 'h') ? put_component(out, n, cap, s, len) : put(out, n, cap, s, len);
	}
	if (n >= cap)
		return -1;
	out[n] = '\0';
	return 0;
}

int anchor_parse_ring_size(const char *s, uint64_t *bytes, const char **why)
{
	const uint64_t min = (uint64_t)ANCHOR_RING_MIN_SLOTS * ANCHOR_SLOT_SIZE;
	const uint64_t max = (uint64_t)ANCHOR_RING_MAX_SLOTS * ANCHOR_SLOT_SIZE;
	uint64_t v = 0;
	unsigned shift = 0;
	const char *p = s;

	*why = "is not a size like 64M";
	if (!s)
		return -1;
	for (; *p >= '0' && *p <= '9'; p++) {
		if (v > (UINT64_MAX - 9) / 10)
			goto too_large;
		v = v * 10 + (uint64_t)(*p - '0');
	}
	if (p == s)
		return -1;
	switch (*p) {
	case 'k': case 'K': shift = 10; p++; break;
	case 'm': case 'M': shift = 20; p++; break;
	case 'g': case 'G': shift = 30; p++; break;
	default: break;
	}
	if (shift && (*p == 'i' || *p == 'I'))
		p++;
	if (*p == 'b' || *p == 'B')
		p++;
	if (*p)
		return -1;
	if (v > (max >> shift))
		goto too_large;
	v <<= shift;
	if (v < min) {
		*bytes = min;
		*why = "is below the smallest ring; using 64K";
		return 1;
	}
	*bytes = v;
	*why = NULL;
	return 0;
too_large:
	*why = "is too large (the largest ring is 64G)";
	return -1;
}
