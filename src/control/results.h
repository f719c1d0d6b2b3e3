/*
 * results.h - per-rank results of a quorum (DESIGN section 6): a pure
 * function of the quorum, this group's replica id and the rank's group
 * rank.  Computed by every rank from the quorum its manager received.
 */
#ifndef FTI_RESULTS_H
#define FTI_RESULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "control/proto/ftmpi.pb-c.h"
#include "base/sizes.h"

/* The most destinations a result lists (the first ones). */
#define FTI_RESULTS_MAX_DST 64
/* The most sources a healing rank stripes its fetch over. */
#define FTI_RESULTS_MAX_SRC 8
/* sdc_report's size (longer reports are cut) */
#define FTI_RESULTS_SDC_REPORT_SIZE 256

typedef struct fti_quorum_result {
    int64_t quorum_id;
    int replica_rank;          /* this group's index among the participants */
    int replica_world_size;    /* participants (groups) */
    int64_t max_step;
    int max_replica_rank;      /* index among members at max step, -1 if behind */
    int max_world_size;        /* members at max step */
    char store_address[FTI_ADDRESS_SIZE]; /* members-at-max-step[group_rank % count].store_address */
    bool heal;                 /* this group must heal before the step */
    int recover_src_replica_rank;         /* -1 unless heal */
    char recover_src_manager_address[FTI_ADDRESS_SIZE]; /* "" unless heal */
    char recover_src_replica_id[FTI_REPLICA_ID_SIZE];   /* "" unless heal */
    int n_recover_dst;         /* groups this group serves (when up to date) */
    int recover_dst_replica_ranks[FTI_RESULTS_MAX_DST]; /* the first ones */
    /* striped healing: the sources of this healing rank, the primary
     * (recover_src_*) first, then the next up-to-date members round-robin
     * (at most FTI_RESULTS_MAX_SRC; 0 unless heal) */
    int n_recover_src;
    char recover_src_manager_addresses[FTI_RESULTS_MAX_SRC][FTI_ADDRESS_SIZE];
    char recover_src_replica_ids[FTI_RESULTS_MAX_SRC][FTI_REPLICA_ID_SIZE];
    int n_stripe_dst;          /* healing groups that fetch stripes from this
                                * group (>= n_recover_dst; 0 when behind) */
    int64_t commit_failures;   /* max over participants */
    /* spare groups (fti_results_apply_spares); without a cap every member
     * participates: participants == replica_world_size, spare false */
    int participants;          /* members whose data counts (FT_Comm_size) */
    bool spare;                /* this group is a spare: replica_rank >= participants */
    /* the lighthouse's SDC check of this group (QuorumMember.sdc_verdict,
     * FTMPI__SDC_VERDICT__*): a minority heals from the others at max
     * step (when one of them is no minority) and is no heal source */
    int sdc_verdict;
    char sdc_report[FTI_RESULTS_SDC_REPORT_SIZE]; /* what differed ("" none) */
} fti_quorum_result_t;

/* Whether a quorum received from a peer is well-formed: its participants
 * are present and strictly sorted by replica_id (as the lighthouse sends
 * them), so that every rank finds the same replica rank for an id (a
 * repeated id made fti_results_compute and the index disagree; found by
 * tests/fuzz/fuzz_proto).  FT_SUCCESS or FT_ERR_BAD_MESSAGE. */
int fti_quorum_check(const Ftmpi__Quorum *q);

/* Computes the result for group `replica_id`, rank `group_rank`.
 * init_sync: at step 0 every member but the primary (the first member at
 * max step) heals from it.  Returns FT_ERR_NOT_FOUND if replica_id is not a
 * participant, FT_ERR_ARG on an empty quorum; *res_p is set only on
 * success. */
int fti_results_compute(const Ftmpi__Quorum *q, const char *replica_id, int group_rank,
                        bool init_sync, fti_quorum_result_t *res_p);

/* The same results for many groups of one quorum (the lighthouse's compact
 * replies): the index sorts the members and lists the members at max step,
 * the up-to-date and the healing ones once, in O(n log n); then
 * fti_results_compute_at costs O(R + destinations) per group instead of
 * O(n).  The index points into q, which must outlive it.  Release with
 * fti_results_index_destroy.  FT_ERR_ARG on an empty quorum or a member
 * without id or address. */
typedef struct fti_results_index *fti_results_index_h;
int fti_results_index_create(const Ftmpi__Quorum *q, fti_results_index_h *idx_p);
void fti_results_index_destroy(fti_results_index_h idx);

/* The replica rank of replica_id (binary search), or FT_ERR_NOT_FOUND. */
int fti_results_index_find(fti_results_index_h idx, const char *replica_id);

