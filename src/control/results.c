/*
 * results.c - per-rank results of a quorum (DESIGN section 6).
 *
 * A pure function of (quorum, replica id, group rank, init_sync): every
 * rank of every group computes the same answer from the same quorum, so
 * sources and destinations agree without another round trip.
 *
 * The rule follows torchft's compute_quorum_results:
 *   - participants are sorted by replica id; a group's index is its
 *     replica rank;
 *   - the members at the maximum step are the up-to-date candidates; the
 *     store of group rank r is max_members[r % count];
 *   - a member heals when its step is behind the maximum, or, with
 *     init_sync at step 0, when it is not the primary;
 *   - the k-th healing member (in replica-rank order) takes its state from
 *     up_to_date[(k + group_rank) % n_up_to_date], so the ranks of a group
 *     pull from different sources.
 * One deliberate difference (results.h): the init_sync primary is the
 * first member at max step for every group rank (torchft uses the store
 * primary, which varies with the group rank).  Every rank of a group thus
 * agrees on whether the group heals.
 */
#include "control/results.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/util.h"

static int member_cmp(const void *a, const void *b)
{
    const Ftmpi__QuorumMember *ma = *(const Ftmpi__QuorumMember *const *)a;
    const Ftmpi__QuorumMember *mb = *(const Ftmpi__QuorumMember *const *)b;
    return strcmp(ma->replica_id, mb->replica_id);
}

static bool fits(const char *s, size_t cap)
{
    return strlen(s) < cap;
}

/* The SDC check (DESIGN section 11): a member the lighthouse found in a
 * minority heals like one behind, and so is no heal source, as long as a
 * member at max step is no minority (there is a copy to heal from). */
static bool sdc_minority(const Ftmpi__QuorumMember *m)
{
    return m->sdc_verdict == FTMPI__SDC_VERDICT__SDC_MINORITY;
}

static bool sdc_clean_at(const Ftmpi__QuorumMember **m, int n, int64_t max_step)
{
    for (int i = 0; i < n; i++)
        if (m[i]->step == max_step && !sdc_minority(m[i]))
            return true;
    return false;
}

/* The init_sync primary among the members at max step (at[0..n)): the
 * first that is no minority (there is one when sdc_clean_at), else the
 * first. */
static int sdc_primary(const Ftmpi__QuorumMember **m, const int *at, int n)
{
    for (int i = 0; i < n; i++)
        if (!sdc_minority(m[at[i]]))
            return at[i];
    return at[0];
}

static void sdc_set(fti_quorum_result_t *r, const Ftmpi__QuorumMember *me)
{
    r->sdc_verdict = me->sdc_verdict;
    fti_strlcpy(r->sdc_report, me->sdc_report ? me->sdc_report : "", sizeof(r->sdc_report));
}

/* Marks r as healing from member s (replica rank src); FT_ERR_ARG when its id
 * or address does not fit the result's fields. */
static int set_heal_source(fti_quorum_result_t *r, const Ftmpi__QuorumMember *s, int src,
                           int64_t quorum_id)
{
    if (!fits(s->address, sizeof(r->recover_src_manager_address)) ||
        !fits(s->replica_id, sizeof(r->recover_src_replica_id))) {
        FTI_ERROR("heal source %.64s of quorum %lld has a too long id or address",
                  s->replica_id, (long long)quorum_id);
        return FT_ERR_ARG;
    }
    r->heal = true;
    r->recover_src_replica_rank = src;
    fti_strlcpy(r->recover_src_manager_address, s->address,
                sizeof(r->recover_src_manager_address));
    fti_strlcpy(r->recover_src_replica_id, s->replica_id, sizeof(r->recover_src_replica_id));
    return FT_SUCCESS;
}

/* Checks the participants and returns them sorted by replica id in a new
 * array (free with free()). */
