/*
 * fast.c - the drop-in's failure-free path (see shim.h and allreduce.c):
 * each protected collective on a duplicate of the world made in MPI_Init;
 * under abort the blocking MPI call, under return and continue its
 * non-blocking form polled against the detector, the small allreduces as
 * our own recursive doubling (p2p_allreduce), the larger ones as the held
 * allreduce.  The design, the measurements behind it and the polling:
 * DESIGN section 10.3.
 */
#define _POSIX_C_SOURCE 200809L
#include "mpi_shim/shim.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi_config.h" /* FTMPI_TEST_HOOKS */
#include "ftmpi_errors.h"
#include "base/log.h"
#include "comm/mpi_backend.h"
#include "base/util.h"

/* tries before the first sched_yield of ours (see the top) */
#define FAST_QUIET_TRIES 1024u
/* how often a call waiting for its request looks at the detector */
#define FAST_SLICE_MS 50
/* its messages' tag on the fast communicator (nothing else sends there
 * but MPI's collectives, which never match a user tag, and the held
 * allreduce's ring, whose tags start at 1: src/comm/mpi_ring.c) */
#define FAST_P2P_TAG 0
/* The held allreduce's ring (windowed: a stage of one segment): its
 * pipeline chunk (2 ranks, vader, paired with native, 4 MiB: 1 MiB chunks
 * 0.93-1.03x native time, 256 KiB 0.95-1.25, 128 KiB 1.07-1.41; not
 * windowed, a stage of the whole buffer: 1.07-1.47), and from how many
 * bytes a segment takes it at 4 ranks and more (below 4 every call above
 * FTI_SHIM_P2P_MAX_BYTES does) */
#define FAST_RING_CHUNK (1024u * 1024u)
#define FAST_RING_MIN_SEG (256u * 1024u)

static struct {
    MPI_Comm comm;              /* MPI_COMM_NULL: never made, or closed */
    bool closed;                /* a request was abandoned: never used again */
    uint64_t calls;             /* completed on the fast path */
    uint64_t p2p_calls;         /* ... of them point-to-point (p2p_allreduce) */
    uint64_t abandoned;         /* requests left to MPI */
    uint64_t abandoned_bytes;   /* output buffers left with them */
    int rank, size;             /* in comm */
    void *tmp;                  /* the point-to-point allreduce's receive buffer */
    size_t tmp_cap;
    uint64_t held_calls;        /* completed as the held allreduce */
    void *stage;                /* ... its receive buffers (the ring's stage) */
    size_t stage_cap;
    uint64_t ring_tags;         /* ... the ring's next tag window */
    int tag_ub;
    uint64_t die_at;            /* test hook (below): 0, or the held call to die after */
} fast = {MPI_COMM_NULL, false, 0, 0, 0, 0, 0, 0, NULL, 0, 0, NULL, 0, 0, 0, 0};

/* Test hook (configure --enable-test-hooks): FTMPI_TEST_SHIM_HELD_DIE=R:N,
 * world rank R SIGKILLs itself after the ring of its N-th held allreduce,
 * before the zero-byte round: the others then hold the result and see a
 * loss (test_shim_kill). */
static void held_hook_read(void)
{
#ifdef FTMPI_TEST_HOOKS
    const char *v = getenv("FTMPI_TEST_SHIM_HELD_DIE");
    int r = -1;
    unsigned long long n = 0;
    if (v != NULL && sscanf(v, "%d:%llu", &r, &n) == 2 && r == fast.rank && n > 0) {
        fast.die_at = n;
        FTI_WARN("libftmpi_pmpi: FTMPI_TEST_SHIM_HELD_DIE: this rank dies after the ring of "
                 "its held allreduce %llu",
                 n);
    }
#endif
}

