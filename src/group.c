/* group.c - intra-group gather, broadcast and AND, polled against a
 * deadline (see group.h). */
#include "group.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ftmpi.h"
#include "base/log.h"
#include "base/util.h"
#include "comm/mpi_backend.h"
#include "comm/ulfm.h"

/* Tags: two per operation (header and payload), from a sequence number
 * modulo a span set by MPI_TAG_UB (at least 32767 by the standard), so a
 * stale message can only be mistaken after that many operations. */
#define GROUP_TAG_SPAN_MIN 16000

/* A buffer shared by the requests that use it; freed with the last one. */
struct shared_buf {
    int refs;
    unsigned char data[];
};

/* A request this rank no longer waits for, and the buffer MPI may still
 * read or write. */
struct pending {
    MPI_Request req;
    struct shared_buf *buf;
};

struct fti_group {
    MPI_Comm comm;
    int rank, size;
    uint32_t seq;
    uint32_t tag_span;
    int lost; /* fti_group_mark_lost */
    struct pending *pend;
    size_t n_pend, cap_pend;
};

static struct shared_buf *sbuf_new(size_t len)
{
    struct shared_buf *b = malloc(sizeof(*b) + (len ? len : 1));
    if (b != NULL)
        b->refs = 1; /* the creator's reference */
    return b;
}

static void sbuf_unref(struct shared_buf *b)
{
    if (b != NULL && --b->refs <= 0)
        free(b);
}

/* Keeps req (and a new reference to buf) until MPI completes it. */
static int pending_add(struct fti_group *g, MPI_Request req, struct shared_buf *buf)
{
    if (buf != NULL)
        buf->refs++; /* kept (leaked) even if the list cannot grow */
    if (g->n_pend == g->cap_pend) {
        size_t cap = g->cap_pend ? 2 * g->cap_pend : 16;
        struct pending *p = realloc(g->pend, cap * sizeof(*p));
        if (p == NULL) {
            FTI_ERROR("group: out of memory keeping a pending request");
            return FT_ERR_NO_MEMORY; /* buf leaks: MPI may still use it */
        }
        g->pend = p;
        g->cap_pend = cap;
    }
    g->pend[g->n_pend].req = req;
    g->pend[g->n_pend].buf = buf;
    g->n_pend++;
    return FT_SUCCESS;
}

