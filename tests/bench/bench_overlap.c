/*
 * bench_overlap.c - compute overlapping the allreduce (issue 15 item 6,
 * driver bench_overlap.sh): a step of compute time T (a sleep, standing
 * for GPU work) and an allreduce of --bytes, blocking vs asynchronous.
 *
 *   bench_overlap [--bytes B] [--steps N] [--warmup W]
 *
 * Phase 1 (calibration): W + N steps of FT_Quorum, FT_Allreduce, FT_Commit;
 * A = the median allreduce time; T = the largest A of all groups (an
 * FT_Allreduce with MPI_MAX), so that every group sleeps the same.
 * Phase 2 (blocking): FT_Quorum; sleep T; FT_Allreduce; FT_Commit.
 * Phase 3 (overlap): FT_Quorum; FT_Iallreduce; sleep T; FT_Wait; FT_Commit.
 * Each phase: median of the whole step's time over N steps after W.
 *
 * Output: "SUMMARY bytes B A_ms a T_ms t blocking_ms b overlap_ms o
 * blocking_ratio b/max(T,A) overlap_ratio o/max(T,A)".  Exit 1 when a step
 * did not commit.
 */
#include <inttypes.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"
#include "ftmpi.h"

static void sleep_s(double s)
{
    struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

/* One step in mode m (0 calibration, 1 blocking, 2 overlap); returns its
 * time in s (calibration: the allreduce's), or -1 when it did not commit. */
static double step(int m, float *grad, int count, double t_s)
{
    int committed = 0, rc;
    for (int i = 0; i < count; i++)
        grad[i] = 1.0f;
    double t0 = bench_now(), ta = 0;
    if (FT_Quorum(0) != FT_SUCCESS) {
        FT_Commit(&committed);
        return -1;
    }
    if (m == 0) {
        double a0 = bench_now();
        rc = FT_Allreduce(MPI_IN_PLACE, grad, count, MPI_FLOAT, FT_AVG, FT_COMM_REPLICAS);
        ta = bench_now() - a0;
    } else if (m == 1) {
        sleep_s(t_s);
        rc = FT_Allreduce(MPI_IN_PLACE, grad, count, MPI_FLOAT, FT_AVG, FT_COMM_REPLICAS);
    } else {
        FT_Request req;
        rc = FT_Iallreduce(MPI_IN_PLACE, grad, count, MPI_FLOAT, FT_AVG, FT_COMM_REPLICAS, &req);
        sleep_s(t_s);
        if (rc == FT_SUCCESS)
            rc = FT_Wait(&req);
    }
    FT_Commit(&committed);
    if (rc != FT_SUCCESS || !committed)
        return -1;
    return m == 0 ? ta : bench_now() - t0;
}

/* Median step time of mode m over n steps after w; -1 on a failed step. */
static double phase(int m, float *grad, int count, double t_s, int w, int n)
{
    double *v = malloc((size_t)n * sizeof(*v));
    if (v == NULL)
        return -1;
    for (int i = 0; i < w + n; i++) {
        double t = step(m, grad, count, t_s);
        if (t < 0) {
            free(v);
            return -1;
        }
        if (i >= w)
            v[i - w] = t;
    }
    double med = bench_median(v, (size_t)n);
    free(v);
    return med;
}

int main(int argc, char **argv)
{
    size_t bytes = 64u << 20;
    int steps = 10, warmup = 3;
    MPI_Init(&argc, &argv);
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--bytes"))
            bench_parse_bytes(argv[i + 1], &bytes);
        else if (!strcmp(argv[i], "--steps"))
            steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--warmup"))
            warmup = atoi(argv[i + 1]);
    }
    static char out_buf[BUFSIZ]; /* of its own, not NULL: see examples/ft_sgd.c */
    setvbuf(stdout, out_buf, _IOLBF, sizeof(out_buf));
    int rc = FT_Init(&argc, &argv);
    if (rc != FT_SUCCESS) {
        fprintf(stderr, "bench_overlap: FT_Init: %s\n", FT_Error_string(rc));
        MPI_Finalize();
        return 1;
    }
    int count = (int)(bytes / sizeof(float));
    float *grad = malloc((size_t)count * sizeof(float));
    if (grad == NULL || steps < 1)
        return 1;
    double a = phase(0, grad, count, 0, warmup, steps), t = a;
    int committed = 0;
    /* every group sleeps the largest A */
    if (a >= 0 && FT_Quorum(0) == FT_SUCCESS &&
        FT_Allreduce(MPI_IN_PLACE, &t, 1, MPI_DOUBLE, MPI_MAX, FT_COMM_REPLICAS) == FT_SUCCESS)
        FT_Commit(&committed);
    double b = committed ? phase(1, grad, count, t, warmup, steps) : -1;
    double o = b >= 0 ? phase(2, grad, count, t, warmup, steps) : -1;
    int ok = a >= 0 && committed && b >= 0 && o >= 0;
    double m = t > a ? t : a;
    if (ok)
        printf("SUMMARY bytes %zu A_ms %.1f T_ms %.1f blocking_ms %.1f overlap_ms %.1f "
               "blocking_ratio %.3f overlap_ratio %.3f\n",
               bytes, a * 1e3, t * 1e3, b * 1e3, o * 1e3, b / m, o / m);
    else
        fprintf(stderr, "bench_overlap: a step did not commit\n");
    FT_Finalize();
    MPI_Finalize();
    free(grad);
    return ok ? 0 : 1;
}
