/*
 * server.c - the lighthouse server (see lighthouse.h): the RPC methods
 * LIGHTHOUSE_QUORUM, LIGHTHOUSE_HEARTBEAT and LIGHTHOUSE_FINALIZE on an
 * fti_rpc_server, deferred replies, the tick, counters for the dashboard;
 * the evaluation by the quorum rules of quorum.h is server_eval.c.
 *
 * Threads: everything runs on the event loop's thread.  lh->mu guards the
 * quorum state and the counters: the loop thread takes it around every
 * change, fti_lighthouse_snapshot takes it to read (from any thread).
 *
 * Cost with many groups: a request costs O(log n) (O(n) pointer moves for
 * a new group).  The O(n) evaluation runs on every tick, and after
 * requests only when counts kept here say it could issue (every member of
 * the current quorum waits, every known group waits, or the join timeout
 * has passed), at most once per batch of requests read in one loop
 * iteration (an activated event).  An issued quorum is packed once and the
 * same bytes are sent to every waiter by reference; waiters are found by
 * replica id in a hash table.
 *
 * Compact replies (LighthouseQuorumRequest.compact): a waiter that asked
 * for one gets its own group's results (src/control/results.h) instead of the
 * member list, so its reply does not grow with the number of groups.  The
 * results index is built once per quorum (O(n log n)); each compact reply
 * then costs O(log n + world_size * (1 + destinations)).
 */
#include "lighthouse/lighthouse.h"
#include "lighthouse/server_int.h"
#include "control/message.h"

#include <event2/event.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "lighthouse/history.h"
#include "lighthouse/liveness.h"
#include "base/log.h"
#include "control/proto/ftmpi.pb-c.h"
#include "lighthouse/quorum.h"
#include "control/results.h"
#include "base/rpc.h"
#include "base/util.h"

#define LH_MIN_FRAME 64 /* smallest max_frame accepted: a header and a short message */

static void refresh_rpc_stats(struct fti_lighthouse *lh)
{
    fti_rpc_stats_t s;
    fti_rpc_server_stats(lh->rpc, &s);
    pthread_mutex_lock(&lh->mu);
    lh->rpc_stats = s;
    pthread_mutex_unlock(&lh->mu);
}

static void eval_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    fti_lh_evaluate(arg);
}

/* The summary line, every opts.summary_interval_ms.  Loop thread. */
static void summary_tick(struct fti_lighthouse *lh, int64_t now)
{
    if (lh->opts.summary_interval_ms <= 0 || now < lh->next_summary_ms)
        return;
    int64_t every = lh->opts.summary_interval_ms;
    lh->next_summary_ms = now + every;
    pthread_mutex_lock(&lh->mu);
    const fti_quorum_t *prev = fti_quorum_prev(lh->st);
    int64_t qid = prev ? prev->quorum_id : -1;
    size_t members = prev ? prev->n_members : 0;
    size_t healthy = fti_quorum_n_healthy(lh->st, now);
    uint64_t failures = fti_lh_history_failures(&lh->history), quorums = lh->quorums_issued;
    double rate = lh->history.n_samples ? fti_lh_history_sample_at(&lh->history, lh->history.n_samples - 1)
                                           ->steps_per_s
                                     : 0.0;
    int64_t max_step = -1;
    for (size_t i = 0; prev && i < prev->n_members; i++)
        max_step = FTI_MAX(max_step, prev->members[i].step);
    pthread_mutex_unlock(&lh->mu);
    FTI_INFO("summary: quorum %" PRId64 " with %zu members, %zu groups healthy, max step %" PRId64
             ", %.1f steps/s (all groups), %" PRIu64 " quorums and %" PRIu64
             " failures in the last %.0f s (%" PRIu64 " failures in all)",
             qid, members, healthy, max_step, rate, quorums - lh->summary_quorums,
             failures - lh->summary_failures, (double)every / 1000.0, failures);
    lh->summary_quorums = quorums;
    lh->summary_failures = failures;
}