static int sorted_members(const Ftmpi__Quorum *q, const Ftmpi__QuorumMember ***out_p)
{
    size_t n = q->n_participants;
    const Ftmpi__QuorumMember **m = malloc(n * sizeof(*m));
    if (m == NULL)
        return FT_ERR_NO_MEMORY;
    for (size_t i = 0; i < n; i++) {
        const Ftmpi__QuorumMember *p = q->participants[i];
        if (p == NULL || p->replica_id == NULL || p->address == NULL ||
            p->store_address == NULL) {
            free(m);
            return FT_ERR_ARG;
        }
        m[i] = p;
    }
    qsort(m, n, sizeof(*m), member_cmp);
    *out_p = m;
    return FT_SUCCESS;
}

/* The replica rank of replica_id among the sorted members m (-1 when it is
 * not one), their highest step and highest commit failures. */
static int scan_members(const Ftmpi__QuorumMember **m, int n, const char *replica_id,
                        int64_t *max_step_p, int64_t *commit_failures_p)
{
    int me = -1;
    int64_t max_step = m[0]->step, commit_failures = m[0]->commit_failures;
    for (int i = 0; i < n; i++) {
        if (strcmp(m[i]->replica_id, replica_id) == 0)
            me = i;
        max_step = FTI_MAX(max_step, m[i]->step);
        commit_failures = FTI_MAX(commit_failures, m[i]->commit_failures);
    }
    *max_step_p = max_step;
    *commit_failures_p = commit_failures;
    return me;
}

/* The heal sources: heal_src[i] = the source's replica rank for a healing
 * member i, -1 for an up-to-date one; the k-th healing member takes
 * up[(k + group_rank) % n_up].  Records r's destinations (r->replica_rank
 * serving).  up: scratch of n entries, left holding the up-to-date
 * members; returns their count, *n_heal_p the healing members' and *k_p
 * r's index among the healing ones (-1 if up to date). */
static int assign_sources(const Ftmpi__QuorumMember **m, int n, int64_t max_step, int primary,
                          bool force, int group_rank, int *heal_src, int *up,
                          fti_quorum_result_t *r, int *n_heal_p, int *k_p)
{
    int n_up = 0;
    bool sdc = sdc_clean_at(m, n, max_step);
    for (int i = 0; i < n; i++) {
        bool heals = m[i]->step != max_step || (sdc && sdc_minority(m[i])) ||
                     (force && i != primary);
        heal_src[i] = heals ? -2 : -1;
        if (!heals)
            up[n_up++] = i;
    }
    /* n_up >= 1: the primary never heals */
    int k = 0;
    *k_p = -1;
    for (int i = 0; i < n; i++) {
        if (heal_src[i] != -2)
            continue;
        int src = up[(int)(((int64_t)k + group_rank) % n_up)];
        heal_src[i] = src;
        if (i == r->replica_rank)
            *k_p = k;
        k++;
        if (src == r->replica_rank && r->n_recover_dst < FTI_RESULTS_MAX_DST)
            r->recover_dst_replica_ranks[r->n_recover_dst++] = i;
    }
    *n_heal_p = k;
    return n_up;
}

/* Striped healing: the healing member k (index among the healing ones)
 * stripes over up[(k + group_rank + j) % n_up], j < min(n_up,
 * FTI_RESULTS_MAX_SRC): its primary first.  Fills r's source lists;
 * FT_ERR_ARG when an id or address does not fit. */
static int set_stripe_sources(fti_quorum_result_t *r, const Ftmpi__QuorumMember **m,
                              const int *up, int n_up, int k, int group_rank)
{
    int n_src = FTI_MIN(n_up, FTI_RESULTS_MAX_SRC);
    int first = (int)(((int64_t)k + group_rank) % n_up);
    for (int j = 0; j < n_src; j++) {
        const Ftmpi__QuorumMember *s = m[up[(first + j) % n_up]];
        if (!fits(s->address, FTI_ADDRESS_SIZE) || !fits(s->replica_id, FTI_REPLICA_ID_SIZE))
            return FT_ERR_ARG; /* the primary's check logged it */
        fti_strlcpy(r->recover_src_manager_addresses[j], s->address, FTI_ADDRESS_SIZE);
        fti_strlcpy(r->recover_src_replica_ids[j], s->replica_id, FTI_REPLICA_ID_SIZE);
    }
    r->n_recover_src = n_src;
    return FT_SUCCESS;
}

