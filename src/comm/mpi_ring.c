/* mpi_ring.c - the pipelined ring allreduce of the `mpi` backend's native
 * path (mpi_backend.h: fti_mpi_ring_allreduce).
 *
 * The ring of ring.h (reduce-scatter, then all-gather) on the pre-made
 * communicator, each segment cut into chunks: every receive is posted at
 * the start, into the stage (never the caller's memory), and a chunk is
 * sent on to the right as soon as it arrived and was reduced or copied, so
 * the reduction of chunk k overlaps the transfer of chunk k + 1, and the
 * all-gather of the first chunks the reduce-scatter of the last.  Chunks
 * are taken in the order the left neighbour sends them (step-major), each
 * waited for with fti_mpi_poll against the deadline, or with the caller's
 * own wait (a->wait: the drop-in waits on its failure detector, not a clock).
 *
 * Where things land (n members, rank r, segment s of the caller's buffers):
 * - reduce-scatter step t < n - 2: segment r-t-1 arrives in stage[s],
 *   is reduced there with src[s] and sent on from there;
 * - step n - 2 (r owns segment r+1): buf[s] = stage[s] op src[s], the
 *   one write of the result, sent on from buf (MPI reads buf, never
 *   writes it);
 * - all-gather: segment r-a arrives in stage2[s] (stage2 = stage + bytes
 *   when n > 2: a segment may arrive there while its reduce-scatter send
 *   still reads stage[s]), is copied into buf[s] and sent on from stage2.
 * In place (src == buf), the all-gather's write of segment r waits for the
 * step-0 sends that read it.  Direct (zero-copy, a->direct): the
 * all-gather's chunks land in buf[s] itself and are sent on from there, no
 * stage2 and no copy.  That is safe in place too: a chunk of segment r can
 * only come back once the right neighbour received this rank's step-0 send
 * of it, so that send has read it.  Windowed (a->windowed, the drop-in's
 * held allreduce): the stage is one segment, chunk k of every step lands
 * in its slot k, and the receive of chunk k of step t + 1 is posted once
 * chunk k of step t was taken; every step writes the caller's buffer
 * (partial sums too, overwritten by the all-gather) and sends on from it,
 * so a slot is free as soon as it was read.  A chunk of a segment comes
 * back to buf only after the right neighbour received the send that read
 * it, the argument of direct.  The stage is then 1/n of the data (2 x the
 * data otherwise at n > 2): less cache for the same bits.   Each element is reduced at one rank in ring
 * order and copied to the others: every member ends with the same bits.
 */
#include "comm/mpi_backend.h"

#include <stdlib.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "comm/ring.h"

struct ring_run {
    const struct fti_mpi_ring *a;
    int n, me, left, right, steps;
    size_t es, chunk, nchunks; /* elements per chunk, chunks per segment */
    unsigned char *stage2;
    MPI_Request *rreq, *sreq; /* [steps * nchunks] */
    uint64_t tag0;
};

/* Tag of chunk k of step t: a window of steps * nchunks tags per call. */
static int ring_tag(const struct ring_run *g, int t, size_t k)
{
    uint64_t i = g->tag0 + (uint64_t)t * g->nchunks + k;
    return 1 + (int)(i % (uint64_t)g->a->tag_ub);
}

/* Offset (elements) and length of chunk k of segment seg. */
static void ring_chunk(const struct ring_run *g, int seg, size_t k, size_t *off_p, size_t *len_p)
{
    size_t soff, slen;
    fti_ring_segment(g->a->count, g->n, seg, &soff, &slen);
    size_t off = k * g->chunk;
    *off_p = soff + off;
    *len_p = off >= slen ? 0 : (slen - off < g->chunk ? slen - off : g->chunk);
}

/* Chunk k of step t: where it lands in the stage, and its offset and
 * length (elements) in the caller's buffers. */
static unsigned char *ring_landing(const struct ring_run *g, int t, size_t k, size_t *off_p,
                                   size_t *len_p)
{
    ring_chunk(g, fti_ring_recv_seg(g->me, g->n, t), k, off_p, len_p);
    if (g->a->windowed)
        return (unsigned char *)g->a->stage + k * g->chunk * g->es;
    unsigned char *base = fti_ring_step_reduces(g->n, t) ? g->a->stage
                          : g->a->direct                 ? (unsigned char *)g->a->buf
                                                         : g->stage2;
    return base + *off_p * g->es;
}

