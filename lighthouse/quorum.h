/*
 * quorum.h - the lighthouse's quorum rules as pure functions over a table
 * of replica groups (after torchft's lighthouse; DESIGN.md section 6).
 *
 * Pure: no sockets, no event loop, no clock, no logging.  Every call that
 * depends on time takes now_ms from the caller (any monotonic millisecond
 * clock, e.g. fti_now_ms(); the same clock for every call).
 *
 * The table holds one entry per replica group, keyed by replica_id (at
 * most FTI_QID_MAX - 1 bytes, not empty).  An entry remembers the group's
 * last heartbeat and, while the group has an unanswered quorum request,
 * the details of that request.  The rules, evaluated by fti_quorum_compute:
 *
 *   1. healthy   = now_ms - last heartbeat < heartbeat_timeout_ms; a quorum
 *                  request counts as a heartbeat.
 *   2. requesters = healthy groups with a pending request (one made since
 *                  the last quorum, or left over from it, see commit).
 *      candidates = the requesters, sorted by replica_id (strcmp order).
 *   3. shrink_only: if a previous quorum exists and any requester asks for
 *      shrink_only, candidates = requesters that are members of it.
 *   4. fast quorum: if a previous quorum exists and every member of it is a
 *      requester, issue the candidates now (rules 5-7 are skipped).
 *   5. fewer than min_replicas candidates: wait.
 *   6. split-brain guard: wait unless requesters > healthy groups / 2
 *      (requesters counted before the shrink_only filter, as torchft).
 *   7. some healthy groups have no pending request and the oldest pending
 *      request of a requester is younger than join_timeout_ms: wait for
 *      those stragglers.
 *   8. otherwise issue the candidates.
 * On issue, fti_quorum_commit assigns the quorum id.  A new id is issued
 * when there is no previous quorum, when the sorted (replica_id,
 * incarnation) pairs differ from the previous quorum's (a member joined,
 * left, or was restarted under the same id), when any member reports
 * commit_failures > 0, or when a member has reported a quorum id above the
 * last one issued here (fti_quorum_note_seen: a restarted lighthouse);
 * otherwise the previous id is kept (a change of address, store address or
 * step alone keeps the id).  A new id is max(last id, highest id reported
 * by any group) + 1: ids only grow, within one lighthouse's life and
 * across restarts as long as one member that saw the old ids asks.
 *
 * An issued quorum is never empty and never smaller than min_replicas.
 *
 * Typical use by the server (one state, on its event loop thread):
 *   on Heartbeat:  fti_quorum_note_seen(st, max_quorum_id);
 *                  fti_quorum_heartbeat(st, id, now)
 *   on Quorum:     fti_quorum_note_seen(st, max_quorum_id);
 *                  fti_quorum_request(st, &member, now); then evaluate
 *   on tick:       fti_quorum_expire(st, now); evaluate
 *   on a requester's connection closing: fti_quorum_withdraw(st, id)
 *   evaluate:      fti_quorum_compute(st, now, &d);
 *                  if (d.issue && fti_quorum_commit(st, &d, now, &q) == 0) {
 *                      answer each pending RPC whose id is in q
 *                      (fti_quorum_member_index(q, id) >= 0), keep the others
 *                      waiting; fti_quorum_free(q);
 *                  }
 *                  fti_qdecision_clear(&d);
 *
 * Threads: a state is not thread-safe.  All calls on one state must be
 * serialised by the caller (one thread, or one lock).  Separate states and
 * issued quorums (fti_quorum_t) are independent.
 *
 * Cost (n groups in the table, m quorum members): groups are kept in an
 * array of pointers sorted by replica_id.  Lookups are O(log n); adding a
 * new group is O(n) pointer moves (none when ids arrive in order);
 * fti_quorum_compute is one O(n) pass and allocates only when it issues
 * (then O(n) copies); fti_quorum_commit is O(n + m); fti_quorum_expire
 * and the counting helpers are O(n).  Measured with 10,000 groups (-O2):
 * a compute that waits ~20 us, one that issues ~2 ms (the copies).
 */
#ifndef FTI_QUORUM_H
#define FTI_QUORUM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/sizes.h"
#include "lighthouse/quorum_members.h"

#define FTI_QREASON_MAX FTI_REASON_SIZE

/* Quorum ids above this are not believed when members report them (see
 * fti_quorum_note_seen), so no member can push the ids to overflow. */
#define FTI_QUORUM_ID_MAX (INT64_MAX / 2)

/* Expire drops groups whose last heartbeat is older than this many
 * heartbeat timeouts. */
#define FTI_QUORUM_EXPIRE_FACTOR 10

/* ---- options and state ----------------------------------------------- */

