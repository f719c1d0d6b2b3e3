/*
 * manager.h - the group's manager on group rank 0 (DESIGN section 4): asks
 * the lighthouse for each step's quorum on behalf of the whole group and
 * keeps the group alive there with heartbeats from a thread of its own.
 *
 * The quorum request and the heartbeats use two lighthouse clients, so a
 * long quorum wait never delays a heartbeat.  The manager's RPC services
 * (store, kill, checkpoint metadata) run on the rank server.
 *
 * Threads: create, quorum and destroy run on the application thread; the
 * heartbeat thread only sends heartbeats.
 */
#ifndef FTI_MANAGER_H
#define FTI_MANAGER_H

#include <stdbool.h>
#include <stdint.h>

#include "proto/ftmpi.pb-c.h"

typedef struct fti_manager *fti_manager_h;

/* Creates the lighthouse clients for lighthouse ("host:port") and starts
 * heartbeats for replica_id every heartbeat_ms.  Release with
 * fti_manager_destroy (stops and joins the heartbeat thread). */
int fti_manager_create(const char *lighthouse, const char *replica_id, int connect_timeout_ms,
                       int heartbeat_ms, fti_manager_h *m_p);
void fti_manager_destroy(fti_manager_h m);

/* The group leaves (FT_Finalize, or a mode-B group that lost a rank):
 * stops the heartbeats, then tells the lighthouse (LIGHTHOUSE_FINALIZE)
 * within timeout_ms, so the other groups need not wait for this one.  The
 * first call does it; later calls return its result. */
int fti_manager_leave(fti_manager_h m, int timeout_ms);

/* Asks for the quorum of the next step with `me` as this group's member,
 * waiting up to timeout_ms.  A lighthouse that cannot be reached is asked
 * again until the time is up (it may be restarting).  compact, init_sync:
 * see fti_lighthouse_quorum_resp.  On success *resp_p is set (it has a
 * quorum); free it with ftmpi__lighthouse_quorum_response__free_unpacked. */
int fti_manager_quorum(fti_manager_h m, const Ftmpi__QuorumMember *me, bool compact,
                       bool init_sync, int timeout_ms, Ftmpi__LighthouseQuorumResponse **resp_p);

#endif
