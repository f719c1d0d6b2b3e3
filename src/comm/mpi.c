/* mpi.c - the `mpi` data plane: slices that are only lists of world
 * ranks, allreduce made of point-to-point messages on one duplicate of the
 * world, or one MPI_Iallreduce on the communicator FT_Init made for the
 * initial slice, polled against a deadline (see mpi_backend.h). */
#include "comm/mpi_backend.h"

#include <inttypes.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "comm/baby.h"
#include "ftmpi.h"
#include "base/log.h"
#include "comm/ring.h"
#include "comm/ulfm.h"
#include "base/util.h"

/* The pre-made communicator of the initial slice (fti_mpi_ctx_add_fast). */
enum { FAST_NONE, FAST_LIVE, FAST_RETIRED };
struct fast {
    int state;          /* FAST_* */
    MPI_Comm comm;
    int *ranks;         /* its members' world ranks, sorted */
    int n;
    bool bound;         /* serves quorum qid only */
    int64_t qid;
    void *stage;        /* where MPI writes the result: ours, not the caller's */
    size_t stage_len;
    bool abandoned;     /* a request on comm was abandoned: never freed */
    uint64_t ring_tags; /* the next tag window of the ring (mpi_ring.c) */
};

struct fti_mpi_ctx {
    MPI_Comm dp; /* every slice's messages: a duplicate of the world */
    int tag_ub;
    struct fast fast;
    bool zero_copy; /* FTMPI_MODEB_ZERO_COPY (fti_mpi_ctx_set_zero_copy) */
};

/* What precedes every payload: the receiver checks that it belongs to the
 * operation it waits for, so a message left over from an abandoned one can
 * never be reduced into a later one (it fails the operation instead). */
struct msg_head {
    int64_t quorum_id;
    uint32_t seq;  /* operation of the slice */
    uint32_t step; /* message of the operation */
};

struct mpi_comm {
    struct fti_comm base;
    struct fti_mpi_ctx *x;
    int *ranks;      /* world ranks of the members, by replica rank */
    int64_t quorum_id;
    uint32_t seq;    /* operations started on this slice */
    int dead;        /* a request was abandoned: never used again */
    bool native;     /* reduces with MPI_Iallreduce on x->fast.comm */
    void *stage;     /* the operation's data */
    size_t stage_len;
    void *tmp;       /* what arrives from the peers */
    size_t tmp_len;
    struct msg_head *heads; /* [0] sent, [1..] received */
};

/* abandoned requests and the bytes kept alive for them, for the life of
 * the process (MPI may still write into those buffers) */
static uint64_t abandoned_requests, abandoned_bytes;
/* allreduces by path, for the life of the process (ring_ops: the native
 * ones that ran the ring of mpi_ring.c) */
static uint64_t native_ops, ring_ops, p2p_ops, zero_copy_ops;

void fti_mpi_abandoned(uint64_t *requests_p, uint64_t *bytes_p)
{
    *requests_p = abandoned_requests;
    *bytes_p = abandoned_bytes;
}

void fti_mpi_paths(uint64_t *native_p, uint64_t *p2p_p)
{
    *native_p = native_ops;
    *p2p_p = p2p_ops;
}

/* MPI datatype of an internal dtype (the reduction itself runs in
 * reduce.c, so no MPI op is needed). */
static MPI_Datatype fti_mpi_dtype(enum fti_dtype dt)
{
    switch (dt) {
    case FTI_DT_FLOAT: return MPI_FLOAT;
    case FTI_DT_DOUBLE: return MPI_DOUBLE;
    case FTI_DT_INT: return MPI_INT;
    case FTI_DT_LONG: return MPI_LONG;
    case FTI_DT_INT32: return MPI_INT32_T;
    case FTI_DT_INT64: return MPI_INT64_T;
    case FTI_DT_UINT64: return MPI_UINT64_T;
    default: return MPI_DATATYPE_NULL;
    }
}

/* MPI op of an internal op: AVG is a SUM, scaled afterwards. */
static MPI_Op fti_mpi_op(enum fti_op op)
{
    switch (op) {
    case FTI_OP_SUM:
    case FTI_OP_AVG: return MPI_SUM;
    case FTI_OP_PROD: return MPI_PROD;
    case FTI_OP_MAX: return MPI_MAX;
    case FTI_OP_MIN: return MPI_MIN;
    default: return MPI_OP_NULL;
    }
}

