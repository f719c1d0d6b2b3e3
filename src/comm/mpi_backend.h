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
 * Threads: the application thread (the FT_ calls) only.
 */
#ifndef FTI_MPI_BACKEND_H
#define FTI_MPI_BACKEND_H

#include <mpi.h>
#include <stdint.h>

#include "comm.h"

/* The communicator every slice's messages travel on: a duplicate of
 * `world`.  Blocking collective over world: call it in FT_Init on every
 * world rank (the lighthouse rank too).  Release with
 * fti_mpi_ctx_destroy. */
typedef struct fti_mpi_ctx *fti_mpi_ctx_h;
int fti_mpi_ctx_create(MPI_Comm world, fti_mpi_ctx_h *ctx_p);
/* Frees the duplicate (a local operation in MPI); NULL-safe. */
void fti_mpi_ctx_destroy(fti_mpi_ctx_h ctx);

/* Builds the slice over world_ranks[0..n-1] (the create of fti_backend_mpi,
 * comm.h; this rank is world_ranks[index]) of quorum quorum_id: a local
 * operation, no message, no wait (deadline_ms is unused).  Release with
 * fti_comm_destroy (no MPI call). */
int fti_mpi_slice_create(fti_mpi_ctx_h ctx, const int *world_ranks, int n, int index,
                         int64_t quorum_id, int64_t deadline_ms, fti_comm_h *comm_p);

/* Requests abandoned at a deadline since the start (and bytes kept alive). */
void fti_mpi_abandoned(uint64_t *requests_p, uint64_t *bytes_p);

#endif
