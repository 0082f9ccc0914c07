/*
 * stacks.c - native stacks for ANCHOR_STACKS=1.
 *
 * Why libgcc's unwinder and not libunwind (issue 15, point 4): libunwind
 * 1.6 finds code through dl_iterate_phdr, which takes the loader's lock,
 * so a mark from a signal handler that interrupted dlopen on the same
 * thread deadlocked (with the signal blocked); and it validates memory
 * through a pipe it opens once and keeps, so a host that closed and
 * reused those descriptors had a byte of its input read and a NUL
 * written to its output.  libgcc (GCC >= 12 with glibc >= 2.35) looks
 * code up with _dl_find_object, which takes no lock, allocates nothing
 * and opens nothing, and it steps through signal frames.
 *
 * What remains unsafe, and is refused or documented (README, Limits):
 * frames that JIT code registered with __register_frame_info are
 * searched under a mutex of libgcc's own, so a signal that interrupts
 * that search and marks could wait on it; a mark taken while this
 * thread is already capturing a stack (a signal handler interrupting a
 * mark) records no stack.
 */
#include <errno.h>
#include <stdint.h>
#include <unwind.h>

#include "internal.h"
#include "ring_writer.h"

#ifdef ANCHOR_TLS_INITIAL_EXEC
static __thread __attribute__((tls_model("initial-exec"))) int t_capturing;
#else
static __thread int t_capturing;
#endif

struct walk {
	uint64_t *ips;
	int n, max, skip;
};

static _Unwind_Reason_Code step(struct _Unwind_Context *ctx, void *arg)
{
	struct walk *w = arg;
	uintptr_t ip = _Unwind_GetIP(ctx);

	if (!ip)
		return _URC_END_OF_STACK;
	if (w->skip > 0) {
		w->skip--;
		return _URC_NO_REASON;
	}
	if (w->n >= w->max)
		return _URC_END_OF_STACK;
	w->ips[w->n++] = (uint64_t)ip;
	return _URC_NO_REASON;
}

static int capture(uint64_t *ips, int max)
{
	/* Skip our own two frames (capture, ring_writer_event). */
	struct walk w = {ips, 0, max, 2};
	int saved = errno;

	if (t_capturing)
		return 0; /* a signal handler interrupted our own walk */
	t_capturing = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	_Unwind_Backtrace(step, &w);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	t_capturing = 0;
	errno = saved;
	return w.n;
}

void anchor_stacks_enable(void)
{
	ring_writer_set_stack_hook(capture);
}
