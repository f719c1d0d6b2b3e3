/*
 * lighthouse/server_int.h - the server's state, shared by its files only:
 * server.c (the loop: requests, ticks, create and destroy), server_eval.c
 * (the evaluation: issuing a quorum, answering its waiters),
 * server_gate.c (leadership: lighthouse/leader.h), replies.c (the
 * packed quorum replies), server_admin.c (kill, snapshot, defaults),
 * finalized.c (the groups that finalized), server_history.c (the
 * once-a-second bookkeeping, forgetting gone groups).
 */
#ifndef FTI_LH_SERVER_INT_H
#define FTI_LH_SERVER_INT_H

#include <event2/event.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "control/proto/ftmpi.pb-c.h"
#include "control/results.h"
#include "lighthouse/history.h"
#include "lighthouse/lighthouse.h"
#include "lighthouse/liveness.h"
#include "lighthouse/quorum.h"
#include "lighthouse/recoveries.h"
#include "lighthouse/sdc.h"
#include "lighthouse/killed.h"
#include "lighthouse/waiters.h"

#define LH_KILL_TIMEOUT_MS 5000
#define LH_KILLS_MAX 16 /* kill RPCs in flight at most (one thread each) */
#define LH_COMPACT_MAX_RANKS 4096 /* group ranks a compact reply lists at most */
#define LH_COMPACT_MAX_IDS 64 /* compact replies name the members up to this many */

struct fin_entry;

/* One packed LighthouseQuorumResponse shared by every waiter it answers
 * (released when the last send is done). */
struct shared_reply {
    int refs;
    size_t len;
    uint8_t data[];
};

struct fti_lighthouse {
    struct event_base *base;
    fti_lighthouse_opts_t opts;
    fti_rpc_server_h rpc;
    struct event *tick_ev;
    struct event *eval_ev; /* activated by requests: one evaluation per loop batch */
    struct waiters waiters;
    fti_liveness_h live;  /* connections that speak for groups (loop thread) */
    bool closing;         /* destroy runs: connection closes kill nobody */
    int64_t next_summary_ms;
    uint64_t summary_failures, summary_quorums; /* at the last summary line */

    pthread_mutex_t mu; /* guards everything below */
    fti_lh_history_t history;
    fti_quorum_state_h st;
    int64_t quorum_created_wall; /* wall ms of the current quorum */
    char reason[FTI_QREASON_MAX];
    uint64_t quorums_issued, heartbeats, quorum_requests;
    fti_rpc_stats_t rpc_stats; /* refreshed on the loop thread */
    uint64_t hist[FTI_LH_HIST_BUCKETS];
    double hist_sum_ms;
    uint64_t hist_count;
    int64_t round_first_req_ms; /* first request since the last quorum, -1 none */
    int64_t round_last_req_ms;
    /* groups that finalized, sorted (strcmp) for binary search; at most
     * opts.max_finalized, the oldest (lowest seq) evicted first */
    struct fin_entry *finalized;
    size_t n_finalized, cap_finalized;
    uint64_t fin_seq; /* finalizes so far */
    fti_lh_killed_t killed; /* incarnations killed by an operator (killed.h) */
    fti_lh_recov_t recov;   /* recoveries, failed steps, rank counters (recoveries.h) */
    fti_sdc_h sdc;          /* fingerprints waiting, reports (sdc.h) */
    int64_t gate_term;      /* the leadership of opts.gate taken over (loop thread) */
    int64_t gate_rec_id, gate_rec_term; /* the quorum last recorded through opts.gate, and
                                         * under which leadership (loop thread) */
    fti_lh_killed_t gate_killed; /* killed as last saved through opts.gate (loop thread) */
    char *gate_sdc; /* the open SDC verdicts as last saved (server_gate.c), NULL none */
};

/* At most this many open SDC verdicts are kept in etcd (the first by id;
 * the rest stay with this leader only). */
#define FTI_LH_SDC_SAVED 256

/* server_gate.c: leadership (opts.gate; loop thread).  refuse: true when
 * this lighthouse does not lead and the call was answered
 * FT_ERR_NOT_LEADER; leading: false when it does not lead (every waiting
 * call then redirected); record: a new quorum id written under the
 * leadership before it is sent (FT_SUCCESS), else its waiters ended. */
bool fti_lh_gate_refuse(struct fti_lighthouse *lh, fti_rpc_call_h call);
bool fti_lh_gate_leading(struct fti_lighthouse *lh);
int fti_lh_gate_record(struct fti_lighthouse *lh, const fti_quorum_t *q);
/* The snapshot's role and leader (any thread). */
void fti_lh_gate_snapshot(const struct fti_lighthouse *lh, fti_lh_snapshot_t *s);

/* The reply to a killed group's calls (killed.h). */
#define KILLED_MSG "this group was killed from the lighthouse; a restarted group may join again"

