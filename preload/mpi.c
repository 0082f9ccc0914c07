/*
 * mpi.c - MPI collectives and waits as BEGIN/END ranges, without linking
 * libmpi and without any change to the program.
 *
 * Each wrapper below has the name of an MPI function; LD_PRELOAD puts it
 * ahead of libmpi, so the program's (or mpi4py's) call lands here.  We
 * write BEGIN "<MPI name>", call the real function, write END, and return
 * its result untouched.  A process that never calls MPI never reaches
 * this file; libanchor does not link libmpi and does not load it.
 *
 * Finding the real function: dlsym(RTLD_NEXT, "MPI_X") first (libmpi
 * linked by the executable, or dlopen'ed RTLD_GLOBAL as mpi4py does for
 * OpenMPI).  A libmpi dlopen'ed RTLD_LOCAL is invisible to RTLD_NEXT, so
 * the fallback walks the loaded objects for "PMPI_X", the profiling entry
 * point every MPI library must export (MPI standard, "Profiling
 * Interface"); asking for PMPI_X can never find this file's MPI_X again.
 * Resolution happens at the first call of each function, never in the
 * constructor, so a process without MPI pays nothing.
 *
 * Handles without mpi.h.  MPI_Comm, MPI_Datatype, MPI_Op are pointers to
 * structs in OpenMPI and 32-bit ints in MPICH (and Intel MPI, MVAPICH).
 * We declare them as `mpi_handle` (uintptr_t, 8 bytes) and hand them on
 * unchanged.  On x86_64 SysV (and AArch64 AAPCS64) every integer or
 * pointer argument occupies one full 64-bit register, or one 8-byte stack
 * slot from the 7th argument on: receiving an int as uintptr_t and
 * passing it on as uintptr_t copies the register/slot bit for bit, upper
 * half included, and the callee reads only the low 32 bits it expects.
 * So the wrappers are ABI-transparent for both families without knowing
 * which one is loaded.  `int` counts stay `int`; buffers, MPI_Request*
 * and MPI_Status* are plain pointers in every implementation.  (MPI_Fint
 * Fortran bindings are not wrapped: they call the C functions' PMPI_
 * twins inside libmpi, which nothing can interpose.)
 *
 * Nesting: only the outermost wrapped call of a thread is recorded
 * (MPI_Allreduce implemented over MPI_Wait inside libmpi would otherwise
 * count its wait twice in the straggler view).
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"
#include "ring_env.h"
#include "ring_writer.h"

#ifdef ANCHOR_TLS_INITIAL_EXEC
#define MPI_TLS __thread __attribute__((tls_model("initial-exec")))
#else
#define MPI_TLS __thread
#endif

typedef uintptr_t mpi_handle; /* MPI_Comm, MPI_Datatype, MPI_Op: see above */

_Static_assert(sizeof(mpi_handle) == 8 && sizeof(void *) == 8,
	       "handle pass-through assumes an LP64 ABI with 64-bit argument slots");

/* MPI_ERR_OTHER in MPICH (15) and OpenMPI (16) differ; any nonzero value is
 * an error to the caller.  Only returned when libmpi vanished from the
 * process although the caller was linked against it (cannot happen). */
#define MPI_ERR_NO_REAL 15

static MPI_TLS int t_depth; /* wrapped MPI calls active on this thread */

struct find_pmpi {
	const char *name;
	void *fn;
};

static int find_in_object(struct dl_phdr_info *info, size_t size, void *data)
{
	struct find_pmpi *f = data;
	void *h;
	(void)size;
	if (!info->dlpi_name || !info->dlpi_name[0])
		return 0;
	/* RTLD_NOLOAD: a handle to an object already mapped, loads nothing. */
	h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
	if (!h)
		return 0;
	f->fn = dlsym(h, f->name);
	dlclose(h);
	return f->fn != NULL;
}

/* The real MPI_<name>, cached in *slot.  Racing threads store the same
 * value, so relaxed atomics suffice (they only keep TSan quiet). */
static void *resolve(void **slot, const char *mpi_name)
{
	void *fn = __atomic_load_n(slot, __ATOMIC_RELAXED);
	char pname[64];
	struct find_pmpi f;

	if (fn)
		return fn;
	fn = anchor_next_sym(mpi_name);
	if (!fn && strlen(mpi_name) + 2 < sizeof pname) {
		pname[0] = 'P';
		memcpy(pname + 1, mpi_name, strlen(mpi_name) + 1);
		f.name = pname;
		f.fn = NULL;
		dl_iterate_phdr(find_in_object, &f);
		fn = f.fn;
	}
	if (!fn) {
		static int logged;
		if (!__atomic_exchange_n(&logged, 1, __ATOMIC_RELAXED))
			anchor_log("mpi: cannot find the real ", mpi_name, " (libmpi not loaded?)", NULL);
		return NULL;
	}
	__atomic_store_n(slot, fn, __ATOMIC_RELAXED);
	return fn;
}

/* ANCHOR_MPI=0: pass through, record nothing (e.g. to keep perun's own
 * MPI calls out of a single-process run).  Read once, at the first call. */
