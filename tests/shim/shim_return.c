/*
 * shim_return.c - an unmodified MPI program under MPI_ERRORS_RETURN for the
 * drop-in's S2 test: sums ones over the world every 10 ms for 4 s, counts
 * the calls that fail; at the end each rank prints
 * "shim_return rank=R errors=E after=ok|bad" (after: every call after the
 * first error summed to the number of ranks then alive, world size - 1).
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <time.h>

int main(int argc, char **argv)
{
    int rank, size, errors = 0, after_ok = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (rank == 0)
        printf("shim_return started\n");
    fflush(stdout);
    for (int i = 0; i < 400; i++) {
        int one = 1, sum = 0;
        int rc = MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS)
            errors++;
        else if (errors > 0 && sum != size - 1)
            after_ok = 0;
        else if (errors == 0 && sum != size && sum != size - 1)
            after_ok = 0;
        struct timespec ts = {0, 10000000L};
        nanosleep(&ts, NULL);
    }
    printf("shim_return rank=%d errors=%d after=%s\n", rank, errors, after_ok ? "ok" : "bad");
    MPI_Finalize();
    return 0;
}
