/*
 * shim_patterns.c - an unmodified MPI program (no libftmpi call) with the
 * patterns of real codes that hung under the drop-in (issue 28), for
 * tests/shim/test_shim_nohang.sh.  argv[1] picks one:
 *   halo     a 1-D ring halo exchange (MPI_Isend/MPI_Irecv + MPI_Waitall
 *            and MPI_Sendrecv, alternating) then an allreduce of a residual;
 *   testloop the same exchange completed by an MPI_Test loop;
 *   barrier  an allreduce then an MPI_Barrier, each iteration;
 *   split    an allreduce on a communicator from MPI_Comm_split with one
 *            color (every rank), then MPI_Bcast on it;
 *   compute  allreduces with a long compute phase on world rank 1 before
 *            every 10th (SHIM_P_COMPUTE_MS, default 3000: longer than the
 *            tests' FTMPI_TIMEOUT_MS): the job must not end.
 * SHIM_P_ITERS (default 200) iterations, SHIM_P_SLEEP_MS (default 5) of
 * sleep in each.  SHIM_P_DIE=R:I makes world rank R SIGKILL itself before
 * iteration I; SHIM_P_STOP=R:I makes it SIGSTOP itself; either first prints
 * "patterns fault rank=R at_ms=T" (T: the wall clock in ms).
 * SHIM_P_GATE=FILE:I makes every rank print "patterns gate rank=R" before
 * iteration I and wait, outside MPI, until FILE exists (at most 300 s).
 * Prints "patterns started" (rank 0) and, at the end,
 * "patterns MODE rank=R iters=N value=V" with V the same on every rank.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static int env_int(const char *name, int def)
{
    const char *v = getenv(name);
    return v != NULL ? atoi(v) : def;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *mode = argc > 1 ? argv[1] : "halo";
    int iters = env_int("SHIM_P_ITERS", 200), nap = env_int("SHIM_P_SLEEP_MS", 5);
    int compute_ms = env_int("SHIM_P_COMPUTE_MS", 3000);
    /* barrier and compute: doubles per allreduce (1 MiB from 131072: the
     * drop-in's held allreduce under return and continue at 4 ranks) */
    int count = env_int("SHIM_P_COUNT", 1);
    int die_rank = -1, die_at = -1, stop_rank = -1, stop_at = -1;
    if (getenv("SHIM_P_DIE"))
        sscanf(getenv("SHIM_P_DIE"), "%d:%d", &die_rank, &die_at);
    if (getenv("SHIM_P_STOP"))
        sscanf(getenv("SHIM_P_STOP"), "%d:%d", &stop_rank, &stop_at);
    char gate[4096] = "";
    int gate_at = -1;
    if (getenv("SHIM_P_GATE"))
        sscanf(getenv("SHIM_P_GATE"), "%4095[^:]:%d", gate, &gate_at);
    MPI_Comm comm = MPI_COMM_WORLD;
    if (strcmp(mode, "split") == 0)
        MPI_Comm_split(MPI_COMM_WORLD, 0, size - rank, &comm);
    if (rank == 0)
        printf("patterns started\n");
    fflush(stdout);
    enum { N = 64 };
    double u[N + 2], value = 0;
    double *xs = malloc((size_t)(count > 0 ? count : 1) * sizeof(*xs));
    double *ss = malloc((size_t)(count > 0 ? count : 1) * sizeof(*ss));
    if (count < 1 || xs == NULL || ss == NULL) {
        fprintf(stderr, "shim_patterns: bad SHIM_P_COUNT or out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (int i = 0; i < N + 2; i++)
        u[i] = rank + i * 0.001;
    int left = (rank + size - 1) % size, right = (rank + 1) % size;
    for (int it = 0; it < iters; it++) {
        if (it == gate_at) {
            printf("patterns gate rank=%d\n", rank);
            fflush(stdout);
            for (int k = 0; k < 300000 / 20 && access(gate, F_OK) != 0; k++)
                sleep_ms(20);
        }
        if ((rank == die_rank && it == die_at) || (rank == stop_rank && it == stop_at)) {
            struct timespec now;
            clock_gettime(CLOCK_REALTIME, &now);
            printf("patterns fault rank=%d at_ms=%lld\n", rank,
                   (long long)now.tv_sec * 1000 + now.tv_nsec / 1000000);
            fflush(stdout);
            raise(rank == die_rank && it == die_at ? SIGKILL : SIGSTOP);
        }
        if (strcmp(mode, "halo") == 0 || strcmp(mode, "testloop") == 0) {
            MPI_Request rq[4];
            if (it % 2 == 0 || strcmp(mode, "testloop") == 0) {
                MPI_Irecv(&u[0], 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &rq[0]);
                MPI_Irecv(&u[N + 1], 1, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &rq[1]);
                MPI_Isend(&u[N], 1, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &rq[2]);
                MPI_Isend(&u[1], 1, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &rq[3]);
                if (strcmp(mode, "halo") == 0) {
                    MPI_Waitall(4, rq, MPI_STATUSES_IGNORE);
                } else {
                    int done = 0;
                    while (!done)
                        MPI_Testall(4, rq, &done, MPI_STATUSES_IGNORE);
                }
            } else {
                MPI_Sendrecv(&u[N], 1, MPI_DOUBLE, right, 1, &u[0], 1, MPI_DOUBLE, left, 1,
                             MPI_COMM_WORLD, MPI_STATUS_IGNORE);
                MPI_Sendrecv(&u[1], 1, MPI_DOUBLE, left, 2, &u[N + 1], 1, MPI_DOUBLE, right, 2,
                             MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            }
            double res = 0;
            for (int i = 1; i <= N; i++) {
                double nu = 0.5 * u[i] + 0.25 * (u[i - 1] + u[i + 1]);
                res += (nu - u[i]) * (nu - u[i]);
                u[i] = nu;
            }
            MPI_Allreduce(&res, &value, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        } else {
            if (strcmp(mode, "compute") == 0 && rank == 1 % size && it % 10 == 5)
                sleep_ms(compute_ms);
            for (int i = 0; i < count; i++)
                xs[i] = rank + it + i % 7;
            MPI_Allreduce(xs, ss, count, MPI_DOUBLE, MPI_SUM, comm);
            value += ss[0] + (count > 1 ? ss[count - 1] : 0);
            if (strcmp(mode, "barrier") == 0)
                MPI_Barrier(MPI_COMM_WORLD);
            if (strcmp(mode, "split") == 0)
                MPI_Bcast(&value, 1, MPI_DOUBLE, 0, comm);
        }
        sleep_ms(nap);
    }
    printf("patterns %s rank=%d iters=%d value=%.17g\n", mode, rank, iters, value);
    free(xs);
    free(ss);
    if (comm != MPI_COMM_WORLD)
        MPI_Comm_free(&comm);
    MPI_Finalize();
    return 0;
}
