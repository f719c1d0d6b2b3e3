/* mpi.c - the `mpi` data plane: slices built with MPI_Comm_create_group
 * after a token exchange, non-blocking collectives polled against a
 * deadline (see mpi_backend.h). */
#include "mpi_backend.h"

#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ftmpi.h"
#include "log.h"
#include "util.h"

struct fti_mpi_ctx {
    MPI_Comm hs;    /* token exchange */
    MPI_Comm cg;    /* parent of MPI_Comm_create_group */
    int tag_ub;
};

struct mpi_comm {
    struct fti_comm base;
    MPI_Comm comm;
    int dead;        /* a request was abandoned: never use comm again */
    void *stage;     /* staging buffer of the current request */
    size_t stage_len;
};

/* abandoned requests and the bytes kept alive for them, for the life of
 * the process (MPI may still write into those buffers) */
static uint64_t abandoned_requests, abandoned_bytes;

void fti_mpi_abandoned(uint64_t *requests_p, uint64_t *bytes_p)
{
    *requests_p = abandoned_requests;
    *bytes_p = abandoned_bytes;
}

/* MPI datatype / op of an internal dtype / op (AVG maps to MPI_SUM). */
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

static MPI_Op fti_mpi_op(enum fti_op op)
{
    switch (op) {
    case FTI_OP_SUM: case FTI_OP_AVG: return MPI_SUM;
    case FTI_OP_PROD: return MPI_PROD;
    case FTI_OP_MAX: return MPI_MAX;
    case FTI_OP_MIN: return MPI_MIN;
    default: return MPI_OP_NULL;
    }
}

/* Polling.  Open MPI advances a non-blocking collective (libnbc) only
 * inside MPI_Test*, so a rank that sleeps stalls every rank waiting for its
 * part of the schedule.  poll_all therefore keeps calling MPI_Testall: it
 * spins for POLL_SPIN_MS (sched_yield between tries, so an oversubscribed
 * core goes to whoever can run), then sleeps at most POLL_NAP_US between
 * tries, so that a rank waiting for a dead peer until its deadline leaves
 * the cores to the living but still progresses every POLL_NAP_US.  The
 * clock is read every POLL_CLOCK_EVERY tries only. */
#define POLL_SPIN_MS 50
#define POLL_NAP_US 50L
#define POLL_CLOCK_EVERY 64u

/* Polls reqs[0..n-1] until all complete (FT_SUCCESS), MPI reports an error
 * (FT_ERR_PROC_FAILED) or the deadline passes (FT_ERR_TIMEOUT). */
static int poll_all(MPI_Request *reqs, int n, int64_t deadline_ms)
{
    int64_t spin_until = -1; /* read the clock only once the first tries fail */
    bool nap = false;
    for (unsigned tries = 0;; tries++) {
        int done = 0;
        if (MPI_Testall(n, reqs, &done, MPI_STATUSES_IGNORE) != MPI_SUCCESS)
            return FT_ERR_PROC_FAILED;
        if (done)
            return FT_SUCCESS;
        if (nap || tries % POLL_CLOCK_EVERY == POLL_CLOCK_EVERY - 1) {
            int64_t now = fti_now_ms();
            if (now >= deadline_ms)
                return FT_ERR_TIMEOUT;
            if (spin_until < 0)
                spin_until = now + POLL_SPIN_MS;
            else if (now >= spin_until)
                nap = true;
        }
        if (nap) {
            struct timespec ts = {0, POLL_NAP_US * 1000};
            nanosleep(&ts, NULL);
        } else {
            sched_yield();
        }
    }
}

static int mpi_allreduce(fti_comm_h c, void *buf, size_t count, enum fti_dtype dt,
                         enum fti_op op, int64_t deadline_ms)
{
    struct mpi_comm *m = (struct mpi_comm *)c;
    size_t bytes = count * fti_dtype_size(dt);
    MPI_Request req;