static int ring_send(struct ring_run *g, int t, size_t k, const void *from, size_t len)
{
    if (MPI_Isend(from, (int)len, g->a->mdt, g->right, ring_tag(g, t, k), g->a->comm,
                  &g->sreq[(size_t)t * g->nchunks + k]) != MPI_SUCCESS) {
        FTI_WARN("mpi backend: posting a chunk of the ring failed");
        return FT_ERR_MPI;
    }
    return FT_SUCCESS;
}

/* The receive of chunk k of step t. */
static int ring_recv(struct ring_run *g, int t, size_t k)
{
    size_t off, len;
    void *at = ring_landing(g, t, k, &off, &len);
    if (MPI_Irecv(at, (int)len, g->a->mdt, g->left, ring_tag(g, t, k), g->a->comm,
                  &g->rreq[(size_t)t * g->nchunks + k]) != MPI_SUCCESS) {
        FTI_WARN("mpi backend: posting a chunk of the ring failed");
        return FT_ERR_MPI;
    }
    return FT_SUCCESS;
}

/* Every receive (windowed: those of step 0), and the step-0 sends (from
 * src). */
static int ring_post(struct ring_run *g)
{
    for (int t = 0; t < (g->a->windowed && g->steps > 1 ? 1 : g->steps); t++)
        for (size_t k = 0; k < g->nchunks; k++) {
            int rc = ring_recv(g, t, k);
            if (rc != FT_SUCCESS)
                return rc;
        }
    const unsigned char *src = g->a->src;
    for (size_t k = 0; k < g->nchunks; k++) {
        size_t off, len;
        ring_chunk(g, fti_ring_send_seg(g->me, g->n, 0), k, &off, &len);
        int rc = ring_send(g, 0, k, src + off * g->es, len);
        if (rc != FT_SUCCESS)
            return rc;
    }
    return FT_SUCCESS;
}

/* Waits for n requests: the caller's wait, or polled against the deadline. */
static int ring_wait(const struct ring_run *g, MPI_Request *reqs, int n, int64_t deadline_ms)
{
    return g->a->wait != NULL ? g->a->wait(reqs, n) : fti_mpi_poll(reqs, n, deadline_ms, 0);
}

/* Windowed (see the top): chunk k of step t, read from its slot (got),
 * into the caller's buffer (dst). */
static int ring_take_windowed(struct ring_run *g, int t, size_t k, unsigned char *got,
                              const unsigned char *src, unsigned char *dst, size_t len,
                              int64_t deadline_ms)
{
    const struct fti_mpi_ring *a = g->a;
    if (t <= g->n - 2 && src != dst) {
        fti_reduce_into(dst, got, src, len, a->dt, a->op);
        return FT_SUCCESS;
    }
    if (t <= g->n - 2) { /* in place: src is dst */
        fti_reduce(got, src, len, a->dt, a->op);
    } else if (t == g->n - 1 && a->src == a->buf) {
        /* in place: the step-0 send of this chunk reads it */
        int rc = ring_wait(g, &g->sreq[k], 1, deadline_ms);
        if (rc != FT_SUCCESS)
            return rc;
    }
    memcpy(dst, got, len * g->es);
    return FT_SUCCESS;
}

/* Chunk k of step t arrived: reduce or copy it, send it on (step t + 1). */
static int ring_take(struct ring_run *g, int t, size_t k, int64_t deadline_ms)
{
    const struct fti_mpi_ring *a = g->a;
    size_t off, len;
    unsigned char *got = ring_landing(g, t, k, &off, &len);
    const unsigned char *src = (const unsigned char *)a->src + off * g->es;
    unsigned char *dst = (unsigned char *)a->buf + off * g->es;
    const void *next = got;
    /* every reduction is (what arrived) op (our own), as in mpi.c */
    if (a->windowed) {
        int rc = ring_take_windowed(g, t, k, got, src, dst, len, deadline_ms);
        if (rc == FT_SUCCESS && t + 1 < g->steps)
            rc = ring_send(g, t + 1, k, dst, len);
        if (rc == FT_SUCCESS && t + 1 < g->steps) /* slot k is free again */
            rc = ring_recv(g, t + 1, k);
        return rc;
    }
    if (t < g->n - 2) {
        fti_reduce(got, src, len, a->dt, a->op);
    } else if (t == g->n - 2 && src != dst) {
        fti_reduce_into(dst, got, src, len, a->dt, a->op);
        next = dst;
    } else if (t == g->n - 2) { /* in place: src is dst */
        fti_reduce(got, src, len, a->dt, a->op);
        memcpy(dst, got, len * g->es);
    } else if (a->direct) {
        /* it landed in place */
    } else {
        if (t == g->n - 1 && a->src == a->buf) {
            /* in place: the step-0 send of this chunk reads it */
            int rc = ring_wait(g, &g->sreq[k], 1, deadline_ms);
            if (rc != FT_SUCCESS)
                return rc;
        }
        memcpy(dst, got, len * g->es);
    }
    return t + 1 < g->steps ? ring_send(g, t + 1, k, next, len) : FT_SUCCESS;
}

