/* lighthouse/server_admin.c - what the outside asks of a running
 * lighthouse (kill a group, a snapshot for the dashboard and the tools) and
 * the server's defaults (see lighthouse.h). */
#include "lighthouse/server_int.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/util.h"
#include "control/message.h"

const double fti_lh_hist_bounds_ms[FTI_LH_HIST_BUCKETS - 1] = {
    1, 5, 10, 25, 50, 100, 250, 500, 1000, 5000, 30000};

void fti_lighthouse_opts_default(fti_lighthouse_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    snprintf(o->bind, sizeof(o->bind), "%s", FTI_LH_BIND_LOOPBACK);
    o->min_replicas = 1;
    o->join_timeout_ms = 60000;
    o->quorum_tick_ms = 100;
    o->heartbeat_timeout_ms = 5000;
    o->max_frame = 4u << 20;
    o->initial_quorum_id = -1;
    o->max_finalized = FTI_LH_MAX_FINALIZED;
    o->max_waiters_per_group = FTI_LH_MAX_WAITERS_PER_GROUP;
    o->summary_interval_ms = 60000;
    snprintf(o->job, sizeof(o->job), "ftmpi");
    o->forget_after_ms = FTI_LH_HISTORY_WINDOW_MS;
}

/* ---- kill ---------------------------------------------------------------- */

/* Kill threads running in this process (they may outlive a lighthouse). */
static _Atomic int kills_in_flight;

struct kill_job {
    char replica_id[FTI_QID_MAX];
    char address[FTI_QADDR_MAX];
    char msg[FTI_REASON_SIZE];
    bool has_key;
    fti_auth_key_t key; /* the lighthouse's */
};

static void *kill_thread(void *arg)
{
    struct kill_job *j = arg;
    fti_rpc_client_h c = NULL;
    Ftmpi__KillRequest req = FTMPI__KILL_REQUEST__INIT;
    ProtobufCMessage *resp = NULL;
    req.msg = j->msg;
    int rc = fti_rpc_client_create(j->address, j->has_key ? &j->key : NULL, LH_KILL_TIMEOUT_MS,
                                   4096, &c);
    if (rc == FT_SUCCESS)
        rc = fti_rpc_call_msg(c, FTMPI__METHOD__MANAGER_KILL, &req.base,
                              &ftmpi__kill_response__descriptor, LH_KILL_TIMEOUT_MS, &resp);
    if (rc == FT_SUCCESS) {
        FTI_INFO("kill delivered to %s at %s", j->replica_id, j->address);
        protobuf_c_message_free_unpacked(resp, NULL);
    } else {
        FTI_WARN("kill of %s at %s failed: %s", j->replica_id, j->address, FT_Error_string(rc));
    }
    fti_rpc_client_destroy(c);
    free(j);
    atomic_fetch_sub(&kills_in_flight, 1);
    return NULL;
}

/* killed.h's rules 2 and 3 for a call of (id, incarnation), under lh->mu:
 * FT_ERR_KILLED to refuse it. */
int fti_lh_killed_call(struct fti_lighthouse *lh, const char *id, uint64_t incarnation)
{
    switch (fti_lh_killed_check(&lh->killed, id, incarnation)) {
    case FTI_LH_KILLED_YES:
        return FT_ERR_KILLED;
    case FTI_LH_KILLED_REJOINED:
        FTI_INFO("%s: a new incarnation after its kill: it may join again", id);
        return FT_SUCCESS;
    default:
        return FT_SUCCESS;
    }
}

void fti_lh_waiters_end(struct fti_lighthouse *lh, const char *id, int rc, const char *msg)
{
    struct waiter *x = fti_lh_waiters_take(&lh->waiters, id), *next;
    if (x) {
        lh->waiters.n_ids--;
        const fti_quorum_t *prev = fti_quorum_prev(lh->st); /* loop thread: no lock */
        if (prev && fti_quorum_member_index(prev, id) >= 0)
            lh->waiters.n_prev_ids--;
    }
    for (; x; x = next) {
        next = x->next;
        fti_rpc_reply_error(x->call, rc, msg);
        free(x);
    }
}

