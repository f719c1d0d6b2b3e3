/*
 * e2e_timeout.c - I5: with a replica group missing (the lighthouse and
 * FTMPI_MIN_REPLICAS want 2 groups, only this one runs), FT_Quorum and
 * FT_Commit must come back with FT_ERR_TIMEOUT within their configured
 * deadline + 1 s, the step must not commit, and the library must stay
 * usable (the next step times out the same way; FT_Finalize returns).
 *
 *   e2e_timeout --quorum-timeout-ms Q --timeout-ms T [--steps N]
 *
 * Q and T must be the values of FTMPI_QUORUM_TIMEOUT_MS and
 * FTMPI_TIMEOUT_MS the test exports.  Prints one line per call with its
 * result and time; exits 0 when every check held, 1 otherwise.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "ftmpi.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int failures;

static void check(int ok, const char *what, int rc, double ms, double limit)
{
    printf("%s %s: rc %d (%s) after %.0f ms (limit %.0f ms)\n", ok ? "ok  " : "FAIL", what, rc,
           FT_Error_string(rc), ms, limit);
    if (!ok)
        failures++;
}

int main(int argc, char **argv)
{
    long qt = -1, t = -1, steps = 2;
    int rank;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    static char out_buf[BUFSIZ]; /* of its own, not NULL: see examples/ft_sgd.c */
    setvbuf(stdout, out_buf, _IOLBF, sizeof(out_buf));
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--quorum-timeout-ms"))
            qt = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--timeout-ms"))
            t = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--steps"))
            steps = atol(argv[i + 1]);
    }
    if (qt <= 0 || t <= 0) {
        fprintf(stderr, "usage: e2e_timeout --quorum-timeout-ms Q --timeout-ms T [--steps N]\n");
        MPI_Finalize();
        return 2;
    }

    int rc = FT_Init(&argc, &argv);
    if (rc != FT_SUCCESS) {
        fprintf(stderr, "e2e_timeout: FT_Init: %s\n", FT_Error_string(rc));
        MPI_Finalize();
        return 1;
    }
    float buf[4] = {1, 2, 3, 4};
    FT_State_register("buf", buf, sizeof(buf));

    for (long s = 0; s < steps; s++) {
        double t0 = now_ms();
        rc = FT_Quorum(0);
        double dt = now_ms() - t0;
        check(rc == FT_ERR_TIMEOUT && dt <= qt + 1000, "FT_Quorum", rc, dt, qt + 1000.0);

        t0 = now_ms();
        rc = FT_Allreduce(MPI_IN_PLACE, buf, 4, MPI_FLOAT, MPI_SUM, FT_COMM_REPLICAS);
        dt = now_ms() - t0;
        check(rc != FT_SUCCESS && dt <= t + 1000, "FT_Allreduce after a failed quorum", rc, dt,
              t + 1000.0);

        int committed = -1;
        t0 = now_ms();
        rc = FT_Commit(&committed);
        dt = now_ms() - t0;
        check(rc == FT_ERR_TIMEOUT && dt <= t + 1000, "FT_Commit", rc, dt, t + 1000.0);
        check(committed != 1, "no commit", committed, 0, 0);
        check(FT_Step() == 0, "step stays 0", (int)FT_Step(), 0, 0);
    }

    double t0 = now_ms();
    rc = FT_Finalize();
    double dt = now_ms() - t0;
    check(rc == FT_SUCCESS && dt <= t + 1000, "FT_Finalize", rc, dt, t + 1000.0);
    MPI_Finalize();
    if (rank == 0)
        printf("%s: %d failed check(s)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