typedef struct fti_quorum_opts {
    int min_replicas;             /* >= 1 */
    int64_t join_timeout_ms;      /* >= 0; 0 = never wait for stragglers */
    int64_t heartbeat_timeout_ms; /* > 0 */
    int64_t initial_quorum_id;    /* the first quorum gets this + 1 (>= 0);
                                   * a server may seed it (e.g. from the wall
                                   * clock) so a restarted lighthouse never
                                   * repeats an id */
    size_t max_groups;            /* table size cap, 0 = FTI_QUORUM_MAX_GROUPS */
} fti_quorum_opts_t;

#define FTI_QUORUM_MAX_GROUPS 100000

/* min_replicas 1, join_timeout_ms 60000, heartbeat_timeout_ms 5000,
 * initial_quorum_id 0, max_groups 0. */
void fti_quorum_opts_default(fti_quorum_opts_t *o);

typedef struct fti_quorum_state *fti_quorum_state_h;

/* FT_ERR_ARG on bad options, FT_ERR_NO_MEMORY.  The options are copied.
 * Release with fti_quorum_state_destroy. */
int fti_quorum_state_create(const fti_quorum_opts_t *o, fti_quorum_state_h *st_p);
/* NULL-safe. */
void fti_quorum_state_destroy(fti_quorum_state_h st);

const fti_quorum_opts_t *fti_quorum_state_opts(fti_quorum_state_h st);

/* ---- inputs ---------------------------------------------------------- */

/* Records a heartbeat of replica_id at now_ms, adding the group if new.
 * FT_ERR_ARG: empty or too long id.  FT_ERR_NO_MEMORY: allocation failed,
 * or the group is new and the table already holds max_groups groups (the
 * caller's periodic fti_quorum_expire makes room). */
int fti_quorum_heartbeat(fti_quorum_state_h st, const char *replica_id, int64_t now_ms);

/* Records a quorum request: a heartbeat, plus m becomes the group's
 * pending request.  A repeated request replaces the details (m is copied,
 * data included) but keeps the time of the first pending request, which
 * rule 7 measures from.  Errors as fti_quorum_heartbeat (FT_ERR_ARG also
 * for address fields without a NUL and for data over FTI_QUORUM_MAX_DATA
 * bytes); on error the state is unchanged.  The claimed step is checked
 * (fti_quorum_request_checked below). */
int fti_quorum_request(fti_quorum_state_h st, const fti_qmember_t *m, int64_t now_ms);

/* Step plausibility (against a group that claims a step it cannot have,
 * e.g. a fake group at step 1,000,000 that every real group would heal
 * from).  Steps advance by one commit per quorum, and a member that heals
 * jumps to the quorum's max step, so after a quorum whose max step is M,
 * each of its members may claim at most M + 1 (its bound; kept while the
 * group stays in the table).  A group that was in no quorum of this state
 * (a newcomer, or one re-added after it finalized, died or expired) may
 * claim at most the previous quorum's max step + 1, provided one member
 * of that quorum is still healthy in the table; with none (the first
 * quorum, a restarted lighthouse, every established group gone, e.g. a
 * whole job restarted from a durable checkpoint) any step is believed.
 * After a quorum at max step 0 any step is believed too: its members load
 * their newest durable checkpoint right after it (fti_ckpt_load_at_start).
 * A claim above the bound is not refused (the group may be honest, e.g.
 * the lighthouse forgot it) but recorded as step 0: the group is behind,
 * must heal from the real members and is never a heal source or the
 * store while anyone else is ahead. */
typedef struct fti_qcheck {
    int64_t claimed;  /* the step the request claimed */
    int64_t bound;    /* highest plausible claim; -1 = no limit */
    bool newcomer;    /* the bound is the newcomer bound */
    bool capped;      /* claimed > bound: recorded as step 0 */
} fti_qcheck_t;

/* fti_quorum_request with the step check's outcome in *chk_p (may be
 * NULL; set only on success). */
int fti_quorum_request_checked(fti_quorum_state_h st, const fti_qmember_t *m, int64_t now_ms,
                               fti_qcheck_t *chk_p);

/* Records that a group reported having seen quorum id `id` (the
 * max_quorum_id of a request or heartbeat): the next new id is above it.
 * Ids <= 0 or above FTI_QUORUM_ID_MAX are ignored. */
void fti_quorum_note_seen(fti_quorum_state_h st, int64_t id);

/* Drops replica_id's pending request (its RPC went away); the heartbeat
 * stays.  FT_ERR_NOT_FOUND if it has none. */
int fti_quorum_withdraw(fti_quorum_state_h st, const char *replica_id);

/* Forgets replica_id altogether (the group finalized): its heartbeat and
 * its pending request.  The previous quorum keeps its own copy of its
 * members.  FT_ERR_NOT_FOUND if it is not in the table. */