/* Equals fti_results_compute(q, id of replica rank `replica_rank`,
 * group_rank, init_sync).  FT_ERR_ARG on a rank out of range or a too long
 * address; *res_p is set only on success. */
int fti_results_compute_at(fti_results_index_h idx, int replica_rank, int group_rank,
                           bool init_sync, fti_quorum_result_t *res_p);

/* A result as a ManagerQuorumResult (compact lighthouse replies).  msg is
 * initialised here and points into res and dst (res->n_recover_dst
 * entries), which must outlive it; nothing to release. */
void fti_results_to_msg(const fti_quorum_result_t *res, int64_t *dst,
                        Ftmpi__ManagerQuorumResult *msg);

/* Adds the striped-healing fields to a msg of fti_results_to_msg: ptrs
 * (2 * FTI_RESULTS_MAX_SRC entries) holds the lists' pointers into res;
 * both must outlive msg.  A reply without them heals from the primary
 * alone (fti_results_from_msg). */
void fti_results_to_msg_srcs(const fti_quorum_result_t *res, char **ptrs,
                             Ftmpi__ManagerQuorumResult *msg);

/* The inverse: participants = replica_world_size, spare false (apply
 * spares after); without source
 * lists in msg, the primary is the only source and n_stripe_dst equals
 * n_recover_dst.  FT_ERR_BAD_MESSAGE when a rank is out of range or a
 * string does not fit; *res_p is set only on success. */
int fti_results_from_msg(const Ftmpi__ManagerQuorumResult *msg, fti_quorum_result_t *res_p);

/* Spare groups (FTMPI_WORLD_SIZE_MODE=fixed_with_spares): of the quorum's
 * members, in replica-rank order, the first min(members, cap) participate;
 * the others are spares.  Spares take part in the quorum, in healing and in
 * every collective (contributing the op's identity element), so they hold
 * the same state, but their data counts for nothing.  When a participant
 * is lost, the next quorum has one member fewer and the first spare moves
 * into its place.  cap <= 0: every member participates.  Sets
 * res->participants and res->spare. */
void fti_results_apply_spares(fti_quorum_result_t *res, int cap);

/* Mode B: QuorumMember.data of a group carries its first world rank as
 * decimal text.  Writes it into buf (at least 12 bytes); returns the
 * length. */
size_t fti_results_world_rank_data(int first_world_rank, char *buf, size_t len);

/* Mode B: the world rank of group rank `group_rank` of every member, in
 * replica-rank order (ranks: q->n_participants entries) = the member's
 * first world rank + group_rank.  FT_ERR_BAD_MESSAGE when a member's data
 * is missing or not a rank, or two members map to the same rank;
 * FT_ERR_ARG on bad arguments.  ranks is written only on success. */
int fti_results_world_ranks(const Ftmpi__Quorum *q, int group_rank, int *ranks);

/* A rank's own commit vote: no latched error and enough participants.
 * The group's decision is the AND of the votes (fti_group_decide, group.h: group rank 0 decides and tells every rank). */
bool fti_commit_vote(int latched_error, int participants, int min_replicas);

/* ---- failures survived (ftmpi_failures_survived) -------------------------- */

/* A quorum member as failure counting sees it: the same group has the same
 * replica id and the same manager address (a group restarted under its id
 * comes back with a new address).  Longer values are cut to fit, the same
 * way on both sides of a comparison. */
typedef struct fti_member_key {
    char replica_id[FTI_REPLICA_ID_SIZE];
    char address[FTI_ADDRESS_SIZE];
} fti_member_key_t;

/* The members of one quorum. */
typedef struct fti_members {
    fti_member_key_t *m; /* n entries, NULL when n == 0 */
    size_t n;
} fti_members_t;

/* The participants of q as keys into *out_p.  FT_ERR_NO_MEMORY leaves
 * *out_p untouched.  Release with fti_members_free. */
int fti_members_of(const Ftmpi__Quorum *q, fti_members_t *out_p);

/* Frees the keys and empties *m; NULL-safe, idempotent. */
void fti_members_free(fti_members_t *m);

/* Whether the quorum with members cur counts as a failure after the one
 * with members prev: a member of prev is missing from cur, or is back with
 * a new manager address.  Pure; an empty prev (no quorum before) never
 * counts. */
bool fti_members_lost(const fti_members_t *prev, const fti_members_t *cur);

/* The same question for compact replies, where the lighthouse counted the
 * members of its previous quorum missing from this one (`dropped`): a new
 * quorum (changed) that dropped some counts, unless it is the first quorum
 * this process sees (!had_quorum).  Pure. */
bool fti_members_dropped(int64_t dropped, bool changed, bool had_quorum);

#endif