/* The backend's own waits yield from the first failed try. */
static int poll_all(MPI_Request *reqs, int n, int64_t deadline_ms)
{
    return fti_mpi_poll(reqs, n, deadline_ms, 0);
}

/* Operations of at most this many bytes times (members - 1) send every
 * member's whole buffer to every other (one round) and reduce locally in
 * replica-rank order; larger ones run the ring (2(n-1) rounds). */
#define MPI_SMALL_MAX (64u * 1024u)

/* The tag of the slice's next operation: every member numbers the
 * operations alike (they make the same FT_Allreduce calls), and quorum ids
 * keep slices apart.  The header check (struct msg_head) catches what a
 * collision of tags would let through. */
static int op_tag(const struct mpi_comm *m)
{
    uint64_t h = (uint64_t)m->quorum_id * UINT64_C(0x9E3779B97F4A7C15) + m->seq;
    return 1 + (int)(h % (uint64_t)m->x->tag_ub);
}

/* Gives up on reqs[0..n-1] (index % 4 < 2: receives, cancelled) and on the
 * slice: the requests and the buffers they use are left to MPI, counted. */
static void give_up(struct mpi_comm *m, MPI_Request *reqs, int n)
{
    int left = 0;
    for (int i = 0; i < n; i++) {
        int done = 0;
        /* a request that completed in error (ULFM: a dead peer) is freed
         * by MPI_Test and reads MPI_REQUEST_NULL, which MPI_Cancel refuses
         * on MPI_COMM_WORLD's handler (fatal by default) */
        if (reqs[i] == MPI_REQUEST_NULL ||
            (MPI_Test(&reqs[i], &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done) ||
            reqs[i] == MPI_REQUEST_NULL)
            continue;
        if (i % 4 < 2)
            (void)MPI_Cancel(&reqs[i]);
        (void)MPI_Request_free(&reqs[i]);
        left++;
    }
    if (left > 0) {
        abandoned_requests += (uint64_t)left;
        abandoned_bytes += m->stage_len + m->tmp_len;
        m->stage = m->tmp = NULL; /* leaked on purpose: MPI may still use them */
        m->heads = NULL;
        m->stage_len = m->tmp_len = 0;
    }
    m->dead = 1;
}

/* Posts r[0..3]: receives of a header into *rh and rcount elements into
 * rbuf from member `from`; sends of heads[0] and scount elements at sbuf
 * to member `to`; all under tag. */
static int post_pair(struct mpi_comm *m, MPI_Request r[4], int from, void *rbuf, int rcount,
                     struct msg_head *rh, int to, const void *sbuf, int scount, MPI_Datatype dt,
                     int tag)
{
    MPI_Comm c = m->x->dp;
    for (int i = 0; i < 4; i++)
        r[i] = MPI_REQUEST_NULL;
    if (MPI_Irecv(rh, (int)sizeof(*rh), MPI_BYTE, m->ranks[from], tag, c, &r[0]) != MPI_SUCCESS ||
        MPI_Irecv(rbuf, rcount, dt, m->ranks[from], tag, c, &r[1]) != MPI_SUCCESS ||
        MPI_Isend(&m->heads[0], (int)sizeof(m->heads[0]), MPI_BYTE, m->ranks[to], tag, c,
                  &r[2]) != MPI_SUCCESS ||
        MPI_Isend(sbuf, scount, dt, m->ranks[to], tag, c, &r[3]) != MPI_SUCCESS) {
        FTI_WARN("mpi backend: posting a message of the slice failed");
        return FT_ERR_MPI;
    }
    return FT_SUCCESS;
}

static int head_ok(const struct mpi_comm *m, const struct msg_head *h, uint32_t step)
{
    if (h->quorum_id == m->quorum_id && h->seq == m->seq && h->step == step)
        return 1;
    FTI_WARN("mpi backend: a message of quorum %lld operation %u step %u came where quorum %lld "
             "operation %u step %u was due: giving the slice up",
             (long long)h->quorum_id, h->seq, h->step, (long long)m->quorum_id, m->seq, step);
    return 0;
}

/* Every member's whole stage to every other, then the reduction in
 * replica-rank order (the same bits on every member).  tmp: size slots. */
static int allreduce_small(struct mpi_comm *m, size_t count, enum fti_dtype dt, enum fti_op op,
                           int tag, int64_t deadline_ms)
{
    int n = m->base.size, me = m->base.rank, k = 0, rc = FT_SUCCESS;
    size_t bytes = count * fti_dtype_size(dt);
    unsigned char *tmp = m->tmp;
    MPI_Request *reqs = malloc((size_t)(4 * (n - 1)) * sizeof(*reqs));
    if (reqs == NULL)
        return FT_ERR_NO_MEMORY;
    m->heads[0] = (struct msg_head){m->quorum_id, m->seq, 0};
    for (int r = 0; r < n && rc == FT_SUCCESS; r++) {
        if (r == me)
            continue;
        rc = post_pair(m, &reqs[4 * k], r, tmp + (size_t)r * bytes, (int)count, &m->heads[1 + r],
                       r, m->stage, (int)count, fti_mpi_dtype(dt), tag);
        k++;
    }
    if (rc == FT_SUCCESS)
        rc = poll_all(reqs, 4 * k, deadline_ms);
    for (int r = 0; r < n && rc == FT_SUCCESS; r++)
        if (r != me && !head_ok(m, &m->heads[1 + r], 0))
            rc = FT_ERR_PROC_FAILED;
    if (rc != FT_SUCCESS) {
        give_up(m, reqs, 4 * k);
        free(reqs);
        return rc;
    }
    free(reqs);
    void *acc = me == 0 ? m->stage : tmp;
    for (int r = 1; r < n; r++)
        fti_reduce(acc, r == me ? m->stage : tmp + (size_t)r * bytes, count, dt, op);
    if (acc != m->stage)
        memcpy(m->stage, acc, bytes);
    return FT_SUCCESS;
}

/* The ring (ring.h) over the stage, one whole segment per round. */
static int allreduce_ring(struct mpi_comm *m, size_t count, enum fti_dtype dt, enum fti_op op,
                          int tag, int64_t deadline_ms)
{
    int n = m->base.size, me = m->base.rank;
    int left = (me + n - 1) % n, right = (me + 1) % n;
    size_t es = fti_dtype_size(dt);
    unsigned char *stage = m->stage;
    MPI_Request r[4];
    for (int t = 0; t < fti_ring_nsteps(n); t++) {
        size_t soff, slen, roff, rlen;
        fti_ring_segment(count, n, fti_ring_send_seg(me, n, t), &soff, &slen);
        fti_ring_segment(count, n, fti_ring_recv_seg(me, n, t), &roff, &rlen);
        int reduces = fti_ring_step_reduces(n, t);
        void *rbuf = reduces ? m->tmp : stage + roff * es;
        m->heads[0] = (struct msg_head){m->quorum_id, m->seq, (uint32_t)t};
        int rc = post_pair(m, r, left, rbuf, (int)rlen, &m->heads[1], right, stage + soff * es,
                           (int)slen, fti_mpi_dtype(dt), tag);
        if (rc == FT_SUCCESS)
            rc = poll_all(r, 4, deadline_ms);
        if (rc == FT_SUCCESS && !head_ok(m, &m->heads[1], (uint32_t)t))
            rc = FT_ERR_PROC_FAILED;
        if (rc != FT_SUCCESS) {
            give_up(m, r, 4);
            return rc;
        }
        if (reduces)
            fti_reduce(stage + roff * es, m->tmp, rlen, dt, op);
    }
    return FT_SUCCESS;
}

/* Grows *buf_p to len bytes. */
static int grow(void **buf_p, size_t *len_p, size_t len)
{
    if (*len_p >= len)
        return FT_SUCCESS;
    void *p = realloc(*buf_p, len);
    if (p == NULL) {
        FTI_ERROR("mpi backend: cannot allocate %zu bytes of staging", len);
        return FT_ERR_NO_MEMORY;
    }
    *buf_p = p;
    *len_p = len;
    return FT_SUCCESS;
}

/* On a native slice, operations of at most this many bytes times
 * (members - 1) still take the point-to-point exchange: one round against
 * libnbc's 2 log2(n) (binomial reduce and broadcast), half the latency
 * (measured at 8-512 bytes, np = 2: 2.6-3.5 us against 6.0-7.2 us; np = 4
 * under load: 10-16 us against 21-117 us minimum). */
#define MPI_NATIVE_MIN 4096u

/* The native path's algorithm by size and members (same on every member:
 * the same bytes and size), from the runs in the history of doc/PERFORMANCE.md (section 4 today):
 * below 4 members libnbc reduces with a binomial tree (the whole buffer
 * twice through one rank), which the ring beats from 64 KiB; at 4 members
 * and more libnbc's reduce-scatter + allgather is as good up to segments
 * of about 2 MiB, the pipelined ring better above. */
#define MPI_RING_MIN (64u * 1024u)
#define MPI_RING_MIN_SEG (2u * 1024u * 1024u)
/* The ring's pipeline chunk (at np = 2, vader: 64 KiB 0.8-1.75x native
 * time, 128 KiB 0.8-1.2x, 256 KiB 0.75-1.15x, 512 KiB 0.7-1.0x). */
#define MPI_RING_CHUNK (512u * 1024u)

static bool use_ring(const struct fast *f, size_t bytes)
{
    if (f->n < 4)
        return bytes >= MPI_RING_MIN;
    return bytes / (size_t)f->n >= MPI_RING_MIN_SEG;
}

/* Retires the pre-made communicator after a failed operation: `left`
 * requests stay MPI's (counted) and, with lose_stage, the stage too (it is
 * never used or freed again). */
static void fast_retire(struct fast *f, unsigned left, bool lose_stage)
{
    /* with ULFM (comm/ulfm.h) the other members' requests on comm complete
     * now, revoked, instead of at their own deadlines; elsewhere a no-op */
    (void)fti_ulfm_revoke(f->comm);
    abandoned_requests += left;
    if (lose_stage) {
        abandoned_bytes += f->stage_len;
        f->stage = NULL;
        f->stage_len = 0;
        f->abandoned = true;
    }
    f->state = FAST_RETIRED;
}

/* A zero-copy reduction into buf was abandoned: MPI may still write its
 * ftmpi_mem_alloc region, which is given up (fti_mem_give_up) and counted. */
static void give_up_buffer(void *buf)
{
    size_t lost = fti_mem_give_up(buf);
    abandoned_bytes += lost;
    FTI_WARN("mpi backend: a zero-copy allreduce into %p was abandoned: its %zu-byte "
             "ftmpi_mem_alloc region stays MPI's (FTMPI_MODEB_ZERO_COPY); free it with "
             "ftmpi_mem_free and allocate another",
             buf, lost);
}

/* The ring on the pre-made communicator (mpi_ring.c); on a failure its
 * requests and the stage are left to MPI (counted) and the communicator is
 * retired, as with MPI_Iallreduce. */
static int native_ring(struct mpi_comm *m, const void *src, void *buf, size_t count,
                       enum fti_dtype dt, enum fti_op op, bool direct, int64_t deadline_ms)
{
    struct fast *f = &m->x->fast;
    size_t bytes = count * fti_dtype_size(dt);
    if (grow(&f->stage, &f->stage_len, fti_mpi_ring_stage_bytes(f->n, bytes, direct)) !=
        FT_SUCCESS)
        return FT_ERR_NO_MEMORY;
    struct fti_mpi_ring a = {
        .comm = f->comm, .tag_ub = m->x->tag_ub, .src = src, .buf = buf, .count = count,
        .dt = dt, .op = op, .mdt = fti_mpi_dtype(dt),
        .chunk_bytes = MPI_RING_CHUNK, .stage = f->stage, .direct = direct,
    };
    unsigned left = 0;
    int rc = fti_mpi_ring_allreduce(&a, &f->ring_tags, deadline_ms, &left);
    if (rc != FT_SUCCESS) {
        fast_retire(f, left, left > 0);
        if (direct && left > 0)
            give_up_buffer(buf);
    }
    return rc;
}

/* Whether MPI's own reduction gets (dt, op) right.  MPICH 4.0.2 (Debian,
 * ch4:ucx) reduces MPI_UINT64_T under MPI_MIN and MPI_MAX as if signed:
 * the MIN of 2^40+5 and UINT64_MAX (a spare's identity) comes out as
 * UINT64_MAX, from MPI_Allreduce and MPI_Iallreduce alike.  Those take the
 * point-to-point path, which reduces with reduce.c. */
static bool mpi_reduces_right(enum fti_dtype dt, enum fti_op op)
{
#if defined(MPICH_VERSION)
    if (dt == FTI_DT_UINT64 && (op == FTI_OP_MIN || op == FTI_OP_MAX))
        return false;
#else
    (void)dt;
    (void)op;
#endif
    return true;
}

/* The native path: the ring (native_ring) for large operations, else one
 * MPI_Iallreduce of src into the stage of the pre-made communicator,
 * polled; on success the result is copied into buf
 * (the one copy: an abandoned request must never write the caller's
 * memory after we return).  On a failure the request and the stage are
 * left to MPI (counted) and the communicator is retired.  Direct
 * (FTMPI_MODEB_ZERO_COPY, buf from ftmpi_mem_alloc): MPI writes buf itself,
 * no stage and no copy; on a failure after the reduction started, MPI may
 * still write buf, so its region is given up (give_up_buffer). */
static int allreduce_native(struct mpi_comm *m, const void *src, void *buf, size_t count,
                            enum fti_dtype dt, enum fti_op op, int64_t deadline_ms)
{
    struct fast *f = &m->x->fast;
    size_t bytes = count * fti_dtype_size(dt);
    if (f->state != FAST_LIVE)
        return FT_ERR_ABORTED; /* retired under another slice of this quorum */
    bool direct = m->x->zero_copy && fti_mem_usable(buf, bytes);
    int rc = FT_SUCCESS;
    if (use_ring(f, bytes)) {
        rc = native_ring(m, src, buf, count, dt, op, direct, deadline_ms);
        if (rc == FT_SUCCESS) {
            native_ops++;
            ring_ops++;
            zero_copy_ops += direct;
        }
        return rc;
    }
    if (!direct && grow(&f->stage, &f->stage_len, bytes) != FT_SUCCESS)
        return FT_ERR_NO_MEMORY;
    const void *send = direct && src == buf ? MPI_IN_PLACE : src;
    MPI_Request req = MPI_REQUEST_NULL;
    if (MPI_Iallreduce(send, direct ? buf : f->stage, (int)count, fti_mpi_dtype(dt),
                       fti_mpi_op(op), f->comm, &req) != MPI_SUCCESS) {
        FTI_WARN("mpi backend: MPI_Iallreduce of %zu bytes failed to start", bytes);
        rc = FT_ERR_MPI;
    } else {
        rc = poll_all(&req, 1, deadline_ms);
    }
    if (rc != FT_SUCCESS) {
        /* a started collective cannot be cancelled, nor freed while
         * active: the request, the stage (or buf) and the communicator stay
         * MPI's.  One that completed with an error left nothing active, but
         * its receive buffer is not worth the doubt: kept too. */
        fast_retire(f, req != MPI_REQUEST_NULL, !direct && rc != FT_ERR_MPI);
        if (direct && rc != FT_ERR_MPI) {
            f->abandoned = true; /* the request may still run on comm */
            give_up_buffer(buf);
        }
        return rc;
    }
    if (!direct)
        memcpy(buf, f->stage, bytes);
    native_ops++;
    zero_copy_ops += direct;
    return FT_SUCCESS;
}

/* The point-to-point path: src staged into m->stage, the small exchange
 * or the ring there, the result copied into buf. */
static int allreduce_p2p(struct mpi_comm *m, const void *src, void *buf, size_t count,
                         enum fti_dtype dt, enum fti_op op, int64_t deadline_ms)
{
    int n = m->base.size;
    size_t es = fti_dtype_size(dt), bytes = count * es;
    /* staged through buffers we own, so an abandoned request never touches
     * the caller's memory after we return (the copy costs ~0.1 ms per MiB) */
    bool small = bytes * (size_t)(n - 1) <= MPI_SMALL_MAX;
    size_t tmp = small ? (size_t)n * bytes : (count / (size_t)n + 1) * es;
    if (grow(&m->stage, &m->stage_len, bytes) != FT_SUCCESS ||
        grow(&m->tmp, &m->tmp_len, tmp) != FT_SUCCESS)
        return FT_ERR_NO_MEMORY;
    memcpy(m->stage, src, bytes);
    int tag = op_tag(m);
    int rc = small ? allreduce_small(m, count, dt, op, tag, deadline_ms)
                   : allreduce_ring(m, count, dt, op, tag, deadline_ms);
    if (rc == FT_SUCCESS) {
        memcpy(buf, m->stage, bytes);
        p2p_ops++;
    }
    return rc;
}

/* The allreduce of src into buf (comm.h's allreduce_from; src == buf: in
 * place): the native path on the pre-made communicator, else
 * point-to-point; AVG scaled at the end. */
static int mpi_allreduce_from(fti_comm_h c, const void *src, void *buf, size_t count,
                              enum fti_dtype dt, enum fti_op op, int64_t deadline_ms)
{
    struct mpi_comm *m = (struct mpi_comm *)c;
    size_t bytes = count * fti_dtype_size(dt);

    if (m->dead)
        return FT_ERR_ABORTED;
    if (count > (size_t)INT32_MAX)
        return FT_ERR_UNSUPPORTED;
    if (count == 0 || c->size == 1) {
        if (src != buf)
            memmove(buf, src, bytes);
        goto scale;
    }
    /* every member sees the same bytes and size: the same path */
    bool native = m->native && mpi_reduces_right(dt, op) &&
                  bytes * (size_t)(c->size - 1) > MPI_NATIVE_MIN;
    int rc = native ? allreduce_native(m, src, buf, count, dt, op, deadline_ms)
                       : allreduce_p2p(m, src, buf, count, dt, op, deadline_ms);
    m->seq++;
    if (rc != FT_SUCCESS) {
        FTI_WARN("mpi backend: %s allreduce of %zu bytes over %d groups %s; abandoning the "
                 "slice%s",
                 native ? "native" : "point-to-point", bytes, c->size,
                 rc == FT_ERR_TIMEOUT ? "missed its deadline" : "failed",
                 native ? " and its pre-made communicator" : "");
        m->dead = 1;
        return rc;
    }
scale:
    if (op == FTI_OP_AVG)
        fti_reduce_scale(buf, count, dt, c->size);
    return FT_SUCCESS;
}

static int mpi_allreduce(fti_comm_h c, void *buf, size_t count, enum fti_dtype dt,
                         enum fti_op op, int64_t deadline_ms)
{
    return mpi_allreduce_from(c, buf, buf, count, dt, op, deadline_ms);
}

static void mpi_destroy(fti_comm_h c)
{
    struct mpi_comm *m = (struct mpi_comm *)c;
    /* no MPI call: a slice holds no communicator, and what an abandoned
     * request still uses was handed to MPI (give_up) */
    free(m->stage);
    free(m->tmp);
    free(m->heads);
    free(m->ranks);
    free(m);
}

int fti_mpi_ctx_create(MPI_Comm world, fti_mpi_ctx_h *ctx_p)
{
    struct fti_mpi_ctx *x = calloc(1, sizeof(*x));
    if (x == NULL)
        return FT_ERR_NO_MEMORY;
    x->fast.comm = MPI_COMM_NULL;
    if (MPI_Comm_dup(world, &x->dp) != MPI_SUCCESS) {
        FTI_ERROR("mpi backend: MPI_Comm_dup of the world failed");
        free(x);
        return FT_ERR_MPI;
    }
    MPI_Comm_set_errhandler(x->dp, MPI_ERRORS_RETURN);
    x->tag_ub = fti_mpi_tag_ub(x->dp);
    *ctx_p = x;
    return FT_SUCCESS;
}

int fti_mpi_tag_ub(MPI_Comm comm)
{
    int *ub = NULL, found = 0;
    int tag_ub = 32767; /* the least MPI allows */
    if (MPI_Comm_get_attr(comm, MPI_TAG_UB, &ub, &found) == MPI_SUCCESS && found && ub &&
        *ub > tag_ub)
        tag_ub = *ub;
    return tag_ub;
}

void fti_mpi_ctx_set_zero_copy(fti_mpi_ctx_h x, bool on)
{
    x->zero_copy = on;
}

void fti_mpi_ctx_destroy(fti_mpi_ctx_h x)
{
    if (x == NULL)
        return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    /* a local operation; requests abandoned on it stay MPI's */
    if (!finalized && x->dp != MPI_COMM_NULL)
        MPI_Comm_free(&x->dp);
    struct fast *f = &x->fast;
    if (f->state != FAST_NONE)
        FTI_INFO("mpi backend: %" PRIu64 " allreduces native (%" PRIu64 " by the ring, %" PRIu64
                 " zero-copy, the others MPI_Iallreduce into the stage, on the initial slice's "
                 "communicator, %s), %" PRIu64 " point-to-point",
                 native_ops, ring_ops, zero_copy_ops, f->state == FAST_LIVE ? "live" : "retired",
                 p2p_ops);
    if (!finalized && !f->abandoned && f->comm != MPI_COMM_NULL)
        MPI_Comm_free(&f->comm);
    if (!f->abandoned)
        free(f->stage);
    free(f->ranks);
    free(x);
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

/* A sorted copy of ranks[0..n-1] (free it), NULL without memory. */
static int *sorted_copy(const int *ranks, int n)
{
    int *s = malloc((size_t)n * sizeof(*s));
    if (s != NULL) {
        memcpy(s, ranks, (size_t)n * sizeof(*s));
        qsort(s, (size_t)n, sizeof(*s), cmp_int);
    }
    return s;
}

int fti_mpi_ctx_add_fast(fti_mpi_ctx_h x, MPI_Comm comm, const int *world_ranks, int n)
{
    if (x == NULL || comm == MPI_COMM_NULL || world_ranks == NULL || n <= 0)
        return FT_ERR_ARG;
    if (x->fast.state != FAST_NONE)
        return FT_ERR_STATE;
    int *ranks = sorted_copy(world_ranks, n);
    if (ranks == NULL)
        return FT_ERR_NO_MEMORY;
    MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    x->fast = (struct fast){.state = FAST_LIVE, .comm = comm, .ranks = ranks, .n = n};
    return FT_SUCCESS;
}

/* Whether the slice of quorum_id over world_ranks[0..n-1] takes the native
 * path: its member set is the pre-made communicator's, which is live and
 * serves this quorum (or none yet: it is bound to this one).  A later
 * quorum over the same set follows a failed commit: the communicator is
 * retired. */
static bool use_fast(struct fti_mpi_ctx *x, const int *world_ranks, int n, int64_t quorum_id)
{
    struct fast *f = &x->fast;
    if (f->state != FAST_LIVE || n != f->n)
        return false;
    int *sorted = sorted_copy(world_ranks, n);
    if (sorted == NULL)
        return false;
    bool same = memcmp(sorted, f->ranks, (size_t)n * sizeof(*sorted)) == 0;
    free(sorted);
    if (!same)
        return false;
    if (f->bound && f->qid != quorum_id) {
        FTI_INFO("mpi backend: quorum %lld has the initial slice's members again after a "
                 "failed step; its pre-made communicator served quorum %lld only: "
                 "point-to-point from now on",
                 (long long)quorum_id, (long long)f->qid);
        f->state = FAST_RETIRED;
        return false;
    }
    f->bound = true;
    f->qid = quorum_id;
    return true;
}

int fti_mpi_slice_create(fti_mpi_ctx_h x, const int *world_ranks, int n, int index,
                         int64_t quorum_id, int64_t deadline_ms, fti_comm_h *comm_p)
{
    (void)deadline_ms; /* nothing to wait for */
    if (x == NULL || world_ranks == NULL || n <= 0 || index < 0 || index >= n)
        return FT_ERR_ARG;
    FTI_DEBUG("mpi backend: slice of quorum %lld: creating (%d members, replica rank %d)",
              (long long)quorum_id, n, index);
    struct mpi_comm *m = calloc(1, sizeof(*m));
    if (m == NULL)
        return FT_ERR_NO_MEMORY;
    m->ranks = malloc((size_t)n * sizeof(*m->ranks));
    m->heads = calloc((size_t)n + 1, sizeof(*m->heads));
    if (m->ranks == NULL || m->heads == NULL) {
        mpi_destroy(&m->base);
        return FT_ERR_NO_MEMORY;
    }
    memcpy(m->ranks, world_ranks, (size_t)n * sizeof(*m->ranks));
    m->x = x;
    m->quorum_id = quorum_id;
    m->base.ops = &fti_backend_mpi;
    m->base.rank = index;
    m->base.size = n;
    m->native = use_fast(x, world_ranks, n, quorum_id);
    FTI_DEBUG("mpi backend: slice of quorum %lld: %s", (long long)quorum_id,
              m->native ? "native (the pre-made communicator)" : "point-to-point");
    *comm_p = &m->base;
    return FT_SUCCESS;
}

static int mpi_create(const fti_comm_rendezvous_t *r, int64_t deadline_ms, fti_comm_h *comm_p)
{
    return fti_mpi_slice_create(r->world_ctx, r->world_ranks, r->size, r->replica_rank,
                                r->quorum_id, deadline_ms, comm_p);
}

/* The table entry (comm.h): the slice over the members' world ranks. */
const struct fti_comm_backend fti_backend_mpi = {
    .name = "mpi",
    .needs = FTI_COMM_NEEDS_WORLD,
    .create = mpi_create,
    .allreduce = mpi_allreduce,
    .allreduce_from = mpi_allreduce_from,
    .destroy = mpi_destroy,
};
