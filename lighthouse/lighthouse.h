/*
 * lighthouse.h - the lighthouse server: tracks live replica groups through
 * heartbeats and quorum requests and issues quorums by the rules of
 * quorum.h.  Used by ftmpi-lighthouse (lighthouse/main.c) and by mode B
 * (the last world rank runs it in-process).
 *
 * Threads: everything runs on the event_base given to create; every call
 * below must be made on that loop's thread (or with the loop stopped),
 * except fti_lighthouse_snapshot, fti_lighthouse_group_status and
 * fti_lighthouse_n_finalized, which take the internal lock and may be
 * called from any thread.
 *
 * Failure detection by connection close (liveness.h): a group whose
 * manager's connections all closed (the process died) is dropped from the
 * table at once, as if it had finalized but without the finalized mark;
 * the others' next quorum forms without it.  Heartbeats still catch what
 * closes nothing (a stopped process, a lost network).
 *
 * History (history.h): a bounded ring of events and step-rate samples
 * and per-group counters, copied into every snapshot for the dashboard.
 * Logs: a quorum is logged at info level when its id or membership
 * changes, at debug level otherwise; a summary line every
 * summary_interval_ms.
 *
 * Groups leave with LIGHTHOUSE_FINALIZE (FT_Finalize, or a mode-B group
 * that lost a rank): the lighthouse forgets them at once (their pending
 * request is answered with FT_ERR_GROUP_LOST) and ignores their later
 * heartbeats; a later quorum request under the same id (a restarted
 * group) brings the group back.  The ids of finalized groups are kept up
 * to max_finalized; past it the oldest finalize is forgotten (its group
 * then reads UNKNOWN, and a heartbeat that comes that late would add it
 * back as a silent group that expires like any other).
 *
 * Bounds on what requests make the lighthouse keep (each refused or
 * evicted with a clear error, never grown without limit):
 *   - groups in the table: FTI_QUORUM_MAX_GROUPS (quorum.h), expired after
 *     FTI_QUORUM_EXPIRE_FACTOR heartbeat timeouts of silence;
 *   - a member's data: FTI_QUORUM_MAX_DATA bytes (quorum.h); a larger
 *     request is answered FT_ERR_ARG "member data of N bytes over the cap";
 *   - pending quorum calls per group: max_waiters_per_group; a newer call
 *     ends the oldest with FT_ERR_TIMEOUT ("superseded");
 *   - finalized ids: max_finalized (oldest evicted);
 *   - kill RPCs in flight: 16 in a process (one more is refused with
 *     FT_ERR_SYSTEM and a warning);
 *   - what is kept of a group for the dashboard and /metrics (history,
 *     recoveries, rank counters) and its SDC fingerprints: forgotten
 *     forget_after_ms after it died, went silent or finalized.
 *
 * Claimed steps (quorum.h, fti_quorum_request_checked): after a quorum
 * whose max step is M its members may claim at most M + 1; a group new to
 * the table may claim at most the last quorum's M + 1 while one member of
 * that quorum is still healthy (with none - the first quorum, a restarted
 * lighthouse - any claim is believed; after a quorum at step 0 too, since
 * its members may then load a durable checkpoint of any step).  A claim above is not refused but
 * recorded as step 0, with a warning naming the group: it heals from the
 * real members and is never their heal source, so a fake group claiming
 * step 1,000,000 cannot make a running job heal from it.  Without a job
 * secret a fake group can still claim the current step honestly: only
 * --token-file keeps strangers out.
 */
#ifndef FTI_LIGHTHOUSE_H
#define FTI_LIGHTHOUSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/auth.h"
#include "base/sizes.h"
#include "lighthouse/sdc.h"

struct event_base;

/* Default RPC addresses.  Without a job secret the lighthouse listens on
 * loopback only (anyone who reaches the port could join, kill or feed the
 * job); ftmpi-lighthouse takes FTI_LH_BIND_ANY by default only with
 * --token-file.  An explicit --bind is always obeyed. */
#define FTI_LH_BIND_LOOPBACK "127.0.0.1:29510"
#define FTI_LH_BIND_ANY "0.0.0.0:29510"

#define FTI_LH_MAX_FINALIZED 10000        /* default max_finalized */
#define FTI_LH_MAX_WAITERS_PER_GROUP 4    /* default max_waiters_per_group */

#define FTI_LH_JOB_SIZE 64

struct fti_quorum;

/* Whether this lighthouse leads (several lighthouses of one job, one
 * elected through etcd: lighthouse/leader.h).  leading runs on any thread
 * (the snapshot asks it too), the others on the loop thread.
 *   leading: true when it may answer groups now, with *term_p naming this
 *     leadership (another value after each election) and *id_floor_p the
 *     highest quorum id a former leader may have issued (the next new id
 *     is above it); false with leader set to the leader's "host:port" (""
 *     = none known).
 *   record: called before a quorum with a new id is sent; FT_SUCCESS when
 *     it was written under this lighthouse's leadership; else the quorum
 *     is not sent (FT_ERR_NOT_LEADER: its waiters are redirected; another
 *     error, etcd out of reach: they fail with FT_ERR_CONNECT, which the
 *     clients ask again, as of a lighthouse that is gone).
 *   save, load: a named piece of state (the killed groups) written under
 *     the leadership, and read back by a new leader (*val_p malloc'ed,
 *     NUL-terminated; FT_ERR_NOT_FOUND when none was saved). */
