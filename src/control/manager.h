/*
 * manager.h - the group's manager on group rank 0 (DESIGN section 4): asks
 * the lighthouse for each step's quorum on behalf of the whole group and
 * keeps the group alive there with heartbeats from a thread of its own.
 *
 * The quorum request and the heartbeats use two lighthouse clients, so a
 * long quorum wait never delays a heartbeat.  Both carry the quorum
 * client's incarnation; the heartbeats name it as the group's liveness
 * binding, so the lighthouse drops the group the moment both connections
 * close (the process died), without waiting for the heartbeat timeout.  The manager's RPC services
 * (store, kill, checkpoint metadata) run on the rank server.
 *
 * Threads: create, quorum and destroy run on the application thread; the
 * heartbeat thread only sends heartbeats.
 */
#ifndef FTI_MANAGER_H
#define FTI_MANAGER_H

#include <stdbool.h>
#include <stdint.h>

#include <stddef.h>

#include "control/obs_report.h"
#include "control/proto/ftmpi.pb-c.h"
#include "control/rank_server.h"

typedef struct fti_manager *fti_manager_h;

/* Creates the lighthouse clients for lighthouse ("host:port", with the
 * job's key: copied, NULL for none) and starts heartbeats for replica_id
 * every heartbeat_ms.  Release with fti_manager_destroy (stops and joins
 * the heartbeat thread). */
int fti_manager_create(const char *lighthouse, const fti_auth_key_t *key, const char *replica_id,
                       int connect_timeout_ms, int heartbeat_ms, fti_manager_h *m_p);
void fti_manager_destroy(fti_manager_h m);

/* Counters the heartbeats carry to the lighthouse (its dashboard and
 * /metrics): restarts of the group (FTMPI_RESTART_COUNT), heals and bytes
 * healed so far.  Any thread. */
void fti_manager_report(fti_manager_h m, int64_t restarts, int64_t heals, int64_t heal_bytes);

/* Why the group's last step failed, for the lighthouse's dashboard (sent
 * with the next heartbeats).  NULL-safe. */
void fti_manager_report_failure(fti_manager_h m, const char *why);

/* A finished recovery, a failed step, the group's rank counters (n ranks,
 * group-rank order): queued for the heartbeats (control/obs_report.h);
 * FT_Finalize's leave sends what is left.  NULL-safe, any thread. */
void fti_manager_report_recovery(fti_manager_h m, const fti_recovery_rec_t *r);
void fti_manager_report_step_failure(fti_manager_h m, const fti_step_failure_t *f);
void fti_manager_report_ranks(fti_manager_h m, const fti_rank_metrics_t *r, size_t n);

/* Compact quorum replies name the members (up to 64), for the event log.
 * Application thread, between rounds. */
void fti_manager_want_member_ids(fti_manager_h m);

/* The group leaves (FT_Finalize, or a mode-B group that lost a rank):
 * stops the heartbeats, then tells the lighthouse (LIGHTHOUSE_FINALIZE)
 * within timeout_ms, so the other groups need not wait for this one.  The
 * first call does it; later calls return its result. */
int fti_manager_leave(fti_manager_h m, int timeout_ms);

/* ---- the quorum round of group rank 0 ------------------------------------ */

/* What each rank of the group tells its manager before a quorum.  The step
 * layer gathers them over the group (group.h), in group-rank order. */
/* The SDC check fingerprints at most this many buffers of a rank (the
 * first ones registered). */
#define FTI_SDC_MAX_BUFS 16

typedef struct fti_quorum_ask {
    int64_t step;        /* the rank's committed steps */
    int64_t shrink_only; /* 1: the rank asked FT_QUORUM_SHRINK_ONLY */
    fti_rank_metrics_t metrics; /* the rank's counters, for /metrics (issue 26) */
    /* the SDC check (FTMPI_SDC_EVERY): the rank's fingerprints of step
     * sdc_step (0 = none), one per buffer in registration order */
    int64_t sdc_step;
    uint64_t sdc_n;
    uint64_t sdc_sum[FTI_SDC_MAX_BUFS];
} fti_quorum_ask_t;

/* This group's part of the quorum request besides the asks. */
typedef struct fti_manager_round {
    const char *address;      /* the manager rank's server: heal source and store */
    int64_t commit_failures;  /* failed commits since the last quorum */
    const void *data;         /* QuorumMember.data (mode B: the first world rank) */
    size_t data_len;
    bool compact;             /* fti_lighthouse_quorum_resp */
    bool init_sync;
    int timeout_ms;           /* the wait for a quorum */
    fti_rank_server_h server; /* where a MANAGER_KILL arrives */
    const char *const *sdc_names; /* the manager rank's buffer names, for the
                                   * fingerprints (the asks' sdc_sum) */
    size_t n_sdc_names;
} fti_manager_round_t;

/* The manager's round: folds the group's asks (asks[0..n-1]: the lowest
 * step, shrink-only when any rank asked it, the fingerprints when every
 * rank took them at that step: QuorumMember.sdc_prints), asks the lighthouse with this
 * group as one member, waiting up to r->timeout_ms (a lighthouse that
 * cannot be reached is asked again until the time is up: it may be
 * restarting), and packs the response (it has a quorum) into
 * *buf_p (free with free()), *len_p bytes, for the group's broadcast.
 * FT_ERR_KILLED when a MANAGER_KILL reached the group before or during the
 * wait.  Touches no MPI. */
int fti_manager_round(fti_manager_h m, const fti_quorum_ask_t *asks, int n,
                      const fti_manager_round_t *r, void **buf_p, size_t *len_p);

/* Every rank: the broadcast bytes back into a response that has a quorum.
 * FT_ERR_BAD_MESSAGE (logged) when they do not decode.  Free *resp_p with
 * ftmpi__lighthouse_quorum_response__free_unpacked. */
int fti_quorum_unpack(const void *buf, size_t len, Ftmpi__LighthouseQuorumResponse **resp_p);

#endif
