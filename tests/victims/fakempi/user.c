/* user.c - a library calling MPI (as mpi4py's extension does), linked
 * against fakempi.  Returns 0 when results and errno came through. */
#include <errno.h>
#include <stdio.h>

int MPI_Allreduce(const void *s, void *r, int count, int t, int op, int comm);
int MPI_Alltoall(const void *s, int sc, int st, void *r, int rc, int rt, int comm);

int user_call(void)
{
	double x = 21, y = 0;
	int a[4] = {0}, b[4];
	int rc = MPI_Allreduce(&x, &y, 5, 0x4c00080b, 0x58000003, 0x44000000);
	if (rc != 7 || errno != 42 || y != 42) {
		fprintf(stderr, "allreduce rc %d errno %d y %g\n", rc, errno, y);
		return 1;
	}
	rc = MPI_Alltoall(a, 3, 0x4c00080b, b, 4, 0x4c00080c, 0x44000000);
	if (rc != 8 || errno != 43) {
		fprintf(stderr, "alltoall rc %d errno %d\n", rc, errno);
		return 1;
	}
	return 0;
}