int fti_lighthouse_kill(fti_lighthouse_h lh, const char *replica_id, const char *msg)
{
    fti_qgroup_view_t v;
    struct kill_job *j;
    if (lh == NULL || replica_id == NULL)
        return FT_ERR_ARG;
    if ((j = calloc(1, sizeof(*j))) == NULL)
        return FT_ERR_NO_MEMORY;
    pthread_mutex_lock(&lh->mu);
    const fti_quorum_t *prev = fti_quorum_prev(lh->st);
    long k = prev ? fti_quorum_member_index(prev, replica_id) : -1;
    uint64_t inc = 0;
    bool known = fti_quorum_group_find(lh->st, replica_id, fti_now_ms(), &v) == FT_SUCCESS;
    if (known && v.member) {
        fti_strlcpy(j->address, v.member->address, sizeof(j->address));
        inc = v.member->incarnation;
    } else if (k >= 0 && !fti_lh_killed_has(&lh->killed, replica_id)) {
        fti_strlcpy(j->address, prev->members[k].address, sizeof(j->address));
        inc = prev->members[k].incarnation;
    }
    /* from now on the group is neither healthy nor a member, whatever its
     * processes still send (killed.h); the others need not wait for it */
    if (j->address[0] != '\0') {
        fti_lh_killed_add(&lh->killed, replica_id, inc);
        (void)fti_quorum_remove(lh->st, replica_id);
        fti_lh_history_gone(&lh->history, fti_wall_ms(), replica_id, FTI_LH_EV_KILLED);
    }
    pthread_mutex_unlock(&lh->mu);
    if (j->address[0] == '\0') {
        free(j);
        return FT_ERR_NOT_FOUND;
    }
    FTI_WARN("%s killed (%s): dropped from the quorum at once; its calls are refused until a "
             "new incarnation of it asks",
             replica_id, msg ? msg : "by the lighthouse");
    fti_lh_waiters_end(lh, replica_id, FT_ERR_KILLED, KILLED_MSG);
    event_active(lh->eval_ev, EV_TIMEOUT, 0);
    fti_strlcpy(j->replica_id, replica_id, sizeof(j->replica_id));
    j->has_key = lh->opts.has_key; /* a copy: the thread may outlive the lighthouse */
    j->key = lh->opts.key;
    fti_strlcpy(j->msg, msg ? msg : "killed by the lighthouse", sizeof(j->msg));
    FTI_INFO("sending kill to %s at %s: %s", j->replica_id, j->address, j->msg);

    if (atomic_fetch_add(&kills_in_flight, 1) >= LH_KILLS_MAX) {
        atomic_fetch_sub(&kills_in_flight, 1);
        FTI_WARN("kill of %s refused: %d kills in flight already", j->replica_id, LH_KILLS_MAX);
        free(j);
        return FT_ERR_SYSTEM;
    }
    pthread_t t;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    int err = pthread_create(&t, &attr, kill_thread, j);
    pthread_attr_destroy(&attr);
    if (err != 0) {
        atomic_fetch_sub(&kills_in_flight, 1);
        FTI_ERROR("cannot start the kill thread: %s", strerror(err));
        free(j);
        return FT_ERR_SYSTEM;
    }
    return FT_SUCCESS;
}

/* ---- snapshot ------------------------------------------------------------ */

static void view_fill(fti_lh_member_view_t *mv, const fti_qmember_t *m, const char *id)
{
    fti_strlcpy(mv->replica_id, id, sizeof(mv->replica_id));
    if (m) {
        fti_strlcpy(mv->address, m->address, sizeof(mv->address));
        mv->step = m->step;
        mv->world_size = m->world_size;
    } else {
        mv->step = -1;
    }
}

/* The snapshot's counters: calls, refused frames, the quorum-time
 * histogram (under lh->mu). */
static void snapshot_counters(const struct fti_lighthouse *lh, fti_lh_snapshot_t *s)
{
    s->quorums_issued = lh->quorums_issued;
    s->heartbeats = lh->heartbeats;
    s->quorum_requests = lh->quorum_requests;
    s->rejected_garbage = lh->rpc_stats.rejected_garbage;
    s->rejected_oversize = lh->rpc_stats.rejected_oversize;
    s->rejected_truncated = lh->rpc_stats.rejected_truncated;
    s->rejected_unknown = lh->rpc_stats.rejected_unknown;
    s->rejected_decode = lh->rpc_stats.rejected_decode;
    s->rejected_auth = lh->rpc_stats.rejected_auth;
    s->rejected_frames = s->rejected_garbage + s->rejected_oversize + s->rejected_truncated +
                         s->rejected_unknown + s->rejected_decode + s->rejected_auth;
    memcpy(s->hist, lh->hist, sizeof(s->hist));
    s->hist_sum_ms = lh->hist_sum_ms;
    s->hist_count = lh->hist_count;
}

