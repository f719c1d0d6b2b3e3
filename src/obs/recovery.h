/*
 * recovery.h - one group's recoveries broken down where they happen
 * (issue 26, DESIGN section 11): a pure tracker the step feeds with what
 * it measures (the clock is passed in), kept by every rank; group rank 0
 * reports what it ends (event log, manager -> lighthouse).
 *
 * A recovery opens at the first failure of a step (survivor: the failed
 * collective, detect = that call's start to its error; or a failed commit
 * with no failed collective, detect unknown) or at FT_Init of a restarted
 * process (restart).  While open, every quorum exchange, slice rebuild and
 * heal adds its time (and bytes) to its phase and every failed commit to
 * steps_lost; the next committed step closes it.
 *
 * Threads: the caller's (the step's state rules, step.h).
 */
#ifndef FTI_RECOVERY_H
#define FTI_RECOVERY_H

#include <stdbool.h>
#include <stdint.h>

#include "control/obs_report.h"

typedef struct fti_recovery {
    bool open;
    fti_recovery_rec_t cur;
    uint64_t seq;       /* recoveries ended so far */
} fti_recovery_t;

/* A restarted process (FTMPI_RESTART_COUNT > 0) is up at wall (FT_Init
 * done); its agent saw the last run fail at lost (0 unknown): the
 * recovery starts there, restart_ms = wall - lost. */
void fti_recovery_restart(fti_recovery_t *r, int64_t wall, int64_t lost);

/* A failure seen in `step` at wall; detect_ms -1 when unknown; error the
 * FT_ERR_* code, peer the replica id named ("" / NULL unknown).  Opens a
 * survivor recovery unless one is open (the first failure names it). */
void fti_recovery_failed(fti_recovery_t *r, int64_t step, int64_t wall, int64_t detect_ms,
                         int error, const char *peer);

/* Phases of an open recovery (no-ops when none is open). */
void fti_recovery_quorum(fti_recovery_t *r, int64_t ms);
void fti_recovery_slice(fti_recovery_t *r, int64_t ms);
void fti_recovery_heal(fti_recovery_t *r, int64_t ms, int64_t bytes);

/* The step ended: a failed commit counts a lost step (opening a recovery
 * with error if none is open); a committed one (step_after = the step
 * now) closes the open recovery into *rec_p and returns true. */
bool fti_recovery_step_end(fti_recovery_t *r, bool committed, int64_t step, int64_t step_after,
                           int64_t wall, int error, fti_recovery_rec_t *rec_p);

#endif