/* How many of n_heal healing members stripe from the up-to-date member at
 * index pos of up (see set_stripe_sources): those k whose first source
 * (k + group_rank) % n_up lies within the S = min(n_up,
 * FTI_RESULTS_MAX_SRC) places before pos, in O(S). */
static int stripe_dst_count(int pos, int group_rank, int n_up, int n_heal)
{
    int n_src = FTI_MIN(n_up, FTI_RESULTS_MAX_SRC);
    if (n_src == n_up)
        return n_heal;
    int count = 0;
    for (int j = 0; j < n_src; j++) {
        /* k = rho (mod n_up) */
        int rho = (int)((((int64_t)pos - j - group_rank) % n_up + n_up) % n_up);
        if (rho < n_heal)
            count += (n_heal - 1 - rho) / n_up + 1;
    }
    return count;
}

/* Copies the store address into r; FT_ERR_ARG (logged) when too long. */
static int set_store(fti_quorum_result_t *r, const char *store)
{
    if (!fits(store, sizeof(r->store_address))) {
        FTI_ERROR("store address of quorum %lld is too long (%zu bytes)",
                  (long long)r->quorum_id, strlen(store));
        return FT_ERR_ARG;
    }
    fti_strlcpy(r->store_address, store, sizeof(r->store_address));
    return FT_SUCCESS;
}

/* fti_results_compute over the sorted members m; heal_src and up: scratch
 * of n entries each. */
static int compute_sorted(const Ftmpi__QuorumMember **m, int n, int64_t quorum_id,
                          const char *replica_id, int group_rank, bool init_sync, int *heal_src,
                          int *up, fti_quorum_result_t *res_p)
{
    fti_quorum_result_t r;
    memset(&r, 0, sizeof(r));
    r.quorum_id = quorum_id;
    r.replica_world_size = n;
    r.max_replica_rank = -1;
    r.recover_src_replica_rank = -1;
    r.replica_rank = scan_members(m, n, replica_id, &r.max_step, &r.commit_failures);
    if (r.replica_rank < 0) {
        FTI_DEBUG("replica %s is not a participant of quorum %lld", replica_id,
                  (long long)quorum_id);
        return FT_ERR_NOT_FOUND;
    }

    /* Members at max step, in replica-rank order (reuse `up` for them). */
    int n_max = 0;
    for (int i = 0; i < n; i++) {
        if (m[i]->step == r.max_step) {
            if (i == r.replica_rank)
                r.max_replica_rank = n_max;
            up[n_max++] = i;
        }
    }
    r.max_world_size = n_max;
    sdc_set(&r, m[r.replica_rank]);
    const char *store = m[up[group_rank % n_max]]->store_address;
    int primary = sdc_primary(m, up, n_max), n_heal = 0, k = -1;
    int n_up = assign_sources(m, n, r.max_step, primary, init_sync && r.max_step == 0,
                              group_rank, heal_src, up, &r, &n_heal, &k);
    int rc = set_store(&r, store);
    int src = heal_src[r.replica_rank];
    if (rc == FT_SUCCESS && src >= 0)
        rc = set_heal_source(&r, m[src], src, quorum_id);
    if (rc == FT_SUCCESS && src >= 0)
        rc = set_stripe_sources(&r, m, up, n_up, k, group_rank);
    if (rc != FT_SUCCESS)
        return rc;
    for (int pos = 0; src < 0 && pos < n_up; pos++)
        if (up[pos] == r.replica_rank)
            r.n_stripe_dst = stripe_dst_count(pos, group_rank, n_up, n_heal);
    r.participants = n;
    r.spare = false;
    *res_p = r;
    return FT_SUCCESS;
}

