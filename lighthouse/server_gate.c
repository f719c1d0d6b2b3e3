/*
 * lighthouse/server_gate.c - the server's side of leadership (lighthouse.h,
 * fti_lh_gate_t; the etcd election is lighthouse/leader.c): a standby
 * answers every group call with FT_ERR_NOT_LEADER naming the leader, ends
 * the calls that waited when it stops leading, and a quorum with a new id
 * is recorded (fenced) before it is sent.  Loop thread.
 */
#include "lighthouse/server_int.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "control/lighthouse_client.h"

/* The redirect message: FTI_LH_NOT_LEADER_MSG and the leader, or "unknown". */
static void redirect_msg(const char *leader, char *msg, size_t len)
{
    snprintf(msg, len, "%s%s", FTI_LH_NOT_LEADER_MSG, leader[0] ? leader : "unknown");
}

/* Whether the gate says this lighthouse leads; the floor noted in the
 * state; leader gets the leader otherwise. */
static bool gate_leading(struct fti_lighthouse *lh, char *leader, size_t len)
{
    const fti_lh_gate_t *g = lh->opts.gate;
    int64_t floor = 0;
    leader[0] = '\0';
    if (g == NULL)
        return true;
    if (!g->leading(g->arg, &floor, leader, len))
        return false;
    if (floor > lh->gate_floor) { /* a new leadership: ids above what was issued */
        pthread_mutex_lock(&lh->mu);
        fti_quorum_note_seen(lh->st, floor);
        pthread_mutex_unlock(&lh->mu);
        lh->gate_floor = floor;
    }
    return true;
}

void fti_lh_gate_snapshot(const struct fti_lighthouse *lh, fti_lh_snapshot_t *s)
{
    const fti_lh_gate_t *g = lh->opts.gate;
    int64_t floor;
    s->role = FTI_LH_ROLE_ALONE;
    if (g)
        s->role = g->leading(g->arg, &floor, s->leader, sizeof(s->leader)) ? FTI_LH_ROLE_LEADER
                                                                            : FTI_LH_ROLE_STANDBY;
}

bool fti_lh_gate_refuse(struct fti_lighthouse *lh, fti_rpc_call_h call)
{
    char leader[FTI_ADDRESS_SIZE], msg[FTI_ADDRESS_SIZE + 64];
    if (gate_leading(lh, leader, sizeof(leader)))
        return false;
    redirect_msg(leader, msg, sizeof(msg));
    fti_rpc_reply_error(call, FT_ERR_NOT_LEADER, msg);
    return true;
}

/* Ends every waiting call with rc and msg and withdraws its request. */
static void end_all(struct fti_lighthouse *lh, int rc, const char *msg)
{
    struct waiters *w = &lh->waiters;
    size_t ended = 0;
    for (size_t b = 0; b <= w->mask; b++) {
        struct waiter *x = w->buckets[b], *next;
        w->buckets[b] = NULL;
        for (; x; x = next) {
            next = x->next;
            pthread_mutex_lock(&lh->mu);
            (void)fti_quorum_withdraw(lh->st, x->replica_id);
            pthread_mutex_unlock(&lh->mu);
            fti_rpc_reply_error(x->call, rc, msg);
            free(x);
            ended++;
        }
    }
    w->n = w->n_ids = w->n_prev_ids = 0;
    if (ended)
        FTI_INFO("%zu waiting quorum calls ended: %s", ended, msg);
}

bool fti_lh_gate_leading(struct fti_lighthouse *lh)
{
    char leader[FTI_ADDRESS_SIZE], msg[FTI_ADDRESS_SIZE + 64];
    if (gate_leading(lh, leader, sizeof(leader)))
        return true;
    if (lh->waiters.n > 0) {
        redirect_msg(leader, msg, sizeof(msg));
        end_all(lh, FT_ERR_NOT_LEADER, msg);
    }
    return false;
}

int fti_lh_gate_record(struct fti_lighthouse *lh, const fti_quorum_t *q)
{
    const fti_lh_gate_t *g = lh->opts.gate;
    if (g == NULL)
        return FT_SUCCESS;
    int rc = g->record(g->arg, q);
    if (rc == FT_SUCCESS)
        return rc;
    FTI_WARN("quorum %" PRId64 " not sent: %s", q->quorum_id,
             rc == FT_ERR_NOT_LEADER ? "this lighthouse no longer leads"
                                     : "it could not be recorded in etcd");
    if (rc == FT_ERR_NOT_LEADER)
        (void)fti_lh_gate_leading(lh); /* redirects the waiters */
    else
        end_all(lh, FT_ERR_TIMEOUT, "the quorum could not be recorded in etcd; ask again");
    return rc;
}