/* Frees the pending requests MPI has completed. */
static void pending_reap(struct fti_group *g)
{
    size_t j = 0;
    for (size_t i = 0; i < g->n_pend; i++) {
        int done = 0;
        if (MPI_Test(&g->pend[i].req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS)
            done = 0;
        if (done)
            sbuf_unref(g->pend[i].buf);
        else
            g->pend[j++] = g->pend[i];
    }
    g->n_pend = j;
}

/* Gives up on reqs[0..n-1]: receives are cancelled; all are kept pending
 * with their buffers bufs[i] (may be NULL). */
static void abandon(struct fti_group *g, MPI_Request *reqs, struct shared_buf **bufs, int n,
                    int cancel)
{
    for (int i = 0; i < n; i++) {
        if (reqs[i] == MPI_REQUEST_NULL)
            continue;
        if (cancel)
            (void)MPI_Cancel(&reqs[i]);
        (void)pending_add(g, reqs[i], bufs ? bufs[i] : NULL);
        reqs[i] = MPI_REQUEST_NULL;
    }
}

static void poll_pause(int *spins)
{
    /* spin a little for latency, then back off up to 1 ms */
    if (*spins < 200) {
        (*spins)++;
        return;
    }
    long us = 20L << (*spins - 200 < 6 ? *spins - 200 : 6);
    if (us > 1000)
        us = 1000;
    if (*spins - 200 < 6)
        (*spins)++;
    struct timespec ts = {0, us * 1000};
    nanosleep(&ts, NULL);
}

/* Waits for every request before the deadline. */
static int poll_all(MPI_Request *reqs, int n, int64_t deadline_ms)
{
    int spins = 0;
    if (n == 0)
        return FT_SUCCESS; /* a group of one makes no MPI call (ft.c: async quorum) */
    for (;;) {
        int flag = 0;
        int trc = fti_mpi_testall(MPI_Testall, n, reqs, &flag);
        if (trc != MPI_SUCCESS) {
            FTI_ERROR("group: MPI_Testall failed");
            return FT_ERR_MPI;
        }
        if (flag)
            return FT_SUCCESS;
        if (fti_now_ms() >= deadline_ms)
            return FT_ERR_TIMEOUT;
        poll_pause(&spins);
    }
}

static int next_tag(struct fti_group *g)
{
    int tag = 1 + 2 * (int)(g->seq % g->tag_span);
    g->seq++;
    return tag;
}

int fti_group_create(MPI_Comm parent, fti_group_h *g_p)
{
    struct fti_group *g = calloc(1, sizeof(*g));
    if (g == NULL)
        return FT_ERR_NO_MEMORY;
    if (MPI_Comm_dup(parent, &g->comm) != MPI_SUCCESS) {
        FTI_ERROR("group: MPI_Comm_dup failed");
        free(g);
        return FT_ERR_MPI;
    }
    MPI_Comm_set_errhandler(g->comm, MPI_ERRORS_RETURN);
    MPI_Comm_rank(g->comm, &g->rank);
    MPI_Comm_size(g->comm, &g->size);
    int *ub = NULL, found = 0;
    g->tag_span = GROUP_TAG_SPAN_MIN;
    if (MPI_Comm_get_attr(g->comm, MPI_TAG_UB, &ub, &found) == MPI_SUCCESS && found && ub &&
        *ub / 2 - 1 > GROUP_TAG_SPAN_MIN)
        g->tag_span = (uint32_t)(*ub / 2 - 1);
    *g_p = g;
    return FT_SUCCESS;
}

void fti_group_destroy(fti_group_h g)
{
    if (g == NULL)
        return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!g->lost && !finalized)
        pending_reap(g);
    if (g->n_pend > 0)
        FTI_DEBUG("group: %zu requests still pending at destroy (their buffers are leaked)",
                  g->n_pend);
    if (!g->lost && !finalized)
        MPI_Comm_free(&g->comm);
    free(g->pend);
    free(g);
}

void fti_group_mark_lost(fti_group_h g)
{
    if (g != NULL)
        g->lost = 1;
}

int fti_group_rank(fti_group_h g)
{
    return g->rank;
}

int fti_group_size(fti_group_h g)
{
    return g->size;
}

MPI_Comm fti_group_comm(fti_group_h g)
{
    return g->comm;
}

int fti_group_gather(fti_group_h g, const void *in, size_t len, void *out, int64_t deadline_ms)
{
    int tag = next_tag(g), rc = FT_SUCCESS;
    if (len > (size_t)INT32_MAX)
        return FT_ERR_ARG;
    pending_reap(g);

    if (g->rank != 0) {
        struct shared_buf *b = sbuf_new(len);
        MPI_Request req;
        if (b == NULL)
            return FT_ERR_NO_MEMORY;
        memcpy(b->data, in, len);
        if (MPI_Isend(b->data, (int)len, MPI_BYTE, 0, tag, g->comm, &req) != MPI_SUCCESS) {
            FTI_ERROR("group: MPI_Isend to rank 0 failed");
            sbuf_unref(b);
            return FT_ERR_MPI;
        }
        /* rank 0 learns whatever it needs from its broadcast; do not wait */
        rc = pending_add(g, req, b);
        sbuf_unref(b);
        return rc;
    }

    int n = g->size - 1;
    MPI_Request *reqs = calloc((size_t)(n > 0 ? n : 1), sizeof(*reqs));
    struct shared_buf **bufs = calloc((size_t)(n > 0 ? n : 1), sizeof(*bufs));
    if (reqs == NULL || bufs == NULL) {
        free(reqs);
        free(bufs);
        return FT_ERR_NO_MEMORY;
    }
    for (int i = 0; i < n; i++)
        reqs[i] = MPI_REQUEST_NULL;
    for (int i = 0; i < n && rc == FT_SUCCESS; i++) {
        bufs[i] = sbuf_new(len);
        if (bufs[i] == NULL) {
            rc = FT_ERR_NO_MEMORY;
        } else if (MPI_Irecv(bufs[i]->data, (int)len, MPI_BYTE, i + 1, tag, g->comm, &reqs[i]) !=
                   MPI_SUCCESS) {
            FTI_ERROR("group: MPI_Irecv from rank %d failed", i + 1);
            rc = FT_ERR_MPI;
        }
    }
    if (rc == FT_SUCCESS)
        rc = poll_all(reqs, n, deadline_ms);
    if (rc == FT_SUCCESS && out != NULL) {
        memcpy(out, in, len);
        for (int i = 0; i < n; i++)
            memcpy((unsigned char *)out + (size_t)(i + 1) * len, bufs[i]->data, len);
    } else {
        if (rc == FT_ERR_TIMEOUT)
            FTI_WARN("group: gather timed out waiting for the group's ranks");
        abandon(g, reqs, bufs, n, 1);
    }
    for (int i = 0; i < n; i++)
        sbuf_unref(bufs[i]);
    free(reqs);
    free(bufs);
    return rc;
}