int fti_quorum_remove(fti_quorum_state_h st, const char *replica_id);

/* Removes groups whose last heartbeat is older than
 * FTI_QUORUM_EXPIRE_FACTOR * heartbeat_timeout_ms (with any pending
 * request), so the table stays bounded.  Returns how many were removed.
 * The previous quorum keeps its own copy of its members. */
size_t fti_quorum_expire(fti_quorum_state_h st, int64_t now_ms);

/* ---- the decision ---------------------------------------------------- */

typedef struct fti_qdecision {
    bool issue;                    /* a quorum can be issued now */
    bool fast;                     /* issued by rule 4 */
    bool shrink_only;              /* rule 3 applied */
    char reason[FTI_QREASON_MAX];  /* human-readable, always set */
    size_t n_healthy;              /* healthy groups */
    size_t n_requesters;           /* healthy groups with a pending request */
    size_t n_candidates;           /* after the shrink_only filter */
    int64_t join_wait_ms;          /* waiting by rule 7: ms until the join
                                    * timeout passes; otherwise -1 */
    size_t n_members;              /* when issue: the members (copies, */
    fti_qmember_t *members;        /* sorted by replica_id); else 0/NULL */
} fti_qdecision_t;

/* Applies the rules at now_ms.  Reads the state only.  Fills *d_p (also
 * when waiting); when d_p->issue, d_p->members is allocated.  Always
 * release with fti_qdecision_clear.  FT_ERR_NO_MEMORY leaves *d_p cleared
 * (issue false). */
int fti_quorum_compute(fti_quorum_state_h st, int64_t now_ms, fti_qdecision_t *d_p);

/* Frees d->members and zeroes *d.  NULL-safe, idempotent. */
void fti_qdecision_clear(fti_qdecision_t *d);

/* Records the quorum of d (which must be issue == true and come from
 * fti_quorum_compute on this state with no call changing the state in
 * between): assigns the id (rule 8), makes it the previous quorum, and ends
 * the pending request of each member.  Pending requests of groups not in
 * the quorum stay pending with their request time reset to now_ms (they
 * will get a later quorum, like torchft's retry).  d's members move into
 * the state (d is left with issue false and no members; still call
 * fti_qdecision_clear).  *q_p receives a copy for the caller: free it with
 * fti_quorum_free.  FT_ERR_ARG if d does not issue; FT_ERR_NO_MEMORY
 * leaves state and d unchanged. */
int fti_quorum_commit(fti_quorum_state_h st, fti_qdecision_t *d, int64_t now_ms,
                      fti_quorum_t **q_p);

/* ---- read-only views (server, dashboard, /metrics) ------------------- */

/* The previous (current) quorum, NULL before the first.  Owned by the
 * state: valid until the next fti_quorum_commit or destroy. */
const fti_quorum_t *fti_quorum_prev(fti_quorum_state_h st);

/* The id of the last issued quorum, initial_quorum_id before the first. */
int64_t fti_quorum_last_id(fti_quorum_state_h st);

typedef struct fti_qgroup_view {
    const char *replica_id;
    /* the pending request's details, or else those of the group's last
     * request; NULL if the group has only heartbeated */
    const fti_qmember_t *member;
    int64_t last_heartbeat_ms;
    int64_t heartbeat_age_ms; /* now_ms - last heartbeat, >= 0 */
    bool healthy;
    bool waiting;             /* has a pending request */
    int64_t waiting_since_ms; /* time of the pending request, -1 if none */
    bool in_quorum;           /* member of fti_quorum_prev */
} fti_qgroup_view_t;

/* Groups in the table (healthy or not), sorted by replica_id. */
size_t fti_quorum_n_groups(fti_quorum_state_h st);

/* The i-th group (i < fti_quorum_n_groups).  Pointers in the view are
 * owned by the state and valid until the next call that changes it.
 * FT_ERR_ARG if i is out of range. */
int fti_quorum_group_at(fti_quorum_state_h st, size_t i, int64_t now_ms,
                        fti_qgroup_view_t *v_p);

/* The group replica_id; FT_ERR_NOT_FOUND if not in the table. */
int fti_quorum_group_find(fti_quorum_state_h st, const char *replica_id, int64_t now_ms,
                          fti_qgroup_view_t *v_p);

/* false for unknown groups. */
bool fti_quorum_is_healthy(fti_quorum_state_h st, const char *replica_id, int64_t now_ms);
bool fti_quorum_is_waiting(fti_quorum_state_h st, const char *replica_id);

size_t fti_quorum_n_healthy(fti_quorum_state_h st, int64_t now_ms);
/* Groups with a pending request, healthy or not. */
size_t fti_quorum_n_waiting(fti_quorum_state_h st);

#endif