/* Cancels the receives and frees every request still active; returns how
 * many were (the stage and the caller's buffers stay MPI's for them). */
static unsigned ring_drop(struct ring_run *g)
{
    unsigned left = 0;
    size_t total = (size_t)g->steps * g->nchunks;
    for (size_t i = 0; i < 2 * total; i++) {
        MPI_Request *r = i < total ? &g->rreq[i] : &g->sreq[i - total];
        int done = 0;
        /* one that completed in error is freed by MPI_Test (mpi.c's
         * give_up says why that matters) */
        if (*r == MPI_REQUEST_NULL ||
            (MPI_Test(r, &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done) ||
            *r == MPI_REQUEST_NULL)
            continue;
        if (i < total)
            (void)MPI_Cancel(r);
        (void)MPI_Request_free(r);
        left++;
    }
    return left;
}

size_t fti_mpi_ring_window_bytes(int n, size_t count, size_t esize)
{
    return (count / (size_t)(n > 0 ? n : 1) + 1) * esize; /* a segment at most */
}

size_t fti_mpi_ring_stage_bytes(int n, size_t bytes, bool direct)
{
    return n > 2 && !direct ? 2 * bytes : bytes;
}

int fti_mpi_ring_allreduce(const struct fti_mpi_ring *a, uint64_t *tag_next, int64_t deadline_ms,
                           unsigned *left_p)
{
    struct ring_run g = {.a = a};
    *left_p = 0;
    MPI_Comm_rank(a->comm, &g.me);
    MPI_Comm_size(a->comm, &g.n);
    g.left = (g.me + g.n - 1) % g.n;
    g.right = (g.me + 1) % g.n;
    g.steps = fti_ring_nsteps(g.n);
    g.es = fti_dtype_size(a->dt);
    size_t seg = a->count / (size_t)g.n + 1;
    g.chunk = fti_ring_chunk_elems(a->chunk_bytes, g.es);
    /* a call's tags must not wrap onto each other */
    size_t max_chunks = (size_t)a->tag_ub / (size_t)g.steps;
    if (fti_ring_nchunks(seg, g.chunk) > max_chunks)
        g.chunk = (seg + max_chunks - 1) / max_chunks;
    g.nchunks = fti_ring_nchunks(seg, g.chunk);
    g.stage2 = (unsigned char *)a->stage + (g.n > 2 ? a->count * g.es : 0);
    g.tag0 = *tag_next;
    *tag_next += (uint64_t)g.steps * g.nchunks;
    size_t total = (size_t)g.steps * g.nchunks;
    g.rreq = malloc(2 * total * sizeof(*g.rreq));
    if (g.rreq == NULL)
        return FT_ERR_NO_MEMORY;
    g.sreq = g.rreq + total;
    for (size_t i = 0; i < 2 * total; i++)
        g.rreq[i] = MPI_REQUEST_NULL;
    int rc = ring_post(&g);
    for (int t = 0; t < g.steps && rc == FT_SUCCESS; t++)
        for (size_t k = 0; k < g.nchunks && rc == FT_SUCCESS; k++) {
            rc = ring_wait(&g, &g.rreq[(size_t)t * g.nchunks + k], 1, deadline_ms);
            if (rc == FT_SUCCESS)
                rc = ring_take(&g, t, k, deadline_ms);
        }
    if (rc == FT_SUCCESS)
        rc = ring_wait(&g, g.sreq, (int)total, deadline_ms);
    if (rc != FT_SUCCESS)
        *left_p = ring_drop(&g);
    free(g.rreq);
    return rc;
}