static void tick_cb(evutil_socket_t fd, short what, void *arg)
{
    struct fti_lighthouse *lh = arg;
    (void)fd;
    (void)what;
    int64_t now = fti_now_ms();
    pthread_mutex_lock(&lh->mu);
    fti_lh_history_tick(lh, now);
    size_t dropped = fti_quorum_expire(lh->st, now);
    pthread_mutex_unlock(&lh->mu);
    if (dropped > 0) {
        FTI_INFO("forgot %zu groups silent for %d heartbeat timeouts", dropped,
                 FTI_QUORUM_EXPIRE_FACTOR);
        fti_lh_sweep_forgotten(lh);
    }
    fti_lh_evaluate(lh);
    refresh_rpc_stats(lh);
    summary_tick(lh, now);
    if (fti_lh_fin_job_done(lh))
        event_base_loopexit(lh->base, NULL);
}

/* ---- RPC handlers ---------------------------------------------------------- */

/* Unpacks a request of type desc.  One that does not decode is refused
 * (logged and answered with FT_ERR_BAD_MESSAGE; "what" names it in both) and
 * NULL returned.  The message is freed with its type's free_unpacked. */
static ProtobufCMessage *unpack_request(struct fti_lighthouse *lh, fti_rpc_call_h call,
                                        const ProtobufCMessageDescriptor *desc,
                                        const char *what, const uint8_t *payload, size_t len)
{
    ProtobufCMessage *m = fti_rpc_unpack(desc, payload, len);
    if (m == NULL) {
        char msg[FTI_REASON_SIZE];
        FTI_WARN("%s from %s does not decode", what, fti_rpc_call_peer(call));
        snprintf(msg, sizeof(msg), "%s does not decode", what);
        fti_rpc_reply_error(call, FT_ERR_BAD_MESSAGE, msg);
        refresh_rpc_stats(lh);
    }
    return m;
}

/* ---- failure detection by connection close (liveness.h) ------------------ */

/* Every connection of the group's incarnation closed: it is dropped now
 * (unless it finalized), and the others need not wait for it.  Loop thread. */
static void group_died(struct fti_lighthouse *lh, const char *id)
{
    pthread_mutex_lock(&lh->mu);
    bool known = !fti_lh_fin_has(lh, id) && fti_quorum_remove(lh->st, id) == FT_SUCCESS;
    if (known)
        fti_lh_history_gone(&lh->history, fti_wall_ms(), id, FTI_LH_EV_DEAD_CLOSED);
    pthread_mutex_unlock(&lh->mu);
    if (!known)
        return;
    FTI_WARN("%s: its manager's connections closed (the process died): dropped from the "
             "quorum at once",
             id);
    event_active(lh->eval_ev, EV_TIMEOUT, 0);
}

/* The rpc server's close callback: data is the connection's binding. */
static void on_conn_close(void *data, void *arg)
{
    struct fti_lighthouse *lh = arg;
    char id[FTI_QID_MAX];
    if (fti_liveness_unbind(lh->live, data, id, sizeof(id)) && !lh->closing)
        group_died(lh, id);
}

/* Binds the call's connection to (id, incarnation) (liveness.h). */
static void bind_conn(struct fti_lighthouse *lh, fti_rpc_call_h call, const char *id,
                      uint64_t incarnation, bool declare)
{
    fti_live_bind_t *cur = fti_rpc_call_conn_data(call);
    fti_live_bind_t *b =
        fti_liveness_bind(lh->live, cur, id, incarnation, declare, fti_rpc_call_peer(call));
    if (b == NULL || b == cur)
        return;
    if (!fti_rpc_call_set_conn_data(call, b))
        on_conn_close(b, lh); /* closed already: as if it closed now */
}

/* Refuses (true: replied FT_ERR_EXISTS, logged) a call that claims a group
 * another live incarnation holds: its connections are open and it is
 * healthy (heartbeats within the timeout).  A holder that died (closed) or
 * went silent is replaced by the newcomer, as a restart must.  Loop thread. */
