/*
 * bench_shim.c - MPI_Allreduce time per call of a plain MPI program (no
 * FT_ call), for tests/bench/bench_shim.sh, which runs it with and without
 * libftmpi_pmpi (LD_PRELOAD).  MPI_DOUBLE MPI_SUM on MPI_COMM_WORLD with
 * separate buffers, sizes 8 B to MAX_BYTES (x4 each step, paired: x2 up to
 * 4 KiB; MAX_BYTES last).
 * BENCH_SHIM_BARRIER=1: an MPI_Barrier after each timed MPI_Allreduce (a
 * loop of a widely used latency benchmark; the time is of both calls).
 *
 * Default: each size warms up, then times enough calls for about 0.2 s (at
 * least 3); world rank 0 prints "bytes usec_per_call" per size: the
 * slowest rank's mean.
 *
 * BENCH_SHIM_PAIRED=1: native and drop-in alternate in this one run, so
 * that the load of a shared machine hits both alike.  Native is the
 * PMPI_ call (PMPI_Allreduce, PMPI_Barrier: Open MPI's own, past the
 * shim), the drop-in the MPI_ one (the shim's when it is preloaded; without
 * it both are native, which shows the method's noise).  Per size,
 * BENCH_SHIM_PAIR_ROUNDS rounds (default 21) of one block of k native calls and
 * one of k drop-in calls, in turns (which goes first alternates), each
 * block after a PMPI_Barrier; a block's time is the slowest rank's mean
 * per call, and world rank 0 prints "bytes native_us shim_us" per size:
 * the medians over the rounds.  A block is short (k = 1 MiB / size, 2 to
 * 50 calls), so that most blocks run between two preemptions.
 *
 * BENCH_SHIM_OSU=1: the paired method in the shape of OSU's
 * `osu_allreduce -T mpi_float` (MPI_FLOAT MPI_SUM on MPI_COMM_WORLD, each
 * call timed alone, an MPI_Barrier after it, untimed; a block's time the
 * mean over the ranks of each rank's mean, OSU's "Avg Latency") at 4 B,
 * 16 B, 64 B, 256 B and 1 KiB: per size BENCH_SHIM_PAIR_ROUNDS rounds
 * (default 21) of a native block (PMPI_Allreduce, PMPI_Barrier) and a
 * drop-in block (MPI_Allreduce, MPI_Barrier) of BENCH_SHIM_OSU_ITERS calls
 * (default 100), which goes first alternating; world rank 0 prints
 * "bytes native_us shim_us" per size, the medians over the rounds.
 *
 *   bench_shim [MAX_BYTES (default 64 MiB)]
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof(*v), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* k calls (native: the PMPI_ ones) after a barrier; seconds per call on
 * this rank */
