/*
 * baby_tcp.c - the baby-tcp backend (DESIGN section 5): the tcp ring of
 * comm/tcp.c run in an ftmpi-baby child (baby.h).  Shaped like the tcp
 * backend: a listener (a new child listening), then the ring; the
 * communicator owns the child and kills it on an error or on destroy.
 * The slice of a quorum (fti_baby_slice_create, below): the rendezvous of
 * slice.c (each rank publishes its listener's address in the quorum's
 * store under fti_slice_key and connects to replica rank + 1), with the
 * listener and the ring in a new ftmpi-baby child.
 */
#include "comm/baby.h"
#include "comm/baby_slice.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/sizes.h"
#include "base/util.h"
#include "control/store.h"
#include "base/rpc.h"

struct fti_baby_tcp_listener {
    fti_baby_h runner;
    char addr[FTI_ADDRESS_SIZE];
};

struct baby_comm {
    struct fti_comm base;
    fti_baby_h runner;
    int dead;
};

int fti_baby_tcp_listener_create(const fti_baby_opts_t *opts, const char *bind_host,
                                 int64_t deadline_ms, fti_baby_tcp_listener_h *l_p)
{
    struct fti_baby_tcp_listener *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return FT_ERR_NO_MEMORY;
    int rc = fti_baby_create(opts, &l->runner);
    if (rc == FT_SUCCESS)
        rc = fti_baby_listen(l->runner, bind_host, deadline_ms, l->addr, sizeof(l->addr));
    if (rc != FT_SUCCESS) {
        fti_baby_tcp_listener_destroy(l);
        return rc;
    }
    *l_p = l;
    return FT_SUCCESS;
}

const char *fti_baby_tcp_listener_address(fti_baby_tcp_listener_h l)
{
    return l ? l->addr : "";
}

void fti_baby_tcp_listener_destroy(fti_baby_tcp_listener_h l)
{
    if (l == NULL)
        return;
    if (l->runner)
        fti_baby_kill(l->runner); /* no polite exit: the ring may be half built */
    fti_baby_destroy(l->runner);
    free(l);
}

static int baby_allreduce(fti_comm_h c, void *buf, size_t count, enum fti_dtype dt,
                          enum fti_op op, int64_t deadline_ms)
{
    struct baby_comm *bc = (struct baby_comm *)c;
    if (bc->dead)
        return FT_ERR_ABORTED;
    int rc = fti_baby_allreduce(bc->runner, buf, count, dt, op, deadline_ms);
    if (rc != FT_SUCCESS && rc != FT_ERR_UNSUPPORTED && rc != FT_ERR_ARG)
        bc->dead = 1; /* the child is gone (killed): the ring with it */
    return rc;
}

static void baby_destroy(fti_comm_h c)
{
    struct baby_comm *bc = (struct baby_comm *)c;
    fti_baby_kill(bc->runner); /* a quorum change: the next one gets a new child */
    fti_baby_destroy(bc->runner);
    free(bc);
}


int fti_baby_tcp_ring_create(fti_baby_tcp_listener_h l, int rank, int size,
                             const char *next_addr, size_t chunk_bytes, int64_t deadline_ms,
                             fti_comm_h *comm_p)
{
    if (l == NULL)
        return FT_ERR_ARG;
    struct baby_comm *bc = calloc(1, sizeof(*bc));
    int rc = bc ? fti_baby_connect(l->runner, rank, size, next_addr ? next_addr : "",
                                   chunk_bytes, SIZE_MAX, deadline_ms)
                : FT_ERR_NO_MEMORY;
    if (rc != FT_SUCCESS) {
        free(bc);
        fti_baby_tcp_listener_destroy(l);
        return rc;
    }
    bc->base.ops = &fti_backend_baby_tcp;
    bc->base.rank = rank;
    bc->base.size = size;
    bc->runner = l->runner;
    free(l);
    *comm_p = &bc->base;
    return FT_SUCCESS;
}

fti_baby_h fti_baby_tcp_runner(fti_comm_h comm)
{
    if (comm == NULL || comm->ops != &fti_backend_baby_tcp)
        return NULL;
    return ((struct baby_comm *)comm)->runner;
}

/* The baby-tcp slice of a quorum (baby_slice.h). */
int fti_baby_slice_create(const fti_slice_params_t *p, const fti_baby_opts_t *opts,
                          int64_t deadline_ms, fti_comm_h *comm_p)
{
    fti_baby_tcp_listener_h l = NULL;
    fti_rpc_client_h store = NULL;
    char key[96] = "", *next = NULL;
    size_t next_len = 0;

    if (p->size < 1 || p->replica_rank < 0 || p->replica_rank >= p->size)
        return FT_ERR_ARG;
    if (p->size > 1 && (p->store_address == NULL || p->store_address[0] == '\0'))
        return FT_ERR_ARG;
    if (p->size > 1)
        fti_slice_note(p->quorum_id);
    int rc = fti_baby_tcp_listener_create(opts, p->bind_host, deadline_ms, &l);
    if (rc != FT_SUCCESS)
        return rc;
    if (p->size == 1)
        return fti_baby_tcp_ring_create(l, 0, 1, NULL, p->chunk_bytes, deadline_ms, comm_p);
    rc = fti_rpc_client_create(p->store_address, p->key, p->connect_timeout_ms, FTI_STORE_MAX_FRAME,
                               &store);
    if (rc == FT_SUCCESS) {
        const char *mine = fti_baby_tcp_listener_address(l);
        fti_slice_key(key, sizeof(key), p->quorum_id, p->group_rank, p->replica_rank);
        rc = fti_store_set(store, key, mine, strlen(mine), FTI_MAX(1, fti_ms_left(deadline_ms)));
    }
    if (rc == FT_SUCCESS) {
        fti_slice_key(key, sizeof(key), p->quorum_id, p->group_rank,
                      (p->replica_rank + 1) % p->size);
        rc = fti_store_get(store, key, FTI_MAX(1, fti_ms_left(deadline_ms)), (void **)&next,
                           &next_len);
    }
    fti_rpc_client_destroy(store);
    if (rc != FT_SUCCESS)
        FTI_WARN("baby slice: the store %s (%s) failed: %s", p->store_address, key,
                 FT_Error_string(rc));
    if (rc == FT_SUCCESS)
        rc = fti_baby_tcp_ring_create(l, p->replica_rank, p->size, next, p->chunk_bytes,
                                      deadline_ms, comm_p);
    else
        fti_baby_tcp_listener_destroy(l);
    free(next);
    return fti_slice_error(rc); /* as slice.c */
}

/* The table's create: the store rendezvous of slice.c, the ring in a new
 * ftmpi-baby child started as the rendezvous says (fti_baby_slice_create). */
static int baby_create(const fti_comm_rendezvous_t *r, int64_t deadline_ms, fti_comm_h *comm_p)
{
    fti_baby_opts_t o = {
        .path = r->child_path,
        .env = r->child_env,
        .cpus = r->child_cpus != NULL && r->child_cpus[0] != '\0' ? r->child_cpus : NULL,
        .key = r->key,
    };
    return fti_baby_slice_create(r, &o, deadline_ms, comm_p);
}

/* The table entry (comm.h): the tcp ring, run by a child process. */
const struct fti_comm_backend fti_backend_baby_tcp = {
    .name = "baby-tcp",
    .needs = FTI_COMM_NEEDS_STORE | FTI_COMM_NEEDS_CHILD,
    .create = baby_create,
    .allreduce = baby_allreduce,
    .destroy = baby_destroy,
};
