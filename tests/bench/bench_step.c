/*
 * bench_step.c - a step loop on libftmpi for the step-overhead and recovery
 * benchmarks (drivers: bench_step.sh, bench_recovery.sh).
 *
 *   bench_step [--steps N] [--warmup W] [--grad-bytes B] [--state-bytes S]
 *              [--sleep-ms MS] [--max-attempts M] [--async-quorum 0|1]
 *
 * One step: FT_Quorum(0) (--async-quorum 1: FT_Quorum(FT_QUORUM_ASYNC));
 * sleep --sleep-ms (the "compute"); FT_Comm_size (which waits for an
 * asynchronous quorum); FT_Allreduce of
 * --grad-bytes floats in place (FT_AVG; skipped when 0); FT_Commit.  A
 * buffer of --state-bytes (0 = none) is registered with FT_State_register
 * so that a joining group heals it.  The loop ends when FT_Step() reaches N
 * (the same step in every group, healed steps included, so all groups stop
 * together) or after M attempts.
 *
 * Output (stdout, one process per group in these benchmarks):
 *   PID <pid>                          before FT_Init
 *   INIT <wall_us>                     just before FT_Init
 *   READY <wall_us>                    FT_Init returned
 *   REGISTERED <wall_us>               the state is filled and registered
 *   STEP <step> <committed> <participants> <wall_us at the end>
 *        <quorum_us> <allreduce_us> <commit_us> <error>
 *   SUMMARY steps <n> quorum_us <median> allreduce_us <median>
 *           commit_us <median> step_us <median> overhead_us <median>
 * The medians are over the committed steps after the first W (default 10);
 * quorum = the quorum's cost on the step's critical path: the FT_Quorum
 * call plus the FT_Comm_size after the sleep (which waits for an
 * asynchronous quorum still in flight); overhead = quorum + commit, step =
 * the whole step without the sleep.
 * Exit status 0, 1 on an error of FT_Init or when no step committed.
 */
#include <inttypes.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "bench_util.h"
#include "ftmpi.h"

struct opts {
    long steps, warmup, max_attempts, sleep_ms, async_quorum;
    size_t grad_bytes, state_bytes;
};

static int parse(int argc, char **argv, struct opts *o)
{
    o->steps = 100;
    o->warmup = 10;
    o->max_attempts = 100000;
    o->sleep_ms = 0;
    o->async_quorum = 0;
    o->grad_bytes = 0;
    o->state_bytes = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        const char *a = argv[i], *v = argv[i + 1];
        if (!strcmp(a, "--steps"))
            o->steps = atol(v);
        else if (!strcmp(a, "--warmup"))
            o->warmup = atol(v);
        else if (!strcmp(a, "--max-attempts"))
            o->max_attempts = atol(v);
        else if (!strcmp(a, "--sleep-ms"))
            o->sleep_ms = atol(v);
        else if (!strcmp(a, "--async-quorum"))
            o->async_quorum = atol(v);
        else if (!strcmp(a, "--grad-bytes") && bench_parse_bytes(v, &o->grad_bytes) == 0)
            continue;
        else if (!strcmp(a, "--state-bytes") && bench_parse_bytes(v, &o->state_bytes) == 0)
            continue;
        else
            return -1;
    }
    return o->steps >= 1 && o->warmup >= 0 && o->max_attempts >= 1 && o->sleep_ms >= 0 ? 0 : -1;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

