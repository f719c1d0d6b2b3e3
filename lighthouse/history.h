/*
 * history.h - what the lighthouse remembers for its dashboard: a bounded
 * ring of events (new quorum ids, groups that joined, died, came back as a
 * new incarnation, healed or failed a commit), a ring of periodic samples
 * (step rate, participants), and per-group counters for /metrics.
 *
 * Pure bookkeeping, no I/O and no locks: the lighthouse calls it on its
 * loop thread under its own mutex and copies it for the HTTP pages
 * (fti_lh_history_copy).  Every bound is fixed at init: the rings drop
 * their oldest entry, the group table refuses groups past max_groups
 * (counted in groups_dropped) and forgets a group gone (dead, silent or
 * finalized) for longer than the caller's window (fti_lh_history_expire).
 */
#ifndef FTI_LH_HISTORY_H
#define FTI_LH_HISTORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sizes.h"

#define FTI_LH_HISTORY_EVENTS 1024     /* events kept */
#define FTI_LH_HISTORY_SAMPLES 900     /* samples kept (15 min at 1 s) */
#define FTI_LH_HISTORY_GROUPS 100000   /* groups tracked at most */
#define FTI_LH_SAMPLE_MS 1000          /* sampling period */
/* the history window: what the samples span (15 min); a group gone for
 * longer is forgotten (fti_lh_history_expire, the lighthouse's
 * forget_after_ms) */
#define FTI_LH_HISTORY_WINDOW_MS ((int64_t)FTI_LH_HISTORY_SAMPLES * FTI_LH_SAMPLE_MS)

typedef enum {
    FTI_LH_EV_QUORUM,        /* a new quorum id; value = members */
    FTI_LH_EV_JOINED,        /* a group asked for the first time (or came back) */
    FTI_LH_EV_DEAD_CLOSED,   /* its manager's connections closed: dropped at once */
    FTI_LH_EV_DEAD_TIMEOUT,  /* no heartbeat within the heartbeat timeout */
    FTI_LH_EV_RESTARTED,     /* a new incarnation; value = restarts it reports */
    FTI_LH_EV_HEAL,          /* the group reported a heal; value = bytes */
    FTI_LH_EV_COMMIT_FAILED, /* the group reported failed commits; value = how many */
    FTI_LH_EV_FINALIZED,     /* the group left (FT_Finalize) */
    FTI_LH_EV_KILLED,        /* an operator killed the group (dashboard) */
    FTI_LH_EV_SDC,           /* its state's fingerprints disagreed (lighthouse/sdc.h);
                              * value = step */
    FTI_LH_EV_KINDS
} fti_lh_event_kind_t;

/* "quorum", "joined", "dead", "timeout", "restarted", "heal", "commit_failed",
 * "finalized", "killed", "sdc". */
const char *fti_lh_event_name(int kind);

typedef struct fti_lh_event {
    int64_t wall_ms;
    int kind;                 /* fti_lh_event_kind_t */
    int64_t quorum_id;        /* the quorum id current when it happened */
    int64_t value;            /* see the kinds */
    char replica_id[FTI_REPLICA_ID_SIZE]; /* "" for FTI_LH_EV_QUORUM */
} fti_lh_event_t;

typedef struct fti_lh_sample {
    int64_t wall_ms;
    double steps_per_s;       /* sum over live groups */
    int64_t participants;     /* members of the current quorum */
    int64_t max_step;
} fti_lh_sample_t;

typedef enum { FTI_LH_G_ALIVE, FTI_LH_G_SILENT, FTI_LH_G_DEAD, FTI_LH_G_FINALIZED } fti_lh_gstate_t;

/* "alive", "silent", "dead", "finalized" */
const char *fti_lh_gstate_name(int state);

typedef struct fti_lh_gstats {
    char replica_id[FTI_REPLICA_ID_SIZE];
    int state;                /* fti_lh_gstate_t */
    int64_t state_since_ms;   /* wall */
    uint64_t incarnation;
    int64_t step;
    double steps_per_s;       /* over the last sample period */
    uint64_t advances;        /* requests that advanced the step (a heal's jump
                               * counts one: the rate is the group's own pace) */
    uint64_t adv_at_sample;
    int64_t sample_ms;
    uint64_t failures;        /* dead or silent events */
    uint64_t restarts;        /* new incarnations seen here */
    int64_t reported_restarts;/* FTMPI_RESTART_COUNT the group reports */
    int64_t heals, heal_bytes;/* as the group reports them */
    int64_t commit_failures;  /* failed commits reported, summed */
    char last_failure[160];   /* why its last step failed, as reported ("" none) */
    uint64_t sdc_mismatches;  /* SDC checks it disagreed in (lighthouse/sdc.h) */
} fti_lh_gstats_t;

