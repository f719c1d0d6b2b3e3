/*
 * store.h - the key-value store hosted by each manager for data-plane
 * rendezvous (DESIGN section 6): set, get (optionally waiting for the key),
 * atomic add on a decimal int64, delete by prefix.  Keys are strings such
 * as "/ftmpi/<quorum_id>/<group_rank>/addr"; values are bytes.
 *
 * Server: lives on a libevent event_base and is served through an RPC
 * server (src/base/rpc.h).  Every fti_store_server_* call and every handler runs
 * on the loop's thread (or with the loop stopped), except
 * fti_store_server_stats, which may run on any thread.  A get on a missing
 * key with timeout_ms > 0 is a deferred call: it is answered by the set or
 * add that creates the key, by FT_ERR_TIMEOUT when its time is up, or
 * dropped within about a second once its connection has closed.
 *
 * Caps (an error reply with FT_ERR_ARG, the server keeps serving): key
 * 1..FTI_STORE_MAX_KEY bytes, value up to FTI_STORE_MAX_VALUE bytes, at
 * most FTI_STORE_MAX_KEYS keys and FTI_STORE_MAX_BYTES bytes of keys and
 * values, at most FTI_STORE_MAX_WAITERS waiting gets.  The RPC server that
 * hosts the store needs max_frame >= FTI_STORE_MAX_FRAME, and clients
 * max_reply >= FTI_STORE_MAX_FRAME.
 *
 * Client: blocking calls over an fti_rpc_client_h (one call at a time per
 * client; the RPC client serialises threads).
 */
#ifndef FTI_STORE_H
#define FTI_STORE_H

#include <stddef.h>
#include <stdint.h>

#include "base/rpc.h"

struct event_base;

#define FTI_STORE_MAX_KEY 1024
#define FTI_STORE_MAX_VALUE (1024 * 1024)
#define FTI_STORE_MAX_KEYS 100000
#define FTI_STORE_MAX_BYTES (256 * 1024 * 1024)
#define FTI_STORE_MAX_WAITERS 10000
/* The largest store frame (a set of a maximal key and value). */
#define FTI_STORE_MAX_FRAME (FTI_STORE_MAX_VALUE + FTI_STORE_MAX_KEY + 64)
/* A get that waits w ms is given w + this long for the reply. */
#define FTI_STORE_REPLY_SLACK_MS 5000

/* ---- server ----------------------------------------------------------- */

typedef struct fti_store_server *fti_store_server_h;

typedef struct fti_store_stats {
    uint64_t keys;       /* keys holding a value */
    uint64_t bytes;      /* bytes of those keys and values */
    uint64_t waiters;    /* gets waiting now */
    uint64_t requests;   /* requests handled */
    uint64_t timeouts;   /* gets answered FT_ERR_TIMEOUT */
    uint64_t dropped;    /* waiting gets dropped because their client left */
    uint64_t refused;    /* requests refused (caps, bad payloads) */
} fti_store_stats_t;

/* Creates an empty store whose timers run on base.  Release with
 * fti_store_server_destroy, which ends every waiting get with
 * FT_ERR_PROC_FAILED (on the loop thread or with the loop stopped; before
 * or after the RPC server that served it is destroyed). */
int fti_store_server_create(struct event_base *base, fti_store_server_h *s_p);
void fti_store_server_destroy(fti_store_server_h s);

/* Lowers the key cap (tests); 0 restores FTI_STORE_MAX_KEYS. */
void fti_store_server_limit_keys(fti_store_server_h s, size_t max_keys);

/* Handles one store request (method STORE_SET, STORE_GET, STORE_ADD or
 * STORE_DELETE_PREFIX; others get an FT_ERR_UNSUPPORTED reply).  Takes
 * over `call` (it is always answered, now or later).  For a dispatcher
 * that serves several services on one RPC server. */
void fti_store_handle(fti_store_server_h s, fti_rpc_call_h call, uint16_t method,
                      const uint8_t *payload, size_t len);

/* Writes the store's method table (4 entries) into out and returns how
 * many were written (0 if max < 4).  Its handlers expect the RPC server's
 * arg to be the fti_store_server_h: for an RPC server that serves only
 * the store. */
size_t fti_store_server_methods(fti_rpc_method_t *out, size_t max);

/* Copies the counters; any thread. */
void fti_store_server_stats(fti_store_server_h s, fti_store_stats_t *stats_p);

/* ---- client ----------------------------------------------------------- */

/* Sets key to the len bytes at val (replacing any value) and wakes the
 * gets waiting for it. */
int fti_store_set(fti_rpc_client_h c, const char *key, const void *val, size_t len,
                  int timeout_ms);

/* Gets key's value, waiting up to wait_timeout_ms for it to be set (0: do
 * not wait; a missing key is FT_ERR_NOT_FOUND).  FT_ERR_TIMEOUT when it was
 * not set in time.  On success *val_p is a malloc'ed copy with a '\0'
 * after its *len_p bytes (free with free()). */
int fti_store_get(fti_rpc_client_h c, const char *key, int wait_timeout_ms, void **val_p,
                  size_t *len_p);

/* Adds delta to the int64 stored at key as decimal text (a missing key
 * counts as 0) and returns the new value in *value_p (may be NULL).
 * FT_ERR_ARG if the value there is not a decimal int64 or would overflow. */
int fti_store_add(fti_rpc_client_h c, const char *key, int64_t delta, int timeout_ms,
                  int64_t *value_p);

/* Deletes every key that starts with prefix ("" deletes all); *deleted_p
 * (may be NULL) is the number deleted. */
int fti_store_delete_prefix(fti_rpc_client_h c, const char *prefix, int timeout_ms,
                            int64_t *deleted_p);

#endif