#define FTI_LH_MEMBERS_MAX 16 /* lighthouses of one job named on the pages */

typedef struct fti_lh_gate {
    bool (*leading)(void *arg, int64_t *term_p, int64_t *id_floor_p, char *leader, size_t len);
    /* the job's lighthouses alive in etcd (up to max "host:port", sorted)
     * and the leader's address ("" none known); any thread */
    size_t (*members)(void *arg, char (*out)[FTI_ADDRESS_SIZE], size_t max, char *leader,
                      size_t len);
    int (*record)(void *arg, const struct fti_quorum *q);
    int (*save)(void *arg, const char *name, const char *val);
    int (*load)(void *arg, const char *name, char **val_p);
    void *arg;
} fti_lh_gate_t;

typedef struct fti_lighthouse_opts {
    char bind[FTI_ADDRESS_SIZE]; /* "host:port" of the RPC server (default
                                  * FTI_LH_BIND_LOOPBACK) */
    int min_replicas;            /* >= 1 */
    int64_t join_timeout_ms;     /* default 60000 */
    int64_t quorum_tick_ms;      /* default 100 */
    int64_t heartbeat_timeout_ms;/* default 5000 */
    size_t max_frame;            /* RPC frame cap, default 4 MiB */
    int64_t initial_quorum_id;   /* the first quorum gets this + 1; -1 (default) =
                                  * the wall clock in ms, so a restarted
                                  * lighthouse never repeats an id (groups also
                                  * report the highest id they saw: a new id
                                  * is always above it, whatever the clock) */
    size_t max_finalized;        /* finalized ids kept, >= 1 (default
                                  * FTI_LH_MAX_FINALIZED); oldest evicted */
    size_t exit_when_finalized;  /* stop the loop (ftmpi-lighthouse exits 0) once
                                  * this many groups finalized and no group is
                                  * left in the table; 0 (default) = never */
    size_t max_waiters_per_group;/* pending quorum calls of one replica id,
                                  * >= 1 (default FTI_LH_MAX_WAITERS_PER_GROUP) */
    int64_t summary_interval_ms; /* an info line with steps/s, quorum and
                                  * failures this often; 0 = none (default 60000) */
    char job[FTI_LH_JOB_SIZE];   /* /metrics' job label (default "ftmpi") */
    int64_t forget_after_ms;     /* a group gone (dead, silent, finalized) this
                                  * long is forgotten: its /metrics series,
                                  * recoveries, SDC fingerprints (default
                                  * FTI_LH_HISTORY_WINDOW_MS, the history's
                                  * 15 min), >= 1 */
    const fti_lh_gate_t *gate;   /* NULL (default): this lighthouse always
                                  * leads; else it serves only while
                                  * gate->leading says so, and answers
                                  * FT_ERR_NOT_LEADER naming the leader */
    bool has_key;                /* the job's key (default none): every RPC */
    fti_auth_key_t key;          /* connection, in and out, proves it first */
} fti_lighthouse_opts_t;

void fti_lighthouse_opts_default(fti_lighthouse_opts_t *o);

typedef struct fti_lighthouse *fti_lighthouse_h;

/* Starts serving on base.  Release with fti_lighthouse_destroy. */
int fti_lighthouse_create(struct event_base *base, const fti_lighthouse_opts_t *o,
                          fti_lighthouse_h *lh_p);
void fti_lighthouse_destroy(fti_lighthouse_h lh);
const char *fti_lighthouse_address(fti_lighthouse_h lh);

/* Kills replica_id: from now on the lighthouse counts it neither healthy
 * nor a member and refuses its heartbeats and quorum requests with
 * FT_ERR_KILLED until a new incarnation of it asks (killed.h); its
 * waiting quorum calls end with FT_ERR_KILLED; a Kill is forwarded to its
 * manager (non-blocking: the RPC runs in a short-lived thread).  Loop
 * thread.  FT_ERR_NOT_FOUND if the group is unknown. */
int fti_lighthouse_kill(fti_lighthouse_h lh, const char *replica_id, const char *msg);

/* How a group stands (mode B: the lighthouse rank serves until no group
 * is live).  Any thread. */
typedef enum {
    FTI_LH_GROUP_UNKNOWN,   /* never heard of, or forgotten (expired) */
    FTI_LH_GROUP_LIVE,      /* heartbeat within the heartbeat timeout */
    FTI_LH_GROUP_SILENT,    /* known, but no heartbeat for that long */
    FTI_LH_GROUP_FINALIZED  /* sent LIGHTHOUSE_FINALIZE (and no request since) */
} fti_lh_group_status_t;

/* *age_ms_p (may be NULL) gets the age of the last heartbeat, -1 unless
 * LIVE or SILENT. */