int fti_lighthouse_snapshot(fti_lighthouse_h lh, fti_lh_snapshot_t **snap_p)
{
    fti_lh_snapshot_t *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return FT_ERR_NO_MEMORY;
    pthread_mutex_lock(&lh->mu);
    int64_t now = fti_now_ms();
    const fti_quorum_t *prev = fti_quorum_prev(lh->st);
    size_t np = prev ? prev->n_members : 0, ng = fti_quorum_n_groups(lh->st);
    s->members = calloc(np + ng + 1, sizeof(*s->members));
    if (s->members == NULL) {
        pthread_mutex_unlock(&lh->mu);
        free(s);
        return FT_ERR_NO_MEMORY;
    }
    s->quorum_id = prev ? prev->quorum_id : -1;
    s->quorum_created_ms = prev ? lh->quorum_created_wall : 0;
    s->max_step = -1;
    for (size_t i = 0; i < np; i++)
        if (prev->members[i].step > s->max_step)
            s->max_step = prev->members[i].step;
    s->min_replicas = lh->opts.min_replicas;
    fti_strlcpy(s->waiting_reason, lh->reason, sizeof(s->waiting_reason));
    fti_lh_gate_snapshot(lh, s);

    /* quorum members first (their details as in the quorum) */
    for (size_t i = 0; i < np; i++) {
        fti_lh_member_view_t *mv = &s->members[s->n_members++];
        fti_qgroup_view_t v;
        view_fill(mv, &prev->members[i], prev->members[i].replica_id);
        mv->killed = fti_lh_killed_has(&lh->killed, mv->replica_id);
        mv->in_quorum = !mv->killed;
        mv->behind = prev->members[i].step < s->max_step;
        mv->heartbeat_age_ms = -1;
        if (fti_quorum_group_find(lh->st, mv->replica_id, now, &v) == FT_SUCCESS) {
            mv->heartbeat_age_ms = v.heartbeat_age_ms;
            mv->healthy = v.healthy;
            mv->waiting = v.waiting;
        }
    }
    /* then every other group of the table */
    for (size_t i = 0; i < ng; i++) {
        fti_qgroup_view_t v;
        if (fti_quorum_group_at(lh->st, i, now, &v) != FT_SUCCESS || v.in_quorum)
            continue;
        fti_lh_member_view_t *mv = &s->members[s->n_members++];
        view_fill(mv, v.member, v.replica_id);
        mv->heartbeat_age_ms = v.heartbeat_age_ms;
        mv->healthy = v.healthy;
        mv->waiting = v.waiting;
    }

    snapshot_counters(lh, s);
    s->wall_ms = fti_wall_ms();
    for (size_t i = 0; i < s->n_members; i++) {
        const fti_lh_gstats_t *g = fti_lh_history_group(&lh->history, s->members[i].replica_id);
        s->members[i].dead = g && g->state == FTI_LH_G_DEAD;
        s->members[i].finished = g && g->state == FTI_LH_G_FINALIZED;
    }
    s->sdc_checks = fti_sdc_checks(lh->sdc);
    s->sdc_groups = fti_sdc_groups(lh->sdc);
    s->n_sdc_reports = fti_sdc_reports(lh->sdc, s->sdc_reports, FTI_SDC_REPORTS);
    s->history = malloc(sizeof(*s->history));
    if (s->history && fti_lh_history_copy(&lh->history, s->history) != FT_SUCCESS) {
        free(s->history);
        s->history = NULL;
    }
    s->recov = malloc(sizeof(*s->recov));
    if (s->recov && fti_lh_recov_copy(&lh->recov, s->recov) != FT_SUCCESS) {
        free(s->recov);
        s->recov = NULL;
    }
    fti_strlcpy(s->job, lh->opts.job, sizeof(s->job));
    pthread_mutex_unlock(&lh->mu);
    *snap_p = s;
    return FT_SUCCESS;
}

void fti_lh_snapshot_free(fti_lh_snapshot_t *snap)
{
    if (snap == NULL)
        return;
    free(snap->members);
    if (snap->history)
        fti_lh_history_clear(snap->history);
    free(snap->history);
    if (snap->recov)
        fti_lh_recov_clear(snap->recov);
    free(snap->recov);
    free(snap);
}