    if (m->dead)
        return FT_ERR_ABORTED;
    if (count > (size_t)INT32_MAX)
        return FT_ERR_UNSUPPORTED;
    if (count == 0 || c->size == 1)
        goto scale;
    /* stage through a buffer we own, so an abandoned request never writes
     * into the caller's memory after we return.  In place, on purpose: with
     * buf as sendbuf (saving the copy in), libnbc reads sendbuf in later
     * rounds of its schedule, and a request abandoned at its deadline while
     * the peer is alive but slow could read buf after the caller freed it
     * (a large buffer is unmapped by free: a crash caused by a peer).  The
     * copy costs ~0.1 ms per MiB, small next to the collective itself. */
    if (m->stage_len < bytes) {
        void *p = realloc(m->stage, bytes);
        if (p == NULL) {
            FTI_ERROR("mpi backend: cannot allocate %zu bytes of staging", bytes);
            return FT_ERR_NO_MEMORY;
        }
        m->stage = p;
        m->stage_len = bytes;
    }
    memcpy(m->stage, buf, bytes);
    if (MPI_Iallreduce(MPI_IN_PLACE, m->stage, (int)count, fti_mpi_dtype(dt), fti_mpi_op(op),
                       m->comm, &req) != MPI_SUCCESS) {
        FTI_WARN("mpi backend: MPI_Iallreduce failed");
        m->dead = 1;
        return FT_ERR_MPI;
    }
    int rc = poll_all(&req, 1, deadline_ms);
    if (rc != FT_SUCCESS) {
        FTI_WARN("mpi backend: allreduce of %zu bytes over %d groups %s; abandoning the "
                 "request and the slice communicator",
                 bytes, c->size, rc == FT_ERR_TIMEOUT ? "missed its deadline" : "failed");
        abandoned_requests++;
        abandoned_bytes += m->stage_len;
        m->stage = NULL; /* leaked on purpose: MPI may still write it */
        m->stage_len = 0;
        m->dead = 1;
        return rc;
    }
    memcpy(buf, m->stage, bytes);
scale:
    if (op == FTI_OP_AVG)
        fti_reduce_scale(buf, count, dt, c->size);
    return FT_SUCCESS;
}

static void mpi_destroy(fti_comm_h c)
{
    struct mpi_comm *m = (struct mpi_comm *)c;
    int finalized = 0;
    MPI_Finalized(&finalized);
    /* a dead communicator may hold a pending request: leave it alone rather
     * than call MPI_Comm_free on it */
    if (!m->dead && m->comm != MPI_COMM_NULL && !finalized)
        MPI_Comm_free(&m->comm);
    free(m->stage);
    free(m);
}

int fti_mpi_ctx_create(MPI_Comm world, fti_mpi_ctx_h *ctx_p)
{
    struct fti_mpi_ctx *x = calloc(1, sizeof(*x));
    if (x == NULL)
        return FT_ERR_NO_MEMORY;
    x->hs = x->cg = MPI_COMM_NULL;
    if (MPI_Comm_dup(world, &x->hs) != MPI_SUCCESS || MPI_Comm_dup(world, &x->cg) != MPI_SUCCESS) {
        FTI_ERROR("mpi backend: MPI_Comm_dup of the world failed");
        fti_mpi_ctx_destroy(x);
        return FT_ERR_MPI;
    }
    MPI_Comm_set_errhandler(x->hs, MPI_ERRORS_RETURN);
    MPI_Comm_set_errhandler(x->cg, MPI_ERRORS_RETURN);
    int *ub = NULL, found = 0;
    x->tag_ub = 32767;
    if (MPI_Comm_get_attr(x->cg, MPI_TAG_UB, &ub, &found) == MPI_SUCCESS && found && ub &&
        *ub > x->tag_ub)
        x->tag_ub = *ub;
    *ctx_p = x;
    return FT_SUCCESS;
}

void fti_mpi_ctx_destroy(fti_mpi_ctx_h x)
{
    if (x == NULL)
        return;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
        if (x->hs != MPI_COMM_NULL)
            MPI_Comm_free(&x->hs);
        if (x->cg != MPI_COMM_NULL)
            MPI_Comm_free(&x->cg);
    }
    free(x);
}

/* The tag of quorum quorum_id (>= 0): 1 + quorum_id mod tag_ub, in
 * [1, tag_ub] (tag_ub = MPI_TAG_UB, at least 32767).  Quorum ids of the
 * lighthouse start at the wall clock in ms, so this keeps consecutive
 * quorums apart with any tag_ub. */
static int fti_mpi_quorum_tag(int64_t quorum_id, int tag_ub)
{
    if (tag_ub < 1)
        tag_ub = 32767;
    if (quorum_id < 0)
        quorum_id = -(quorum_id + 1);
    return 1 + (int)(quorum_id % tag_ub);
}

/* Every member sends a token to every other member and waits for theirs
 * before the deadline.  On a timeout the receives are cancelled and, with
 * the sends, left to MPI; their buffers are kept alive and counted. */