struct bcast_header {
    int64_t status;
    uint64_t len;
};

static int bcast_root(struct fti_group *g, int tag, int status, const void *buf, size_t len)
{
    struct shared_buf *hb = sbuf_new(sizeof(struct bcast_header));
    struct shared_buf *pb = len > 0 ? sbuf_new(len) : NULL;
    int rc = FT_SUCCESS;
    if (hb == NULL || (len > 0 && pb == NULL)) {
        free(hb);
        free(pb);
        return FT_ERR_NO_MEMORY;
    }
    struct bcast_header h = {status, len};
    memcpy(hb->data, &h, sizeof(h));
    if (len > 0)
        memcpy(pb->data, buf, len);
    for (int r = 1; r < g->size && rc == FT_SUCCESS; r++) {
        MPI_Request req;
        if (MPI_Isend(hb->data, (int)sizeof(h), MPI_BYTE, r, tag, g->comm, &req) != MPI_SUCCESS) {
            rc = FT_ERR_MPI;
            break;
        }
        (void)pending_add(g, req, hb);
        if (len > 0) {
            if (MPI_Isend(pb->data, (int)len, MPI_BYTE, r, tag + 1, g->comm, &req) !=
                MPI_SUCCESS) {
                rc = FT_ERR_MPI;
                break;
            }
            (void)pending_add(g, req, pb);
        }
    }
    if (rc != FT_SUCCESS)
        FTI_ERROR("group: MPI_Isend of a broadcast failed");
    sbuf_unref(hb);
    sbuf_unref(pb);
    return rc;
}

int fti_group_bcast(fti_group_h g, int status, const void *buf, size_t len, int *status_p,
                    void **buf_p, size_t *len_p, int64_t deadline_ms)
{
    int tag = next_tag(g), rc;
    if (len > (size_t)INT32_MAX)
        return FT_ERR_ARG;
    pending_reap(g);

    if (g->rank == 0) {
        void *copy = NULL;
        if (len > 0 && (copy = malloc(len)) == NULL)
            return FT_ERR_NO_MEMORY;
        rc = bcast_root(g, tag, status, buf, len);
        if (rc != FT_SUCCESS) {
            free(copy);
            return rc;
        }
        if (len > 0)
            memcpy(copy, buf, len);
        *status_p = status;
        *buf_p = copy;
        *len_p = len;
        return FT_SUCCESS;
    }

    struct shared_buf *hb = sbuf_new(sizeof(struct bcast_header)), *pb = NULL;
    MPI_Request req = MPI_REQUEST_NULL;
    struct bcast_header h;
    if (hb == NULL)
        return FT_ERR_NO_MEMORY;
    if (MPI_Irecv(hb->data, (int)sizeof(h), MPI_BYTE, 0, tag, g->comm, &req) != MPI_SUCCESS) {
        FTI_ERROR("group: MPI_Irecv of a broadcast failed");
        sbuf_unref(hb);
        return FT_ERR_MPI;
    }
    rc = poll_all(&req, 1, deadline_ms);
    if (rc != FT_SUCCESS) {
        abandon(g, &req, &hb, 1, 1);
        sbuf_unref(hb);
        if (rc == FT_ERR_TIMEOUT)
            FTI_WARN("group: no broadcast from group rank 0 in time");
        return rc;
    }
    memcpy(&h, hb->data, sizeof(h));
    sbuf_unref(hb);
    if (h.len > (uint64_t)INT32_MAX) {
        FTI_ERROR("group: broadcast header announces %llu bytes", (unsigned long long)h.len);
        return FT_ERR_BAD_MESSAGE;
    }
    if (h.len > 0) {
        if ((pb = sbuf_new((size_t)h.len)) == NULL)
            return FT_ERR_NO_MEMORY; /* the payload stays unmatched under its tag */
        if (MPI_Irecv(pb->data, (int)h.len, MPI_BYTE, 0, tag + 1, g->comm, &req) !=
            MPI_SUCCESS) {
            FTI_ERROR("group: MPI_Irecv of a broadcast payload failed");
            sbuf_unref(pb);
            return FT_ERR_MPI;
        }
        rc = poll_all(&req, 1, deadline_ms);
        if (rc != FT_SUCCESS) {
            abandon(g, &req, &pb, 1, 1);
            sbuf_unref(pb);
            return rc;
        }
    }
    void *out = NULL;
    if (h.len > 0) {
        out = malloc((size_t)h.len);
        if (out == NULL) {
            sbuf_unref(pb);
            return FT_ERR_NO_MEMORY;
        }
        memcpy(out, pb->data, (size_t)h.len);
        sbuf_unref(pb);
    }
    *status_p = (int)h.status;
    *buf_p = out;
    *len_p = (size_t)h.len;
    return FT_SUCCESS;
}

