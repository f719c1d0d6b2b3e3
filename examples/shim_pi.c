/*
 * shim_pi.c - a Monte-Carlo estimator of pi written with plain MPI (no FT_
 * call): every rank throws points into the unit square, the hits and the
 * throws are summed with MPI_Allreduce on MPI_COMM_WORLD after each batch.
 * Under the drop-in it survives a rank's death: the sums go on over the
 * survivors, and hits / throws stays an estimate of pi / 4.
 *
 *   mpirun --enable-recovery -np 4 -x LD_PRELOAD=libftmpi_pmpi.so \
 *       -x FTMPI_SHIM_ON_FAILURE=continue ./shim_pi
 *
 * Environment (all optional): SHIM_PI_BATCHES (default 200),
 * SHIM_PI_SAMPLES per rank and batch (default 100000), SHIM_PI_SLEEP_MS
 * per batch (default 0).  Every rank prints "pi rank=R batches=B
 * throws=T estimate=E"; the program checks its own result: it exits 1
 * when the estimate is off by more than 6 standard deviations.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define PI 3.14159265358979323846

static double uniform(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / 9007199254740992.0;
}

static long env_long(const char *name, long dflt)
{
    const char *v = getenv(name);
    return v != NULL && atol(v) > 0 ? atol(v) : dflt;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    long batches = env_long("SHIM_PI_BATCHES", 200);
    long samples = env_long("SHIM_PI_SAMPLES", 100000);
    long sleep_ms = env_long("SHIM_PI_SLEEP_MS", 0);
    double hits = 0, throws = 0;
    long b;
    for (b = 0; b < batches; b++) {
        /* a stream per (rank, batch): the same numbers with and without the shim */
        uint64_t seed = (uint64_t)rank * 1000003ULL + (uint64_t)b * 7919ULL + 1;
        double mine[2] = {0, (double)samples};
        for (long i = 0; i < samples; i++) {
            double x = uniform(&seed), y = uniform(&seed);
            mine[0] += x * x + y * y <= 1.0;
        }
        MPI_Allreduce(MPI_IN_PLACE, mine, 2, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        hits += mine[0];
        throws += mine[1];
        if (sleep_ms > 0) {
            struct timespec ts = {sleep_ms / 1000, (sleep_ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
        if (rank == 0 && b == 0) {
            printf("pi started on %d ranks\n", size);
            fflush(stdout);
        }
    }
    double pi = 4 * hits / throws;
    double sigma = 4 * sqrt(PI / 4 * (1 - PI / 4) / throws);
    int ok = fabs(pi - PI) <= 6 * sigma;
    printf("pi rank=%d batches=%ld throws=%.0f estimate=%.10f %s\n", rank, b, throws, pi,
           ok ? "ok" : "WRONG");
    MPI_Finalize();
    return ok ? 0 : 1;
}