static int token_exchange(struct fti_mpi_ctx *x, const int *ranks, int n, int index, int tag,
                          int64_t deadline_ms)
{
    static const int token = 1; /* sends read it; it never goes away */
    int peers = n - 1, nreq = 0;
    MPI_Request *reqs = malloc((size_t)(2 * peers) * sizeof(*reqs));
    int *got = malloc((size_t)peers * sizeof(*got));
    if (reqs == NULL || got == NULL) {
        free(reqs);
        free(got);
        return FT_ERR_NO_MEMORY;
    }
    int rc = FT_SUCCESS;
    for (int i = 0, k = 0; i < n; i++) {
        if (i == index)
            continue;
        /* receives at even indices, sends at odd ones */
        if (MPI_Irecv(&got[k], 1, MPI_INT, ranks[i], tag, x->hs, &reqs[nreq]) != MPI_SUCCESS) {
            rc = FT_ERR_MPI;
            break;
        }
        nreq++;
        if (MPI_Isend(&token, 1, MPI_INT, ranks[i], tag, x->hs, &reqs[nreq]) != MPI_SUCCESS) {
            rc = FT_ERR_MPI;
            break;
        }
        nreq++;
        k++;
    }
    if (rc == FT_ERR_MPI)
        FTI_ERROR("mpi backend: posting the token exchange failed");
    else
        rc = poll_all(reqs, nreq, deadline_ms);
    if (rc != FT_SUCCESS) {
        int left = 0;
        for (int i = 0; i < nreq; i++) {
            int done = 0;
            if (MPI_Test(&reqs[i], &done, MPI_STATUS_IGNORE) == MPI_SUCCESS && done)
                continue;
            if (i % 2 == 0)
                (void)MPI_Cancel(&reqs[i]);
            (void)MPI_Request_free(&reqs[i]);
            left++;
        }
        if (left > 0) {
            abandoned_requests += (uint64_t)left;
            abandoned_bytes += (uint64_t)peers * sizeof(*got);
            got = NULL; /* leaked on purpose: a late token may still land in it */
        }
    }
    free(got);
    free(reqs);
    return rc;
}

int fti_mpi_slice_create(fti_mpi_ctx_h x, const int *world_ranks, int n, int index,
                         int64_t quorum_id, int64_t deadline_ms, fti_comm_h *comm_p)
{
    MPI_Group wg, sg;
    MPI_Comm comm = MPI_COMM_NULL;
    struct mpi_comm *m;

    if (x == NULL || world_ranks == NULL || n <= 0 || index < 0 || index >= n)
        return FT_ERR_ARG;
    m = calloc(1, sizeof(*m));
    if (m == NULL)
        return FT_ERR_NO_MEMORY;
    if (n > 1) {
        int tag = fti_mpi_quorum_tag(quorum_id, x->tag_ub);
        int64_t t0 = fti_now_ms();
        int rc = token_exchange(x, world_ranks, n, index, tag, deadline_ms);
        if (rc != FT_SUCCESS) {
            FTI_WARN("mpi backend: slice of quorum %lld: %s waiting for the %d members' tokens",
                     (long long)quorum_id, FT_Error_string(rc), n);
            free(m);
            return rc;
        }
        if (MPI_Comm_group(x->cg, &wg) != MPI_SUCCESS) {
            free(m);
            return FT_ERR_MPI;
        }
        rc = MPI_Group_incl(wg, n, world_ranks, &sg);
        MPI_Group_free(&wg);
        if (rc != MPI_SUCCESS) {
            free(m);
            return FT_ERR_MPI;
        }
        rc = MPI_Comm_create_group(x->cg, sg, tag, &comm);
        MPI_Group_free(&sg);
        if (rc != MPI_SUCCESS || comm == MPI_COMM_NULL) {
            FTI_WARN("mpi backend: MPI_Comm_create_group over %d ranks failed", n);
            free(m);
            return FT_ERR_MPI;
        }
        MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
        FTI_DEBUG("mpi backend: slice of quorum %lld over %d ranks (tag %d) in %lld ms",
                  (long long)quorum_id, n, tag, (long long)(fti_now_ms() - t0));
    }
    m->base.ops = &fti_backend_mpi;
    m->base.rank = index;
    m->base.size = n;
    m->comm = comm;
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
    .destroy = mpi_destroy,
};
