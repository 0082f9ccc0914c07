/*
 * procstart.c - the PROC_START record when the module owns the writer.
 *
 * The text is libanchor.so's, from the same source (anchors/
 * ring_procstart.c); argv comes from /proc/self/cmdline: the
 * interpreter's real command line, which sys.argv has already rewritten.
 */
#include "pyanchor.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The encoder libanchor.so uses too, compiled into the module (as
 * writer.c includes the writer): one PROC_START text for both. */
#include "ring_procstart.c"

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
	char args[512];
	ring_procstart_emit(args, read_cmdline(args, sizeof args));
}
