/*
 * ft_sgd_outer.c - ft_sgd --localsgd H / --diloco H (ft_sgd_outer.h): the
 * groups train H inner steps alone, then FT_Outer_step runs the outer
 * sync, one step of the protocol.  Output, as ft_sgd's per-step mode (group
 * rank 0): "step N loss X quorum Q participants P" after a committed sync
 * (N = FT_Step(): committed syncs, the join included; X the last inner
 * batch's loss), "step N failed: ERROR (sync)" after one that did not
 * commit, "outer N syncs C committed H healed B bytes" at the end.
 */
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "ft_sgd_outer.h"

static void die(const struct sgd_outer_cfg *c, int64_t step, const char *where)
{
    fprintf(stderr, "ft_sgd: SIGKILL to myself at sync %" PRId64 " (%s)\n", step, where);
    fflush(NULL);
    raise(SIGKILL);
    (void)c;
}

/* FT_Outer's hook: --die-where compute / commit inside sync die_at_sync. */
static void hook(void *arg, int phase, int64_t step)
{
    const struct sgd_outer_cfg *c = arg;
    if (!c->die_me || step != c->die_at_sync)
        return;
    if (phase == FT_OUTER_PHASE_QUORUM && !strcmp(c->die_where, "compute"))
        die(c, step, "in the sync, after its quorum");
    if (phase == FT_OUTER_PHASE_REDUCED && !strcmp(c->die_where, "commit"))
        die(c, step, "in the sync, before its commit");
}

int sgd_outer_train(const struct sgd_outer_cfg *c, float *w, long n, sgd_inner_fn inner,
                    void *ctx, FT_Outer *outer_p, long *attempts_p)
{
    int rc = FT_Outer_create(c->diloco ? FT_OUTER_DILOCO : FT_OUTER_LOCALSGD, (int)c->sync_every,
                             c->diloco ? c->lr : 0, c->diloco ? c->mu : 0, outer_p);
    if (rc == FT_SUCCESS)
        rc = FT_Outer_register(*outer_p, "weights", w, n);
    if (rc == FT_SUCCESS)
        rc = FT_Outer_set_hook(*outer_p, hook, (void *)c);
    if (rc != FT_SUCCESS) {
        fprintf(stderr, "ft_sgd: FT_Outer: %s\n", FT_Error_string(rc));
        return 1;
    }
    FT_Outer o = *outer_p;
    const int64_t target = 1 + (c->inner_steps + c->sync_every - 1) / c->sync_every;
    int participants = 1, replica_rank = 0;
    int64_t since = 0; /* inner steps since the last committed sync */
    float loss = 0.0f;
    long attempts = 0;
    while (FT_Step() < target && attempts < c->max_attempts) {
        int result = 0;
        rc = FT_Outer_step(o, &result);
        if (rc == FT_ERR_KILLED) { /* as the per-step loop (ft_sgd.c): exit status 5 */
            printf("killed at step %" PRId64 ": %s\n", FT_Step(), FT_Error_string(rc));
            *attempts_p = attempts;
            return 2;
        }
        if (rc == FT_ERR_GROUP_LOST) {
            printf("group lost at step %" PRId64 ": %s (sync)\n", FT_Step(), FT_Error_string(rc));
            *attempts_p = attempts;
            return 1;
        }
        if (result & FT_OUTER_COMMITTED) {
            since = 0;
            if (FT_Comm_size(FT_COMM_REPLICAS, &participants) != FT_SUCCESS || participants < 1)
                participants = 1;
            if (FT_Comm_rank(FT_COMM_REPLICAS, &replica_rank) != FT_SUCCESS || replica_rank < 0)
                replica_rank = 0;
            int64_t now = FT_Step();
            if (c->rank == 0 && (now % c->print_every == 0 || now == target))
                printf("step %" PRId64 " loss %.6f quorum %" PRId64 " participants %d\n", now,
                       (double)loss, ftmpi_quorum_id(), participants);
            if (now >= target)
                break;
        } else if ((result & FT_OUTER_SYNC_RAN) && c->rank == 0) {
            printf("step %" PRId64 " failed: %s (sync)\n", FT_Step(),
                   rc != FT_SUCCESS ? FT_Error_string(rc) : "not committed");
        }
        if (c->die_me && FT_Step() == c->die_at_sync && !strcmp(c->die_where, "inner") &&
            since == c->sync_every / 2)
            die(c, FT_Step(), "between syncs");
        attempts++;
        if (inner(ctx, FT_Step() * c->sync_every + since, participants, replica_rank, &loss) != 0) {
            *attempts_p = attempts;
            return 1;
        }
        since++;
    }
    ftmpi_outer_stats_t s;
    if (c->rank == 0 && ftmpi_outer_stats(o, &s) == FT_SUCCESS)
        printf("outer %" PRId64 " syncs %" PRId64 " committed %" PRId64 " healed %" PRIu64
               " bytes %" PRId64 " inner\n",
               s.syncs, s.committed, s.healed, s.reduced_bytes, s.inner_steps);
    *attempts_p = attempts;
    return 0;
}