static bool claim_refused(struct fti_lighthouse *lh, fti_rpc_call_h call, const char *id,
                          uint64_t incarnation)
{
    char holder[FTI_ADDRESS_SIZE], msg[FTI_REASON_SIZE + 2 * FTI_ADDRESS_SIZE];
    bool first = false;
    if (id == NULL || !fti_liveness_held(lh->live, fti_rpc_call_conn_data(call), id, incarnation,
                                         holder, sizeof(holder), &first))
        return false;
    pthread_mutex_lock(&lh->mu);
    bool live = fti_quorum_is_healthy(lh->st, id, fti_now_ms());
    pthread_mutex_unlock(&lh->mu);
    if (!live)
        return false;
    snprintf(msg, sizeof(msg),
             "replica id '%.64s' is held by a live process at %s; refused the one at %s: two "
             "processes cannot be one group (a duplicate FTMPI_REPLICA_ID, or ranks of one group "
             "started apart, each as its rank 0)",
             id, holder, fti_rpc_call_peer(call));
    if (first) /* once per refused incarnation: it asks again as a standby */
        FTI_WARN("%s", msg);
    fti_rpc_reply_error(call, FT_ERR_EXISTS, msg);
    return true;
}

static void on_heartbeat(fti_rpc_call_h call, const uint8_t *payload, size_t len, void *arg)
{
    struct fti_lighthouse *lh = arg;
    if (fti_lh_gate_refuse(lh, call))
        return;
    Ftmpi__LighthouseHeartbeatRequest *req = (Ftmpi__LighthouseHeartbeatRequest *)unpack_request(
        lh, call, &ftmpi__lighthouse_heartbeat_request__descriptor, "heartbeat", payload, len);
    if (req == NULL)
        return;
    if (claim_refused(lh, call, req->replica_id, req->incarnation)) {
        ftmpi__lighthouse_heartbeat_request__free_unpacked(req, NULL);
        return;
    }
    pthread_mutex_lock(&lh->mu);
    fti_quorum_note_seen(lh->st, req->max_quorum_id);
    /* a finalized group's last heartbeats do not bring it back */
    bool fin = req->replica_id && fti_lh_fin_has(lh, req->replica_id);
    int rc = fti_lh_killed_call(lh, req->replica_id, req->incarnation);
    if (rc == FT_SUCCESS && !fin)
        rc = fti_quorum_heartbeat(lh->st, req->replica_id, fti_now_ms());
    if (rc == FT_SUCCESS)
        lh->heartbeats++;
    if (rc == FT_SUCCESS && !fin) {
        int64_t wall = fti_wall_ms();
        fti_lh_history_alive(&lh->history, wall, req->replica_id);
        fti_lh_history_report(&lh->history, wall, req->replica_id, req->restarts, req->heals,
                              req->heal_bytes, req->last_failure);
        fti_lh_recov_report(&lh->recov, req);
    }
    pthread_mutex_unlock(&lh->mu);
    if (rc == FT_SUCCESS && !fin)
        bind_conn(lh, call, req->replica_id, req->incarnation, true);
    if (rc == FT_SUCCESS) {
        fti_rpc_reply(call, NULL, 0); /* LighthouseHeartbeatResponse packs to 0 bytes */
    } else if (rc == FT_ERR_KILLED) {
        fti_rpc_reply_error(call, rc, KILLED_MSG);
    } else {
        FTI_WARN("heartbeat from %s refused: %s", fti_rpc_call_peer(call), FT_Error_string(rc));
        fti_rpc_reply_error(call, rc, rc == FT_ERR_ARG ? "replica_id empty or too long"
                                                       : "lighthouse cannot track the group");
    }
    ftmpi__lighthouse_heartbeat_request__free_unpacked(req, NULL);
}

/* Copies a QuorumMember message into m (data by reference).  FT_ERR_ARG
 * with why (a reason for the reply) when a field does not fit. */