static double block(int native, int barrier, int k, const double *s, double *r, int n)
{
    PMPI_Barrier(MPI_COMM_WORLD);
    double t = MPI_Wtime();
    for (int i = 0; i < k; i++) {
        if (native) {
            PMPI_Allreduce(s, r, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            if (barrier)
                PMPI_Barrier(MPI_COMM_WORLD);
        } else {
            MPI_Allreduce(s, r, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
            if (barrier)
                MPI_Barrier(MPI_COMM_WORLD);
        }
    }
    return (MPI_Wtime() - t) / k;
}

/* BENCH_SHIM_PAIRED (see the top) for one size of n doubles */
static void paired(int rank, int barrier, int rounds, long bytes, const double *s, double *r,
                   int n)
{
    int k = (int)((1L << 20) / bytes);
    k = k < 2 ? 2 : k > 50 ? 50 : k;
    double *t = malloc(2 * (size_t)rounds * sizeof(double));
    if (t == NULL) {
        fprintf(stderr, "bench_shim: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    block(1, barrier, 2, s, r, n); /* warm-up of both */
    block(0, barrier, 2, s, r, n);
    for (int i = 0; i < rounds; i++) {
        int first = i % 2; /* 1: native first */
        /* t[2i]: the drop-in, t[2i+1]: native */
        t[2 * i + first] = block(first, barrier, k, s, r, n);
        t[2 * i + !first] = block(!first, barrier, k, s, r, n);
    }
    /* the slowest rank's */
    PMPI_Allreduce(MPI_IN_PLACE, t, 2 * rounds, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0) {
        double *nat = malloc((size_t)rounds * sizeof(double));
        double *shim = malloc((size_t)rounds * sizeof(double));
        if (nat == NULL || shim == NULL) {
            fprintf(stderr, "bench_shim: out of memory\n");
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        for (int i = 0; i < rounds; i++) {
            shim[i] = t[2 * i];
            nat[i] = t[2 * i + 1];
        }
        printf("%ld %.3f %.3f\n", bytes, median(nat, rounds) * 1e6, median(shim, rounds) * 1e6);
        fflush(stdout);
        free(nat);
        free(shim);
    }
    free(t);
}

/* BENCH_SHIM_OSU (see the top): k calls of n floats, each timed alone,
 * after a barrier; OSU's average of the ranks' mean latency, seconds */
static double osu_block(int native, int k, const float *s, float *r, int n, int size)
{
    double sum = 0;
    PMPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < k; i++) {
        double t = MPI_Wtime();
        if (native)
            PMPI_Allreduce(s, r, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        else
            MPI_Allreduce(s, r, n, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
        sum += MPI_Wtime() - t;
        if (native)
            PMPI_Barrier(MPI_COMM_WORLD);
        else
            MPI_Barrier(MPI_COMM_WORLD);
    }
    sum /= k;
    PMPI_Allreduce(MPI_IN_PLACE, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    return sum / size;
}

static void osu(int rank, int rounds)
{
    static const int sizes[] = {4, 16, 64, 256, 1024};
    static float s[256], r[256];
    int size, k = getenv("BENCH_SHIM_OSU_ITERS") != NULL ? atoi(getenv("BENCH_SHIM_OSU_ITERS")) : 100;
    k = k < 1 ? 1 : k;
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    for (int i = 0; i < 256; i++)
        s[i] = (float)(i % 10) + (float)rank;
    double *nat = malloc((size_t)rounds * sizeof(double));
    double *shim = malloc((size_t)rounds * sizeof(double));
    if (nat == NULL || shim == NULL) {
        fprintf(stderr, "bench_shim: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t z = 0; z < sizeof(sizes) / sizeof(sizes[0]); z++) {
        int n = sizes[z] / (int)sizeof(float);
        osu_block(1, k, s, r, n, size); /* warm-up of both (OSU's skip) */
        osu_block(0, k, s, r, n, size);
        for (int i = 0; i < rounds; i++) {
            if (i % 2) {
                nat[i] = osu_block(1, k, s, r, n, size);
                shim[i] = osu_block(0, k, s, r, n, size);
            } else {
                shim[i] = osu_block(0, k, s, r, n, size);
                nat[i] = osu_block(1, k, s, r, n, size);
            }
        }
        if (rank == 0) {
            printf("%d %.3f %.3f\n", sizes[z], median(nat, rounds) * 1e6,
                   median(shim, rounds) * 1e6);
            fflush(stdout);
        }
    }
    free(nat);
    free(shim);
}

int main(int argc, char **argv)
{
    int rank;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    long max_bytes = argc > 1 ? atol(argv[1]) : 64L << 20;
    int barrier = getenv("BENCH_SHIM_BARRIER") != NULL && atoi(getenv("BENCH_SHIM_BARRIER")) != 0;
    int pair = getenv("BENCH_SHIM_PAIRED") != NULL && atoi(getenv("BENCH_SHIM_PAIRED")) != 0;
    int rounds = getenv("BENCH_SHIM_PAIR_ROUNDS") != NULL ? atoi(getenv("BENCH_SHIM_PAIR_ROUNDS")) : 21;
    rounds = rounds < 1 ? 1 : rounds;
    if (getenv("BENCH_SHIM_OSU") != NULL && atoi(getenv("BENCH_SHIM_OSU")) != 0) {
        osu(rank, rounds);
        MPI_Finalize();
        return 0;
    }
    size_t max_n = (size_t)max_bytes / sizeof(double);
    double *s = malloc((max_n + 1) * sizeof(double)), *r = malloc((max_n + 1) * sizeof(double));
    if (s == NULL || r == NULL) {
        fprintf(stderr, "bench_shim: out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t i = 0; i <= max_n; i++)
        s[i] = (double)(i % 1000) + rank;
    memset(r, 0, (max_n + 1) * sizeof(double));
    for (long bytes = 8; bytes <= max_bytes;) {
        int n = (int)(bytes / (long)sizeof(double));
        /* the next size: x4 (paired: x2 up to 4 KiB), MAX_BYTES last */
        long next = bytes * (pair && bytes < 4096 ? 2 : 4);
        next = bytes < max_bytes && next > max_bytes ? max_bytes : next;
        if (pair) {
            paired(rank, barrier, rounds, bytes, s, r, n);
            bytes = next;
            continue;
        }
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
        bytes = next;
    }
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
