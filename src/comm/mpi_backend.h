/*
 * comm/mpi_backend.h - the `mpi` data plane of mode B and the drop-in
 * (DESIGN section 5): slices as lists of world ranks over one duplicate of
 * the world made in FT_Init, non-blocking point-to-point rounds or the
 * ring polled against the deadline, and the native path (MPI_Iallreduce or
 * the pipelined ring of mpi_ring.c on the communicator of a rank's initial
 * slice, built in FT_Init).  No MPI call here waits for another rank; no
 * communicator is made after FT_Init.  A request that misses its deadline
 * is abandoned (its buffers stay MPI's, counted in fti_mpi_abandoned) and
 * the slice, or the native communicator, is never used again.  After an
 * abandoned request MPI may still READ the caller's input; it never
 * writes it.  Every member ends with the same bits.
 *
 * Threads: the application thread (the FT_ calls) only.
 */
#ifndef FTI_MPI_BACKEND_H
#define FTI_MPI_BACKEND_H

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>

#include "comm/comm.h"

/* The communicator every slice's messages travel on: a duplicate of
 * `world`.  Blocking collective over world: call it in FT_Init on every
 * world rank (the lighthouse rank too).  Release with
 * fti_mpi_ctx_destroy. */
typedef struct fti_mpi_ctx *fti_mpi_ctx_h;
int fti_mpi_ctx_create(MPI_Comm world, fti_mpi_ctx_h *ctx_p);
/* FTMPI_MODEB_ZERO_COPY: on the native path, a buffer of ftmpi_mem_alloc
 * (fti_mem_usable) is MPI_Iallreduce's receive buffer itself, or the
 * ring's all-gather lands in it (fti_mpi_ring.direct): no stage copy; if
 * the reduction is abandoned its region is given up (fti_mem_give_up,
 * baby.h).  Off by default. */
void fti_mpi_ctx_set_zero_copy(fti_mpi_ctx_h x, bool on);
/* Frees the duplicate (a local operation in MPI); NULL-safe. */
void fti_mpi_ctx_destroy(fti_mpi_ctx_h ctx);

/* Builds the slice over world_ranks[0..n-1] (the create of fti_backend_mpi,
 * comm.h; this rank is world_ranks[index]) of quorum quorum_id: a local
 * operation, no message, no wait (deadline_ms is unused).  Release with
 * fti_comm_destroy (no MPI call). */
int fti_mpi_slice_create(fti_mpi_ctx_h ctx, const int *world_ranks, int n, int index,
                         int64_t quorum_id, int64_t deadline_ms, fti_comm_h *comm_p);

/* Registers comm, made collectively in FT_Init while every rank was alive,
 * over world_ranks[0..n-1] (this rank among them, in any order): slices
 * over exactly that set reduce natively on it (above).  The ctx takes comm
 * over (fti_mpi_ctx_destroy frees it, unless a request was abandoned on
 * it).  One per ctx: FT_ERR_STATE for a second. */
int fti_mpi_ctx_add_fast(fti_mpi_ctx_h ctx, MPI_Comm comm, const int *world_ranks, int n);

/* Allreduces since the start that took the native path and the
 * point-to-point one. */
void fti_mpi_paths(uint64_t *native_p, uint64_t *p2p_p);

/* Requests abandoned at a deadline since the start (and bytes kept alive). */
void fti_mpi_abandoned(uint64_t *requests_p, uint64_t *bytes_p);

/* testall (MPI_Testall, or PMPI_Testall in the drop-in) of reqs[0..n-1],
 * statuses ignored; *done as MPI sets it.  MPICH declares MPI_Testall's
 * statuses as an array, and GCC 12 then reads the MPI_STATUSES_IGNORE
 * sentinel as a 0-byte buffer (-Wstringop-overflow): a false warning,
 * silenced here only. */
typedef int (*fti_testall_fn)(int, MPI_Request *, int *, MPI_Status *);
static inline int fti_mpi_testall(fti_testall_fn testall, int n, MPI_Request *reqs, int *done)
{
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overflow"
#endif
    return testall(n, reqs, done, MPI_STATUSES_IGNORE);
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
}

/* Polls reqs[0..n-1] (MPI_Testall) until all complete (FT_SUCCESS), MPI
 * reports an error (FT_ERR_PROC_FAILED) or deadline_ms passes
 * (FT_ERR_TIMEOUT): spinning, with sched_yield between tries once
 * quiet_tries have failed, then short naps after 50 ms (see mpi.c).  Also
 * the drop-in's failure-free path (mpi_shim/fast.c) waits with it. */
int fti_mpi_poll(MPI_Request *reqs, int n, int64_t deadline_ms, unsigned quiet_tries);

/* The largest tag comm allows (MPI_TAG_UB, at least 32767). */
int fti_mpi_tag_ub(MPI_Comm comm);

/* The pipelined ring allreduce of src into buf on comm (mpi_ring.c), the
 * native path's algorithm for large operations (mpi.c: when it is used).
 * Receives land in stage (fti_mpi_ring_stage_bytes of the operation's
 * bytes), never in the caller's memory unless a->direct (the all-gather's
 * then land in buf); MPI reads src and buf.  Tags
 * *tag_next + 0 .. + (a window per call) modulo tag_ub, plus one; *tag_next
 * moves past them.  Each element is reduced at one rank, in ring order,
 * and copied to the others: the same bits on every member.  On failure
 * (FT_ERR_TIMEOUT at deadline_ms, FT_ERR_PROC_FAILED, FT_ERR_MPI) the
 * requests still active are cancelled (receives) or freed, *left_p says
 * how many: the stage (and src, buf for reading) are then MPI's. */
struct fti_mpi_ring {
    MPI_Comm comm;
    int tag_ub;
    const void *src;
    void *buf; /* may be src (in place) */
    size_t count;
    enum fti_dtype dt;
    enum fti_op op;
    MPI_Datatype mdt;
    size_t chunk_bytes; /* pipeline chunk */
    void *stage;
    /* zero-copy (FTMPI_MODEB_ZERO_COPY): the all-gather's chunks land in
     * buf itself, not in the stage; on failure buf is then MPI's too */
    bool direct;
    /* NULL: each wait is fti_mpi_poll against deadline_ms; otherwise this
     * waits for n requests instead (FT_SUCCESS, or an FT_ error that ends
     * the ring as a missed deadline does; deadline_ms is then unused) */
    int (*wait)(MPI_Request *reqs, int n);
    /* windowed (not with direct): every chunk lands in a stage of one
     * segment, fti_mpi_ring_window_bytes (mpi_ring.c's top) */
    bool windowed;
};
size_t fti_mpi_ring_window_bytes(int n, size_t count, size_t esize);
size_t fti_mpi_ring_stage_bytes(int n, size_t bytes, bool direct);
int fti_mpi_ring_allreduce(const struct fti_mpi_ring *a, uint64_t *tag_next, int64_t deadline_ms,
                           unsigned *left_p);

#endif
