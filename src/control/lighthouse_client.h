/*
 * lighthouse_client.h - blocking client of the lighthouse (used by the
 * manager's thread and by tests).  Thread-safe: calls are serialised.
 *
 * Incarnation: each client draws a random nonzero number when created and
 * sends it as QuorumMember.incarnation (unless the caller set one), so a
 * group restarted under the same replica id (a new manager process, a new
 * client) gets a new quorum id.
 *
 * Quorum ids seen: the highest quorum id any client of this process
 * received is kept process-wide and sent with every quorum request and
 * heartbeat (max_quorum_id), so a restarted lighthouse whose clock is
 * behind never issues a new id at or below it.
 */
#ifndef FTI_LIGHTHOUSE_CLIENT_H
#define FTI_LIGHTHOUSE_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "base/auth.h"
#include "control/proto/ftmpi.pb-c.h"

/* A standby lighthouse answers FT_ERR_NOT_LEADER with this message and the
 * leader's "host:port" (or "unknown" during an election). */
#define FTI_LH_NOT_LEADER_MSG "not the leader; the leader is "

#define FTI_LH_MAX_ADDRS 8

typedef struct fti_lighthouse_client *fti_lighthouse_client_h;

/* addr: "host:port", or "host:port,host:port,..." (at most
 * FTI_LH_MAX_ADDRS) of a job's lighthouses elected through etcd: a call
 * goes to the one that answered last; a standby's FT_ERR_NOT_LEADER moves
 * it to the leader the standby names, and with several lighthouses one
 * that is gone (FT_ERR_CONNECT, FT_ERR_PROC_FAILED: a call in flight is
 * asked again of the next) or silent (FT_ERR_TIMEOUT: the next call) is
 * left for the next of the list, all within the call's timeout.
 * Does not connect yet; key: the job's (copied; NULL: none).  Release
 * with fti_lighthouse_client_destroy. */
int fti_lighthouse_client_create(const char *addr, const fti_auth_key_t *key,
                                 int connect_timeout_ms, fti_lighthouse_client_h *client_p);
void fti_lighthouse_client_destroy(fti_lighthouse_client_h client);

/* Compact quorum replies also name the members (up to 64; for the event
 * log).  Off by default.  Not while a call runs. */
void fti_lighthouse_client_want_ids(fti_lighthouse_client_h client, bool want);

/* The client's incarnation (nonzero). */
uint64_t fti_lighthouse_client_incarnation(fti_lighthouse_client_h client);
/* The lighthouse's message of the last error reply ("" if none). */
void fti_lighthouse_client_last_error(fti_lighthouse_client_h client, char *buf, size_t len);
/* The lighthouse the client talks to now. */
void fti_lighthouse_client_address(fti_lighthouse_client_h client, char *buf, size_t len);

/* The highest quorum id received by any client of this process, 0 if none.
 * Any thread. */
int64_t fti_lighthouse_max_quorum_id(void);

/* Asks for a quorum that includes `me`; waits up to timeout_ms.  On success
 * *quorum_p is set; free it with ftmpi__quorum__free_unpacked(q, NULL). */
int fti_lighthouse_quorum(fti_lighthouse_client_h client, const Ftmpi__QuorumMember *me,
                          int timeout_ms, Ftmpi__Quorum **quorum_p);

/* The same with the whole response.  compact: ask for this group's results
 * (response.results, one per group rank; quorum.participants empty) instead
 * of the member list; init_sync is the results' step-0 rule.  A lighthouse
 * that does not know compact replies with the member list (no results).
 * On success *resp_p has a quorum; free it with
 * ftmpi__lighthouse_quorum_response__free_unpacked(resp, NULL). */
int fti_lighthouse_quorum_resp(fti_lighthouse_client_h client, const Ftmpi__QuorumMember *me,
                               bool compact, bool init_sync, int timeout_ms,
                               Ftmpi__LighthouseQuorumResponse **resp_p);

int fti_lighthouse_heartbeat(fti_lighthouse_client_h client, const char *replica_id,
                             int timeout_ms);

/* What a manager's heartbeats carry besides the id (lighthouse dashboard,
 * failure detection by connection close). */
/* Bytes of a group's last failure reason in a heartbeat, with its NUL. */
#define FTI_LH_FAILURE_SIZE 160

typedef struct fti_lighthouse_report {
    uint64_t incarnation; /* nonzero: the heartbeat connection is the group's
                           * liveness connection (LighthouseHeartbeatRequest) */
    int64_t restarts;     /* FTMPI_RESTART_COUNT */
    int64_t heals, heal_bytes;
    char last_failure[FTI_LH_FAILURE_SIZE]; /* "" = no failed step */
    struct fti_obs_batch *obs; /* NULL, or recoveries, failed steps and rank
                                * counters to carry (control/obs_report.h) */
} fti_lighthouse_report_t;

/* A heartbeat with rep's fields (rep may be NULL: a plain heartbeat). */
int fti_lighthouse_heartbeat_report(fti_lighthouse_client_h client, const char *replica_id,
                                    const fti_lighthouse_report_t *rep, int timeout_ms);

/* Tells the lighthouse that group replica_id leaves (finalized, or lost a
 * rank): it is forgotten at once (LIGHTHOUSE_FINALIZE). */
int fti_lighthouse_finalize(fti_lighthouse_client_h client, const char *replica_id,
                            int timeout_ms);

#endif
