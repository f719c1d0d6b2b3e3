/* slice.c - the tcp ring of a quorum, through the store (see slice.h). */
#include "comm/slice.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/rpc.h"
#include "control/store.h"
#include "comm/tcp.h"
#include "base/util.h"

void fti_slice_key(char *buf, size_t len, int64_t quorum_id, int group_rank, int replica_rank)
{
    snprintf(buf, len, "/ftmpi/%" PRId64 "/%d/%d", quorum_id, group_rank, replica_rank);
}

/* Quorum ids whose keys may still be in a store, oldest first. */
static int64_t noted[FTI_SLICE_NOTED];
static size_t n_noted;

void fti_slice_note(int64_t quorum_id)
{
    for (size_t i = 0; i < n_noted; i++)
        if (noted[i] == quorum_id)
            return;
    if (n_noted == FTI_SLICE_NOTED) {
        FTI_DEBUG("slice: %d quorums' keys not deleted yet; quorum %" PRId64 "'s are left",
                  FTI_SLICE_NOTED, noted[0]);
        memmove(noted, noted + 1, (n_noted - 1) * sizeof(noted[0]));
        n_noted--;
    }
    noted[n_noted++] = quorum_id;
}

size_t fti_slice_noted(void)
{
    return n_noted;
}

/* The previous rank's listener address, for naming it when it fails
 * (fti_tcp_ring_failed_peer).  It published its key before it connected to
 * us, so once the ring is built the key is there: the get does not wait.
 * Not knowing it only leaves the address out of a later error line. */
static void note_prev_address(fti_rpc_client_h store, const fti_slice_params_t *p,
                              int64_t deadline_ms, fti_comm_h comm)
{
    char key[96], *prev = NULL;
    size_t prev_len = 0;
    fti_slice_key(key, sizeof(key), p->quorum_id, p->group_rank,
                  (p->replica_rank - 1 + p->size) % p->size);
    int rc = fti_store_get(store, key, FTI_MAX(1, fti_ms_left(deadline_ms)), (void **)&prev,
                           &prev_len);
    if (rc == FT_SUCCESS)
        fti_tcp_set_prev_address(comm, prev);
    else
        FTI_DEBUG("slice: %s not read from the store %s: %s", key, p->store_address,
                  FT_Error_string(rc));
    free(prev);
}

int fti_slice_create(const fti_slice_params_t *p, int64_t deadline_ms, fti_comm_h *comm_p)
{
    fti_tcp_listener_h l = NULL;
    fti_rpc_client_h store = NULL;
    char key[96], *next = NULL;
    size_t next_len = 0;
    int rc;

    if (p->size < 1 || p->replica_rank < 0 || p->replica_rank >= p->size)
        return FT_ERR_ARG;
    if (p->size == 1)
        return fti_tcp_ring_create(NULL, 0, 1, NULL, p->chunk_bytes, p->key, deadline_ms, comm_p);
    if (p->store_address == NULL || p->store_address[0] == '\0')
        return FT_ERR_ARG;
    fti_slice_note(p->quorum_id);

    rc = fti_tcp_listener_create(p->bind_host, &l);
    if (rc != FT_SUCCESS) {
        FTI_WARN("slice: cannot open a listener on %s: %s", p->bind_host, FT_Error_string(rc));
        return rc;
    }
    rc = fti_rpc_client_create(p->store_address, p->key, p->connect_timeout_ms, FTI_STORE_MAX_FRAME,
                               &store);
    if (rc == FT_SUCCESS) {
        const char *mine = fti_tcp_listener_address(l);
        fti_slice_key(key, sizeof(key), p->quorum_id, p->group_rank, p->replica_rank);
        rc = fti_store_set(store, key, mine, strlen(mine), FTI_MAX(1, fti_ms_left(deadline_ms)));
        if (rc != FT_SUCCESS)
            FTI_WARN("slice: publishing %s in the store %s failed: %s", key, p->store_address,
                     FT_Error_string(rc));
    }
    if (rc == FT_SUCCESS) {
        fti_slice_key(key, sizeof(key), p->quorum_id, p->group_rank,
                      (p->replica_rank + 1) % p->size);
        rc = fti_store_get(store, key, FTI_MAX(1, fti_ms_left(deadline_ms)), (void **)&next,
                           &next_len);
        if (rc != FT_SUCCESS)
            FTI_WARN("slice: waiting for %s in the store %s failed: %s", key, p->store_address,
                     FT_Error_string(rc));
    }
    if (rc == FT_SUCCESS) {
        /* logged by the ring where it failed */
        rc = fti_tcp_ring_create(l, p->replica_rank, p->size, next, p->chunk_bytes, p->key,
                                 deadline_ms, comm_p);
    }
    if (rc == FT_SUCCESS && p->size > 2)
        note_prev_address(store, p, deadline_ms, *comm_p);
    fti_rpc_client_destroy(store);
    free(next);
    fti_tcp_listener_destroy(l);
    return fti_slice_error(rc);
}

int fti_slice_error(int rc)
{
    if (rc != FT_SUCCESS && rc != FT_ERR_TIMEOUT && rc != FT_ERR_NO_MEMORY && rc != FT_ERR_ARG)
        return FT_ERR_PROC_FAILED;
    return rc;
}

int fti_slice_forget(const char *store_address, const fti_auth_key_t *key, int64_t quorum_id,
                     int connect_timeout_ms, int timeout_ms)
{
    fti_rpc_client_h store = NULL;
    char prefix[64];
    int64_t n = 0;
    int rc = fti_rpc_client_create(store_address, key, connect_timeout_ms, FTI_STORE_MAX_FRAME,
                                   &store);
    if (rc != FT_SUCCESS)
        return rc;
    snprintf(prefix, sizeof(prefix), "/ftmpi/%" PRId64 "/", quorum_id);
    rc = fti_store_delete_prefix(store, prefix, timeout_ms, &n);
    fti_rpc_client_destroy(store);
    if (rc == FT_SUCCESS && n > 0)
        FTI_DEBUG("slice: deleted %" PRId64 " keys of quorum %" PRId64, n, quorum_id);
    return rc;
}

int fti_slice_forget_older(const char *store_address, const fti_auth_key_t *key, int64_t keep_id,
                           int connect_timeout_ms, int timeout_ms)
{
    int first = FT_SUCCESS;
    size_t j = 0;
    for (size_t i = 0; i < n_noted; i++) {
        if (noted[i] != keep_id) {
            int rc = fti_slice_forget(store_address, key, noted[i], connect_timeout_ms, timeout_ms);
            if (rc == FT_SUCCESS)
                continue;
            if (first == FT_SUCCESS)
                first = rc;
        }
        noted[j++] = noted[i]; /* kept, or tried again next time */
    }
    n_noted = j;
    return first;
}

/* The table entry of tcp (comm.h): the ring of tcp.c, built through the
 * quorum's store (fti_slice_create above). */
const struct fti_comm_backend fti_backend_tcp = {
    .name = "tcp",
    .needs = FTI_COMM_NEEDS_STORE,
    .create = fti_slice_create,
    .allreduce = fti_tcp_ring_allreduce,
    .destroy = fti_tcp_ring_destroy,
    .failed_peer = fti_tcp_ring_failed_peer,
};