typedef struct fti_lh_history {
    fti_lh_event_t *events;   /* ring of n_events_cap */
    size_t n_events_cap, ev_next, n_events;
    uint64_t events_total;
    fti_lh_sample_t *samples; /* ring of n_samples_cap */
    size_t n_samples_cap, s_next, n_samples;
    fti_lh_gstats_t *groups;  /* sorted by replica_id */
    size_t n_groups, cap_groups, max_groups;
    uint64_t groups_dropped;  /* refused: the table was full */
    uint64_t groups_forgotten;/* gone for longer than the window (expire) */
    uint64_t failures_forgotten; /* their failures: counted still */
    int64_t quorum_id;        /* the last quorum id recorded */
    int64_t last_sample_ms;   /* wall, -1 none */
} fti_lh_history_t;

/* Bounds: events, samples, groups (0 = the FTI_LH_HISTORY_* defaults).
 * Release with fti_lh_history_clear. */
int fti_lh_history_init(fti_lh_history_t *h, size_t events, size_t samples, size_t groups);
void fti_lh_history_clear(fti_lh_history_t *h);

void fti_lh_history_event(fti_lh_history_t *h, int64_t wall, int kind, const char *replica_id,
                          int64_t value);

/* A quorum was issued with id and members (an event when the id is new). */
void fti_lh_history_quorum(fti_lh_history_t *h, int64_t wall, int64_t quorum_id, size_t members);

/* A quorum request of replica_id: joined / restarted / commit-failed
 * events as they apply; keeps the step. */
void fti_lh_history_request(fti_lh_history_t *h, int64_t wall, const char *replica_id,
                            uint64_t incarnation, int64_t step, int64_t commit_failures);

/* A heartbeat's report (heals reported above the last count make an event). */
void fti_lh_history_report(fti_lh_history_t *h, int64_t wall, const char *replica_id,
                           int64_t restarts, int64_t heals, int64_t heal_bytes,
                           const char *last_failure);

/* The group is gone (kind FTI_LH_EV_DEAD_CLOSED, _DEAD_TIMEOUT or
 * _FINALIZED); an event unless it was in that state already. */
void fti_lh_history_gone(fti_lh_history_t *h, int64_t wall, const char *replica_id, int kind);

/* A heartbeat arrived: a silent group is alive again. */
void fti_lh_history_alive(fti_lh_history_t *h, int64_t wall, const char *replica_id);

/* Whether a sample is due at wall (FTI_LH_SAMPLE_MS after the last). */
bool fti_lh_history_sample_due(const fti_lh_history_t *h, int64_t wall);

/* Takes a sample: each live group's rate since the last sample, their sum,
 * participants and max_step as given. */
void fti_lh_history_sample(fti_lh_history_t *h, int64_t wall, int64_t participants,
                           int64_t max_step);

/* The group's entry, NULL if not tracked. */
fti_lh_gstats_t *fti_lh_history_group(fti_lh_history_t *h, const char *replica_id);

/* Whether the job is over: at least one group is known and every group
 * known finalized (none alive, silent or dead). */
bool fti_lh_history_finished(const fti_lh_history_t *h);

/* Events and samples oldest first: the i-th (i < n_events / n_samples). */
const fti_lh_event_t *fti_lh_history_event_at(const fti_lh_history_t *h, size_t i);
const fti_lh_sample_t *fti_lh_history_sample_at(const fti_lh_history_t *h, size_t i);

/* A deep copy into *dst (a plain history: rings unrolled, oldest first).
 * Release with fti_lh_history_clear. */
int fti_lh_history_copy(const fti_lh_history_t *h, fti_lh_history_t *dst);

/* Forgets every group gone (state not alive) for longer than after_ms at
 * wall: gone(replica_id, arg) is called for each before it goes (NULL:
 * none).  Its failures still count in fti_lh_history_failures.  Returns
 * how many went. */
size_t fti_lh_history_expire(fti_lh_history_t *h, int64_t wall, int64_t after_ms,
                             void (*gone)(const char *replica_id, void *arg), void *arg);

/* Totals over the groups (forgotten ones included): failures. */
uint64_t fti_lh_history_failures(const fti_lh_history_t *h);

#endif
