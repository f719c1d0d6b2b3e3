/*
 * comm/ucx_wait.c - the ucx backend's sends, receives and bounded waits
 * (see ucx_comm.h): every operation completes into a slot; the wait
 * progresses the worker, sleeps on its event fd when nothing moves, and
 * ends at the deadline or at the first failed peer.
 */
#include "comm/ucx_comm.h"

#include <errno.h>
#include <poll.h>
#include <sched.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/util.h"

#define UCX_SPIN_POLLS 256    /* rounds of progress before sleeping on the event fd */
#define UCX_ABORT_MS 2000     /* how long an abort waits for its slots */
#define UCX_CLOSE_MS 200      /* how long destroy waits for its flushed closes */

void fti_ucx_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    struct fti_ucx_peer *p = arg;
    (void)ep;
    p->failed = 1;
    if (p->c->failed < 0)
        p->c->failed = p->rank;
    FTI_DEBUG("ucx: endpoint to replica rank %d (%s) failed: %s", p->rank, p->label,
              fti_ucx.status_string(status));
}

static void send_done(void *req, ucs_status_t status, void *user_data)
{
    struct fti_ucx_op *op = user_data;
    (void)req;
    op->status = status;
    op->done = 1;
}

static void recv_done(void *req, ucs_status_t status, const ucp_tag_recv_info_t *info,
                      void *user_data)
{
    struct fti_ucx_op *op = user_data;
    (void)req;
    op->status = status;
    op->got = status == UCS_OK ? info->length : 0;
    op->done = 1;
}

/* A free slot (the first, else a new one), set up for peer. */
static struct fti_ucx_op *op_next(struct fti_ucx_comm *c, int peer, size_t want, int is_recv)
{
    int i = 0;
    while (i < c->nops && c->ops[i].busy)
        i++;
    if (i == c->nops)
        c->nops++;
    struct fti_ucx_op *op = &c->ops[i];
    *op = (struct fti_ucx_op){.peer = peer, .want = want, .is_recv = is_recv, .busy = 1};
    return op;
}

void fti_ucx_release(struct fti_ucx_comm *c, struct fti_ucx_op *op)
{
    if (op->req != NULL) {
        fti_ucx.request_free(op->req);
        op->req = NULL;
    }
    op->busy = 0;
    while (c->nops > 0 && !c->ops[c->nops - 1].busy)
        c->nops--;
}

/* What a post returned: NULL (a send done now), an error, or a request
 * (whose callback may have run already). */
static void op_started(struct fti_ucx_op *op, ucs_status_ptr_t r)
{
    if (r == NULL) {
        op->done = 1;
        op->status = UCS_OK;
    } else if (UCS_PTR_IS_ERR(r)) {
        op->done = 1;
        op->status = UCS_PTR_STATUS(r);
    } else {
        op->req = r;
    }
}

struct fti_ucx_op *fti_ucx_send(struct fti_ucx_comm *c, int peer, const void *buf, size_t len,
                                uint64_t tag)
{
    struct fti_ucx_op *op = op_next(c, peer, len, 0);
    ucp_request_param_t p = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA,
        .cb.send = send_done,
        .user_data = op,
    };
    op_started(op, fti_ucx.tag_send_nbx(c->peers[peer].ep, buf, len, tag, &p));
    return op;
}

struct fti_ucx_op *fti_ucx_recv(struct fti_ucx_comm *c, int peer, void *buf, size_t len,
                                uint64_t tag)
{
    struct fti_ucx_op *op = op_next(c, peer, len, 1);
    ucp_request_param_t p = {
        .op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK | UCP_OP_ATTR_FIELD_USER_DATA |
                        UCP_OP_ATTR_FLAG_NO_IMM_CMPL,
        .cb.recv = recv_done,
        .user_data = op,
    }; /* no immediate completion: a receive learns its length in recv_done */
    op_started(op, fti_ucx.tag_recv_nbx(c->worker, buf, len, tag, UINT64_MAX, &p));
    return op;
}

