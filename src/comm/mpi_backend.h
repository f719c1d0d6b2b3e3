/*
 * mpi_backend.h - the `mpi` data plane (DESIGN section 5, mode B).
 *
 * The slice communicator is MPI_Comm_create_group over the quorum members'
 * world ranks with a tag derived from the quorum id.  Collectives are
 * non-blocking and polled against the deadline; a request that misses it is
 * abandoned: its staging buffer is kept alive (never freed while MPI may
 * still write it) and counted (fti_mpi_abandoned, public as
 * ftmpi_abandoned_requests), and the communicator is never used again.
 * No blocking MPI collective ever spans groups, with one exception that
 * MPI leaves no way around: MPI_Comm_create_group itself blocks.  Before
 * it, the members exchange a token point to point, polled against the
 * deadline, so a member that died before the slice is built makes the
 * others fail with FT_ERR_TIMEOUT instead of hanging; only a member that
 * dies in the few microseconds between that exchange and the creation can
 * still hang it.
 *
 * Threads: the application thread (the FT_ calls) only.
 */
#ifndef FTI_MPI_BACKEND_H
#define FTI_MPI_BACKEND_H

#include <mpi.h>
#include <stdint.h>

#include "comm.h"

/* The communicators the slices are made from: two duplicates of `world`
 * (one for the token exchange, one for MPI_Comm_create_group, so their
 * messages never meet).  Blocking collective over world: call it in
 * FT_Init on every world rank (the lighthouse rank too).  Release with
 * fti_mpi_ctx_destroy. */
typedef struct fti_mpi_ctx *fti_mpi_ctx_h;
int fti_mpi_ctx_create(MPI_Comm world, fti_mpi_ctx_h *ctx_p);
/* Frees the duplicates (a local operation in MPI); NULL-safe. */
void fti_mpi_ctx_destroy(fti_mpi_ctx_h ctx);

/* Builds the slice over world_ranks[0..n-1] (the create of
 * fti_backend_mpi, comm.h) (this rank is
 * world_ranks[index]) before deadline_ms: the token exchange, then
 * MPI_Comm_create_group.  FT_ERR_TIMEOUT when some member did not show up
 * in time.  Release with fti_comm_destroy. */
int fti_mpi_slice_create(fti_mpi_ctx_h ctx, const int *world_ranks, int n, int index,
                         int64_t quorum_id, int64_t deadline_ms, fti_comm_h *comm_p);

/* Requests abandoned at a deadline since the start (and bytes kept alive). */
void fti_mpi_abandoned(uint64_t *requests_p, uint64_t *bytes_p);

#endif