static int member_from_msg(const Ftmpi__QuorumMember *pm, fti_qmember_t *m, char *why,
                           size_t why_len)
{
    memset(m, 0, sizeof(*m));
    if (pm == NULL || pm->replica_id == NULL || pm->replica_id[0] == '\0' ||
        fti_strlcpy(m->replica_id, pm->replica_id, sizeof(m->replica_id)) != 0 ||
        fti_strlcpy(m->address, pm->address ? pm->address : "", sizeof(m->address)) != 0 ||
        fti_strlcpy(m->store_address, pm->store_address ? pm->store_address : "",
                    sizeof(m->store_address)) != 0) {
        snprintf(why, why_len, "requester missing, replica_id empty, or a field too long");
        return FT_ERR_ARG;
    }
    if (pm->data.len > FTI_QUORUM_MAX_DATA) {
        snprintf(why, why_len, "member data of %zu bytes over the cap of %d bytes",
                 pm->data.len, FTI_QUORUM_MAX_DATA);
        return FT_ERR_ARG;
    }
    m->step = pm->step;
    m->world_size = pm->world_size;
    m->shrink_only = pm->shrink_only;
    m->commit_failures = pm->commit_failures;
    m->incarnation = pm->incarnation;
    m->data = pm->data.data;
    m->data_len = pm->data.len;
    return FT_SUCCESS;
}

/* Records the request of m in the state (under lh->mu). */
static int record_request(struct fti_lighthouse *lh, const fti_qmember_t *m, int64_t seen,
                          int64_t *now_p)
{
    pthread_mutex_lock(&lh->mu);
    int64_t now = fti_now_ms();
    fti_quorum_note_seen(lh->st, seen);
    if (fti_lh_killed_call(lh, m->replica_id, m->incarnation) != FT_SUCCESS) {
        pthread_mutex_unlock(&lh->mu);
        *now_p = now;
        return FT_ERR_KILLED;
    }
    if (fti_lh_fin_has(lh, m->replica_id)) {
        FTI_INFO("%s asks for a quorum again after it finalized: back in the table",
                 m->replica_id);
        fti_lh_fin_del(lh, m->replica_id);
    }
    fti_qcheck_t chk;
    int rc = fti_quorum_request_checked(lh->st, m, now, &chk);
    if (rc == FT_SUCCESS && chk.capped)
        FTI_WARN("%s claims step %" PRId64 ", above the %" PRId64 " it can have reached (%s): "
                 "recorded as step 0, it must heal from the others",
                 m->replica_id, chk.claimed, chk.bound,
                 chk.newcomer ? "a new group, the last quorum's max step + 1"
                              : "its last quorum's max step + 1");
    if (rc == FT_SUCCESS) {
        fti_lh_history_request(&lh->history, fti_wall_ms(), m->replica_id, m->incarnation, m->step,
                               m->commit_failures);
        lh->quorum_requests++;
        if (lh->round_first_req_ms < 0)
            lh->round_first_req_ms = now;
        lh->round_last_req_ms = now;
    }
    pthread_mutex_unlock(&lh->mu);
    *now_p = now;
    return rc;
}

/* Adds x to the waiters.  A group with max_waiters_per_group calls
 * waiting already has its oldest call ended first (a client that gave up
 * on it and asked again). */
static void waiter_add(struct fti_lighthouse *lh, struct waiter *x)
{
    struct waiters *w = &lh->waiters;
    struct waiter *old = NULL;
    size_t n = fti_lh_waiters_count(w, x->replica_id, &old);
    if (n >= lh->opts.max_waiters_per_group) {
        fti_lh_waiters_unlink(w, old);
        FTI_WARN("quorum request of %s: %zu calls wait already, ending the oldest",
                 x->replica_id, n);
        fti_rpc_reply_error(old->call, FT_ERR_TIMEOUT,
                            "superseded by a newer quorum request of the same group");
        free(old);
        n--;
    }
    if (n == 0) {
        w->n_ids++;
        if (fti_lh_in_quorum(lh, x->replica_id))
            w->n_prev_ids++;
    }
    fti_lh_waiters_add(w, x);
}