/* Frees the requests of done busy slots; the first error among them as
 * an FT_ code (c->failed set for a peer's), FT_SUCCESS when none failed,
 * *all_p whether every busy slot is done, *sent_p whether a send is. */
static int ops_reap(struct fti_ucx_comm *c, int *all_p, int *sent_p)
{
    int rc = FT_SUCCESS, all = 1, sent = 0;
    for (int i = 0; i < c->nops; i++) {
        struct fti_ucx_op *op = &c->ops[i];
        if (!op->busy)
            continue;
        if (!op->done) {
            all = 0;
            continue;
        }
        sent |= !op->is_recv;
        if (op->req != NULL) {
            fti_ucx.request_free(op->req);
            op->req = NULL;
        }
        if (rc != FT_SUCCESS || op->seen++)
            continue; /* an error is counted (and logged) once */
        if (op->status == UCS_ERR_MESSAGE_TRUNCATED ||
            (op->is_recv && op->status == UCS_OK && op->got != op->want)) {
            FTI_DEBUG("ucx: a message from replica rank %d of %zu bytes, %zu expected: %s", op->peer,
                      op->got, op->want, fti_ucx.status_string(op->status));
            rc = FT_ERR_BAD_MESSAGE;
        } else if (op->status != UCS_OK) {
            FTI_DEBUG("ucx: an operation with replica rank %d failed: %s", op->peer,
                      fti_ucx.status_string(op->status));
            if (op->status != UCS_ERR_CANCELED) {
                c->peers[op->peer].failed = 1;
                if (c->failed < 0)
                    c->failed = op->peer;
            }
            rc = FT_ERR_PROC_FAILED;
        }
    }
    *all_p = all;
    if (sent_p != NULL)
        *sent_p = sent;
    return rc;
}

/* Progresses until nothing moves. */
static void progress_all(struct fti_ucx_comm *c)
{
    while (fti_ucx.worker_progress(c->worker) != 0)
        ;
}

void fti_ucx_nudge(struct fti_ucx_comm *c)
{
    progress_all(c);
}

/* Sleeps on the worker's event fd until an event, FTI_UCX_POLL_MS or the
 * deadline. */
static int sleep_on_efd(struct fti_ucx_comm *c, int64_t deadline_ms)
{
    ucs_status_t st = fti_ucx.worker_arm(c->worker);
    if (st == UCS_ERR_BUSY)
        return FT_SUCCESS; /* events came meanwhile: progress again */
    if (st != UCS_OK) {
        FTI_DEBUG("ucx: arming the worker: %s", fti_ucx.status_string(st));
        return FT_ERR_SYSTEM;
    }
    struct pollfd pf = {c->efd, POLLIN, 0};
    if (poll(&pf, 1, FTI_MIN(fti_ms_left(deadline_ms), FTI_UCX_POLL_MS)) < 0 && errno != EINTR) {
        FTI_DEBUG("ucx: poll on the worker's event fd: %m");
        return FT_ERR_SYSTEM;
    }
    return FT_SUCCESS;
}

/* Progresses until every busy slot is done (head == NULL, all) or head or
 * a send is (some): busy-polls UCX_SPIN_POLLS rounds (yielding between
 * them: the peer's bytes are often microseconds away, and a peer may
 * share our core), then sleeps on the event fd, until the deadline or the
 * first failed peer. */
static int wait_for(struct fti_ucx_comm *c, int some, const struct fti_ucx_op *head,
                    int64_t deadline_ms)
{
    int all = 0, sent = 0, rc;
    for (;;) {
        for (int i = 0; i < UCX_SPIN_POLLS; i++) {
            progress_all(c);
            rc = ops_reap(c, &all, some ? &sent : NULL);
            if (rc == FT_SUCCESS && c->failed >= 0)
                rc = FT_ERR_PROC_FAILED;
            if (rc != FT_SUCCESS)
                goto fail;
            if (some ? sent || (head != NULL && head->done) : all)
                return FT_SUCCESS;
            sched_yield();
        }
        if (fti_ms_left(deadline_ms) == 0) {
            FTI_DEBUG("ucx: deadline passed with operations in flight");
            rc = FT_ERR_TIMEOUT;
            goto fail;
        }
        rc = sleep_on_efd(c, deadline_ms);
        if (rc != FT_SUCCESS)
            goto fail;
    }
fail:
    fti_ucx_abort(c, FTI_MIN(c->grace_ms, FTI_MAX(0, fti_ms_left(deadline_ms))));
    return rc;
}

