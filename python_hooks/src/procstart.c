/*
 * procstart.c - the PROC_START record when the module owns the writer.
 *
 * Same text layout as libanchor.so's (ring_format.h: NUL-separated
 * key=value; host and rank variables first because argv is the field that
 * gets truncated).  argv comes from /proc/self/cmdline: the interpreter's
 * real command line, which sys.argv has already rewritten.
 */
#include "pyanchor.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ring_writer.h"
#include "ring_rank.h"

static size_t add_field(char *buf, size_t n, size_t cap, const char *key, const char *val, size_t vl)
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

/* /proc/self/cmdline with the NULs between arguments turned into spaces. */
static size_t read_cmdline(char *out, size_t cap)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	ssize_t k;

	if (fd < 0)
		return 0;
	k = read(fd, out, cap - 1);
	close(fd);
	if (k <= 0)
		return 0;
	while (k > 0 && out[k - 1] == '\0')
		k--;
	for (ssize_t i = 0; i < k; i++)
		if (out[i] == '\0')
			out[i] = ' ';
	return (size_t)k;
}

void pya_record_start(void)
{
	static const char *const rank_vars[] = {ANCHOR_RANK_VARS, ANCHOR_LOCAL_RANK_VARS,
						ANCHOR_WORLD_SIZE_VARS, NULL};
	char buf[ANCHOR_NAME_INLINE + ANCHOR_TEXT_MAX_CONT * ANCHOR_CONT_BYTES];
	char host[256] = "", exe[512] = "", args[512];
	size_t n = 0, an;
	ssize_t k;

	gethostname(host, sizeof host - 1);
	k = readlink("/proc/self/exe", exe, sizeof exe - 1);
	exe[k > 0 ? k : 0] = '\0';
	an = read_cmdline(args, sizeof args);
	n = add_field(buf, n, sizeof buf, "host", host, strlen(host));
	for (int i = 0; rank_vars[i]; i++) {
		const char *v = getenv(rank_vars[i]);
		if (v && *v)
			n = add_field(buf, n, sizeof buf, rank_vars[i], v, strlen(v));
	}
	n = add_field(buf, n, sizeof buf, "exe", exe, strlen(exe));
	n = add_field(buf, n, sizeof buf, "argv", args, an);
	ring_writer_emit(ANCHOR_KIND_PROC_START, 0, (uint64_t)getppid(), buf, n, NULL, 0);
}
