/* ring_procstart.c - the PROC_START text (see ring_procstart.h). */
#include "ring_procstart.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ring_rank.h"
#include "ring_writer.h"

/* key=val\0 at buf+n, truncating val to what fits; returns the new n. */
static size_t procstart_field(char *buf, size_t n, size_t cap, const char *key, const char *val, size_t vl)
{
	size_t kl = strlen(key);
	if (n + kl + 2 >= cap)
		return n;
	memcpy(buf + n, key, kl);
	n += kl;
	buf[n++] = '=';
	if (vl > cap - n - 1)
		vl = cap - n - 1;
	memcpy(buf + n, val, vl);
	n += vl;
	buf[n++] = '\0';
	return n;
}

void ring_procstart_emit(const char *args, size_t args_len)
{
	static const char *const rank_vars[] = {ANCHOR_RANK_VARS, ANCHOR_LOCAL_RANK_VARS, ANCHOR_WORLD_SIZE_VARS,
						ANCHOR_JOB_VARS, NULL};
	char buf[ANCHOR_NAME_INLINE + ANCHOR_TEXT_MAX_CONT * ANCHOR_CONT_BYTES];
	char host[256] = "", exe[512] = "";
	size_t n = 0;
	ssize_t k;

	gethostname(host, sizeof host - 1);
	k = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[k > 0 ? k : 0] = '\0';
	n = procstart_field(buf, n, sizeof buf, "host", host, strlen(host));
	for (int i = 0; rank_vars[i]; i++) {
		const char *v = getenv(rank_vars[i]);
		if (v && *v)
			n = procstart_field(buf, n, sizeof buf, rank_vars[i], v, strlen(v));
	}
	n = procstart_field(buf, n, sizeof buf, "exe", exe, strlen(exe));
	n = procstart_field(buf, n, sizeof buf, "argv", args, args_len);
	ring_writer_emit(ANCHOR_KIND_PROC_START, 0, (uint64_t)getppid(), buf, n, NULL, 0);
}
