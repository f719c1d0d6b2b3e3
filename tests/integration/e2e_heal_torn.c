/*
 * e2e_heal_torn.c - the state a rank commits is never a mix of two
 * states (issue 10 item 1; test_e2e_heal_kill_mid.sh runs it).
 *
 *   e2e_heal_torn --mib M --value V --steps N [--sleep-ms S] [--max-s T]
 *
 * Each rank registers two buffers of floats, "w" (M MiB) and "m" (1 MiB),
 * both filled with V, and runs steps (FT_Quorum, a 1-element FT_Allreduce,
 * FT_Commit) until FT_Step() reaches N, sleeping S ms after each; with T,
 * it also stops once T seconds have passed (a rank whose group can no
 * longer commit still ends and reports).  The
 * state itself never changes here: only a heal can change it.  After every
 * committed step and at the end each rank scans both buffers and prints
 *
 *   commit step S rank R ones A sevens B other C
 *   final step S rank R ones A sevens B other C quorum_max_ms Q commit_max_ms K
 *
 * or, when an FT call says the group is lost (FTMPI_HEAL_INSTALL=direct:
 * a heal that failed after it began writing the state), instead of the
 * final line
 *
 *   lost step S rank R ones A sevens B other C
 *
 * and exit status 4, so that ftmpi-run restarts the group.
 * (A, B, C: elements equal to 1.0, to 7.0 and to anything else), so that
 * the script can tell a uniform state (all 1.0 or all 7.0) from a torn one,
 * and compare every rank's final step and state.  Q and K are the longest
 * FT_Quorum and FT_Commit calls of the run.  Exit 0 unless the setup
 * failed or the group was lost.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "ftmpi.h"

struct counts {
    size_t ones, sevens, other;
};

static void scan(const float *x, size_t n, struct counts *c)
{
    for (size_t i = 0; i < n; i++) {
        if (x[i] == 1.0f)
            c->ones++;
        else if (x[i] == 7.0f)
            c->sevens++;
        else
            c->other++;
    }
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

struct opts {
    long mib, steps;
    float value;
    int sleep_ms;
    long max_s; /* 0: no limit */
};

static int parse(int argc, char **argv, struct opts *o)
{
    o->mib = 0, o->steps = 0, o->value = 0.0f, o->sleep_ms = 0, o->max_s = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--mib") == 0)
            o->mib = strtol(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--value") == 0)
            o->value = strtof(argv[i + 1], NULL);
        else if (strcmp(argv[i], "--steps") == 0)
            o->steps = strtol(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--sleep-ms") == 0)
            o->sleep_ms = (int)strtol(argv[i + 1], NULL, 10);
        else if (strcmp(argv[i], "--max-s") == 0)
            o->max_s = strtol(argv[i + 1], NULL, 10);
        else
            return -1;
    }
    return o->mib > 0 && o->steps > 0 && o->value != 0.0f ? 0 : -1;
}

static void report(const char *what, int rank, const float *w, size_t nw, const float *m,
                   size_t nm)
{
    struct counts c = {0, 0, 0};
    scan(w, nw, &c);
    scan(m, nm, &c);
    printf("%s step %" PRId64 " rank %d ones %zu sevens %zu other %zu", what, FT_Step(), rank,
           c.ones, c.sevens, c.other);
}

int main(int argc, char **argv)
{
    struct opts o;
    int rank;
    MPI_Init(&argc, &argv);
    static char out_buf[BUFSIZ]; /* of its own, not NULL: see examples/ft_sgd.c */
    setvbuf(stdout, out_buf, _IOLBF, sizeof(out_buf));
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    if (parse(argc, argv, &o) != 0) {
        fprintf(stderr, "usage: e2e_heal_torn --mib M --value V --steps N [--sleep-ms S] [--max-s T]\n");
        MPI_Finalize();
        return 2;
    }
    size_t nw = ((size_t)o.mib << 20) / sizeof(float), nm = ((size_t)1 << 20) / sizeof(float);
    float *w = malloc(nw * sizeof(float)), *m = malloc(nm * sizeof(float));
    if (w == NULL || m == NULL) {
        fprintf(stderr, "e2e_heal_torn: no memory for %ld MiB\n", o.mib);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    for (size_t i = 0; i < nw; i++)
        w[i] = o.value;
    for (size_t i = 0; i < nm; i++)
        m[i] = o.value;
    int rc = FT_Init(&argc, &argv);
    if (rc == FT_SUCCESS)
        rc = FT_State_register("w", w, nw * sizeof(float));
    if (rc == FT_SUCCESS)
        rc = FT_State_register("m", m, nm * sizeof(float));
    if (rc != FT_SUCCESS) {
        fprintf(stderr, "e2e_heal_torn: setup: %s\n", FT_Error_string(rc));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    double q_max = 0, c_max = 0, start = now_ms();
    bool lost = false;
    while (!lost && FT_Step() < o.steps && (o.max_s == 0 || now_ms() - start < o.max_s * 1e3)) {
        double t0 = now_ms();
        lost = FT_Quorum(0) == FT_ERR_GROUP_LOST;
        double t1 = now_ms();
        float x = 1.0f;
        lost |= FT_Allreduce(MPI_IN_PLACE, &x, 1, MPI_FLOAT, MPI_SUM, FT_COMM_REPLICAS) ==
                FT_ERR_GROUP_LOST;
        double t2 = now_ms();
        int committed = 0;
        lost |= FT_Commit(&committed) == FT_ERR_GROUP_LOST;
        double t3 = now_ms();
        q_max = t1 - t0 > q_max ? t1 - t0 : q_max;
        c_max = t3 - t2 > c_max ? t3 - t2 : c_max;
        if (committed) {
            report("commit", rank, w, nw, m, nm);
            printf("\n");
        }
        if (o.sleep_ms > 0)
            sleep_ms(o.sleep_ms);
    }
    report(lost ? "lost" : "final", rank, w, nw, m, nm);
    if (lost)
        printf("\n");
    else
        printf(" quorum_max_ms %.0f commit_max_ms %.0f\n", q_max, c_max);
    fflush(stdout);
    FT_Finalize();
    MPI_Finalize();
    free(w);
    free(m);
    return lost ? 4 : 0;
}
