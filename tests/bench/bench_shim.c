/*
 * bench_shim.c - MPI_Allreduce time per call of a plain MPI program (no
 * FT_ call), for tests/bench/bench_shim.sh, which runs it with and without
 * libftmpi_pmpi (LD_PRELOAD).  MPI_DOUBLE MPI_SUM on MPI_COMM_WORLD with
 * separate buffers, sizes 8 B to MAX_BYTES (x4 each step, MAX_BYTES last); each size warms
 * up, then times enough calls for about 0.2 s (at least 3).  World rank 0
 * prints "bytes usec_per_call" per size: the slowest rank's mean.
 * BENCH_SHIM_BARRIER=1: an MPI_Barrier after each timed MPI_Allreduce (a
 * loop of a widely used latency benchmark; the time is of both calls).
 *
 *   bench_shim [MAX_BYTES (default 64 MiB)]
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long max_bytes = argc > 1 ? atol(argv[1]) : 64L << 20;
    int barrier = getenv("BENCH_SHIM_BARRIER") != NULL && atoi(getenv("BENCH_SHIM_BARRIER")) != 0;
    size_t max_n = (size_t)max_bytes / sizeof(double);
    double *s = malloc((max_n + 1) * sizeof(double)), *r = malloc((max_n + 1) * sizeof(double));
    if (s == NULL || r == NULL) {
        fprintf(stderr, "bench_shim: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t i = 0; i <= max_n; i++)
        s[i] = (double)(i % 1000) + rank;
    memset(r, 0, (max_n + 1) * sizeof(double));
    for (long bytes = 8; bytes <= max_bytes; bytes = bytes < max_bytes && bytes * 4 > max_bytes ? max_bytes : bytes * 4) {
        int n = (int)(bytes / (long)sizeof(double));
        for (int i = 0; i < 3; i++)
            MPI_Allreduce(s, r, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        /* calls for about 0.2 s, from one timed call (the same on every rank) */
        double t = MPI_Wtime();
        MPI_Allreduce(s, r, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        t = MPI_Wtime() - t;
        MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        int iters = t > 0 ? (int)(0.2 / t) : 1000;
        iters = iters < 3 ? 3 : iters > 2000 ? 2000 : iters;
        MPI_Barrier(MPI_COMM_WORLD);
        t = MPI_Wtime();
        for (int i = 0; i < iters; i++) {
            MPI_Allreduce(s, r, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            if (barrier)
                MPI_Barrier(MPI_COMM_WORLD);
        }
        t = (MPI_Wtime() - t) / iters;
        MPI_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
        if (rank == 0)
            printf("%ld %.2f\n", bytes, t * 1e6);
        fflush(stdout);
    }
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