/* killed.h's rules 2 and 3 for a call of (id, incarnation), under lh->mu:
 * FT_ERR_KILLED to refuse it (server_admin.c). */
int fti_lh_killed_call(struct fti_lighthouse *lh, const char *id, uint64_t incarnation);

/* ---- the evaluation (server_eval.c; loop thread) ---- */

/* Whether replica_id is a member of the current quorum (no lock: the loop
 * thread is the only writer of the state). */
bool fti_lh_in_quorum(struct fti_lighthouse *lh, const char *replica_id);
/* Whether a request-triggered evaluation could issue now; when not, the
 * next tick evaluates. */
bool fti_lh_worth_evaluating(struct fti_lighthouse *lh, int64_t now);
/* Applies the rules; issues and answers a quorum if they say so. */
void fti_lh_evaluate(struct fti_lighthouse *lh);
/* Ends the waiting calls of groups that fti_quorum_expire forgot. */
void fti_lh_sweep_forgotten(struct fti_lighthouse *lh);

/* Ends every waiting quorum call of id with rc and msg (loop thread). */
void fti_lh_waiters_end(struct fti_lighthouse *lh, const char *id, int rc, const char *msg);

/* An issued quorum as protobuf structs (pointing into q), with what its
 * replies need: built once per quorum, released with view_clear. */
struct quorum_view {
    const fti_quorum_t *q;
    Ftmpi__QuorumMember *pm;
    Ftmpi__QuorumMember **pp;
    Ftmpi__Quorum pq;
    int64_t dropped;             /* compact replies: failures survived */
    bool idx_tried;
    fti_results_index_h idx;     /* compact replies; NULL until needed or on no memory */
    bool full_tried;
    struct shared_reply *full;   /* the full reply; NULL until needed or on no memory */
    char **ids;                  /* member ids for compact replies (<= LH_COMPACT_MAX_IDS) */
    char (*sdc_report)[FTI_SDC_REPORT_SIZE]; /* per member, with a verdict; NULL none */
};

/* Drops a reference of a shared reply (the last one frees it). */
void fti_lh_reply_release(void *arg);
/* FT_ERR_NO_MEMORY leaves v cleared.  sdc: the SDC check's findings of
 * q's members (n_members entries), NULL when every member agrees. */
int fti_lh_view_init(struct quorum_view *v, const fti_quorum_t *q, int64_t created_wall,
                     int64_t dropped, const fti_sdc_finding_t *sdc);
void fti_lh_view_clear(struct quorum_view *v);
/* The full reply (member list), packed once per view; NULL on no memory. */
struct shared_reply *fti_lh_view_full(struct quorum_view *v);
/* replica_id's compact reply (its own results); NULL with *rc_p set on
 * an error. */
struct shared_reply *fti_lh_view_compact(struct quorum_view *v, const char *replica_id,
                                         bool init_sync, bool want_ids, int *rc_p);

/* ---- the SDC check (server_sdc.c) ---- */

/* A quorum request's fingerprints into lh->sdc (takes lh->mu); ignored,
 * with a warning, when they cannot be kept. */
void fti_lh_sdc_note(struct fti_lighthouse *lh, const Ftmpi__QuorumMember *pm);

/* Judges the issued quorum q under lh->mu: the findings of its members
 * (malloc'ed, n_members entries; free()), NULL when all agree; each fresh
 * report is an event and counts in the group's sdc_mismatches. */
fti_sdc_finding_t *fti_lh_sdc_judge(struct fti_lighthouse *lh, const fti_quorum_t *q,
                                    int64_t wall_ms);

/* The log lines of the fresh findings (after the lock). */
void fti_lh_sdc_log(const fti_quorum_t *q, const fti_sdc_finding_t *f);

/* server_history.c: marks groups whose heartbeats stopped (silent),
 * forgets those gone for longer than opts.forget_after_ms (history,
 * recoveries, SDC fingerprints), takes a sample of the step rate.  Under
 * lh->mu, once per FTI_LH_SAMPLE_MS (now: the monotonic clock). */
void fti_lh_history_tick(struct fti_lighthouse *lh, int64_t now);

/* finalized.c: the groups that finalized (under lh->mu).  Whether id
 * finalized; adds id (it must fit FTI_QID_MAX; evicts the oldest finalize
 * beyond opts.max_finalized; FT_ERR_NO_MEMORY); forgets id. */
bool fti_lh_fin_has(const struct fti_lighthouse *lh, const char *id);
int fti_lh_fin_add(struct fti_lighthouse *lh, const char *id);
void fti_lh_fin_del(struct fti_lighthouse *lh, const char *id);
/* Whether the job is over for opts.exit_when_finalized (loop thread; takes
 * lh->mu): that many groups finalized and none is left in the table.  Logs
 * the end once. */
bool fti_lh_fin_job_done(struct fti_lighthouse *lh);

#endif