void fti_group_revoke(fti_group_h g)
{
    if (g != NULL && fti_ulfm_active())
        (void)fti_ulfm_revoke(g->comm);
}

int fti_group_decide(fti_group_h g, int vote, int64_t vote_deadline_ms,
                     int64_t decision_deadline_ms, int *decision_p)
{
    int v = vote ? 1 : 0, decision, got = 0, rc;
    int *votes = NULL;
    void *buf = NULL;
    size_t len = 0;

    if (g->size > 1 && fti_ulfm_active()) {
        /* ULFM: one agreement, the same on every live member even when one
         * dies during it; a dead member fails it at once (MPI's word, not
         * a deadline); a stopped one at the decision's deadline */
        rc = fti_ulfm_agree_until(g->comm, &v, decision_deadline_ms);
        if (rc != FT_ERR_UNSUPPORTED) {
            if (rc != FT_SUCCESS)
                return rc;
            *decision_p = v ? FT_SUCCESS : FT_ERR_ABORTED;
            return FT_SUCCESS;
        }
        v = vote ? 1 : 0;
    }

    if (g->rank != 0) {
        /* the vote goes to rank 0 (never waited for); the decision comes back */
        int grc = fti_group_gather(g, &v, sizeof(v), NULL, 0);
        rc = fti_group_bcast(g, 0, NULL, 0, &got, &buf, &len, decision_deadline_ms);
        if (rc != FT_SUCCESS) {
            FTI_WARN("group: no decision from group rank 0 in time: this rank cannot know "
                     "whether the group committed");
            return rc;
        }
        free(buf);
        if (grc != FT_SUCCESS && got == FT_SUCCESS)
            FTI_WARN("group: this rank's vote was not sent (%s), yet rank 0 decided",
                     FT_Error_string(grc)); /* cannot be: rank 0 needs every vote */
        *decision_p = got;
        return FT_SUCCESS;
    }

    if ((votes = calloc((size_t)g->size, sizeof(*votes))) == NULL)
        decision = FT_ERR_NO_MEMORY; /* the gather below must still be made */
    else
        decision = FT_SUCCESS;
    rc = fti_group_gather(g, &v, sizeof(v), votes, votes ? vote_deadline_ms : 0);
    if (decision == FT_SUCCESS && rc != FT_SUCCESS)
        decision = rc; /* FT_ERR_TIMEOUT: a vote missed the deadline */
    for (int r = 0; decision == FT_SUCCESS && r < g->size; r++)
        if (!votes[r])
            decision = FT_ERR_ABORTED;
    free(votes);
    rc = fti_group_bcast(g, decision, NULL, 0, &got, &buf, &len, decision_deadline_ms);
    if (rc != FT_SUCCESS)
        return rc;
    *decision_p = decision;
    return FT_SUCCESS;
}
