/*
 * loop.c - the `loop` backend, compiled into tests only
 * (FTI_COMM_TEST_BACKENDS): a slice of one group, where every reduction is
 * the data itself.  It shows what a backend is: one table entry in comm.h
 * and this file.
 */
#include "comm/comm.h"

#include <stdlib.h>

#include "ftmpi_errors.h"

static int loop_create(const fti_comm_rendezvous_t *r, int64_t deadline_ms, fti_comm_h *comm_p)
{
    (void)deadline_ms;
    if (r->size != 1 || r->replica_rank != 0)
        return FT_ERR_UNSUPPORTED;
    struct fti_comm *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return FT_ERR_NO_MEMORY;
    c->ops = &fti_backend_loop;
    c->rank = 0;
    c->size = 1;
    *comm_p = c;
    return FT_SUCCESS;
}

static int loop_allreduce(fti_comm_h comm, void *buf, size_t count, enum fti_dtype dt,
                          enum fti_op op, int64_t deadline_ms)
{
    (void)comm;
    (void)buf;
    (void)count;
    (void)deadline_ms;
    return fti_reduce_supported(dt, op) ? FT_SUCCESS : FT_ERR_UNSUPPORTED;
}

static void loop_destroy(fti_comm_h comm)
{
    free(comm);
}

const struct fti_comm_backend fti_backend_loop = {
    .name = "loop",
    .needs = 0,
    .create = loop_create,
    .allreduce = loop_allreduce,
    .destroy = loop_destroy,
};
