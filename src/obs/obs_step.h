/*
 * obs_step.h - the step's side of "knowing what happened" (issue 26,
 * DESIGN section 11): the rank's counters (RankMetrics), its recovery
 * tracker (recovery.h) and its flight recorder (flight.h), fed from the
 * FT_ calls (ft.c) and the quorum's parts (step_quorum.c), which hand it
 * this part and the values it needs, never the whole step.  Group rank 0
 * writes each ended recovery to the event log and hands it, each failed
 * step and the group's counters to its manager for the lighthouse.
 *
 * Threads: the step's (step.h): the reduction hooks may run on the
 * progress thread, the others run on the application thread after the
 * reductions were drained.
 */
#ifndef FTI_OBS_STEP_H
#define FTI_OBS_STEP_H

#include <stdbool.h>
#include <stdint.h>

#include "base/settings.h"
#include "control/manager.h"
#include "control/obs_report.h"
#include "obs/event_log.h"
#include "obs/flight.h"
#include "obs/recovery.h"

typedef struct fti_obs_step {
    fti_rank_metrics_t metrics;
    fti_recovery_t rec;
    fti_flight_h flight;          /* NULL: FTMPI_FLIGHT_RECORDS=0 */
    int64_t call_start_ms;        /* the running reduction's start (monotonic) */
    int step_error;               /* the step's first failure, 0 none */
    char step_peer[FTI_REPLICA_ID_SIZE]; /* and the peer it named ("" none) */
    int64_t dumped_epoch;         /* the step whose error dumped the recorder */
    uint64_t fail_seq;            /* failed steps reported */
    /* where ended recoveries and failed steps go (group rank 0), set by
     * fti_obs_start; not owned */
    int group_rank;
    fti_manager_h manager;        /* group rank 0's */
    fti_event_log_h elog;         /* NULL: none */
} fti_obs_step_t;

/* FT_Init (after the set-up: the rank's group rank, its manager and event
 * log, which o only refers to) and FT_Finalize (before the teardown). */
int fti_obs_start(fti_obs_step_t *o, const fti_config_t *cfg, int group_rank,
                  fti_manager_h manager, fti_event_log_h elog);
void fti_obs_stop(fti_obs_step_t *o);

/* The quorum's parts: the exchange (ms), the slice rebuild (ms), a heal
 * (ms, bytes installed). */
void fti_obs_quorum(fti_obs_step_t *o, int64_t ms);
void fti_obs_slice(fti_obs_step_t *o, int64_t ms);
void fti_obs_heal(fti_obs_step_t *o, int64_t ms, int64_t bytes);

/* A call of op (flight.h) starts in quorum quorum_id (-1 none) at step
 * `step` / ends with rc after us microseconds; an error dumps the recorder
 * (once per epoch: FT_Quorum's count). */
uint64_t fti_obs_call_begin(fti_obs_step_t *o, int op, uint64_t bytes, int64_t quorum_id,
                            int64_t step);
void fti_obs_call_end(fti_obs_step_t *o, int op, uint64_t seq, int rc, int64_t us,
                      uint64_t bytes, int64_t epoch);

/* A reduction over the slice failed with rc at step `step`, naming peer
 * (NULL unknown): the failure opens (or joins) a recovery, detect = the
 * call's time. */
void fti_obs_collective_failed(fti_obs_step_t *o, int rc, const char *peer, int64_t step);

/* FT_Commit's outcome for `step` (the step before it; now: the committed
 * steps after it): committed or the reason rc. */
void fti_obs_commit(fti_obs_step_t *o, int64_t step, int64_t now, bool committed, int rc);

#endif