int fti_ucx_wait(struct fti_ucx_comm *c, int64_t deadline_ms)
{
    int rc = wait_for(c, 0, NULL, deadline_ms);
    if (rc == FT_SUCCESS) {
        for (int i = 0; i < c->nops; i++)
            c->ops[i].busy = 0; /* requests freed by ops_reap */
        c->nops = 0;
    }
    return rc;
}

int fti_ucx_wait_some(struct fti_ucx_comm *c, const struct fti_ucx_op *head, int64_t deadline_ms)
{
    return wait_for(c, 1, head, deadline_ms);
}

/* Closes the endpoints of failed peers (all: every one), forced (its
 * sends end with an error) or, with flush, the live peers' ones flushed,
 * waiting for the closes up to deadline_ms. */
static void close_eps(struct fti_ucx_comm *c, int all, int flush, int64_t deadline_ms)
{
    for (int i = 0; i < c->base.size; i++) {
        if (c->peers[i].ep == NULL || !(all || c->peers[i].failed))
            continue;
        ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                                 .flags = flush && !c->peers[i].failed ? 0 : UCP_EP_CLOSE_FLAG_FORCE};
        ucs_status_ptr_t r = fti_ucx.ep_close_nbx(c->peers[i].ep, &p);
        c->peers[i].ep = NULL;
        if (r == NULL || UCS_PTR_IS_ERR(r))
            continue;
        while (fti_ucx.request_check_status(r) == UCS_INPROGRESS && fti_ms_left(deadline_ms) > 0)
            fti_ucx.worker_progress(c->worker);
        fti_ucx.request_free(r);
    }
}

/* Progresses, sleeping on the event fd, until every slot is done or
 * deadline_ms; whether they all are. */
static int ops_drain(struct fti_ucx_comm *c, int64_t deadline_ms)
{
    int all = 0;
    for (;;) {
        progress_all(c);
        (void)ops_reap(c, &all, NULL);
        if (all || fti_ms_left(deadline_ms) == 0 || sleep_on_efd(c, deadline_ms) != FT_SUCCESS)
            return all;
    }
}

void fti_ucx_abort(struct fti_ucx_comm *c, int64_t grace_ms)
{
    int64_t end = fti_now_ms() + grace_ms;
    c->dead = 1;
    for (int i = 0; i < c->nops; i++)
        if (c->ops[i].busy && !c->ops[i].done && c->ops[i].req != NULL)
            fti_ucx.request_cancel(c->worker, c->ops[i].req);
    /* the live peers' endpoints stay open while their sends may finish,
     * so that each of them finds the failed peer itself rather than our
     * closing: an error line names the peer that failed, not one that
     * left after it */
    close_eps(c, 0, 0, end);
    if (!ops_drain(c, end)) {
        close_eps(c, 1, 0, fti_now_ms() + UCX_ABORT_MS);
        if (!ops_drain(c, fti_now_ms() + UCX_ABORT_MS))
            FTI_WARN("ucx: operations did not end within %d ms of closing every endpoint",
                     UCX_ABORT_MS);
    }
    for (int i = 0; i < c->nops; i++)
        c->ops[i].busy = 0;
    c->nops = 0;
}

void fti_ucx_close(struct fti_ucx_comm *c)
{
    fti_ucx_abort(c, 0);
    close_eps(c, 1, 1, fti_now_ms() + UCX_CLOSE_MS);
}