int fti_results_compute(const Ftmpi__Quorum *q, const char *replica_id, int group_rank,
                        bool init_sync, fti_quorum_result_t *res_p)
{
    if (q == NULL || replica_id == NULL || res_p == NULL || group_rank < 0 ||
        q->n_participants == 0 || q->participants == NULL || q->n_participants > INT32_MAX)
        return FT_ERR_ARG;

    const Ftmpi__QuorumMember **m = NULL;
    int rc = sorted_members(q, &m);
    if (rc != FT_SUCCESS)
        return rc;
    int n = (int)q->n_participants;
    int *heal_src = malloc((size_t)n * sizeof(*heal_src));
    int *up = malloc((size_t)n * sizeof(*up));
    if (heal_src == NULL || up == NULL)
        rc = FT_ERR_NO_MEMORY;
    else
        rc = compute_sorted(m, n, q->quorum_id, replica_id, group_rank, init_sync, heal_src, up,
                            res_p);
    free(up);
    free(heal_src);
    free(m);
    return rc;
}

/* ---- many groups of one quorum ------------------------------------------- */

/* The members' roles under one init_sync setting. */
struct heal_plan {
    int *up;     /* up-to-date members, replica-rank order */
    int n_up;
    int *up_pos; /* per member: its index in up, -1 if it heals */
    int *heal;   /* healing members, replica-rank order */
    int n_heal;
    int *heal_k; /* per member: its index in heal, -1 if up to date */
};

struct fti_results_index {
    const Ftmpi__Quorum *q;
    const Ftmpi__QuorumMember **m; /* sorted by replica id */
    int n;
    int64_t max_step, commit_failures;
    int *max_members; /* members at max step */
    int n_max;
    int *max_rank;    /* per member: index in max_members, -1 if behind */
    struct heal_plan plan[2]; /* [init_sync] */
    int *ints;        /* one block for every int array above */
};

int fti_results_index_create(const Ftmpi__Quorum *q, fti_results_index_h *idx_p)
{
    if (q == NULL || idx_p == NULL || q->n_participants == 0 || q->participants == NULL ||
        q->n_participants > INT32_MAX / 16)
        return FT_ERR_ARG;
    struct fti_results_index *x = calloc(1, sizeof(*x));
    if (x == NULL)
        return FT_ERR_NO_MEMORY;
    int rc = sorted_members(q, &x->m);
    if (rc != FT_SUCCESS) {
        free(x);
        return rc;
    }
    int n = (int)q->n_participants;
    x->q = q;
    x->n = n;
    x->ints = malloc((size_t)n * 10 * sizeof(int));
    if (x->ints == NULL) {
        fti_results_index_destroy(x);
        return FT_ERR_NO_MEMORY;
    }
    int *p = x->ints;
    x->max_members = p, p += n;
    x->max_rank = p, p += n;
    for (int s = 0; s < 2; s++) {
        struct heal_plan *h = &x->plan[s];
        h->up = p, p += n;
        h->up_pos = p, p += n;
        h->heal = p, p += n;
        h->heal_k = p, p += n;
    }

    const Ftmpi__QuorumMember **m = x->m;
    x->max_step = m[0]->step;
    x->commit_failures = m[0]->commit_failures;
    for (int i = 0; i < n; i++) {
        x->max_step = FTI_MAX(x->max_step, m[i]->step);
        x->commit_failures = FTI_MAX(x->commit_failures, m[i]->commit_failures);
    }
    for (int i = 0; i < n; i++) {
        x->max_rank[i] = -1;
        if (m[i]->step == x->max_step) {
            x->max_rank[i] = x->n_max;
            x->max_members[x->n_max++] = i;
        }
    }
    int primary = sdc_primary(m, x->max_members, x->n_max);
    bool sdc = sdc_clean_at(m, n, x->max_step);
    for (int s = 0; s < 2; s++) {
        struct heal_plan *h = &x->plan[s];
        bool force = s == 1 && x->max_step == 0;
        for (int i = 0; i < n; i++) {
            bool heals = m[i]->step != x->max_step || (sdc && sdc_minority(m[i])) ||
                         (force && i != primary);
            h->up_pos[i] = h->heal_k[i] = -1;
            if (heals) {
                h->heal_k[i] = h->n_heal;
                h->heal[h->n_heal++] = i;
            } else {
                h->up_pos[i] = h->n_up;
                h->up[h->n_up++] = i;
            }
        }
    }
    *idx_p = x;
    return FT_SUCCESS;
}

