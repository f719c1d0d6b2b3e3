/*
 * rank_server.h - each rank's background thread: a libevent loop with one
 * RPC server bound to FTMPI_BIND_HOST:0.
 *
 * Every rank serves HEAL_METADATA and HEAL_FETCH (its registered state).
 * Group rank 0 (the manager) also serves the group's store (STORE_*),
 * MANAGER_KILL (sets a flag the next FT_Quorum reports as FT_ERR_KILLED)
 * and MANAGER_CHECKPOINT_METADATA (the heal address of a group rank).
 *
 * Threads: fti_rank_server_start/stop run on the application thread; the
 * handlers on the server's own thread.  address, set_peers and killed may
 * be called from the application thread while the server runs.
 */
#ifndef FTI_RANK_SERVER_H
#define FTI_RANK_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#include <stdint.h>

#include "base/rpc.h"

typedef struct fti_rank_server *fti_rank_server_h;

/* The handler of HEAL_METADATA and HEAL_FETCH: the step layer's healing
 * (src/heal/serve.c, fti_heal_rpc) registers itself here, so the control plane
 * never calls up into the step.  Runs on the server's loop thread and takes
 * over call. */
typedef void (*fti_rank_server_heal_fn)(void *arg, fti_rpc_call_h call, uint16_t method,
                                        const uint8_t *payload, size_t len);

/* Starts the thread and the server on bind_host:0; with key (the job's,
 * copied; NULL: none) every connection must pass auth.h's handshake.
 * manager: serve the store, kill and checkpoint metadata too.
 * heal_fn(heal_arg, ...) serves the heal methods; heal_arg must outlive the
 * server.  Release with fti_rank_server_stop. */
int fti_rank_server_start(const char *bind_host, size_t max_frame, const fti_auth_key_t *key,
                          bool manager, fti_rank_server_heal_fn heal_fn, void *heal_arg,
                          fti_rank_server_h *s_p);

/* Stops the loop (from outside, through an event the loop runs), joins the
 * thread, frees the server, its store and the connections. */
void fti_rank_server_stop(fti_rank_server_h s);

/* "host:port" the server listens on. */
const char *fti_rank_server_address(fti_rank_server_h s);

/* The heal addresses of the group's ranks (n entries, copied), which
 * MANAGER_CHECKPOINT_METADATA hands out. */
int fti_rank_server_set_peers(fti_rank_server_h s, const char *const *addrs, int n);

/* Whether a MANAGER_KILL arrived; its message is copied into msg. */
bool fti_rank_server_killed(fti_rank_server_h s, char *msg, size_t len);

#endif
