/*
 * server_eval.c - the lighthouse's evaluation (server_int.h): applies the
 * quorum rules of quorum.h under lh->mu, issues a quorum, logs its
 * membership change and answers every waiting call of its members; ends
 * the calls whose connection died or whose group was forgotten.
 *
 * Threads: the event loop's thread (the only writer of the quorum state).
 */
#include "lighthouse/server_int.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/rpc.h"
#include "base/util.h"
#include "lighthouse/history.h"
#include "lighthouse/quorum.h"

#define LH_LOG_NAMES 16 /* membership changes listed by name up to this many */

static int64_t count_dropped(const fti_quorum_t *prev, const fti_qmember_t *members, size_t n)
{
    int64_t dropped = 0;
    size_t j = 0;
    if (prev == NULL)
        return 0;
    for (size_t i = 0; i < prev->n_members; i++) {
        const fti_qmember_t *p = &prev->members[i];
        int c = 1;
        while (j < n && (c = strcmp(members[j].replica_id, p->replica_id)) < 0)
            j++;
        if (j >= n || c != 0 || members[j].incarnation != p->incarnation ||
            strcmp(members[j].address, p->address) != 0)
            dropped++;
    }
    return dropped;
}


/* Whether replica_id is a member of the current quorum.  Loop thread (the
 * only writer of the state, so reading without lh->mu is safe). */
bool fti_lh_in_quorum(struct fti_lighthouse *lh, const char *replica_id)
{
    const fti_quorum_t *prev = fti_quorum_prev(lh->st);
    return prev && fti_quorum_member_index(prev, replica_id) >= 0;
}

/* Whether a request-triggered evaluation could issue now; when not, the
 * next tick evaluates.  True in every case where fti_quorum_compute would
 * issue, except one: groups that neither wait nor are healthy are still in
 * the table (they count as possible stragglers here), where the quorum
 * comes with the next tick.  Loop thread. */
bool fti_lh_worth_evaluating(struct fti_lighthouse *lh, int64_t now)
{
    const fti_quorum_t *prev = fti_quorum_prev(lh->st);
    const struct waiters *w = &lh->waiters;
    if (prev && w->n_prev_ids >= prev->n_members)
        return true; /* rule 4, fast quorum */
    if (w->n_ids < (size_t)lh->opts.min_replicas)
        return false; /* rule 5 */
    if (w->n_ids >= fti_quorum_n_groups(lh->st))
        return true; /* no straggler left for rule 7 */
    return lh->round_first_req_ms >= 0 && now - lh->round_first_req_ms >= lh->opts.join_timeout_ms;
}

/* Ends deferred calls whose connection died and withdraws their groups'
 * requests (unless another live call of the same group waits).  Loop
 * thread, without lh->mu. */
static void sweep_dead(struct fti_lighthouse *lh)
{
    struct waiters *w = &lh->waiters;
    for (size_t b = 0; b <= w->mask; b++) {
        struct waiter **pp = &w->buckets[b];
        while (*pp) {
            struct waiter *x = *pp;
            if (fti_rpc_call_alive(x->call)) {
                pp = &x->next;
                continue;
            }
            *pp = x->next;
            w->n--;
            FTI_DEBUG("quorum request of %s: connection closed, withdrawn", x->replica_id);
            fti_rpc_reply_error(x->call, FT_ERR_PROC_FAILED, "connection closed");
            if (!fti_lh_waiters_has(w, x->replica_id)) {
                w->n_ids--;
                if (fti_lh_in_quorum(lh, x->replica_id))
                    w->n_prev_ids--;
                pthread_mutex_lock(&lh->mu);
                (void)fti_quorum_withdraw(lh->st, x->replica_id);
                pthread_mutex_unlock(&lh->mu);
            }
            free(x);
        }
    }
}

/* Ends deferred calls of groups that fti_quorum_expire forgot (silent for
 * many heartbeat timeouts with their connection still open, e.g. a stopped
 * process): their request is gone from the state.  Loop thread. */
