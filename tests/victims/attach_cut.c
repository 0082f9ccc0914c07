/*
 * attach_cut.c - the ring cut by another process while this one attaches
 * (issue 23 point 1, "at any moment"): ring_writer.c built with
 * ANCHOR_TEST_HOOKS calls a hook once the ring is published (create) or
 * found (attach), before anything is read through its mapping; the hook
 * truncates the file to 0 bytes there, as another process could.  Then
 * the host goes on: it writes marks (a no-op without a ring) and exits 0.
 * Before the fix, the first read of the ring's geometry died of SIGBUS.
 *
 *   attach_cut RING create   this process creates and publishes the ring
 *   attach_cut RING attach   a child creates it and exits; this one attaches
 *
 * Prints "open: 0" or "open: -ERRNO: MESSAGE", then "survived".
 */
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ring_writer.h"

extern void (*ring_writer_test_hook)(uint64_t ticket, int stage);

static const char *g_ring;

static void cut(uint64_t ticket, int stage)
{
	(void)ticket;
	if (stage == 2 && truncate(g_ring, 0) != 0)
		perror("attach_cut: truncate");
}

int main(int argc, char **argv)
{
	struct ring_writer_opts o = {argc > 1 ? argv[1] : "cut.ring", 64 << 10, ANCHOR_RING_MODE_OVERWRITE};
	char err[512] = "";
	int rc;

	g_ring = o.path;
	if (argc > 2 && !strcmp(argv[2], "attach")) {
		pid_t pid = fork();
		if (pid == 0)
			_exit(ring_writer_open(&o, err, sizeof err) ? 3 : 0);
		int st = 0;
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st)) {
			fprintf(stderr, "attach_cut: the child did not create the ring\n");
			return 2;
		}
	}
	ring_writer_test_hook = cut;
	rc = ring_writer_open(&o, err, sizeof err);
	printf("open: %d%s%s\n", rc, rc ? ": " : "", rc ? err : "");
	for (int i = 0; i < 1000; i++)
		ring_writer_event(ANCHOR_KIND_MARK, "after", 5, ANCHOR_FLAG_VALUE, (uint64_t)i);
	printf("survived\n");
	return 0;
}