int fti_shim_fast_start(void)
{
    if (PMPI_Comm_dup(MPI_COMM_WORLD, &fast.comm) != MPI_SUCCESS) {
        FTI_ERROR("libftmpi_pmpi: MPI_Comm_dup of the world for the failure-free path failed");
        fast.comm = MPI_COMM_NULL;
        return FT_ERR_MPI;
    }
    if (PMPI_Comm_set_errhandler(fast.comm, MPI_ERRORS_RETURN) != MPI_SUCCESS) {
        FTI_ERROR("libftmpi_pmpi: MPI_Comm_set_errhandler on the failure-free path's "
                  "communicator failed");
        PMPI_Comm_free(&fast.comm);
        return FT_ERR_MPI;
    }
    PMPI_Comm_set_name(fast.comm, "libftmpi_pmpi fast path");
    PMPI_Comm_rank(fast.comm, &fast.rank);
    PMPI_Comm_size(fast.comm, &fast.size);
    held_hook_read();
    fast.tag_ub = fti_mpi_tag_ub(fast.comm);
    /* made here, not at the first call: every rank must choose the same
     * algorithm for a call, whatever its memory then */
    if ((fast.tmp = malloc(FTI_SHIM_P2P_MAX_BYTES)) == NULL) {
        FTI_ERROR("libftmpi_pmpi: no memory for the failure-free path (%u bytes)",
                  FTI_SHIM_P2P_MAX_BYTES);
        PMPI_Comm_free(&fast.comm);
        return FT_ERR_NO_MEMORY;
    }
    fast.tmp_cap = FTI_SHIM_P2P_MAX_BYTES;
    return FT_SUCCESS;
}

bool fti_shim_fast_open(void)
{
    return fast.comm != MPI_COMM_NULL && !fast.closed;
}

/* The collective c with a's arguments on the fast communicator: its
 * non-blocking form (req set) or its blocking one (req NULL). */
static int issue(enum fti_shim_coll c, const struct fti_shim_args *a, MPI_Request *req)
{
    MPI_Comm f = fast.comm;
    switch (c) {
    case FTI_COLL_ALLREDUCE:
        return req ? PMPI_Iallreduce(a->sendbuf, a->recvbuf, a->count, a->datatype, a->op, f, req)
                   : PMPI_Allreduce(a->sendbuf, a->recvbuf, a->count, a->datatype, a->op, f);
    case FTI_COLL_BARRIER:
        return req ? PMPI_Ibarrier(f, req) : PMPI_Barrier(f);
    case FTI_COLL_BCAST:
        return req ? PMPI_Ibcast(a->recvbuf, a->count, a->datatype, a->root, f, req)
                   : PMPI_Bcast(a->recvbuf, a->count, a->datatype, a->root, f);
    case FTI_COLL_REDUCE:
        return req ? PMPI_Ireduce(a->sendbuf, a->recvbuf, a->count, a->datatype, a->op, a->root,
                                  f, req)
                   : PMPI_Reduce(a->sendbuf, a->recvbuf, a->count, a->datatype, a->op, a->root,
                                 f);
    case FTI_COLL_ALLGATHER:
        return req ? PMPI_Iallgather(a->sendbuf, a->sendcount, a->sendtype, a->recvbuf,
                                     a->recvcount, a->recvtype, f, req)
                   : PMPI_Allgather(a->sendbuf, a->sendcount, a->sendtype, a->recvbuf,
                                    a->recvcount, a->recvtype, f);
    }
    return MPI_ERR_OTHER;
}

/* The blocking form (abort): MPI's own algorithm, no request to poll; a
 * rank lost meanwhile is the watchdog's to act on (it ends the job).  An error MPI returns
 * (errors return on this communicator) closes the path like a missed
 * request, with nothing left to MPI. */
static int blocking_failed(int rc)
{
    FTI_WARN("libftmpi_pmpi: a collective on the failure-free path got MPI error %d%s", rc,
             fti_shim_watch_n_lost() > 0 ? " after a rank was lost" : "");
    fast.closed = true;
    return FT_ERR_PROC_FAILED;
}

