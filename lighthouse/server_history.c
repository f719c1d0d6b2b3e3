/* lighthouse/server_history.c - the server's once-a-second bookkeeping
 * (see server_int.h): groups whose heartbeats stopped, the step-rate
 * sample, and forgetting the groups gone for longer than
 * opts.forget_after_ms (the history window by default): their per-group
 * and per-rank series, recoveries and SDC fingerprints, so /metrics and
 * the tables hold the groups of the last window, not of the whole run. */
#include "lighthouse/server_int.h"

#include <inttypes.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/util.h"

/* history's gone callback: the rest of what is kept of the group goes too. */
static void forget_group(const char *replica_id, void *arg)
{
    struct fti_lighthouse *lh = arg;
    fti_sdc_forget(lh->sdc, replica_id);
    fti_lh_recov_forget(&lh->recov, replica_id);
}

/* Whether the lighthouse knows replica_id still: its history (alive, or
 * gone within the window) or its quorum table (a group that only sent
 * heartbeats).  What else is kept of a group nobody knows goes. */
static bool known_group(const char *replica_id, void *arg)
{
    struct fti_lighthouse *lh = arg;
    fti_qgroup_view_t v;
    return fti_lh_history_group(&lh->history, replica_id) != NULL ||
           fti_quorum_group_find(lh->st, replica_id, fti_now_ms(), &v) == FT_SUCCESS;
}

void fti_lh_history_tick(struct fti_lighthouse *lh, int64_t now)
{
    int64_t wall = fti_wall_ms();
    if (!fti_lh_history_sample_due(&lh->history, wall))
        return;
    for (size_t i = 0; i < lh->history.n_groups; i++) {
        fti_lh_gstats_t *g = &lh->history.groups[i];
        if (g->state == FTI_LH_G_ALIVE && !fti_quorum_is_healthy(lh->st, g->replica_id, now))
            fti_lh_history_gone(&lh->history, wall, g->replica_id, FTI_LH_EV_DEAD_TIMEOUT);
    }
    size_t gone = fti_lh_history_expire(&lh->history, wall, lh->opts.forget_after_ms,
                                        forget_group, lh);
    gone += fti_lh_recov_expire(&lh->recov, known_group, lh);
    gone += fti_sdc_expire(lh->sdc, known_group, lh);
    if (gone > 0)
        FTI_DEBUG("forgot %zu groups (or what was kept of them) gone for over %" PRId64 " ms",
                  gone, lh->opts.forget_after_ms);
    const fti_quorum_t *prev = fti_quorum_prev(lh->st);
    int64_t max_step = -1;
    for (size_t i = 0; prev && i < prev->n_members; i++)
        max_step = FTI_MAX(max_step, prev->members[i].step);
    fti_lh_history_sample(&lh->history, wall, prev ? (int64_t)prev->n_members : 0, max_step);
}
