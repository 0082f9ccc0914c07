/*
 * fakempi.c - a stand-in libmpi with MPICH's handle ABI (MPI_Comm,
 * MPI_Datatype, MPI_Op are 32-bit ints) for tests/mpi/t_mpi_abi.py: each
 * function checks that every argument arrived intact, sets errno, and
 * returns a value the caller can check.  PMPI_* are the definitions and
 * MPI_* weak aliases, as in real MPI libraries.
 */
#include <errno.h>

typedef int MPI_Comm;
typedef int MPI_Datatype;
typedef int MPI_Op;

#define COMM 0x44000000
#define TYPE 0x4c00080b
#define OP 0x58000003

int PMPI_Allreduce(const void *s, void *r, int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
{
	errno = 42;
	if (!s || !r || count != 5 || t != TYPE || op != OP || comm != COMM)
		return 99;
	((double *)r)[0] = ((const double *)s)[0] * 2;
	return 7;
}
int MPI_Allreduce(const void *s, void *r, int count, MPI_Datatype t, MPI_Op op, MPI_Comm comm)
	__attribute__((weak, alias("PMPI_Allreduce")));

/* Seven arguments: comm is passed on the stack on x86_64. */
int PMPI_Alltoall(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt, MPI_Comm comm)
{
	errno = 43;
	if (!s || !r || sc != 3 || st != TYPE || rc != 4 || rt != TYPE + 1 || comm != COMM)
		return 99;
	return 8;
}
int MPI_Alltoall(const void *s, int sc, MPI_Datatype st, void *r, int rc, MPI_Datatype rt, MPI_Comm comm)
	__attribute__((weak, alias("PMPI_Alltoall")));