static void on_quorum(fti_rpc_call_h call, const uint8_t *payload, size_t len, void *arg)
{
    struct fti_lighthouse *lh = arg;
    fti_qmember_t m;
    char why[FTI_REASON_SIZE];
    int64_t now;
    if (fti_lh_gate_refuse(lh, call))
        return;
    Ftmpi__LighthouseQuorumRequest *req = (Ftmpi__LighthouseQuorumRequest *)unpack_request(
        lh, call, &ftmpi__lighthouse_quorum_request__descriptor, "quorum request", payload, len);
    if (req == NULL)
        return;
    if (member_from_msg(req->requester, &m, why, sizeof(why)) != FT_SUCCESS) {
        FTI_WARN("quorum request from %s refused: %s", fti_rpc_call_peer(call), why);
        fti_rpc_reply_error(call, FT_ERR_ARG, why);
        ftmpi__lighthouse_quorum_request__free_unpacked(req, NULL);
        return;
    }
    if (claim_refused(lh, call, m.replica_id, m.incarnation)) {
        ftmpi__lighthouse_quorum_request__free_unpacked(req, NULL);
        return;
    }
    struct waiter *x = calloc(1, sizeof(*x));
    int rc = x ? record_request(lh, &m, req->max_quorum_id, &now) : FT_ERR_NO_MEMORY;
    if (rc == FT_SUCCESS) {
        x->call = call;
        x->compact = req->compact;
        x->init_sync = req->init_sync;
        x->want_ids = req->want_member_ids;
        memcpy(x->replica_id, m.replica_id, sizeof(x->replica_id));
    }
    if (rc == FT_SUCCESS)
        fti_lh_sdc_note(lh, req->requester);
    ftmpi__lighthouse_quorum_request__free_unpacked(req, NULL); /* m.data pointed in */
    if (rc == FT_ERR_KILLED) {
        FTI_INFO("quorum request of %s refused: it was killed (a restarted group may join)",
                 m.replica_id);
        fti_rpc_reply_error(call, rc, KILLED_MSG);
        free(x);
        return;
    }
    if (rc != FT_SUCCESS) {
        FTI_WARN("quorum request of %s refused: %s", m.replica_id, FT_Error_string(rc));
        fti_rpc_reply_error(call, rc, rc == FT_ERR_NO_MEMORY ? "lighthouse out of memory"
                                                             : "lighthouse cannot track the group");
        free(x);
        return;
    }
    FTI_DEBUG("quorum request of %s (step %" PRId64 ") from %s", x->replica_id, m.step,
              fti_rpc_call_peer(call));
    bind_conn(lh, call, x->replica_id, m.incarnation, false);
    waiter_add(lh, x);
    if (fti_lh_worth_evaluating(lh, now))
        event_active(lh->eval_ev, EV_TIMEOUT, 0);
}

static void on_finalize(fti_rpc_call_h call, const uint8_t *payload, size_t len, void *arg)
{
    struct fti_lighthouse *lh = arg;
    if (fti_lh_gate_refuse(lh, call))
        return;
    Ftmpi__LighthouseFinalizeRequest *req = (Ftmpi__LighthouseFinalizeRequest *)unpack_request(
        lh, call, &ftmpi__lighthouse_finalize_request__descriptor, "finalize", payload, len);
    if (req == NULL)
        return;
    const char *id = req->replica_id;
    if (id == NULL || id[0] == '\0' || strlen(id) >= FTI_QID_MAX) {
        fti_rpc_reply_error(call, FT_ERR_ARG, "replica_id empty or too long");
        ftmpi__lighthouse_finalize_request__free_unpacked(req, NULL);
        return;
    }
    /* its pending quorum calls end now */
    struct waiter *x = fti_lh_waiters_take(&lh->waiters, id), *next;
    if (x) {
        lh->waiters.n_ids--;
        if (fti_lh_in_quorum(lh, id))
            lh->waiters.n_prev_ids--;
    }
    for (; x; x = next) {
        next = x->next;
        fti_rpc_reply_error(x->call, FT_ERR_GROUP_LOST, "the group finalized");
        free(x);
    }
    pthread_mutex_lock(&lh->mu);
    bool known = fti_quorum_remove(lh->st, id) == FT_SUCCESS;
    fti_sdc_forget(lh->sdc, id);
    bool again = fti_lh_fin_has(lh, id);
    int rc = fti_lh_fin_add(lh, id);
    if (!again)
        fti_lh_history_gone(&lh->history, fti_wall_ms(), id, FTI_LH_EV_FINALIZED);
    pthread_mutex_unlock(&lh->mu);
    if (!again)
        FTI_INFO("%s finalized%s: forgotten", id, known ? "" : " (not in the table)");
    if (rc == FT_SUCCESS)
        fti_rpc_reply(call, NULL, 0); /* LighthouseFinalizeResponse packs to 0 bytes */
    else
        fti_rpc_reply_error(call, rc, "lighthouse out of memory");
    ftmpi__lighthouse_finalize_request__free_unpacked(req, NULL);
    /* the others may not need to wait for it any more */
    event_active(lh->eval_ev, EV_TIMEOUT, 0);
}