void fti_results_index_destroy(fti_results_index_h x)
{
    if (x == NULL)
        return;
    free(x->ints);
    free(x->m);
    free(x);
}

static const char *index_key(const void *arr, size_t i)
{
    return ((const Ftmpi__QuorumMember *const *)arr)[i]->replica_id;
}

int fti_results_index_find(fti_results_index_h x, const char *replica_id)
{
    bool found = false;
    if (x == NULL || replica_id == NULL)
        return FT_ERR_ARG;
    size_t at = fti_bsearch_str(x->m, (size_t)x->n, index_key, replica_id, &found);
    return found ? (int)at : FT_ERR_NOT_FOUND;
}

int fti_results_compute_at(fti_results_index_h x, int replica_rank, int group_rank,
                           bool init_sync, fti_quorum_result_t *res_p)
{
    if (x == NULL || res_p == NULL || replica_rank < 0 || replica_rank >= x->n || group_rank < 0)
        return FT_ERR_ARG;
    const struct heal_plan *h = &x->plan[init_sync ? 1 : 0];
    const Ftmpi__QuorumMember **m = x->m;
    fti_quorum_result_t r;
    memset(&r, 0, sizeof(r));
    r.quorum_id = x->q->quorum_id;
    r.replica_world_size = x->n;
    r.replica_rank = replica_rank;
    r.max_step = x->max_step;
    r.commit_failures = x->commit_failures;
    r.max_replica_rank = x->max_rank[replica_rank];
    r.max_world_size = x->n_max;
    r.recover_src_replica_rank = -1;
    sdc_set(&r, m[replica_rank]);

    int rc = set_store(&r, m[x->max_members[group_rank % x->n_max]]->store_address);
    if (rc != FT_SUCCESS)
        return rc;

    int k = h->heal_k[replica_rank];
    if (k >= 0) {
        /* the k-th healing member's source (fti_results_compute) */
        int src = h->up[(int)(((int64_t)k + group_rank) % h->n_up)];
        const Ftmpi__QuorumMember *s = m[src];
        int hrc = set_heal_source(&r, s, src, x->q->quorum_id);
        if (hrc == FT_SUCCESS)
            hrc = set_stripe_sources(&r, m, h->up, h->n_up, k, group_rank);
        if (hrc != FT_SUCCESS)
            return hrc;
    } else {
        /* the healing members k with (k + group_rank) % n_up == my place */
        int pos = h->up_pos[replica_rank];
        int k0 = (int)((pos - group_rank % h->n_up + h->n_up) % h->n_up);
        for (int j = k0; j < h->n_heal &&
                         r.n_recover_dst < FTI_RESULTS_MAX_DST;
             j += h->n_up)
            r.recover_dst_replica_ranks[r.n_recover_dst++] = h->heal[j];
        r.n_stripe_dst = stripe_dst_count(pos, group_rank, h->n_up, h->n_heal);
    }
    r.participants = x->n;
    r.spare = false;
    *res_p = r;
    return FT_SUCCESS;
}

