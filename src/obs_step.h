/*
 * obs_step.h - the step's side of "knowing what happened" (issue 26,
 * DESIGN section 11): the rank's counters (RankMetrics), its recovery
 * tracker (recovery.h) and its flight recorder (flight.h), fed from the
 * FT_ calls (ft.c) and the quorum's parts (step_quorum.c).  Group rank 0
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

#include "control/obs_report.h"
#include "flight.h"
#include "recovery.h"

struct fti_step;

typedef struct fti_obs_step {
    fti_rank_metrics_t metrics;
    fti_recovery_t rec;
    fti_flight_h flight;          /* NULL: FTMPI_FLIGHT_RECORDS=0 */
    int64_t call_start_ms;        /* the running reduction's start (monotonic) */
    int step_error;               /* the step's first failure, 0 none */
    char step_peer[FTI_REPLICA_ID_SIZE]; /* and the peer it named ("" none) */
    int64_t dumped_epoch;         /* the step whose error dumped the recorder */
    uint64_t fail_seq;            /* failed steps reported */
} fti_obs_step_t;

/* FT_Init (after the set-up) and FT_Finalize (before the teardown). */
int fti_obs_start(struct fti_step *s);
void fti_obs_stop(struct fti_step *s);

/* The quorum's parts: the exchange (ms), the slice rebuild (ms), a heal
 * (ms, bytes installed). */
void fti_obs_quorum(struct fti_step *s, int64_t ms);
void fti_obs_slice(struct fti_step *s, int64_t ms);
void fti_obs_heal(struct fti_step *s, int64_t ms, int64_t bytes);

/* A call of op (flight.h) starts / ends with rc after us microseconds;
 * an error dumps the recorder (once per step). */
uint64_t fti_obs_call_begin(struct fti_step *s, int op, uint64_t bytes);
void fti_obs_call_end(struct fti_step *s, int op, uint64_t seq, int rc, int64_t us,
                      uint64_t bytes);

/* A reduction over the slice failed with rc, naming peer (NULL unknown):
 * the failure opens (or joins) a recovery, detect = the call's time. */
void fti_obs_collective_failed(struct fti_step *s, int rc, const char *peer);

/* FT_Commit's outcome for `step` (the step before it): committed or the
 * reason rc. */
void fti_obs_commit(struct fti_step *s, int64_t step, bool committed, int rc);

#endif