fti_lh_group_status_t fti_lighthouse_group_status(fti_lighthouse_h lh, const char *replica_id,
                                                  int64_t *age_ms_p)
{
    fti_lh_group_status_t s = FTI_LH_GROUP_UNKNOWN;
    fti_qgroup_view_t v;
    int64_t age = -1;
    pthread_mutex_lock(&lh->mu);
    if (fti_lh_fin_has(lh, replica_id)) {
        s = FTI_LH_GROUP_FINALIZED;
    } else if (fti_quorum_group_find(lh->st, replica_id, fti_now_ms(), &v) == FT_SUCCESS) {
        s = v.healthy ? FTI_LH_GROUP_LIVE : FTI_LH_GROUP_SILENT;
        age = v.heartbeat_age_ms;
    }
    pthread_mutex_unlock(&lh->mu);
    if (age_ms_p)
        *age_ms_p = age;
    return s;
}

int fti_lighthouse_expect_group(fti_lighthouse_h lh, const char *replica_id)
{
    pthread_mutex_lock(&lh->mu);
    int rc = fti_quorum_heartbeat(lh->st, replica_id, fti_now_ms());
    pthread_mutex_unlock(&lh->mu);
    return rc;
}

size_t fti_lighthouse_n_finalized(fti_lighthouse_h lh)
{
    pthread_mutex_lock(&lh->mu);
    size_t n = lh->n_finalized;
    pthread_mutex_unlock(&lh->mu);
    return n;
}

/* ---- create / destroy -------------------------------------------------- */