void fti_results_to_msg(const fti_quorum_result_t *res, int64_t *dst,
                        Ftmpi__ManagerQuorumResult *msg)
{
    ftmpi__manager_quorum_result__init(msg);
    msg->quorum_id = res->quorum_id;
    msg->replica_rank = res->replica_rank;
    msg->replica_world_size = res->replica_world_size;
    msg->recover_src_manager_address = (char *)res->recover_src_manager_address;
    msg->recover_src_replica_rank = res->recover_src_replica_rank;
    msg->recover_src_replica_id = (char *)res->recover_src_replica_id;
    for (int i = 0; i < res->n_recover_dst; i++)
        dst[i] = res->recover_dst_replica_ranks[i];
    msg->n_recover_dst_replica_ranks = (size_t)res->n_recover_dst;
    msg->recover_dst_replica_ranks = dst;
    msg->store_address = (char *)res->store_address;
    msg->max_step = res->max_step;
    msg->max_replica_rank = res->max_replica_rank;
    msg->max_world_size = res->max_world_size;
    msg->heal = res->heal;
    msg->commit_failures = res->commit_failures;
    msg->sdc_verdict = res->sdc_verdict;
    msg->sdc_report = (char *)res->sdc_report;
}

void fti_results_to_msg_srcs(const fti_quorum_result_t *res, char **ptrs,
                             Ftmpi__ManagerQuorumResult *msg)
{
    int n = res->n_recover_src;
    for (int j = 0; j < n; j++) {
        ptrs[j] = (char *)res->recover_src_manager_addresses[j];
        ptrs[FTI_RESULTS_MAX_SRC + j] = (char *)res->recover_src_replica_ids[j];
    }
    msg->n_recover_src_manager_addresses = (size_t)n;
    msg->recover_src_manager_addresses = ptrs;
    msg->n_recover_src_replica_ids = (size_t)n;
    msg->recover_src_replica_ids = ptrs + FTI_RESULTS_MAX_SRC;
    msg->stripe_dst = res->n_stripe_dst;
}

static bool in_range(int64_t v, int64_t lo, int64_t hi)
{
    return v >= lo && v <= hi;
}

/* The striped-healing fields of msg into r (the rest of r filled in):
 * without lists, the primary alone and the destinations. */
static int sources_from_msg(const Ftmpi__ManagerQuorumResult *msg, fti_quorum_result_t *r)
{
    size_t n = msg->n_recover_src_manager_addresses;
    if (n == 0) {
        r->n_recover_src = r->heal ? 1 : 0;
        fti_strlcpy(r->recover_src_manager_addresses[0], r->recover_src_manager_address,
                    FTI_ADDRESS_SIZE);
        fti_strlcpy(r->recover_src_replica_ids[0], r->recover_src_replica_id,
                    FTI_REPLICA_ID_SIZE);
        /* an up-to-date group lists no sources; an old lighthouse sends
         * no stripe_dst (0 <= the destinations) */
        if (!in_range(msg->stripe_dst, 0, r->replica_world_size))
            return FT_ERR_BAD_MESSAGE;
        r->n_stripe_dst = (int)FTI_MAX(msg->stripe_dst, (int64_t)r->n_recover_dst);
        return FT_SUCCESS;
    }
    if (!r->heal || n > FTI_RESULTS_MAX_SRC || msg->n_recover_src_replica_ids != n ||
        !in_range(msg->stripe_dst, 0, r->replica_world_size))
        return FT_ERR_BAD_MESSAGE;
    for (size_t j = 0; j < n; j++) {
        const char *a = msg->recover_src_manager_addresses[j];
        const char *id = msg->recover_src_replica_ids[j];
        if (a == NULL || id == NULL || !fits(a, FTI_ADDRESS_SIZE) ||
            !fits(id, FTI_REPLICA_ID_SIZE))
            return FT_ERR_BAD_MESSAGE;
        fti_strlcpy(r->recover_src_manager_addresses[j], a, FTI_ADDRESS_SIZE);
        fti_strlcpy(r->recover_src_replica_ids[j], id, FTI_REPLICA_ID_SIZE);
    }
    if (strcmp(r->recover_src_manager_addresses[0], r->recover_src_manager_address) != 0)
        return FT_ERR_BAD_MESSAGE; /* the primary comes first */
    r->n_recover_src = (int)n;
    r->n_stripe_dst = (int)msg->stripe_dst;
    return FT_SUCCESS;
}