static int run_blocking(enum fti_shim_coll c, const struct fti_shim_args *a)
{
    int rc = issue(c, a, NULL);
    if (rc == MPI_SUCCESS) {
        fast.calls++;
        return FT_SUCCESS;
    }
    return blocking_failed(rc);
}

int fti_shim_fast_allreduce_blocking(const void *sendbuf, void *recvbuf, int count,
                                     MPI_Datatype datatype, MPI_Op op)
{
    int rc = PMPI_Allreduce(sendbuf, recvbuf, count, datatype, op, fast.comm);
    if (rc == MPI_SUCCESS) {
        fast.calls++;
        return FT_SUCCESS;
    }
    return blocking_failed(rc);
}

int fti_shim_fast_barrier_blocking(void)
{
    int rc = PMPI_Barrier(fast.comm);
    if (rc == MPI_SUCCESS) {
        fast.calls++;
        return FT_SUCCESS;
    }
    return blocking_failed(rc);
}

/* Waits for n requests until they complete (FT_SUCCESS), MPI says an
 * error (FT_ERR_PROC_FAILED) or the detector knows a rank lost
 * (FT_ERR_PROC_FAILED). */
static int wait_reqs(MPI_Request *reqs, int n)
{
    /* a small call is done within a few tries: no clock read for them */
    for (unsigned i = 0; i < FAST_QUIET_TRIES; i++) {
        int done = 0;
        int trc = fti_mpi_testall(PMPI_Testall, n, reqs, &done);
        if (trc != MPI_SUCCESS)
            return FT_ERR_PROC_FAILED;
        if (done)
            return FT_SUCCESS;
    }
    /* no deadline: a rank computing long before its call is no failure;
     * the watchdog's detector says when a rank is lost (watch.c) */
    int rc;
    do {
        rc = fti_mpi_poll(reqs, n, fti_now_ms() + FAST_SLICE_MS, 0);
    } while (rc == FT_ERR_TIMEOUT && fti_shim_watch_n_lost() == 0);
    return rc == FT_ERR_TIMEOUT ? FT_ERR_PROC_FAILED : rc;
}

/* Whether a's allreduce takes the point-to-point path; *bytes_p its size. */
static bool p2p_fits(const struct fti_shim_args *a, size_t *bytes_p)
{
    if (!a->p2p_ok || a->count <= 0)
        return false;
    size_t bytes = (size_t)a->count * fti_dtype_size(a->dt);
    if (bytes > FTI_SHIM_P2P_MAX_BYTES)
        return false;
    *bytes_p = bytes;
    return true;
}

/* One exchange with world rank peer: send buf, receive into fast.tmp;
 * then reduce fast.tmp into buf (reduce) or not (the fold's end). */
