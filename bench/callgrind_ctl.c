/* callgrind_ctl.c - callgrind's client requests for a Python benchmark
 * (ctypes): count instructions of chosen blocks only, each dumped under a
 * name (bench/torch_layers_overhead.py --callgrind).  Outside valgrind
 * every call is a no-op. */
#include <valgrind/callgrind.h>

void cg_start(void)
{
	CALLGRIND_START_INSTRUMENTATION;
}

void cg_zero(void)
{
	CALLGRIND_ZERO_STATS;
}

void cg_dump(const char *name)
{
	CALLGRIND_DUMP_STATS_AT(name);
}