int fti_results_from_msg(const Ftmpi__ManagerQuorumResult *msg, fti_quorum_result_t *res_p)
{
    fti_quorum_result_t r;
    memset(&r, 0, sizeof(r));
    if (msg == NULL || res_p == NULL)
        return FT_ERR_ARG;
    int64_t n = msg->replica_world_size;
    const char *src_addr = msg->recover_src_manager_address ? msg->recover_src_manager_address : "";
    const char *src_id = msg->recover_src_replica_id ? msg->recover_src_replica_id : "";
    const char *store = msg->store_address ? msg->store_address : "";
    if (!in_range(n, 1, INT32_MAX) || !in_range(msg->replica_rank, 0, n - 1) ||
        !in_range(msg->max_world_size, 1, n) || !in_range(msg->max_replica_rank, -1, n - 1) ||
        !in_range(msg->recover_src_replica_rank, -1, n - 1) ||
        msg->heal != (msg->recover_src_replica_rank >= 0) ||
        msg->n_recover_dst_replica_ranks > FTI_ARRAY_SIZE(r.recover_dst_replica_ranks) ||
        !fits(src_addr, sizeof(r.recover_src_manager_address)) ||
        !fits(src_id, sizeof(r.recover_src_replica_id)) || !fits(store, sizeof(r.store_address)))
        return FT_ERR_BAD_MESSAGE;
    for (size_t i = 0; i < msg->n_recover_dst_replica_ranks; i++) {
        if (!in_range(msg->recover_dst_replica_ranks[i], 0, n - 1))
            return FT_ERR_BAD_MESSAGE;
        r.recover_dst_replica_ranks[i] = (int)msg->recover_dst_replica_ranks[i];
    }
    r.quorum_id = msg->quorum_id;
    r.replica_rank = (int)msg->replica_rank;
    r.replica_world_size = (int)n;
    r.max_step = msg->max_step;
    r.max_replica_rank = (int)msg->max_replica_rank;
    r.max_world_size = (int)msg->max_world_size;
    fti_strlcpy(r.store_address, store, sizeof(r.store_address));
    r.heal = msg->heal;
    r.recover_src_replica_rank = (int)msg->recover_src_replica_rank;
    fti_strlcpy(r.recover_src_manager_address, src_addr, sizeof(r.recover_src_manager_address));
    fti_strlcpy(r.recover_src_replica_id, src_id, sizeof(r.recover_src_replica_id));
    r.n_recover_dst = (int)msg->n_recover_dst_replica_ranks;
    r.commit_failures = msg->commit_failures;
    r.sdc_verdict = msg->sdc_verdict;
    fti_strlcpy(r.sdc_report, msg->sdc_report ? msg->sdc_report : "", sizeof(r.sdc_report));
    int rc = sources_from_msg(msg, &r);
    if (rc != FT_SUCCESS)
        return rc;
    r.participants = r.replica_world_size;
    r.spare = false;
    *res_p = r;
    return FT_SUCCESS;
}

void fti_results_apply_spares(fti_quorum_result_t *res, int cap)
{
    int n = res->replica_world_size;
    res->participants = cap > 0 && cap < n ? cap : n;
    res->spare = res->replica_rank >= res->participants;
}

size_t fti_results_world_rank_data(int first_world_rank, char *buf, size_t len)
{
    int n = snprintf(buf, len, "%d", first_world_rank);
    return n < 0 ? 0 : (size_t)n;
}

/* Decimal text of 1..10 digits, no sign, value <= INT32_MAX; -1 otherwise. */
static int64_t parse_rank(const uint8_t *p, size_t len)
{
    int64_t v = 0;
    if (p == NULL || len == 0 || len > 10)
        return -1;
    for (size_t i = 0; i < len; i++) {
        if (p[i] < '0' || p[i] > '9')
            return -1;
        v = v * 10 + (p[i] - '0');
    }
    return v <= INT32_MAX ? v : -1;
}