static int p2p_swap(int peer, void *buf, size_t bytes, const struct fti_shim_args *a,
                    bool send, bool recv, bool reduce)
{
    MPI_Request r[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    int n = 0;
    void *into = reduce ? fast.tmp : buf;
    if (recv && PMPI_Irecv(into, (int)bytes, MPI_BYTE, peer, FAST_P2P_TAG, fast.comm, &r[n++]) !=
                    MPI_SUCCESS)
        return FT_ERR_MPI;
    if (send && PMPI_Isend(buf, (int)bytes, MPI_BYTE, peer, FAST_P2P_TAG, fast.comm, &r[n++]) !=
                    MPI_SUCCESS)
        return FT_ERR_PROC_FAILED; /* a receive may be posted: left to MPI */
    int rc = wait_reqs(r, n);
    if (rc == FT_SUCCESS && recv && reduce) /* the data plane's kernel: no MPI call */
        fti_reduce(buf, fast.tmp, (size_t)a->count, a->dt, a->fop);
    return rc;
}

/* The point-to-point allreduce (see the top): recursive doubling over the
 * largest power of two of ranks; each of the first 2 x rem ranks beyond
 * it pairs up (even sends, odd reduces) before, and gets the result after. */
static int p2p_allreduce(const struct fti_shim_args *a, size_t bytes)
{
    void *buf = a->recvbuf;
    if (a->sendbuf != MPI_IN_PLACE && a->sendbuf != buf)
        memcpy(buf, a->sendbuf, bytes);
    bool reduce = !a->p2p_barrier; /* a barrier's result is its input */
    if (!reduce)
        bytes = 0;
    int rank = fast.rank, pof2 = 1, rc = FT_SUCCESS;
    while (pof2 * 2 <= fast.size)
        pof2 *= 2;
    int rem = fast.size - pof2, vrank;
    if (rank < 2 * rem) {
        bool even = rank % 2 == 0;
        rc = p2p_swap(even ? rank + 1 : rank - 1, buf, bytes, a, even, !even, reduce);
        vrank = even ? -1 : rank / 2;
    } else {
        vrank = rank - rem;
    }
    for (int mask = 1; rc == FT_SUCCESS && vrank >= 0 && mask < pof2; mask <<= 1) {
        int vpeer = vrank ^ mask;
        int peer = vpeer < rem ? vpeer * 2 + 1 : vpeer + rem;
        rc = p2p_swap(peer, buf, bytes, a, true, true, reduce);
    }
    if (rc == FT_SUCCESS && rank < 2 * rem) {
        bool even = rank % 2 == 0;
        rc = p2p_swap(even ? rank + 1 : rank - 1, buf, bytes, a, !even, even, false);
    }
    return rc;
}

/* A failed non-blocking call: its requests (and the receive buffer) are
 * left to MPI, the path is closed for good. */
static int abandon(enum fti_shim_coll c, const struct fti_shim_args *a, int rc, bool p2p)
{
    FTI_WARN("libftmpi_pmpi: a collective on the failure-free path %s; its request is left to "
             "MPI and every later call takes the fault-tolerant path",
             fti_shim_watch_n_lost() > 0 ? "lost a rank" : "got an error");
    fast.closed = true;
    fast.abandoned++;
    if (c == FTI_COLL_ALLREDUCE)
        fast.abandoned_bytes += a->out_bytes;
    if (p2p) { /* MPI may still write it */
        fast.abandoned_bytes += fast.tmp_cap;
        fast.tmp = NULL;
        fast.tmp_cap = 0;
    }
    return rc;
}

int fti_shim_fast_run(enum fti_shim_coll c, const struct fti_shim_args *a, bool blocking)
{
    if (blocking)
        return run_blocking(c, a);
    size_t bytes = 0;
    if (c == FTI_COLL_ALLREDUCE && p2p_fits(a, &bytes)) {
        int rc = p2p_allreduce(a, bytes);
        if (rc == FT_SUCCESS) {
            fast.calls++;
            fast.p2p_calls++;
            return FT_SUCCESS;
        }
        return abandon(c, a, rc, true);
    }
    MPI_Request req = MPI_REQUEST_NULL;
    int rc = issue(c, a, &req);
    if (rc != MPI_SUCCESS) {
        /* nothing started on this rank (bad arguments, as native MPI
         * would have refused them): the others wait as they would under
         * MPI; this rank's later calls take the fault-tolerant path */
        FTI_WARN("libftmpi_pmpi: a collective on the failure-free path did not start (MPI "
                 "error %d)",
                 rc);
        fast.closed = true;
        return FT_ERR_MPI;
    }
    rc = wait_reqs(&req, 1);
    if (rc == FT_SUCCESS) {
        fast.calls++;
        return FT_SUCCESS;
    }
    return abandon(c, a, rc, false);
}

bool fti_shim_fast_held_fits(size_t bytes)
{
    if (bytes <= FTI_SHIM_P2P_MAX_BYTES ||
        fast.size < 2) /* one rank: no ring (its result is a copy of the input) */
        return false;
    return fast.size < 4 || bytes / (size_t)fast.size >= FAST_RING_MIN_SEG;
}

int fti_shim_fast_held(const struct fti_shim_args *a, bool *held_p)
{
    size_t es = fti_dtype_size(a->dt), bytes = (size_t)a->count * es;
    size_t need = fti_mpi_ring_window_bytes(fast.size, (size_t)a->count, es);
    if (fast.stage_cap < need) {
        free(fast.stage); /* no request holds it: a failed call leaks it (below) */
        fast.stage = malloc(need);
        fast.stage_cap = fast.stage != NULL ? need : 0;
        if (fast.stage == NULL) {
            /* as a call MPI refuses: the others wait as they would under MPI */
            FTI_ERROR("libftmpi_pmpi: no memory for a %zu-byte MPI_Allreduce's receive buffers "
                      "(%zu bytes): this rank's later calls take the fault-tolerant path",
                      bytes, need);
            fast.closed = true;
            return FT_ERR_NO_MEMORY;
        }
    }
    struct fti_mpi_ring r = {.comm = fast.comm,
                             .tag_ub = fast.tag_ub,
                             .src = a->sendbuf,
                             .buf = a->recvbuf,
                             .count = (size_t)a->count,
                             .dt = a->dt,
                             .op = a->fop,
                             .mdt = a->datatype,
                             .chunk_bytes = FAST_RING_CHUNK,
                             .stage = fast.stage,
                             .wait = wait_reqs,
                             .windowed = true};
    unsigned left = 0;
    int rc = fti_mpi_ring_allreduce(&r, &fast.ring_tags, 0, &left);
    bool held = rc == FT_SUCCESS;
    if (held && fast.die_at != 0 && fast.held_calls + 1 == fast.die_at)
        raise(SIGKILL); /* the test hook (above) */
    if (held) { /* the zero-byte round: every member holds it once it ends */
        int one = 1;
        struct fti_shim_args ack = {.sendbuf = MPI_IN_PLACE, .recvbuf = &one, .count = 1,
                                    .p2p_barrier = true};
        rc = p2p_allreduce(&ack, 0);
    }
    if (rc == FT_SUCCESS) {
        fast.calls++;
        fast.held_calls++;
        return FT_SUCCESS;
    }
    FTI_WARN("libftmpi_pmpi: a %zu-byte MPI_Allreduce on the failure-free path %s %s; every "
             "later call takes the fault-tolerant path",
             bytes, fti_shim_watch_n_lost() > 0 ? "lost a rank" : "got an error",
             held ? "after this rank held the result" : "before this rank held the result");
    *held_p = held;
    fast.closed = true;
    fast.abandoned++; /* one call, as abandon() counts the point-to-point one */
    fast.abandoned_bytes += a->out_bytes;
    if (left > 0) { /* MPI may still write it */
        fast.abandoned_bytes += fast.stage_cap;
        fast.stage = NULL;
        fast.stage_cap = 0;
    }
    return FT_ERR_PROC_FAILED;
}

uint64_t fti_shim_fast_held_calls(void)
{
    return fast.held_calls;
}

void fti_shim_fast_counts(uint64_t *calls_p, uint64_t *abandoned_p, uint64_t *bytes_p)
{
    *calls_p = fast.calls;
    *abandoned_p = fast.abandoned;
    *bytes_p = fast.abandoned_bytes;
}

uint64_t fti_shim_fast_p2p_calls(void)
{
    return fast.p2p_calls;
}

void fti_shim_fast_stop(void)
{
    /* after an abandoned request the communicator stays: MPI holds it */
    if (fast.comm != MPI_COMM_NULL && !fast.closed) {
        PMPI_Comm_free(&fast.comm);
        free(fast.tmp); /* not MPI's: no request was left */
    }
    free(fast.stage); /* NULL once left to MPI */
    fast.stage = NULL;
    fast.stage_cap = 0;
    fast.tmp = NULL;
    fast.tmp_cap = 0;
    fast.comm = MPI_COMM_NULL;
}