void fti_lh_sweep_forgotten(struct fti_lighthouse *lh)
{
    struct waiters *w = &lh->waiters;
    for (size_t b = 0; b <= w->mask; b++) {
        struct waiter **pp = &w->buckets[b];
        while (*pp) {
            struct waiter *x = *pp;
            if (fti_quorum_is_waiting(lh->st, x->replica_id)) {
                pp = &x->next;
                continue;
            }
            *pp = x->next;
            w->n--;
            FTI_WARN("quorum request of %s dropped: no heartbeat for %d heartbeat timeouts",
                     x->replica_id, FTI_QUORUM_EXPIRE_FACTOR);
            fti_rpc_reply_error(x->call, FT_ERR_TIMEOUT, "no heartbeat: forgotten by the lighthouse");
            if (!fti_lh_waiters_has(w, x->replica_id)) {
                w->n_ids--;
                if (fti_lh_in_quorum(lh, x->replica_id))
                    w->n_prev_ids--;
            }
            free(x);
        }
    }
}

/* "+a +b -c ~d" membership change between the previous quorum and the
 * members of d (both sorted), for the log: joined, left, and back as a new
 * incarnation (a restarted group). */
static void membership_change(const fti_quorum_t *prev, const fti_qdecision_t *d, char *buf,
                              size_t len)
{
    size_t i = 0, j = 0, used = 0, shown = 0, more = 0;
    size_t np = prev ? prev->n_members : 0;
    buf[0] = '\0';
    while (i < np || j < d->n_members) {
        int c = i >= np ? 1 : j >= d->n_members
                                  ? -1
                                  : strcmp(prev->members[i].replica_id, d->members[j].replica_id);
        const char *sign, *id;
        if (c == 0 && prev->members[i].incarnation == d->members[j].incarnation) {
            i++, j++;
            continue;
        }
        if (c == 0) { /* the same group back as a new process (restarted) */
            sign = "~";
            id = d->members[j].replica_id;
            i++, j++;
        } else if (c < 0) {
            sign = "-";
            id = prev->members[i++].replica_id;
        } else {
            sign = "+";
            id = d->members[j++].replica_id;
        }
        if (shown >= LH_LOG_NAMES) {
            more++;
            continue;
        }
        int n = snprintf(buf + used, len - used, "%s%s%s", used ? " " : "", sign, id);
        if (n < 0 || (size_t)n >= len - used) {
            more++;
            continue;
        }
        used += (size_t)n;
        shown++;
    }
    if (more > 0 && used < len)
        snprintf(buf + used, len - used, " (+%zu more changes)", more);
}

static void hist_add(struct fti_lighthouse *lh, double ms)
{
    size_t b = 0;
    while (b < FTI_LH_HIST_BUCKETS - 1 && ms > fti_lh_hist_bounds_ms[b])
        b++;
    lh->hist[b]++;
    lh->hist_sum_ms += ms;
    lh->hist_count++;
}

/* What one evaluation issued, for the log and the replies. */
struct issued {
    fti_quorum_t *q; /* NULL when nothing was issued */
    fti_sdc_finding_t *sdc; /* the SDC check of q's members; NULL: all agree */
    bool new_id;     /* the quorum id changed */
    char change[512];
    int64_t now, first_ms, last_ms, dropped, created_wall;
};

/* Applies the rules under lh->mu; on issue commits the quorum into out. */
static void decide(struct fti_lighthouse *lh, struct issued *out)
{
    fti_qdecision_t d;
    pthread_mutex_lock(&lh->mu);
    out->now = fti_now_ms();
    int rc = fti_quorum_compute(lh->st, out->now, &d);
    if (rc != FT_SUCCESS) {
        pthread_mutex_unlock(&lh->mu);
        FTI_ERROR("quorum evaluation failed: %s", FT_Error_string(rc));
        return;
    }
    if (!d.issue && d.n_requesters == 0)
        snprintf(lh->reason, sizeof(lh->reason), "idle: no healthy group waits for a quorum");
    else
        fti_strlcpy(lh->reason, d.reason, sizeof(lh->reason));
    if (d.issue) {
        membership_change(fti_quorum_prev(lh->st), &d, out->change, sizeof(out->change));
        out->dropped = count_dropped(fti_quorum_prev(lh->st), d.members, d.n_members);
        int64_t old_id = fti_quorum_prev(lh->st) ? fti_quorum_prev(lh->st)->quorum_id : -1;
        rc = fti_quorum_commit(lh->st, &d, out->now, &out->q);
        if (rc == FT_SUCCESS) {
            out->new_id = out->q->quorum_id != old_id;
            fti_lh_history_quorum(&lh->history, fti_wall_ms(), out->q->quorum_id,
                                  out->q->n_members);
            out->sdc = fti_lh_sdc_judge(lh, out->q, fti_wall_ms());
            out->first_ms = lh->round_first_req_ms;
            out->last_ms = lh->round_last_req_ms;
            lh->quorums_issued++;
            lh->quorum_created_wall = fti_wall_ms();
            hist_add(lh, out->first_ms >= 0 ? (double)(out->now - out->first_ms) : 0.0);
            /* requests left pending start the next round now */
            lh->round_first_req_ms = fti_quorum_n_waiting(lh->st) > 0 ? out->now : -1;
            lh->round_last_req_ms = lh->round_first_req_ms;
        } else {
            FTI_ERROR("quorum commit failed: %s", FT_Error_string(rc));
        }
    }
    fti_qdecision_clear(&d);
    out->created_wall = lh->quorum_created_wall;
    pthread_mutex_unlock(&lh->mu);
}

