/*
 * fast.c - libftmpi_pmpi's failure-free path (DESIGN section 10; see
 * shim.h and allreduce.c): each protected collective runs on a duplicate
 * of the world made in MPI_Init (every rank alive then), errors returned.
 *
 * Two forms.  Under abort the blocking MPI call itself (MPI_Allreduce,
 * MPI_Barrier ...): MPI's own algorithm, so the bits and the cost are
 * native; if a rank is lost meanwhile, the watchdog ends the job as soon
 * as it knows (allreduce.c marks the call FTI_CALL_LOSS_ENDS; watch.c),
 * which is what abort does anyway.  Under return and continue the call must be left when a
 * rank is lost, so it runs as its non-blocking form (MPI_Iallreduce ...)
 * polled until it completes or the detector knows a rank lost; such a
 * call abandons its request: the request is neither waited for nor freed
 * (Open MPI 4.1's libnbc refuses MPI_Request_free on an active collective
 * request and raises the error on MPI_COMM_WORLD, fatal by default), so
 * MPI keeps it and may still read the call's input and write its output
 * buffer.  The output buffer is the caller's problem (allreduce.c leaks
 * its own, counted here); from then on the fast communicator is closed
 * for good and every later call takes the fault-tolerant path.
 *
 * Polling: FAST_QUIET_TRIES tests with no clock read and no yield (a
 * small call is done by then, and Open MPI's own progress already yields
 * when the node is oversubscribed, mpi_yield_when_idle; a sched_yield of
 * ours on top of it made an 8-byte call about 1.2-1.8x slower in a probe
 * on this VM, and with 64 tries a 2-4 KiB call on 2 ranks at load 15-25
 * yielded and took 150-300x native), then the `mpi` backend's
 * fti_mpi_poll (src/comm/mpi.c): sched_yield between tries, then short
 * naps, so that a rank waiting for a dead peer leaves the cores to the
 * living.
 */
#define _POSIX_C_SOURCE 200809L
#include "mpi_shim/shim.h"

#include "ftmpi_errors.h"
#include "base/log.h"
#include "comm/mpi_backend.h"
#include "base/util.h"

/* tries before the first sched_yield of ours (see the top) */
#define FAST_QUIET_TRIES 1024u
/* how often a call waiting for its request looks at the detector */
#define FAST_SLICE_MS 50

static struct {
    MPI_Comm comm;              /* MPI_COMM_NULL: never made, or closed */
    bool closed;                /* a request was abandoned: never used again */
    uint64_t calls;             /* completed on the fast path */
    uint64_t abandoned;         /* requests left to MPI */
    uint64_t abandoned_bytes;   /* output buffers left with them */
} fast = {MPI_COMM_NULL, false, 0, 0, 0};

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
static int run_blocking(enum fti_shim_coll c, const struct fti_shim_args *a)
{
    int rc = issue(c, a, NULL);
    if (rc == MPI_SUCCESS) {
        fast.calls++;
        return FT_SUCCESS;
    }
    FTI_WARN("libftmpi_pmpi: a collective on the failure-free path got MPI error %d%s", rc,
             fti_shim_watch_n_lost() > 0 ? " after a rank was lost" : "");
    fast.closed = true;
    return FT_ERR_PROC_FAILED;
}

int fti_shim_fast_run(enum fti_shim_coll c, const struct fti_shim_args *a, bool blocking)
{
    if (blocking)
        return run_blocking(c, a);
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
    /* a small call is done within a few tries: no clock read for them */
    for (unsigned i = 0; i < FAST_QUIET_TRIES; i++) {
        int done = 0;
        if (PMPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            rc = FT_ERR_PROC_FAILED;
            break;
        }
        if (done) {
            fast.calls++;
            return FT_SUCCESS;
        }
    }
    /* no deadline: a rank computing long before its call is no failure;
     * the watchdog's detector says when a rank is lost (watch.c) */
    if (rc == MPI_SUCCESS) {
        do {
            rc = fti_mpi_poll(&req, 1, fti_now_ms() + FAST_SLICE_MS, 0);
        } while (rc == FT_ERR_TIMEOUT && fti_shim_watch_n_lost() == 0);
    }
    if (rc == FT_ERR_TIMEOUT)
        rc = FT_ERR_PROC_FAILED;
    if (rc == FT_SUCCESS) {
        fast.calls++;
        return FT_SUCCESS;
    }
    FTI_WARN("libftmpi_pmpi: a collective on the failure-free path %s; its request is left to "
             "MPI and every later call takes the fault-tolerant path",
             fti_shim_watch_n_lost() > 0 ? "lost a rank" : "got an error");
    fast.closed = true;
    fast.abandoned++;
    if (c == FTI_COLL_ALLREDUCE)
        fast.abandoned_bytes += a->out_bytes;
    return rc;
}

void fti_shim_fast_counts(uint64_t *calls_p, uint64_t *abandoned_p, uint64_t *bytes_p)
{
    *calls_p = fast.calls;
    *abandoned_p = fast.abandoned;
    *bytes_p = fast.abandoned_bytes;
}

void fti_shim_fast_stop(void)
{
    /* after an abandoned request the communicator stays: MPI holds it */
    if (fast.comm != MPI_COMM_NULL && !fast.closed)
        PMPI_Comm_free(&fast.comm);
    fast.comm = MPI_COMM_NULL;
}
