/*
 * obs_report.h - what a group tells the lighthouse about what happened
 * (issue 26, DESIGN section 11): its recoveries broken down, its failed
 * steps with their reasons, and its ranks' counters.  They ride on the
 * manager's heartbeats (LighthouseHeartbeatRequest fields 8-10).
 *
 * The queue lives in the manager (group rank 0).  The step layer adds a
 * record when a recovery or a failed step ends; the heartbeat thread takes
 * a batch of what no answered heartbeat carried yet (fti_obs_take), puts it
 * on the request (fti_obs_batch_apply) and, once the lighthouse answered,
 * drops it (fti_obs_acked).  A record the queue cannot hold (more than
 * FTI_OBS_QUEUE pending: the lighthouse unreachable a long time) drops the
 * oldest; the lighthouse keeps each (incarnation, seq) once, so a batch
 * sent twice counts once.
 *
 * Threads: every call takes the queue's own lock.
 */
#ifndef FTI_OBS_REPORT_H
#define FTI_OBS_REPORT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sizes.h"
#include "control/proto/ftmpi.pb-c.h"

#define FTI_OBS_QUEUE 64      /* pending records of each kind */
#define FTI_OBS_BATCH 8       /* records of each kind per heartbeat */
#define FTI_OBS_MAX_RANKS 256 /* group ranks whose counters a heartbeat carries */
#define FTI_OBS_ERR_SIZE 40

enum { FTI_RECOVERY_SURVIVOR, FTI_RECOVERY_RESTART };

/* One recovery (RecoveryReport in ftmpi.proto says what each field is). */
typedef struct fti_recovery_rec {
    uint64_t seq;
    int kind;
    int64_t failed_step, start_ms, end_ms;
    int64_t detect_ms, quorum_ms, slice_ms, heal_ms, heal_bytes, steps_lost, resumed_step;
    int64_t restart_ms;
    char error[FTI_OBS_ERR_SIZE];
    char peer[FTI_REPLICA_ID_SIZE];
} fti_recovery_rec_t;

/* "survivor" or "restart". */
const char *fti_recovery_kind_name(int kind);

/* One failed step (RecoveryStepFailure). */
typedef struct fti_step_failure {
    uint64_t seq;
    int64_t step, wall_ms;
    int group_rank;
    char error[FTI_OBS_ERR_SIZE];
    char peer[FTI_REPLICA_ID_SIZE];
} fti_step_failure_t;

/* Failed steps by kind (the first error of the step). */
enum { FTI_FAIL_PROC, FTI_FAIL_TIMEOUT, FTI_FAIL_ABORTED, FTI_FAIL_QUORUM, FTI_FAIL_OTHER,
       FTI_FAIL_KINDS };

/* The kind of an FT_ERR_* code. */
int fti_fail_kind(int error);

/* One rank's cumulative counters (RankMetrics); plain data, gathered over
 * the group with each quorum's asks. */
typedef struct fti_rank_metrics {
    int64_t steps, commits, bytes_reduced, heal_bytes;
    int64_t fail[FTI_FAIL_KINDS];
    int64_t quorum_us, allreduce_us, commit_us;
    char address[FTI_ADDRESS_SIZE]; /* the rank's advertised server (host:port) */
} fti_rank_metrics_t;

typedef struct fti_obs_queue {
    pthread_mutex_t mu;
    fti_recovery_rec_t rec[FTI_OBS_QUEUE];
    size_t n_rec;
    fti_step_failure_t fail[FTI_OBS_QUEUE];
    size_t n_fail;
    fti_rank_metrics_t *ranks; /* n_ranks, group-rank order; NULL none yet */
    size_t n_ranks;
    uint64_t ranks_gen, ranks_acked; /* set_ranks calls; the last one answered */
} fti_obs_queue_t;

/* What one heartbeat carries: copies, so the request is built without the
 * lock.  Its proto messages point into it: keep it until the call ends. */
typedef struct fti_obs_batch {
    fti_recovery_rec_t rec[FTI_OBS_BATCH];
    size_t n_rec;
    fti_step_failure_t fail[FTI_OBS_BATCH];
    size_t n_fail;
    fti_rank_metrics_t ranks[FTI_OBS_MAX_RANKS];
    size_t n_ranks;          /* 0: the counters did not change since the last answered one */
    uint64_t ranks_gen;
    /* the messages fti_obs_batch_apply builds */
    Ftmpi__RecoveryReport m_rec[FTI_OBS_BATCH], *p_rec[FTI_OBS_BATCH];
    Ftmpi__RecoveryStepFailure m_fail[FTI_OBS_BATCH], *p_fail[FTI_OBS_BATCH];
    Ftmpi__RankMetrics m_ranks[FTI_OBS_MAX_RANKS], *p_ranks[FTI_OBS_MAX_RANKS];
} fti_obs_batch_t;

void fti_obs_init(fti_obs_queue_t *q);
void fti_obs_clear(fti_obs_queue_t *q);

void fti_obs_add_recovery(fti_obs_queue_t *q, const fti_recovery_rec_t *r);
void fti_obs_add_failure(fti_obs_queue_t *q, const fti_step_failure_t *f);
/* The group's counters (n ranks, group-rank order), replacing the last. */
void fti_obs_set_ranks(fti_obs_queue_t *q, const fti_rank_metrics_t *m, size_t n);

/* Copies the oldest pending records (and the counters, when they changed
 * since the last answered heartbeat) into *b. */
void fti_obs_take(fti_obs_queue_t *q, fti_obs_batch_t *b);
/* The lighthouse answered the heartbeat that carried b: its records go. */
void fti_obs_acked(fti_obs_queue_t *q, const fti_obs_batch_t *b);

/* Fills req's fields 8-10 from b (pointing into b). */
void fti_obs_batch_apply(fti_obs_batch_t *b, Ftmpi__LighthouseHeartbeatRequest *req);

#endif