static int mpi_records(void)
{
	static int state; /* 0 unknown, 1 on, 2 off */
	int s = __atomic_load_n(&state, __ATOMIC_RELAXED);
	if (!s) {
		const char *v = ring_env_get(RING_ENV_MPI);
		s = v && !strcmp(v, "0") ? 2 : 1;
		__atomic_store_n(&state, s, __ATOMIC_RELAXED);
	}
	return s == 1;
}

/* BEGIN/END only for the outermost call; value = element count if any. */
static int range_begin(const char *name, size_t len, int has_count, int count)
{
	if (t_depth++ || !ring_writer_attached() || !mpi_records())
		return 0;
	ring_writer_event(ANCHOR_KIND_BEGIN, name, len, has_count ? ANCHOR_FLAG_VALUE : 0,
			  (uint64_t)(int64_t)count);
	return 1;
}

static void range_end(int began, const char *name, size_t len)
{
	t_depth--;
	if (began)
		ring_writer_event(ANCHOR_KIND_END, name, len, 0, 0);
}

/*
 * One wrapper.  PARAMS is the parameter list, ARGS the same names to pass
 * on, COUNT an int expression for the value field (or 0 with HAS 0).
 */
#define MPI_WRAP(NAME, PARAMS, ARGS, HAS, COUNT)                                                   \
	__attribute__((visibility("default"))) int NAME PARAMS;                                    \
	int NAME PARAMS                                                                            \
	{                                                                                          \
		static void *real_;                                                                \
		typedef int(*fn_t) PARAMS;                                                         \
		fn_t fn = (fn_t)resolve(&real_, #NAME);                                            \
		int began, rc;                                                                     \
		if (!fn)                                                                           \
			return MPI_ERR_NO_REAL;                                                    \
		began = range_begin(#NAME, sizeof #NAME - 1, HAS, COUNT);                          \
		rc = fn ARGS;                                                                      \
		range_end(began, #NAME, sizeof #NAME - 1);                                         \
		return rc;                                                                         \
	}

/* clang-format off */
MPI_WRAP(MPI_Init, (int *argc, char ***argv), (argc, argv), 0, 0)
MPI_WRAP(MPI_Init_thread, (int *argc, char ***argv, int required, int *provided),
	 (argc, argv, required, provided), 0, 0)
MPI_WRAP(MPI_Finalize, (void), (), 0, 0)
MPI_WRAP(MPI_Barrier, (mpi_handle comm), (comm), 0, 0)
MPI_WRAP(MPI_Bcast, (void *buf, int count, mpi_handle type, int root, mpi_handle comm),
	 (buf, count, type, root, comm), 1, count)
MPI_WRAP(MPI_Reduce, (const void *sbuf, void *rbuf, int count, mpi_handle type, mpi_handle op, int root,
		      mpi_handle comm),
	 (sbuf, rbuf, count, type, op, root, comm), 1, count)
MPI_WRAP(MPI_Allreduce, (const void *sbuf, void *rbuf, int count, mpi_handle type, mpi_handle op,
			 mpi_handle comm),
	 (sbuf, rbuf, count, type, op, comm), 1, count)
MPI_WRAP(MPI_Allgather, (const void *sbuf, int scount, mpi_handle stype, void *rbuf, int rcount,
			 mpi_handle rtype, mpi_handle comm),
	 (sbuf, scount, stype, rbuf, rcount, rtype, comm), 1, scount)
MPI_WRAP(MPI_Alltoall, (const void *sbuf, int scount, mpi_handle stype, void *rbuf, int rcount,
			mpi_handle rtype, mpi_handle comm),
	 (sbuf, scount, stype, rbuf, rcount, rtype, comm), 1, scount)
MPI_WRAP(MPI_Reduce_scatter, (const void *sbuf, void *rbuf, const int *rcounts, mpi_handle type,
			      mpi_handle op, mpi_handle comm),
	 (sbuf, rbuf, rcounts, type, op, comm), 0, 0)
MPI_WRAP(MPI_Reduce_scatter_block, (const void *sbuf, void *rbuf, int rcount, mpi_handle type,
				    mpi_handle op, mpi_handle comm),
	 (sbuf, rbuf, rcount, type, op, comm), 1, rcount)
/* Non-blocking: the call itself only starts the operation; the time spent
 * waiting for it shows in MPI_Wait / MPI_Waitall. */
MPI_WRAP(MPI_Iallreduce, (const void *sbuf, void *rbuf, int count, mpi_handle type, mpi_handle op,
			  mpi_handle comm, void *req),
	 (sbuf, rbuf, count, type, op, comm, req), 1, count)
MPI_WRAP(MPI_Ibcast, (void *buf, int count, mpi_handle type, int root, mpi_handle comm, void *req),
	 (buf, count, type, root, comm, req), 1, count)
MPI_WRAP(MPI_Ibarrier, (mpi_handle comm, void *req), (comm, req), 0, 0)
MPI_WRAP(MPI_Wait, (void *req, void *status), (req, status), 0, 0)
MPI_WRAP(MPI_Waitall, (int count, void *reqs, void *statuses), (count, reqs, statuses), 1, count)
/* clang-format on */
