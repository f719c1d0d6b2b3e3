/*
 * collectives.c - MPI_Bcast, MPI_Reduce and MPI_Allgather under
 * libftmpi_pmpi (DESIGN section 10; issue 28 item 3).  On a communicator
 * spanning the world (comms.c) each runs on the fast communicator
 * (fti_shim_fast_only, allreduce.c; fast.c): under abort as the blocking
 * call itself (native bits; the watchdog ends the job if a rank is lost),
 * otherwise as its non-blocking form polled until it completes or a rank
 * is known lost, so that a lost rank makes the call fail instead of
 * hang.  None is redone over the survivors: after a loss, return gives
 * the error (every later call of these too), abort and continue end the
 * job.  A communicator with the
 * world's ranks in another order (a split with another key) translates
 * the root to its world rank; MPI_Allgather on one (its blocks are in the
 * communicator's order), and any call on another communicator, goes
 * straight to MPI, watched (watch.h).  MPI_Barrier is in allreduce.c.
 */
#include "mpi_shim/shim.h"

/* The root's world rank (comm spans the world, in another order). */
static int world_root(MPI_Comm comm, int root, int order)
{
    if (order == FTI_WORLD_SAME_ORDER)
        return root;
    MPI_Group g = MPI_GROUP_NULL, wg = MPI_GROUP_NULL;
    int wr = MPI_UNDEFINED;
    if (PMPI_Comm_group(comm, &g) == MPI_SUCCESS &&
        PMPI_Comm_group(MPI_COMM_WORLD, &wg) == MPI_SUCCESS)
        PMPI_Group_translate_ranks(g, 1, &root, wg, &wr);
    if (g != MPI_GROUP_NULL)
        PMPI_Group_free(&g);
    if (wg != MPI_GROUP_NULL)
        PMPI_Group_free(&wg);
    return wr;
}

int fti_shim_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm)
{
    int order = fti_shim_world_order(comm);
    int wr = order == FTI_WORLD_NOT ? MPI_UNDEFINED : world_root(comm, root, order);
    if (wr == MPI_UNDEFINED || wr < 0) {
        fti_shim_note_passed("MPI_Bcast", comm);
        return PMPI_Bcast(buffer, count, datatype, root, comm);
    }
    struct fti_shim_args a = {.recvbuf = buffer, .count = count, .datatype = datatype,
                              .root = wr};
    return fti_shim_fast_only("MPI_Bcast", comm, FTI_COLL_BCAST, &a);
}

static bool commutative(MPI_Op op)
{
    int c = 0;
    return PMPI_Op_commutative(op, &c) == MPI_SUCCESS && c;
}

int fti_shim_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                    MPI_Op op, int root, MPI_Comm comm)
{
    int order = fti_shim_world_order(comm);
    int wr = order == FTI_WORLD_NOT || (order == FTI_WORLD_REORDERED && !commutative(op))
                 ? MPI_UNDEFINED
                 : world_root(comm, root, order);
    if (wr == MPI_UNDEFINED || wr < 0) {
        fti_shim_note_passed("MPI_Reduce", comm);
        return PMPI_Reduce(sendbuf, recvbuf, count, datatype, op, root, comm);
    }
    struct fti_shim_args a = {.recvbuf = recvbuf, .sendbuf = sendbuf, .count = count,
                              .datatype = datatype, .op = op, .root = wr};
    return fti_shim_fast_only("MPI_Reduce", comm, FTI_COLL_REDUCE, &a);
}

int fti_shim_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm)
{
    if (fti_shim_world_order(comm) != FTI_WORLD_SAME_ORDER) {
        fti_shim_note_passed("MPI_Allgather", comm);
        return PMPI_Allgather(sendbuf, sendcount, sendtype, recvbuf, recvcount, recvtype, comm);
    }
    struct fti_shim_args a = {.recvbuf = recvbuf, .sendbuf = sendbuf, .sendcount = sendcount,
                              .sendtype = sendtype, .recvcount = recvcount, .recvtype = recvtype};
    return fti_shim_fast_only("MPI_Allgather", comm, FTI_COLL_ALLGATHER, &a);
}