static int int_cmp(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

int fti_results_world_ranks(const Ftmpi__Quorum *q, int group_rank, int *ranks)
{
    if (q == NULL || ranks == NULL || group_rank < 0 || q->n_participants == 0 ||
        q->participants == NULL || q->n_participants > INT32_MAX)
        return FT_ERR_ARG;
    const Ftmpi__QuorumMember **m = NULL;
    int rc = sorted_members(q, &m);
    if (rc != FT_SUCCESS)
        return rc;
    size_t n = q->n_participants;
    int *out = malloc(n * sizeof(*out)), *sorted = malloc(n * sizeof(*sorted));
    if (out == NULL || sorted == NULL) {
        rc = FT_ERR_NO_MEMORY;
        goto done;
    }
    for (size_t i = 0; i < n; i++) {
        int64_t first = parse_rank(m[i]->data.data, m[i]->data.len);
        if (first < 0 || first > (int64_t)INT32_MAX - group_rank) {
            FTI_WARN("quorum %lld: member %.64s carries no world rank", (long long)q->quorum_id,
                     m[i]->replica_id);
            rc = FT_ERR_BAD_MESSAGE;
            goto done;
        }
        out[i] = sorted[i] = (int)first + group_rank;
    }
    qsort(sorted, n, sizeof(*sorted), int_cmp);
    for (size_t i = 1; i < n; i++) {
        if (sorted[i] == sorted[i - 1]) {
            FTI_WARN("quorum %lld: two members map to world rank %d", (long long)q->quorum_id,
                     sorted[i]);
            rc = FT_ERR_BAD_MESSAGE;
            goto done;
        }
    }
    memcpy(ranks, out, n * sizeof(*out));
    rc = FT_SUCCESS;
done:
    free(sorted);
    free(out);
    free(m);
    return rc;
}

bool fti_commit_vote(int latched_error, int participants, int min_replicas)
{
    return latched_error == FT_SUCCESS && participants > 0 && participants >= min_replicas;
}

/* ---- failures survived --------------------------------------------------- */

static void member_key(const Ftmpi__QuorumMember *m, fti_member_key_t *k)
{
    fti_strlcpy(k->replica_id, m->replica_id ? m->replica_id : "", sizeof(k->replica_id));
    fti_strlcpy(k->address, m->address ? m->address : "", sizeof(k->address));
}

int fti_members_of(const Ftmpi__Quorum *q, fti_members_t *out_p)
{
    size_t n = q->n_participants;
    fti_member_key_t *keys = NULL;
    if (n > 0 && (keys = calloc(n, sizeof(*keys))) == NULL)
        return FT_ERR_NO_MEMORY;
    for (size_t i = 0; i < n; i++)
        member_key(q->participants[i], &keys[i]);
    out_p->m = keys;
    out_p->n = n;
    return FT_SUCCESS;
}

void fti_members_free(fti_members_t *m)
{
    free(m->m);
    m->m = NULL;
    m->n = 0;
}

static bool member_in(const fti_member_key_t *k, const fti_members_t *set)
{
    for (size_t j = 0; j < set->n; j++) {
        if (strcmp(k->replica_id, set->m[j].replica_id) == 0 &&
            strcmp(k->address, set->m[j].address) == 0)
            return true;
    }
    return false;
}

bool fti_members_lost(const fti_members_t *prev, const fti_members_t *cur)
{
    for (size_t i = 0; i < prev->n; i++) {
        if (!member_in(&prev->m[i], cur))
            return true;
    }
    return false;
}

bool fti_members_dropped(int64_t dropped, bool changed, bool had_quorum)
{
    return had_quorum && changed && dropped > 0;
}

int fti_quorum_check(const Ftmpi__Quorum *q)
{
    for (size_t i = 0; i < q->n_participants; i++) {
        const Ftmpi__QuorumMember *m = q->participants[i];
        if (m == NULL || m->replica_id == NULL)
            return FT_ERR_BAD_MESSAGE;
        if (i > 0 && strcmp(q->participants[i - 1]->replica_id, m->replica_id) >= 0)
            return FT_ERR_BAD_MESSAGE;
    }
    return FT_SUCCESS;
}
