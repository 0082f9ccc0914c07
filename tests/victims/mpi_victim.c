/*
 * mpi_victim.c - a small MPI program that knows nothing of anchor: every
 * wrapped collective a few times per step, rank 1 slower than the others
 * (a straggler), optionally SIGKILLing one rank mid-run.
 *
 *   mpi_victim STEPS WORK_MS [KILL_RANK KILL_STEP]
 *
 * Prints "rank R steps N" at the end, on rank 0 also the allreduce sum so
 * a test can check results still come through the wrappers.
 */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void spin_ms(double ms)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	do
		clock_gettime(CLOCK_MONOTONIC, &b);
	while ((double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6 < ms);
}

int main(int argc, char **argv)
{
	int rank, size, steps, kill_rank = -1, kill_step = -1;
	double work_ms, sum = 0;
	MPI_Init(&argc, &argv);
	MPI_Comm_rank(MPI_COMM_WORLD, &rank);
	MPI_Comm_size(MPI_COMM_WORLD, &size);
	if (argc < 3) {
		if (!rank)
			fprintf(stderr, "usage: mpi_victim STEPS WORK_MS [KILL_RANK KILL_STEP]\n");
		MPI_Finalize();
		return 2;
	}
	steps = atoi(argv[1]);
	work_ms = atof(argv[2]);
	if (argc >= 5) {
		kill_rank = atoi(argv[3]);
		kill_step = atoi(argv[4]);
	}
	int *sbuf = calloc((size_t)size * 4, sizeof *sbuf), *rbuf = calloc((size_t)size * 4, sizeof *rbuf);
	int *counts = calloc((size_t)size, sizeof *counts);
	for (int i = 0; i < size; i++)
		counts[i] = 4;
	for (int s = 0; s < steps; s++) {
		double x = rank + 1, y = 0;
		MPI_Request req[2];
		if (rank == kill_rank && s == kill_step)
			raise(SIGKILL);
		/* Rank 1 works 50 % longer: the others wait in the allreduce. */
		spin_ms(rank == 1 ? work_ms * 1.5 : work_ms);
		MPI_Allreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
		sum += y;
		MPI_Bcast(&y, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD);
		MPI_Reduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
		MPI_Allgather(sbuf, 4, MPI_INT, rbuf, 4, MPI_INT, MPI_COMM_WORLD);
		MPI_Alltoall(sbuf, 4, MPI_INT, rbuf, 4, MPI_INT, MPI_COMM_WORLD);
		MPI_Reduce_scatter(sbuf, rbuf, counts, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
		MPI_Iallreduce(&x, &y, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD, &req[0]);
		MPI_Wait(&req[0], MPI_STATUS_IGNORE);
		MPI_Ibarrier(MPI_COMM_WORLD, &req[0]);
		MPI_Ibcast(&y, 1, MPI_DOUBLE, 0, MPI_COMM_WORLD, &req[1]);
		MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
		MPI_Barrier(MPI_COMM_WORLD);
	}
	printf("rank %d steps %d", rank, steps);
	if (!rank)
		printf(" allreduce_sum %.1f", sum);
	printf("\n");
	free(sbuf);
	free(rbuf);
	free(counts);
	MPI_Finalize();
	return 0;
}
