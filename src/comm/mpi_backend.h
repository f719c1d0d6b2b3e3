/*
 * mpi_backend.h - the `mpi` data plane (DESIGN section 5, mode B).
 *
 * The slice communicator is MPI_Comm_create_group over the quorum members'
 * world ranks with a tag derived from the quorum id.  Collectives are
 * non-blocking and polled against the deadline; a request that misses it is
 * abandoned: its staging buffer is kept alive (never freed while MPI may
 * still write it) and counted, and the communicator is never used again.
 * No blocking MPI collective ever spans groups.
 */
#ifndef FTI_MPI_BACKEND_H
#define FTI_MPI_BACKEND_H

#include <mpi.h>
#include <stdint.h>

#include "comm.h"

/* Builds the slice over world_ranks[0..n-1] (this rank is world_ranks[index]).
 * Collective over exactly those ranks (blocking, as MPI_Comm_create_group
 * is: call it only with ranks the quorum just saw alive).  Release with
 * fti_comm_destroy. */
int fti_mpi_slice_create(MPI_Comm world, const int *world_ranks, int n, int index,
                         int64_t quorum_id, fti_comm_h *comm_p);

/* Requests abandoned at a deadline since the start (and bytes kept alive). */
void fti_mpi_abandoned(uint64_t *requests_p, uint64_t *bytes_p);

/* MPI datatype / op of an internal dtype / op (AVG maps to MPI_SUM). */
MPI_Datatype fti_mpi_dtype(enum fti_dtype dt);
MPI_Op fti_mpi_op(enum fti_op op);

#endif