/* Answers one waiter of the issued quorum (view v, NULL when it could not
 * be built); true if a reply was queued. */
static bool answer_one(struct waiter *x, struct quorum_view *v)
{
    int rc = FT_ERR_NO_MEMORY;
    struct shared_reply *r = NULL;
    if (v && x->compact) {
        r = fti_lh_view_compact(v, x->replica_id, x->init_sync, x->want_ids, &rc);
    } else if (v && (r = fti_lh_view_full(v)) != NULL) {
        r->refs++;
    }
    if (r == NULL) {
        fti_rpc_reply_error(x->call, rc,
                            rc == FT_ERR_ARG ? "world_size too large for a compact reply"
                                             : "lighthouse out of memory");
        return false;
    }
    return fti_rpc_reply_ref(x->call, r->data, r->len, fti_lh_reply_release, r) == FT_SUCCESS;
}

/* Sends the issued quorum to every waiting call of its members. */
static void answer_waiters(struct fti_lighthouse *lh, const struct issued *is)
{
    const fti_quorum_t *q = is->q;
    struct quorum_view v;
    bool have_view =
        fti_lh_view_init(&v, q, is->created_wall, is->dropped, is->sdc) == FT_SUCCESS;
    size_t answered = 0, failed = 0;
    for (size_t i = 0; i < q->n_members; i++) {
        struct waiter *x = fti_lh_waiters_take(&lh->waiters, q->members[i].replica_id), *next;
        if (x)
            lh->waiters.n_ids--;
        for (; x; x = next) {
            next = x->next;
            if (answer_one(x, have_view ? &v : NULL))
                answered++;
            else
                failed++;
            free(x);
        }
    }
    lh->waiters.n_prev_ids = 0; /* the waiters left are not members */
    if (failed > 0)
        FTI_ERROR("quorum %" PRId64 ": %zu replies not sent (out of memory or bad world size)",
                  q->quorum_id, failed);
    if (have_view)
        fti_lh_view_clear(&v);
    FTI_DEBUG("quorum %" PRId64 " sent to %zu waiting calls", q->quorum_id, answered);
}

/* Applies the rules; issues and answers a quorum if they say so. */
void fti_lh_evaluate(struct fti_lighthouse *lh)
{
    struct issued is;
    memset(&is, 0, sizeof(is));
    is.first_ms = is.last_ms = -1;
    sweep_dead(lh);
    if (!fti_lh_gate_leading(lh))
        return;
    decide(lh, &is);
    if (is.q == NULL)
        return;
    /* every quorum sent is recorded first: not only a new id, also one
     * whose recording failed and that the rules issue again unchanged (it
     * was sent to the callers that asked again without being in etcd) */
    if (fti_lh_gate_record(lh, is.q) != FT_SUCCESS) {
        fti_quorum_free(is.q);
        free(is.sdc);
        return;
    }
    fti_log_ctx.quorum_id = is.q->quorum_id;
    /* changes at info level, the same quorum again (every step) at debug */
    FTI_LOG(is.new_id || is.change[0] ? FTI_LOG_INFO : FTI_LOG_DEBUG,
            "quorum %" PRId64 ": %zu members%s%s; formed %" PRId64 " ms after the first request, "
            "%" PRId64 " ms after the last",
            is.q->quorum_id, is.q->n_members, is.change[0] ? ", " : "", is.change,
            is.first_ms >= 0 ? is.now - is.first_ms : 0,
            is.last_ms >= 0 ? is.now - is.last_ms : 0);
    fti_lh_sdc_log(is.q, is.sdc);
    answer_waiters(lh, &is);
    fti_quorum_free(is.q);
    free(is.sdc);
}

