/*
 * bench_modeb_parts.c - where the mpi backend's time goes below the ring
 * (doc/PERFORMANCE.md section 4).  Plain MPI, no libftmpi: one MPI_Allreduce
 * of MPI_FLOAT SUM over MPI_COMM_WORLD, timed four ways, each adding one
 * part of what FT_Allreduce in mode B does (src/comm/mpi.c,
 * allreduce_native):
 *
 *   native   MPI_Allreduce(src, buf)                    the baseline
 *   nbc      MPI_Iallreduce(src, buf) + MPI_Wait        libnbc's algorithm
 *   poll     MPI_Iallreduce(src, buf) + MPI_Testall and sched_yield until
 *            done                                       fti_mpi_poll's loop
 *   stage    MPI_Iallreduce(src, stage), polled, then memcpy(buf, stage)
 *                                                       the no-write rule's copy
 *
 *   bench_modeb_parts [--bytes N]... [--reps R] [--rounds K]
 *
 * Per size the four ways alternate round by round; each round times R
 * repetitions of k calls (k = 4 MiB / bytes, at least 1) and keeps the
 * median of the ranks' maxima.  Prints, per size and way,
 * "PARTS <bytes> <way> <median of the rounds, us> <min> <max>".  Exit
 * status 0, or 1 on an error.
 */
#include <mpi.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"

#define MAX_SIZES 8
#define MAX_REPS 64
#define MAX_ROUNDS 32
#define N_WAYS 4

static const char *const way_name[N_WAYS] = {"native", "nbc", "poll", "stage"};

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One call of way w; 0 or an MPI error code. */
static int one_call(int w, const float *src, float *buf, float *stage, int count)
{
    MPI_Request q = MPI_REQUEST_NULL;
    int rc, done = 0;
    if (w == 0)
        return MPI_Allreduce(src, buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    rc = MPI_Iallreduce(src, w == 3 ? stage : buf, count, MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD, &q);
    if (rc != MPI_SUCCESS)
        return rc;
    if (w == 1)
        return MPI_Wait(&q, MPI_STATUS_IGNORE);
    while (!done) {
        if ((rc = MPI_Testall(1, &q, &done, MPI_STATUSES_IGNORE)) != MPI_SUCCESS)
            return rc;
        if (!done)
            sched_yield();
    }
    if (w == 3)
        memcpy(buf, stage, (size_t)count * sizeof(float));
    return MPI_SUCCESS;
}

/* The median over reps of the ranks' slowest time per call of way w. */
static int time_way(int w, size_t bytes, int reps, const float *src, float *buf, float *stage,
                    double *us_p)
{
    int count = (int)(bytes / sizeof(float)), k = (int)((size_t)(4u << 20) / bytes), rc;
    double t[MAX_REPS + 1], tmax[MAX_REPS + 1];
    k = k < 1 ? 1 : k;
    for (int r = 0; r <= reps; r++) { /* the first is a warm-up */
        if ((rc = MPI_Barrier(MPI_COMM_WORLD)) != MPI_SUCCESS)
            return rc;
        double t0 = bench_now();
        for (int i = 0; i < k; i++)
            if ((rc = one_call(w, src, buf, stage, count)) != MPI_SUCCESS)
                return rc;
        t[r] = (bench_now() - t0) / k * 1e6;
    }
    if ((rc = MPI_Allreduce(t, tmax, reps + 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD)) !=
        MPI_SUCCESS)
        return rc;
    qsort(tmax + 1, (size_t)reps, sizeof(double), cmp_d);
    *us_p = tmax[1 + reps / 2];
    return MPI_SUCCESS;
}

int main(int argc, char **argv)
{
    size_t sizes[MAX_SIZES], max = 0;
    int n_sizes = 0, reps = 7, rounds = 5, me, bad = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--bytes") && i + 1 < argc && n_sizes < MAX_SIZES &&
            bench_parse_bytes(argv[i + 1], &sizes[n_sizes]) == 0 && sizes[n_sizes] >= 4) {
            if (sizes[n_sizes] > max)
                max = sizes[n_sizes];
            n_sizes++;
            i++;
        } else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--rounds") && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else
            bad = 1;
    }
    if (bad || n_sizes == 0 || reps < 1 || reps > MAX_REPS || rounds < 1 || rounds > MAX_ROUNDS) {
        if (me == 0)
            fprintf(stderr, "usage: bench_modeb_parts --bytes N [--bytes N]... [--reps R<=%d] "
                            "[--rounds K<=%d]\n", MAX_REPS, MAX_ROUNDS);
        MPI_Finalize();
        return 1;
    }
    float *src = malloc(max), *buf = malloc(max), *stage = malloc(max);
    if (src == NULL || buf == NULL || stage == NULL) {
        fprintf(stderr, "bench_modeb_parts: no memory for 3 x %zu bytes\n", max);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t i = 0; i < max / sizeof(float); i++)
        src[i] = (float)(me + 1);
    memset(buf, 0, max);
    memset(stage, 0, max); /* resident, as the backend's reused stage is */
    int rc = MPI_SUCCESS;
    for (int s = 0; s < n_sizes && rc == MPI_SUCCESS; s++) {
        double us[N_WAYS][MAX_ROUNDS];
        for (int r = 0; r < rounds && rc == MPI_SUCCESS; r++)
            for (int w = 0; w < N_WAYS && rc == MPI_SUCCESS; w++)
                rc = time_way(w, sizes[s], reps, src, buf, stage, &us[w][r]);
        for (int w = 0; w < N_WAYS && rc == MPI_SUCCESS && me == 0; w++) {
            qsort(us[w], (size_t)rounds, sizeof(double), cmp_d);
            printf("PARTS %zu %s %.1f %.1f %.1f\n", sizes[s], way_name[w], us[w][rounds / 2],
                   us[w][0], us[w][rounds - 1]);
        }
    }
    if (rc != MPI_SUCCESS)
        fprintf(stderr, "bench_modeb_parts: MPI error %d\n", rc);
    free(src);
    free(buf);
    free(stage);
    MPI_Finalize();
    return rc == MPI_SUCCESS ? 0 : 1;
}
