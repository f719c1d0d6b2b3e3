/*
 * baby_slice.c - the baby-tcp slice of a quorum: the rendezvous of
 * slice.c (each rank publishes its listener's address in the quorum's
 * store under fti_slice_key and connects to replica rank + 1), with the
 * listener and the ring in a new ftmpi-baby child (baby.h).
 */
#include "comm/baby_slice.h"

#include <stdlib.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/rpc.h"
#include "control/store.h"
#include "base/util.h"

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
