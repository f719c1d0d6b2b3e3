/* mpi.c - the `mpi` data plane: slices built with MPI_Comm_create_group,
 * non-blocking collectives polled against a deadline (see mpi_backend.h). */
#include "mpi_backend.h"

#include <stdlib.h>
#include <string.h>

#include "ftmpi.h"
#include "log.h"
#include "util.h"

struct mpi_comm {
    struct fti_comm base;
    MPI_Comm comm;
    int dead;        /* a request was abandoned: never use comm again */
    void *stage;     /* staging buffer of the current request */
    size_t stage_len;
};

/* abandoned staging buffers: kept alive for the life of the process, as MPI
 * may still write into them */
static uint64_t abandoned_requests, abandoned_bytes;

void fti_mpi_abandoned(uint64_t *requests_p, uint64_t *bytes_p)
{
    *requests_p = abandoned_requests;
    *bytes_p = abandoned_bytes;
}

MPI_Datatype fti_mpi_dtype(enum fti_dtype dt)
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

MPI_Op fti_mpi_op(enum fti_op op)
{
    switch (op) {
    case FTI_OP_SUM: case FTI_OP_AVG: return MPI_SUM;
    case FTI_OP_PROD: return MPI_PROD;
    case FTI_OP_MAX: return MPI_MAX;
    case FTI_OP_MIN: return MPI_MIN;
    default: return MPI_OP_NULL;
    }
}

static int mpi_allreduce(fti_comm_h c, void *buf, size_t count, enum fti_dtype dt,
                         enum fti_op op, int64_t deadline_ms)
{
    struct mpi_comm *m = (struct mpi_comm *)c;
    size_t bytes = count * fti_dtype_size(dt);
    MPI_Request req;
    int done = 0;

    if (m->dead)
        return FT_ERR_ABORTED;
    if (count > (size_t)INT32_MAX)
        return FT_ERR_UNSUPPORTED;
    if (count == 0 || c->size == 1)
        goto scale;
    /* stage through a buffer we own, so an abandoned request never writes
     * into the caller's memory after we return */
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
    for (unsigned spin = 0;; spin++) {
        if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            FTI_WARN("mpi backend: MPI_Test failed");
            m->dead = 1;
            return FT_ERR_PROC_FAILED;
        }
        if (done)
            break;
        if ((spin & 63) == 0 && fti_now_ms() >= deadline_ms) {
            FTI_WARN("mpi backend: allreduce of %zu bytes missed its deadline; abandoning the "
                     "request and the slice communicator", bytes);
            abandoned_requests++;
            abandoned_bytes += m->stage_len;
            m->stage = NULL; /* leaked on purpose: MPI may still write it */
            m->stage_len = 0;
            m->dead = 1;
            return FT_ERR_TIMEOUT;
        }
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
    /* a dead communicator may hold a pending request: leave it alone rather
     * than call MPI_Comm_free on it */
    if (!m->dead && m->comm != MPI_COMM_NULL)
        MPI_Comm_free(&m->comm);
    free(m->stage);
    free(m);
}

static const struct fti_comm_ops mpi_ops = {"mpi", mpi_allreduce, mpi_destroy};

int fti_mpi_slice_create(MPI_Comm world, const int *world_ranks, int n, int index,
                         int64_t quorum_id, fti_comm_h *comm_p)
{
    MPI_Group wg, sg;
    MPI_Comm comm = MPI_COMM_NULL;
    struct mpi_comm *m;
    int tag = (int)(quorum_id % 30000) + 1; /* MPI guarantees tags up to 32767 */

    if (n <= 0 || index < 0 || index >= n)
        return FT_ERR_ARG;
    m = calloc(1, sizeof(*m));
    if (m == NULL)
        return FT_ERR_NO_MEMORY;
    if (n > 1) {
        if (MPI_Comm_group(world, &wg) != MPI_SUCCESS) {
            free(m);
            return FT_ERR_MPI;
        }
        int rc = MPI_Group_incl(wg, n, world_ranks, &sg);
        MPI_Group_free(&wg);
        if (rc != MPI_SUCCESS) {
            free(m);
            return FT_ERR_MPI;
        }
        rc = MPI_Comm_create_group(world, sg, tag, &comm);
        MPI_Group_free(&sg);
        if (rc != MPI_SUCCESS || comm == MPI_COMM_NULL) {
            FTI_WARN("mpi backend: MPI_Comm_create_group over %d ranks failed", n);
            free(m);
            return FT_ERR_MPI;
        }
        MPI_Comm_set_errhandler(comm, MPI_ERRORS_RETURN);
    }
    m->base.ops = &mpi_ops;
    m->base.rank = index;
    m->base.size = n;
    m->comm = comm;
    *comm_p = &m->base;
    return FT_SUCCESS;
}