int fti_lighthouse_create(struct event_base *base, const fti_lighthouse_opts_t *o,
                          fti_lighthouse_h *lh_p)
{
    if (base == NULL || o == NULL || lh_p == NULL || o->min_replicas < 1 ||
        o->join_timeout_ms < 0 || o->quorum_tick_ms < 1 || o->heartbeat_timeout_ms < 1 ||
        o->max_frame < LH_MIN_FRAME || o->max_finalized < 1 || o->max_waiters_per_group < 1 ||
        o->forget_after_ms < 1)
        return FT_ERR_ARG;
    struct fti_lighthouse *lh = calloc(1, sizeof(*lh));
    if (lh == NULL)
        return FT_ERR_NO_MEMORY;
    lh->base = base;
    lh->opts = *o;
    lh->round_first_req_ms = lh->round_last_req_ms = -1;
    lh->quorum_created_wall = 0;
    lh->next_summary_ms = fti_now_ms() + o->summary_interval_ms;
    snprintf(lh->reason, sizeof(lh->reason), "no quorum request yet");
    pthread_mutex_init(&lh->mu, NULL);

    fti_quorum_opts_t qo;
    fti_quorum_opts_default(&qo);
    qo.min_replicas = o->min_replicas;
    qo.join_timeout_ms = o->join_timeout_ms;
    qo.heartbeat_timeout_ms = o->heartbeat_timeout_ms;
    /* seeded from the wall clock by default, so a restarted lighthouse
     * never repeats an id its clients saw */
    qo.initial_quorum_id = o->initial_quorum_id >= 0 ? o->initial_quorum_id : fti_wall_ms();

    static const fti_rpc_method_t methods[] = {
        {FTMPI__METHOD__LIGHTHOUSE_QUORUM, on_quorum},
        {FTMPI__METHOD__LIGHTHOUSE_HEARTBEAT, on_heartbeat},
        {FTMPI__METHOD__LIGHTHOUSE_FINALIZE, on_finalize},
    };
    struct timeval tv = {(time_t)(o->quorum_tick_ms / 1000),
                         (suseconds_t)(o->quorum_tick_ms % 1000) * 1000};
    int rc = fti_quorum_state_create(&qo, &lh->st);
    if (rc == FT_SUCCESS)
        rc = fti_lh_waiters_init(&lh->waiters);
    if (rc == FT_SUCCESS)
        rc = fti_lh_history_init(&lh->history, 0, 0, 0);
    if (rc == FT_SUCCESS)
        rc = fti_liveness_create(&lh->live);
    if (rc == FT_SUCCESS)
        rc = fti_sdc_create(&lh->sdc);
    if (rc == FT_SUCCESS &&
        ((lh->tick_ev = event_new(base, -1, EV_PERSIST, tick_cb, lh)) == NULL ||
         (lh->eval_ev = event_new(base, -1, 0, eval_cb, lh)) == NULL ||
         event_add(lh->tick_ev, &tv) != 0)) {
        FTI_ERROR("lighthouse: cannot create its timer events");
        rc = FT_ERR_SYSTEM;
    }
    if (rc == FT_SUCCESS) {
        rc = fti_rpc_server_create(base, o->bind, o->max_frame,
                                   lh->opts.has_key ? &lh->opts.key : NULL, methods,
                                   FTI_ARRAY_SIZE(methods), lh, &lh->rpc);
        if (rc != FT_SUCCESS)
            FTI_ERROR("lighthouse: cannot listen on %s: %s", o->bind, FT_Error_string(rc));
        else
            fti_rpc_server_on_close(lh->rpc, on_conn_close, lh);
    }
    if (rc != FT_SUCCESS) {
        fti_lighthouse_destroy(lh);
        return rc;
    }
    FTI_INFO("lighthouse on %s: min_replicas %d, join timeout %" PRId64
             " ms, heartbeat timeout %" PRId64 " ms, tick %" PRId64 " ms",
             fti_rpc_server_address(lh->rpc), o->min_replicas, o->join_timeout_ms,
             o->heartbeat_timeout_ms, o->quorum_tick_ms);
    *lh_p = lh;
    return FT_SUCCESS;
}

void fti_lighthouse_destroy(fti_lighthouse_h lh)
{
    if (lh == NULL)
        return;
    if (lh->waiters.buckets) {
        for (size_t b = 0; b <= lh->waiters.mask; b++) {
            struct waiter *x = lh->waiters.buckets[b], *next;
            for (; x; x = next) {
                next = x->next;
                fti_rpc_reply_error(x->call, FT_ERR_CONNECT, "lighthouse shutting down");
                free(x);
            }
        }
        free(lh->waiters.buckets);
    }
    if (lh->tick_ev)
        event_free(lh->tick_ev);
    if (lh->eval_ev)
        event_free(lh->eval_ev);
    lh->closing = true; /* the bindings are freed as the connections close */
    fti_rpc_server_destroy(lh->rpc);
    fti_liveness_destroy(lh->live);
    fti_lh_history_clear(&lh->history);
    fti_lh_recov_clear(&lh->recov);
    fti_quorum_state_destroy(lh->st);
    fti_sdc_destroy(lh->sdc);
    pthread_mutex_destroy(&lh->mu);
    free(lh->finalized);
    free(lh->gate_sdc);
    free(lh);
}

const char *fti_lighthouse_address(fti_lighthouse_h lh)
{
    return fti_rpc_server_address(lh->rpc);
}