int main(int argc, char **argv)
{
    struct opts o;
    int rc;

    MPI_Init(&argc, &argv);
    if (parse(argc, argv, &o) != 0) {
        fprintf(stderr, "usage: bench_step [--steps N] [--warmup W] [--grad-bytes B] "
                        "[--state-bytes S] [--sleep-ms MS] [--max-attempts M] "
                        "[--async-quorum 0|1]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    static char out_buf[BUFSIZ]; /* of its own, not NULL: see examples/ft_sgd.c */
    setvbuf(stdout, out_buf, _IOLBF, sizeof(out_buf));
    printf("PID %d\n", (int)getpid());
    printf("INIT %" PRId64 "\n", bench_wall_us());
    if ((rc = FT_Init(&argc, &argv)) != FT_SUCCESS) {
        fprintf(stderr, "bench_step: FT_Init: %s\n", FT_Error_string(rc));
        MPI_Finalize();
        return 1;
    }
    printf("READY %" PRId64 "\n", bench_wall_us());

    char *state = NULL;
    float *grad = NULL;
    int count = (int)(o.grad_bytes / sizeof(float));
    if (o.state_bytes > 0) {
        state = malloc(o.state_bytes);
        if (state == NULL)
            return 1;
        for (size_t i = 0; i < o.state_bytes; i++)
            state[i] = (char)(i * 31 + 7);
        if ((rc = FT_State_register("state", state, o.state_bytes)) != FT_SUCCESS) {
            fprintf(stderr, "bench_step: FT_State_register: %s\n", FT_Error_string(rc));
            return 1;
        }
    }
    if (count > 0 && (grad = malloc((size_t)count * sizeof(float))) == NULL)
        return 1;
    printf("REGISTERED %" PRId64 "\n", bench_wall_us());

    size_t cap = (size_t)o.steps + 1, n = 0;
    double *tq = malloc(cap * sizeof(double)), *ta = malloc(cap * sizeof(double)),
           *tc = malloc(cap * sizeof(double)), *ts = malloc(cap * sizeof(double)),
           *to = malloc(cap * sizeof(double));
    if (!tq || !ta || !tc || !ts || !to)
        return 1;
    long committed_steps = 0;
    for (long attempt = 0; attempt < o.max_attempts && FT_Step() < o.steps; attempt++) {
        int64_t step = FT_Step();
        int committed = 0, participants = 0, err = 0;
        double t0 = bench_now();
        rc = FT_Quorum(o.async_quorum ? FT_QUORUM_ASYNC : 0);
        double tq_end = bench_now(), t1 = tq_end, t2 = tq_end, tw = 0;
        err = rc;
        if (rc == FT_SUCCESS) {
            if (o.sleep_ms > 0)
                sleep_ms(o.sleep_ms);
            double tw0 = bench_now();
            if (FT_Comm_size(FT_COMM_REPLICAS, &participants) != FT_SUCCESS)
                participants = 0;
            tw = bench_now() - tw0;
            for (int i = 0; i < count; i++)
                grad[i] = 1.0f;
            t1 = bench_now();
            if (count > 0) {
                err = FT_Allreduce(MPI_IN_PLACE, grad, count, MPI_FLOAT, FT_AVG,
                                   FT_COMM_REPLICAS);
            }
            t2 = bench_now();
        }
        rc = FT_Commit(&committed);
        double t3 = bench_now();
        if (rc != FT_SUCCESS) {
            committed = 0;
            if (err == 0)
                err = rc;
        }
        double q_us = (tq_end - t0 + tw) * 1e6, a_us = (t2 - t1) * 1e6, c_us = (t3 - t2) * 1e6;
        printf("STEP %" PRId64 " %d %d %" PRId64 " %.1f %.1f %.1f %d\n", step, committed,
               participants, bench_wall_us(), q_us, a_us, c_us, err);
        if (!committed) {
            sleep_ms(1); /* a failed step: the next FT_Quorum recovers */
            continue;
        }
        if (committed_steps++ >= o.warmup && n < cap) {
            tq[n] = q_us;
            ta[n] = a_us;
            tc[n] = c_us;
            to[n] = tq[n] + tc[n];
            ts[n] = tq[n] + ta[n] + tc[n];
            n++;
        }
    }
    printf("SUMMARY steps %zu quorum_us %.1f allreduce_us %.1f commit_us %.1f step_us %.1f "
           "overhead_us %.1f\n",
           n, bench_median(tq, n), bench_median(ta, n), bench_median(tc, n), bench_median(ts, n),
           bench_median(to, n));
    FT_Finalize();
    MPI_Finalize();
    free(tq);
    free(ta);
    free(tc);
    free(ts);
    free(to);
    free(grad);
    free(state);
    return committed_steps > 0 ? 0 : 1;
}
