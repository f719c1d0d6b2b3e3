/*
 * recoveries.h - what the lighthouse keeps of the groups' recoveries,
 * failed steps and rank counters (issue 26, DESIGN section 11), as their
 * managers' heartbeats report them (LighthouseHeartbeatRequest fields
 * 8-10, control/obs_report.h): the last FTI_LH_RECOV_KEEP recoveries and
 * FTI_LH_FAILS_KEEP failed steps for the dashboard, per group histograms of
 * each recovery phase for /metrics, and each group's latest rank counters.
 * A record is kept once per (group, incarnation, seq): a heartbeat that
 * carried it again (its answer was lost) changes nothing.
 *
 * Pure bookkeeping, no I/O and no locks: the server calls it under its
 * mutex (as history.h); a zeroed struct is an empty one (allocations come
 * with the first report).  Groups past FTI_LH_RECOV_GROUPS are not tracked
 * (counted in groups_dropped); a group the server no longer knows is
 * forgotten with everything kept of it (fti_lh_recov_forget, _expire).
 */
#ifndef FTI_LH_RECOVERIES_H
#define FTI_LH_RECOVERIES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sizes.h"
#include "control/obs_report.h"
#include "control/proto/ftmpi.pb-c.h"

#define FTI_LH_RECOV_KEEP 64
#define FTI_LH_FAILS_KEEP 256
#define FTI_LH_RECOV_GROUPS 4096
#define FTI_LH_SEC_BUCKETS 14  /* le 0.005 .. 120 s, +Inf */
#define FTI_LH_BYTE_BUCKETS 10 /* le 4 KiB .. 64 GiB, +Inf */

/* The phases of /metrics' ftmpi_recovery_<phase>_seconds. */
enum { FTI_LH_PH_DETECT, FTI_LH_PH_RESTART, FTI_LH_PH_QUORUM, FTI_LH_PH_SLICE, FTI_LH_PH_HEAL,
       FTI_LH_PH_TOTAL, FTI_LH_PHASES };
/* "detect", "restart", "quorum", "slice", "heal", "duration" */
const char *fti_lh_phase_name(int phase);

extern const double fti_lh_sec_bounds[FTI_LH_SEC_BUCKETS - 1];
extern const double fti_lh_byte_bounds[FTI_LH_BYTE_BUCKETS - 1];

/* A histogram: non-cumulative counts, the exact sum in integer units
 * (ms or bytes), so /metrics prints the event log's numbers exactly. */
typedef struct fti_lh_hist64 {
    uint64_t n[FTI_LH_SEC_BUCKETS > FTI_LH_BYTE_BUCKETS ? FTI_LH_SEC_BUCKETS : FTI_LH_BYTE_BUCKETS];
    int64_t sum;
    uint64_t count;
} fti_lh_hist64_t;

typedef struct fti_lh_recov_entry {
    char replica_id[FTI_REPLICA_ID_SIZE];
    fti_recovery_rec_t r;
} fti_lh_recov_entry_t;

typedef struct fti_lh_fail_entry {
    char replica_id[FTI_REPLICA_ID_SIZE];
    fti_step_failure_t f;
} fti_lh_fail_entry_t;

typedef struct fti_lh_recov_group {
    char replica_id[FTI_REPLICA_ID_SIZE];
    uint64_t incarnation;
    uint64_t rec_seq, fail_seq;        /* the highest kept of this incarnation */
    fti_lh_hist64_t phase[FTI_LH_PHASES]; /* ms */
    fti_lh_hist64_t heal_bytes;
    uint64_t recoveries[2];            /* by kind (obs_report.h) */
    int64_t steps_lost;
    double last_heal_rate;             /* bytes/s of its last recovery that healed, 0 none */
    fti_rank_metrics_t *ranks;         /* n_ranks, group-rank order */
    size_t n_ranks;
} fti_lh_recov_group_t;

typedef struct fti_lh_recov {
    fti_lh_recov_entry_t *rec;   /* ring of FTI_LH_RECOV_KEEP (NULL until the first) */
    size_t rec_next, n_rec;
    fti_lh_fail_entry_t *fail;   /* ring of FTI_LH_FAILS_KEEP */
    size_t fail_next, n_fail;
    fti_lh_recov_group_t *groups; /* by replica id, in the order first seen */
    size_t n_groups, cap_groups;
    uint64_t groups_dropped;
} fti_lh_recov_t;

/* One heartbeat's report of (replica_id, incarnation). */
void fti_lh_recov_report(fti_lh_recov_t *t, const Ftmpi__LighthouseHeartbeatRequest *req);

/* Forgets replica_id: its histograms and rank counters, and its entries
 * among the recoveries and failed steps kept. */
void fti_lh_recov_forget(fti_lh_recov_t *t, const char *replica_id);

/* Forgets every group for which known(replica_id, arg) is false; returns
 * how many went. */
size_t fti_lh_recov_expire(fti_lh_recov_t *t, bool (*known)(const char *replica_id, void *arg),
                           void *arg);

/* The i-th recovery / failed step kept, oldest first. */
const fti_lh_recov_entry_t *fti_lh_recov_at(const fti_lh_recov_t *t, size_t i);
const fti_lh_fail_entry_t *fti_lh_fail_at(const fti_lh_recov_t *t, size_t i);

/* A deep copy (rings unrolled, oldest first).  Release with
 * fti_lh_recov_clear. */
int fti_lh_recov_copy(const fti_lh_recov_t *t, fti_lh_recov_t *dst);
void fti_lh_recov_clear(fti_lh_recov_t *t);

#endif
