/*
 * fast.c - libftmpi_pmpi's failure-free path (DESIGN section 10; see
 * shim.h and allreduce.c): one MPI_Iallreduce on a duplicate of the world
 * made in MPI_Init (every rank alive then), errors returned, polled against
 * FTMPI_TIMEOUT_MS.
 *
 * A call that misses its deadline or gets an error abandons its request:
 * the request is neither waited for nor freed (Open MPI 4.1's libnbc
 * refuses MPI_Request_free on an active collective request and raises the
 * error on MPI_COMM_WORLD, fatal by default), so MPI keeps it and may
 * still read the call's input and write its output buffer.  The output
 * buffer is the caller's problem (allreduce.c leaks its own, counted
 * here); from then on the fast communicator is closed for good and every
 * later call takes the fault-tolerant path.
 *
 * Polling: the `mpi` backend's fti_mpi_poll (src/comm/mpi.c): spinning
 * with sched_yield between tries, then short naps, so that a rank waiting
 * for a dead peer leaves the cores to the living.  The first
 * FAST_QUIET_TRIES tries do not yield: a small call is done by then,
 * and Open MPI's own progress already yields when the node is
 * oversubscribed (mpi_yield_when_idle); a sched_yield of ours on top of it
 * made an 8-byte call about 1.2-1.8x slower in a probe on this VM.
 */
#define _POSIX_C_SOURCE 200809L
#include "mpi_shim/shim.h"

#include "ftmpi_errors.h"
#include "base/log.h"
#include "comm/mpi_backend.h"
#include "base/util.h"

/* tries before the first sched_yield of ours (see the top) */
#define FAST_QUIET_TRIES 64u
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

int fti_shim_fast_run(int (*start)(void *ctx, MPI_Comm fast, MPI_Request *req), void *ctx)
{
    MPI_Request req = MPI_REQUEST_NULL;
    int rc = start(ctx, fast.comm, &req);
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
    /* no deadline: a rank computing long before its call is no failure;
     * the watchdog's detector says when a rank is lost (watch.c) */
    do {
        rc = fti_mpi_poll(&req, 1, fti_now_ms() + FAST_SLICE_MS, FAST_QUIET_TRIES);
    } while (rc == FT_ERR_TIMEOUT && fti_shim_watch_n_lost() == 0);
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
    return rc;
}

struct fast_ar {
    const void *sendbuf;
    void *recvbuf;
    int count;
    MPI_Datatype datatype;
    MPI_Op op;
};

static int start_ar(void *ctx, MPI_Comm comm, MPI_Request *req)
{
    struct fast_ar *a = ctx;
    return PMPI_Iallreduce(a->sendbuf, a->recvbuf, a->count, a->datatype, a->op, comm, req);
}

int fti_shim_fast_allreduce(const void *sendbuf, void *recvbuf, int count,
                            MPI_Datatype datatype, MPI_Op op, size_t out_bytes)
{
    struct fast_ar a = {sendbuf, recvbuf, count, datatype, op};
    int rc = fti_shim_fast_run(start_ar, &a);
    if (rc != FT_SUCCESS && rc != FT_ERR_MPI)
        fast.abandoned_bytes += out_bytes;
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