fti_lh_group_status_t fti_lighthouse_group_status(fti_lighthouse_h lh, const char *replica_id,
                                                  int64_t *age_ms_p);

/* Mode B: the lighthouse knows the groups before they call; each counts
 * as having sent a heartbeat now, so the first quorum waits for every one
 * of them (rule 7, up to the join timeout) instead of issuing with the
 * first to ask.  Loop thread, or before the loop runs. */
int fti_lighthouse_expect_group(fti_lighthouse_h lh, const char *replica_id);

/* Groups that sent LIGHTHOUSE_FINALIZE (and did not ask again), at most
 * max_finalized. */
size_t fti_lighthouse_n_finalized(fti_lighthouse_h lh);

/* ---- read-only view for the dashboard and /metrics ---------------------- */

#define FTI_LH_HIST_BUCKETS 12
/* upper bounds in ms of the quorum formation latency histogram; the last
 * bucket is +Inf */
extern const double fti_lh_hist_bounds_ms[FTI_LH_HIST_BUCKETS - 1];

typedef struct fti_lh_member_view {
    char replica_id[FTI_REPLICA_ID_SIZE];
    char address[FTI_ADDRESS_SIZE];
    int64_t step;
    uint64_t world_size;
    int64_t heartbeat_age_ms;  /* -1 if never */
    bool in_quorum;            /* member of the current quorum */
    bool behind;               /* in quorum with step < the quorum's max step */
    bool waiting;              /* asked for a quorum not yet issued */
    bool healthy;              /* heartbeat within the timeout */
    bool dead;                 /* its connections closed (dropped at once) */
    bool finished;             /* it finalized (FT_Finalize): gone, not lost */
    bool killed;               /* killed by an operator (killed.h): never healthy */
} fti_lh_member_view_t;

struct fti_lh_history;
struct fti_lh_recov;

/* What a lighthouse is among its job's lighthouses (opts.gate). */
typedef enum {
    FTI_LH_ROLE_ALONE,   /* no gate: the job's one lighthouse */
    FTI_LH_ROLE_LEADER,  /* elected (etcd) */
    FTI_LH_ROLE_STANDBY  /* not the leader: names it to the groups */
} fti_lh_role_t;

typedef struct fti_lh_snapshot {
    int64_t quorum_id;         /* -1 before the first quorum */
    int64_t quorum_created_ms; /* wall clock */
    int64_t max_step;
    int min_replicas;
    char waiting_reason[FTI_REASON_SIZE]; /* why the next quorum is not issued yet */
    size_t n_members;          /* quorum members first, then the others */
    fti_lh_member_view_t *members;
    /* counters */
    uint64_t quorums_issued;
    uint64_t heartbeats;
    uint64_t quorum_requests;
    uint64_t rejected_frames;  /* sum of every RPC reject kind */
    uint64_t rejected_garbage, rejected_oversize, rejected_truncated, rejected_unknown,
        rejected_decode;
    uint64_t rejected_auth;    /* connections refused: no or a wrong job secret */
    uint64_t hist[FTI_LH_HIST_BUCKETS]; /* non-cumulative counts */
    double hist_sum_ms;
    uint64_t hist_count;
    int64_t wall_ms;           /* when the snapshot was taken */
    struct fti_lh_history *history; /* a copy (history.h); NULL on no memory */
    struct fti_lh_recov *recov; /* a copy (recoveries.h); NULL on no memory */
    char job[FTI_LH_JOB_SIZE];  /* opts.job */
    int role;                  /* fti_lh_role_t */
    char leader[FTI_ADDRESS_SIZE]; /* a standby's leader ("" = none known) */
    size_t n_lighthouses;      /* the job's lighthouses (etcd), sorted */
    struct {
        char address[FTI_ADDRESS_SIZE];
        bool leader;
    } lighthouses[FTI_LH_MEMBERS_MAX];
    uint64_t sdc_checks;       /* SDC comparisons made (lighthouse/sdc.h) */
    size_t sdc_groups;         /* groups whose fingerprints or verdict are kept */
    size_t n_sdc_reports;      /* the last reports, oldest first */
    fti_sdc_report_t sdc_reports[FTI_SDC_REPORTS];
} fti_lh_snapshot_t;

/* Takes a consistent copy.  Free with fti_lh_snapshot_free. */
int fti_lighthouse_snapshot(fti_lighthouse_h lh, fti_lh_snapshot_t **snap_p);
void fti_lh_snapshot_free(fti_lh_snapshot_t *snap);

/* ---- HTTP (lighthouse/http.c) ------------------------------------------- */

typedef struct fti_lh_http *fti_lh_http_h;

/* Serves GET /, GET /status.json, GET /metrics and POST /replica/<id>/kill
 * with evhttp on base.  token: "" = no token; otherwise the kill needs
 * "Authorization: Bearer <token>".  Release with fti_lh_http_destroy. */
int fti_lh_http_create(struct event_base *base, fti_lighthouse_h lh, const char *bind,
                       const char *token, fti_lh_http_h *http_p);
void fti_lh_http_destroy(fti_lh_http_h http);
const char *fti_lh_http_address(fti_lh_http_h http);

#endif
