/*
 * sigbus.c - keep the ring's SIGBUS guard first (ring_writer.c).
 *
 * A program that installs its own SIGBUS handler after libanchor attached
 * (Python's faulthandler.enable(), PyTorch's DataLoader workers) would
 * otherwise replace the guard, and a ring file truncated under it would
 * kill the program again.  While the guard is installed, sigaction and
 * signal for SIGBUS read and write the action the guard chains to: the
 * program's handler still gets every SIGBUS that is not the ring's, and
 * sees its own action when it asks.  Every other signal, and SIGBUS
 * before a ring is attached, goes straight to libc.
 * A raw rt_sigaction system call goes around these; the guard finds
 * itself replaced at its next periodic look (ring_writer.c,
 * bus_guard_recheck) and chains to that handler the same way.  Not
 * covered: the kernel's handling of the program's sa_flags/sa_mask for
 * SIGBUS (the guard's apply).
 */
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <string.h>

#include "internal.h"
#include "ring_writer.h"

/* A sanitizer runtime linked into the program resolves its own "real"
 * sigaction to these and calls them while it initialises, before any
 * instrumentation may run: keep them (and what they call) uninstrumented. */
#if defined(__has_attribute)
#if __has_attribute(disable_sanitizer_instrumentation)
#define NO_SANITIZE __attribute__((disable_sanitizer_instrumentation))
#endif
#endif
#ifndef NO_SANITIZE
#define NO_SANITIZE
#endif

__attribute__((visibility("default"))) NO_SANITIZE int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
	static __typeof__(&sigaction) real;

	if (sig == SIGBUS && ring_writer_bus_chain(act, old))
		return 0;
	if (!real)
		real = (__typeof__(&sigaction))dlsym(RTLD_NEXT, "sigaction");
	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	return real(sig, act, old);
}

__attribute__((visibility("default"))) NO_SANITIZE sighandler_t signal(int sig, sighandler_t handler)
{
	static __typeof__(&signal) real;
	struct sigaction sa, old;

	if (sig == SIGBUS) {
		/* glibc's signal(): BSD semantics, SA_RESTART. */
		memset(&sa, 0, sizeof sa);
		sa.sa_handler = handler;
		sa.sa_flags = SA_RESTART;
		sigemptyset(&sa.sa_mask);
		if (ring_writer_bus_chain(&sa, &old))
			return old.sa_handler; /* one union with sa_sigaction in glibc */
	}
	if (!real)
		real = (__typeof__(&signal))dlsym(RTLD_NEXT, "signal");
	if (!real) {
		errno = ENOSYS;
		return SIG_ERR;
	}
	return real(sig, handler);
}
