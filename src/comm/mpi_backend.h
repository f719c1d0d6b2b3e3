/*
 * mpi_backend.h - the `mpi` data plane (DESIGN section 5, mode B).
 *
 * A slice is no MPI communicator: it is the list of the members' world
 * ranks, and its allreduce is made of MPI_Isend/MPI_Irecv on one duplicate
 * of the world made in FT_Init (fti_mpi_ctx_create), polled against the
 * deadline.  So building a slice needs no other rank and cannot block
 * (issue 10, item 3: MPI_Comm_create_group, which blocks until every
 * member enters it, hung a member that arrived after the others had given
 * up), and no MPI call of this backend ever waits for another rank.
 * Small operations (bytes x (members - 1) <= 64 KiB) send each member's
 * buffer to every other and reduce in replica-rank order; larger ones run
 * the ring of ring.h, one whole segment per round.  Either way every
 * member ends with the same bits.
 *
 * Matching: the members number their operations alike (they make the same
 * FT_Allreduce calls); the tag mixes the quorum id and that number, and
 * every payload is preceded by a header (quorum id, operation, round) that
 * the receiver checks, so a message left over from an abandoned operation
 * fails a later one instead of being reduced into it.  A request that
 * misses its deadline is abandoned (receives cancelled, requests freed,
 * the slice's buffers left to MPI and counted: fti_mpi_abandoned, public as
 * ftmpi_abandoned_requests) and the slice is never used again.
 *
 * The native path (issue 15, item 5): FT_Init in mode B also builds,
 * collectively while every rank is alive, the communicator of this rank's
 * initial slice (fti_mpi_ctx_add_fast).  On a slice whose member SET is
 * that communicator's, an operation of more than 4 KiB times (members - 1)
 * is one MPI_Iallreduce on it (smaller ones keep the one round of
 * messages above: half the latency), polled against the deadline like the
 * messages, into a stage of the backend's, copied into the caller's buffer
 * on success (one copy; MPI only reads the caller's input); with
 * FTMPI_MODEB_ZERO_COPY=1 a buffer of ftmpi_mem_alloc is the receive
 * buffer itself (of MPI_Iallreduce, or of the ring's all-gather), given up
 * if the reduction is abandoned (fti_mpi_ctx_set_zero_copy).  Large ones
 * (>= 64 KiB below 4 members, >= 2 MiB per member at 4 and more) run the
 * pipelined ring of mpi_ring.c on it instead (fti_mpi_ring_allreduce):
 * receives land in the stage too, the CPU reduces and copies into the
 * caller's buffer while the call lasts; MPI reads src and buf.  The
 * communicator serves the first quorum that uses it and no other: a quorum
 * id changes with the same members only after a failed commit, which every
 * member learns from the same quorum, so all members of a slice agree on
 * the path without a message.  A missed
 * deadline or an error abandons the request (never freed: it and the stage
 * stay MPI's, counted in fti_mpi_abandoned) and retires the communicator
 * for good; later slices take the point-to-point path.  No communicator is
 * ever made after FT_Init (a dead member would hang its creation).
 * Same bits on every member: Open MPI's MPI_Iallreduce (coll/libnbc, 4.1)
 * reduces each element once, at one rank, and copies the result to the
 * others (binomial reduce + broadcast under 64 KiB or 4 ranks,
 * reduce-scatter + allgather or ring above), so every member gets the
 * same bits; the libnbc setting iallreduce_algorithm=4 (recursive
 * doubling) would reduce on every rank, bitwise alike only for
 * commutative exact ops -- do not set it.
 * After an abandoned request MPI may still READ the caller's input (a
 * peer that was slow, not dead, may still pull it; after the ring, also
 * the result's segment in buf, which it sends from); it never writes it.
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

/* Polls reqs[0..n-1] (MPI_Testall) until all complete (FT_SUCCESS), MPI
 * reports an error (FT_ERR_PROC_FAILED) or deadline_ms passes
 * (FT_ERR_TIMEOUT): spinning, with sched_yield between tries once
 * quiet_tries have failed, then short naps after 50 ms (see mpi.c).  Also
 * the drop-in's failure-free path (mpi_shim/fast.c) waits with it. */
int fti_mpi_poll(MPI_Request *reqs, int n, int64_t deadline_ms, unsigned quiet_tries);

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
};
size_t fti_mpi_ring_stage_bytes(int n, size_t bytes, bool direct);
int fti_mpi_ring_allreduce(const struct fti_mpi_ring *a, uint64_t *tag_next, int64_t deadline_ms,
                           unsigned *left_p);

#endif
