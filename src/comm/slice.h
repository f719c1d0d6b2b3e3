/*
 * slice.h - builds a rank's slice communicator for a quorum (DESIGN
 * section 5, tcp): the ranks with the same group rank in every group of
 * the quorum, connected in a ring in replica-rank order.
 *
 * Rendezvous: each rank opens a fresh listener, publishes its address in
 * the quorum's store (result.store_address) under
 * "/ftmpi/<quorum_id>/<group_rank>/<replica_rank>", waits for the key of
 * replica rank + 1 and connects the ring.  A slice of one needs no store.
 */
#ifndef FTI_SLICE_H
#define FTI_SLICE_H

#include <stddef.h>
#include <stdint.h>

#include "comm/comm.h"

/* The rendezvous fields it uses: quorum_id, group_rank, replica_rank, size,
 * chunk_bytes and (size > 1) store_address, bind_host, connect_timeout_ms. */
typedef fti_comm_rendezvous_t fti_slice_params_t;

/* Formats the store key of (quorum_id, group_rank, replica_rank) into buf. */
void fti_slice_key(char *buf, size_t len, int64_t quorum_id, int group_rank, int replica_rank);

/* Builds the slice before deadline_ms (the create of fti_backend_tcp).
 * Failures are logged where they are seen (here, the store client or the
 * tcp ring).  Release with fti_comm_destroy.  Notes p->quorum_id
 * (fti_slice_forget_older), whether the build succeeds or not: this rank's
 * key, and its peers', may be in the store either way. */
int fti_slice_create(const fti_slice_params_t *p, int64_t deadline_ms, fti_comm_h *comm_p);

/* Deletes the keys of quorum quorum_id from the store at store_address
 * (with the job's key, NULL: none). */
int fti_slice_forget(const char *store_address, const fti_auth_key_t *key, int64_t quorum_id,
                     int connect_timeout_ms, int timeout_ms);

/* Deletes from the store at store_address the keys of every quorum this
 * process noted (fti_slice_create, fti_slice_note) other than keep_id,
 * whatever became of their builds; an id whose delete fails stays noted
 * and is tried again next time.  The manager calls it for its own store
 * after every slice build of a new quorum, failed or not, so a run of
 * failed builds cannot fill the store (FTI_STORE_MAX_KEYS).  At most
 * FTI_SLICE_NOTED ids are kept (the oldest is dropped, and its keys left,
 * beyond that).  Returns the first error. */
int fti_slice_forget_older(const char *store_address, const fti_auth_key_t *key, int64_t keep_id,
                           int connect_timeout_ms, int timeout_ms);

/* Notes quorum_id as one whose keys may be in a store (fti_slice_create
 * does it); a no-op for an id already noted.  The noted ids are process
 * state, used from the application's thread only. */
#define FTI_SLICE_NOTED 64
void fti_slice_note(int64_t quorum_id);

/* What a failed rendezvous returns: an error of the store or the ring
 * means a peer (or the store's host) is gone, FT_ERR_PROC_FAILED; success,
 * timeouts, FT_ERR_NO_MEMORY and FT_ERR_ARG stay as they are. */
int fti_slice_error(int rc);
/* How many ids are noted now (tests). */
size_t fti_slice_noted(void);

#endif
