/*
 * liveness.h - failure detection by connection close (DESIGN section 6):
 * which open connections speak for which group incarnation.
 *
 * A connection is bound to (replica_id, incarnation) by the first
 * heartbeat or quorum request on it that carries a nonzero incarnation;
 * a heartbeat that carries one also "declares" the group's liveness
 * binding (its manager's heartbeat thread does; probes and old clients
 * send 0 and bind nothing).  When the last open connection of a group's
 * current incarnation closes and that incarnation declared itself, the
 * group died: fti_liveness_unbind says so.  So a manager whose heartbeat
 * call timed out (its client closes and reconnects) stays alive while its
 * quorum connection is open, and an old incarnation's late close never
 * kills the new one.
 *
 * No locks: the lighthouse's loop thread only.  Bounded by the open
 * connections (one record per group with an open bound connection).
 */
#ifndef FTI_LH_LIVENESS_H
#define FTI_LH_LIVENESS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fti_liveness *fti_liveness_h;
typedef struct fti_live_bind fti_live_bind_t; /* one connection's binding */

/* Release with fti_liveness_destroy (bindings still attached to open
 * connections must be released first with fti_liveness_unbind). */
int fti_liveness_create(fti_liveness_h *lv_p);
void fti_liveness_destroy(fti_liveness_h lv);

/* Binds a connection (cur: its binding so far, NULL if none) to
 * (replica_id, incarnation); declare: the request was a heartbeat.
 * Returns the binding to keep with the connection (cur itself when it is
 * bound already: a connection speaks for one group), NULL when nothing is
 * bound (incarnation 0, or out of memory). */
fti_live_bind_t *fti_liveness_bind(fti_liveness_h lv, fti_live_bind_t *cur,
                                   const char *replica_id, uint64_t incarnation, bool declare,
                                   const char *peer);

/* Whether a connection not bound yet (cur NULL) that claims (replica_id,
 * incarnation) meets another incarnation of that group whose connections
 * are open: two processes claim one group (issue 23), or a stale
 * incarnation would replace the live one.  Then holder gets the address
 * of the holder's first connection (len bytes), and *first_p whether this
 * is the first time this incarnation is met so (to log once).  The server refuses such
 * a claim while the holder is healthy; one whose connections all closed
 * (it died) holds nothing, and a new incarnation replaces it. */
bool fti_liveness_held(fti_liveness_h lv, const fti_live_bind_t *cur, const char *replica_id,
                       uint64_t incarnation, char *holder, size_t len, bool *first_p);

/* The connection of b closed; frees b.  True when it was the last open
 * connection of its group's current, declared incarnation: the group is
 * dead (its id is copied into id, len bytes). */
bool fti_liveness_unbind(fti_liveness_h lv, fti_live_bind_t *b, char *id, size_t len);

/* Groups with a record (an open bound connection). */
size_t fti_liveness_n_groups(fti_liveness_h lv);

#endif
