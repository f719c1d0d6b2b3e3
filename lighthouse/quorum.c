/* quorum.c - the lighthouse quorum rules over a sorted table of groups. */
#include "lighthouse/quorum.h"

#include "ftmpi_errors.h"
#include "base/util.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One replica group.  member.replica_id is always set; the other member
 * fields only once the group has made a request (has_member). */
typedef struct qgroup {
    fti_qmember_t member;
    bool has_member;
    bool pending;      /* has a request not answered by a quorum */
    bool in_prev;      /* member of st->prev (kept in sync by commit/insert) */
    int64_t last_hb_ms;
    int64_t joined_ms; /* time of the pending request */
    int64_t step_bound; /* highest plausible step claim: -1 = the group was
                         * in no quorum of this state; INT64_MAX = any (its
                         * last quorum was at step 0: a checkpoint load) */
} qgroup_t;

struct fti_quorum_state {
    fti_quorum_opts_t opts;
    qgroup_t **groups; /* sorted by replica_id */
    size_t n_groups, cap_groups;
    fti_quorum_t *prev; /* NULL before the first quorum */
    int64_t last_id;
    int64_t max_seen; /* highest quorum id a group reported, 0 if none */
};

/* At most this many names in a reason's list, then "+N more". */
#define NAMES_SHOWN 4

/* ---- state ------------------------------------------------------------ */

void fti_quorum_opts_default(fti_quorum_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->min_replicas = 1;
    o->join_timeout_ms = 60000;
    o->heartbeat_timeout_ms = 5000;
    o->initial_quorum_id = 0;
    o->max_groups = 0;
}

int fti_quorum_state_create(const fti_quorum_opts_t *o, fti_quorum_state_h *st_p)
{
    if (!o || !st_p || o->min_replicas < 1 || o->join_timeout_ms < 0 ||
        o->heartbeat_timeout_ms <= 0 || o->initial_quorum_id < 0 ||
        o->heartbeat_timeout_ms > INT64_MAX / FTI_QUORUM_EXPIRE_FACTOR)
        return FT_ERR_ARG;
    struct fti_quorum_state *st = calloc(1, sizeof(*st));
    if (!st)
        return FT_ERR_NO_MEMORY;
    st->opts = *o;
    if (st->opts.max_groups == 0)
        st->opts.max_groups = FTI_QUORUM_MAX_GROUPS;
    st->last_id = o->initial_quorum_id;
    *st_p = st;
    return FT_SUCCESS;
}

static void group_free(qgroup_t *g)
{
    if (!g)
        return;
    fti_qmember_clear(&g->member);
    free(g);
}

void fti_quorum_state_destroy(fti_quorum_state_h st)
{
    if (!st)
        return;
    for (size_t i = 0; i < st->n_groups; i++)
        group_free(st->groups[i]);
    free(st->groups);
    fti_quorum_free(st->prev);
    free(st);
}

const fti_quorum_opts_t *fti_quorum_state_opts(fti_quorum_state_h st)
{
    return &st->opts;
}

/* true if s is a NUL-terminated string within a buffer of size n */
static bool fits(const char *s, size_t n)
{
    return memchr(s, '\0', n) != NULL;
}

static bool id_valid(const char *id)
{
    return id && id[0] != '\0' && memchr(id, '\0', FTI_QID_MAX) != NULL;
}

static const char *group_key(const void *groups, size_t i)
{
    return ((qgroup_t *const *)groups)[i]->member.replica_id;
}

/* Index of id, or the insertion point with *found false. */
static size_t group_search(const struct fti_quorum_state *st, const char *id, bool *found)
{
    return fti_bsearch_str(st->groups, st->n_groups, group_key, id, found);
}

static qgroup_t *group_find(const struct fti_quorum_state *st, const char *id)
{
    bool found;
    if (!id_valid(id))
        return NULL;
    size_t i = group_search(st, id, &found);
    return found ? st->groups[i] : NULL;
}

/* Finds or adds the group id (valid).  NULL when out of memory or full. */
static qgroup_t *group_get(struct fti_quorum_state *st, const char *id, int64_t now_ms)
{
    bool found;
    size_t at = group_search(st, id, &found);
    if (found)
        return st->groups[at];
    if (st->n_groups >= st->opts.max_groups)
        return NULL;
    if (st->n_groups == st->cap_groups) {
        size_t cap = st->cap_groups ? st->cap_groups * 2 : 16;
        qgroup_t **g = realloc(st->groups, cap * sizeof(*g));
        if (!g)
            return NULL;
        st->groups = g;
        st->cap_groups = cap;
    }
    qgroup_t *g = calloc(1, sizeof(*g));
    if (!g)
        return NULL;
    memcpy(g->member.replica_id, id, strlen(id) + 1);
    g->last_hb_ms = now_ms;
    g->joined_ms = -1;
    g->step_bound = -1;
    g->in_prev = fti_quorum_member_index(st->prev, id) >= 0;
    memmove(&st->groups[at + 1], &st->groups[at], (st->n_groups - at) * sizeof(*st->groups));
    st->groups[at] = g;
    st->n_groups++;
    return g;
}

static bool group_healthy(const struct fti_quorum_state *st, const qgroup_t *g, int64_t now_ms)
{
    return now_ms - g->last_hb_ms < st->opts.heartbeat_timeout_ms;
}

/* ---- inputs ----------------------------------------------------------- */

int fti_quorum_heartbeat(fti_quorum_state_h st, const char *replica_id, int64_t now_ms)
{
    if (!st || !id_valid(replica_id))
        return FT_ERR_ARG;
    qgroup_t *g = group_get(st, replica_id, now_ms);
    if (!g)
        return FT_ERR_NO_MEMORY;
    g->last_hb_ms = now_ms;
    return FT_SUCCESS;
}

/* The bound after a quorum whose max step is max_step: one commit, or a
 * heal to the max and one commit; after a quorum at step 0, any step (the
 * members load their newest durable checkpoint, fti_ckpt_load_at_start). */
static int64_t bound_after(int64_t max_step)
{
    if (max_step <= 0 || max_step == INT64_MAX)
        return INT64_MAX;
    return max_step + 1;
}

/* The highest step a group that has been in no quorum here may claim:
 * the previous quorum's max step + 1 while one of its members is still
 * healthy in the table; -1 (no limit) otherwise (the first quorum, a
 * restarted lighthouse, every established group gone). */
static int64_t newcomer_bound(const struct fti_quorum_state *st, int64_t now_ms)
{
    const fti_quorum_t *p = st->prev;
    if (!p)
        return -1;
    int64_t max_step = 0;
    bool live = false;
    for (size_t i = 0; i < p->n_members; i++) {
        max_step = FTI_MAX(max_step, p->members[i].step);
        const qgroup_t *g = live ? NULL : group_find(st, p->members[i].replica_id);
        if (g && g->step_bound >= 0 && group_healthy(st, g, now_ms))
            live = true;
    }
    return live ? bound_after(max_step) : -1;
}

/* Fills *chk for m (before the state changes): the bound of an
 * established group, or the newcomer bound. */
static void step_check(const struct fti_quorum_state *st, const fti_qmember_t *m,
                       int64_t now_ms, fti_qcheck_t *chk)
{
    const qgroup_t *g = group_find(st, m->replica_id);
    chk->claimed = m->step;
    chk->newcomer = !g || g->step_bound < 0;
    chk->bound = chk->newcomer ? newcomer_bound(st, now_ms) : g->step_bound;
    if (chk->bound == INT64_MAX)
        chk->bound = -1;
    chk->capped = chk->bound >= 0 && m->step > chk->bound;
}

int fti_quorum_request_checked(fti_quorum_state_h st, const fti_qmember_t *m, int64_t now_ms,
                               fti_qcheck_t *chk_p)
{
    if (!st || !m || !fits(m->replica_id, sizeof(m->replica_id)) ||
        !id_valid(m->replica_id) || !fits(m->address, sizeof(m->address)) ||
        !fits(m->store_address, sizeof(m->store_address)) || (m->data_len > 0 && !m->data) ||
        m->data_len > FTI_QUORUM_MAX_DATA)
        return FT_ERR_ARG;
    fti_qcheck_t chk;
    step_check(st, m, now_ms, &chk);
    fti_qmember_t copy;
    if (fti_qmember_copy(&copy, m) != FT_SUCCESS)
        return FT_ERR_NO_MEMORY;
    if (chk.capped)
        copy.step = 0;
    qgroup_t *g = group_get(st, m->replica_id, now_ms);
    if (!g) {
        fti_qmember_clear(&copy);
        return FT_ERR_NO_MEMORY;
    }
    fti_qmember_clear(&g->member);
    g->member = copy;
    g->has_member = true;
    g->last_hb_ms = now_ms;
    if (!g->pending) {
        g->pending = true;
        g->joined_ms = now_ms;
    }
    if (chk_p)
        *chk_p = chk;
    return FT_SUCCESS;
}

int fti_quorum_request(fti_quorum_state_h st, const fti_qmember_t *m, int64_t now_ms)
{
    return fti_quorum_request_checked(st, m, now_ms, NULL);
}

void fti_quorum_note_seen(fti_quorum_state_h st, int64_t id)
{
    if (st && id > st->max_seen && id <= FTI_QUORUM_ID_MAX)
        st->max_seen = id;
}

int fti_quorum_withdraw(fti_quorum_state_h st, const char *replica_id)
{
    qgroup_t *g = st ? group_find(st, replica_id) : NULL;
    if (!g || !g->pending)
        return FT_ERR_NOT_FOUND;
    g->pending = false;
    g->joined_ms = -1;
    return FT_SUCCESS;
}

int fti_quorum_remove(fti_quorum_state_h st, const char *replica_id)
{
    bool found;
    if (!st || !id_valid(replica_id))
        return FT_ERR_NOT_FOUND;
    size_t at = group_search(st, replica_id, &found);
    if (!found)
        return FT_ERR_NOT_FOUND;
    group_free(st->groups[at]);
    memmove(&st->groups[at], &st->groups[at + 1],
            (st->n_groups - at - 1) * sizeof(*st->groups));
    st->n_groups--;
    return FT_SUCCESS;
}

size_t fti_quorum_expire(fti_quorum_state_h st, int64_t now_ms)
{
    if (!st)
        return 0;
    int64_t limit = FTI_QUORUM_EXPIRE_FACTOR * st->opts.heartbeat_timeout_ms;
    size_t kept = 0, dropped = 0;
    for (size_t i = 0; i < st->n_groups; i++) {
        qgroup_t *g = st->groups[i];
        if (now_ms - g->last_hb_ms > limit) {
            group_free(g);
            dropped++;
        } else {
            st->groups[kept++] = g;
        }
    }
    st->n_groups = kept;
    return dropped;
}

/* ---- compute ---------------------------------------------------------- */

enum name_kind {
    NK_CANDIDATE, /* healthy, pending, and (shrink_only) in prev */
    NK_STRAGGLER, /* healthy, not pending */
    NK_DROPPED,   /* healthy, pending, not in prev (dropped by shrink_only) */
    NK_NEW,       /* a candidate that is not in prev */
};

static bool name_matches(const struct fti_quorum_state *st, const qgroup_t *g, int64_t now_ms,
                         enum name_kind kind, bool shrink)
{
    if (!group_healthy(st, g, now_ms))
        return false;
    switch (kind) {
    case NK_CANDIDATE: return g->pending && (!shrink || g->in_prev);
    case NK_STRAGGLER: return !g->pending;
    case NK_DROPPED: return g->pending && !g->in_prev;
    case NK_NEW: return g->pending && !g->in_prev && !shrink;
    }
    return false;
}

/* Writes "a, b, c +N more" (the first NAMES_SHOWN matches of total) into
 * buf, or "none". */
static void names_list(const struct fti_quorum_state *st, int64_t now_ms, enum name_kind kind,
                       bool shrink, size_t total, char *buf, size_t len)
{
    size_t shown = 0, used = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < st->n_groups && shown < NAMES_SHOWN && shown < total; i++) {
        const qgroup_t *g = st->groups[i];
        if (!name_matches(st, g, now_ms, kind, shrink))
            continue;
        int n = snprintf(buf + used, len - used, "%s%s", shown ? ", " : "",
                         g->member.replica_id);
        if (n < 0 || (size_t)n >= len - used)
            return; /* truncated: buf stays terminated */
        used += (size_t)n;
        shown++;
    }
    if (shown == 0)
        snprintf(buf, len, "none");
    else if (total > shown)
        snprintf(buf + used, len - used, " +%zu more", total - shown);
}

/* Appends to d->reason, truncating silently (it is for humans). */
static void reason_add(fti_qdecision_t *d, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void reason_add(fti_qdecision_t *d, const char *fmt, ...)
{
    size_t used = strlen(d->reason);
    if (used + 1 >= sizeof(d->reason))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->reason + used, sizeof(d->reason) - used, fmt, ap);
    va_end(ap);
}

/* Copies the candidates (sorted, as the table is) into d. */
static int decision_fill_members(const struct fti_quorum_state *st, int64_t now_ms, bool shrink,
                                 fti_qdecision_t *d)
{
    fti_qmember_t *m = calloc(d->n_candidates, sizeof(*m));
    if (!m)
        return FT_ERR_NO_MEMORY;
    size_t k = 0;
    for (size_t i = 0; i < st->n_groups && k < d->n_candidates; i++) {
        const qgroup_t *g = st->groups[i];
        if (!name_matches(st, g, now_ms, NK_CANDIDATE, shrink))
            continue;
        if (fti_qmember_copy(&m[k], &g->member) != FT_SUCCESS) {
            fti_qmembers_free(m, k);
            return FT_ERR_NO_MEMORY;
        }
        k++;
    }
    d->members = m;
    d->n_members = k;
    d->issue = true;
    return FT_SUCCESS;
}

/* What rules 3, 4 and 7 need from the table, counted in one pass. */
struct table_pass {
    size_t req_in_prev;   /* requesters that are members of prev */
    bool any_shrink;      /* a requester asks for shrink_only */
    int64_t first_joined; /* the oldest pending request (now_ms if none) */
};

/* Rules 1-2: counts the healthy groups and the requesters into d. */
static void table_pass(const struct fti_quorum_state *st, int64_t now_ms, fti_qdecision_t *d,
                       struct table_pass *p)
{
    p->req_in_prev = 0;
    p->any_shrink = false;
    p->first_joined = now_ms;
    for (size_t i = 0; i < st->n_groups; i++) {
        const qgroup_t *g = st->groups[i];
        if (!group_healthy(st, g, now_ms))
            continue;
        d->n_healthy++;
        if (!g->pending)
            continue;
        d->n_requesters++;
        if (g->in_prev)
            p->req_in_prev++;
        if (g->member.shrink_only)
            p->any_shrink = true;
        if (g->joined_ms < p->first_joined)
            p->first_joined = g->joined_ms;
    }
}

int fti_quorum_compute(fti_quorum_state_h st, int64_t now_ms, fti_qdecision_t *d_p)
{
    if (!st || !d_p)
        return FT_ERR_ARG;
    fti_qdecision_t *d = d_p;
    memset(d, 0, sizeof(*d));
    d->join_wait_ms = -1;

    struct table_pass tp;
    table_pass(st, now_ms, d, &tp);
    size_t req_in_prev = tp.req_in_prev;
    bool any_shrink = tp.any_shrink;
    int64_t first_joined = tp.first_joined;

    /* rule 3: shrink_only keeps previous members only */
    const fti_quorum_t *prev = st->prev;
    bool shrink = prev && any_shrink;
    d->shrink_only = shrink;
    d->n_candidates = shrink ? req_in_prev : d->n_requesters;
    size_t n_dropped = d->n_requesters - d->n_candidates;
    char names[FTI_QREASON_MAX / 2];

    /* rule 4: fast quorum when every previous member asked */
    if (prev && req_in_prev == prev->n_members) {
        reason_add(d, "issue: fast quorum, all %zu previous members asked", prev->n_members);
        size_t n_new = d->n_candidates - req_in_prev;
        if (n_new > 0) {
            names_list(st, now_ms, NK_NEW, shrink, n_new, names, sizeof(names));
            reason_add(d, ", %zu new (%s)", n_new, names);
        }
        d->fast = true;
        goto issue;
    }

    /* rule 5: min_replicas */
    if (d->n_candidates < (size_t)st->opts.min_replicas) {
        names_list(st, now_ms, NK_CANDIDATE, shrink, d->n_candidates, names, sizeof(names));
        reason_add(d, "waiting: %zu of min %d replicas (%s)", d->n_candidates,
                   st->opts.min_replicas, names);
        goto dropped;
    }

    /* rule 6: split-brain guard */
    if (d->n_requesters <= d->n_healthy / 2) {
        reason_add(d, "split brain guard: %zu candidates of %zu healthy", d->n_requesters,
                   d->n_healthy);
        return FT_SUCCESS;
    }

    /* rule 7: stragglers */
    size_t n_stragglers = d->n_healthy - d->n_requesters;
    if (n_stragglers > 0) {
        names_list(st, now_ms, NK_STRAGGLER, shrink, n_stragglers, names, sizeof(names));
        int64_t waited = now_ms - first_joined;
        if (waited < st->opts.join_timeout_ms) {
            d->join_wait_ms = st->opts.join_timeout_ms - waited;
            reason_add(d, "waiting for stragglers %s (join timeout in %" PRId64 " ms)", names,
                       d->join_wait_ms);
            return FT_SUCCESS;
        }
        reason_add(d, "issue: %zu members, join timeout passed without %s", d->n_candidates,
                   names);
        goto issue;
    }

    /* rule 8 */
    reason_add(d, "issue: %zu members, all %zu healthy groups asked", d->n_candidates,
               d->n_healthy);

issue:
    if (decision_fill_members(st, now_ms, shrink, d) != FT_SUCCESS) {
        fti_qdecision_clear(d);
        return FT_ERR_NO_MEMORY;
    }
dropped:
    if (n_dropped > 0) {
        names_list(st, now_ms, NK_DROPPED, shrink, n_dropped, names, sizeof(names));
        reason_add(d, "; shrink_only dropped %s", names);
    }
    return FT_SUCCESS;
}

void fti_qdecision_clear(fti_qdecision_t *d)
{
    if (!d)
        return;
    fti_qmembers_free(d->members, d->n_members);
    memset(d, 0, sizeof(*d));
    d->join_wait_ms = -1;
}

/* ---- commit ----------------------------------------------------------- */

/* Whether the sorted (replica_id, incarnation) pairs equal prev's. */
static bool ids_equal(const fti_quorum_t *prev, const fti_qmember_t *m, size_t n)
{
    if (!prev || prev->n_members != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (strcmp(prev->members[i].replica_id, m[i].replica_id) != 0 ||
            prev->members[i].incarnation != m[i].incarnation)
            return false;
    return true;
}

/* Rule 8: the id of a quorum of members m[0..n). */
static int64_t next_id(const struct fti_quorum_state *st, const fti_qmember_t *m, size_t n)
{
    bool failures = false;
    for (size_t i = 0; i < n; i++)
        if (m[i].commit_failures > 0)
            failures = true;
    if (ids_equal(st->prev, m, n) && !failures && st->max_seen <= st->last_id)
        return st->last_id;
    return FTI_MAX(st->last_id, st->max_seen) + 1;
}

int fti_quorum_commit(fti_quorum_state_h st, fti_qdecision_t *d, int64_t now_ms,
                      fti_quorum_t **q_p)
{
    if (!st || !d || !q_p || !d->issue || d->n_members == 0 || !d->members)
        return FT_ERR_ARG;

    int64_t id = next_id(st, d->members, d->n_members);

    /* allocate everything first: on failure nothing changes */
    fti_quorum_t *q = calloc(1, sizeof(*q));
    fti_quorum_t *mine = calloc(1, sizeof(*mine));
    fti_qmember_t *copy = fti_qmembers_dup(d->members, d->n_members);
    if (!q || !mine || !copy) {
        free(q);
        free(mine);
        fti_qmembers_free(copy, d->n_members);
        return FT_ERR_NO_MEMORY;
    }
    mine->quorum_id = id;
    mine->created_ms = now_ms;
    mine->n_members = d->n_members;
    mine->members = d->members;
    *q = *mine;
    q->members = copy;
    d->members = NULL;
    d->n_members = 0;
    d->issue = false;

    fti_quorum_free(st->prev);
    st->prev = mine;
    st->last_id = id;
    int64_t max_step = 0;
    for (size_t i = 0; i < mine->n_members; i++)
        max_step = FTI_MAX(max_step, mine->members[i].step);

    /* answer members' requests; keep the others pending from now
     * (both lists are sorted: one merge walk) */
    size_t k = 0;
    for (size_t i = 0; i < st->n_groups; i++) {
        qgroup_t *g = st->groups[i];
        int c = 1;
        while (k < mine->n_members &&
               (c = strcmp(mine->members[k].replica_id, g->member.replica_id)) < 0)
            k++;
        g->in_prev = k < mine->n_members && c == 0;
        if (g->in_prev) /* one step, or a heal to the max and one step */
            g->step_bound = bound_after(max_step);
        if (!g->pending)
            continue;
        if (g->in_prev) {
            g->pending = false;
            g->joined_ms = -1;
        } else {
            g->joined_ms = now_ms;
        }
    }
    *q_p = q;
    return FT_SUCCESS;
}

/* ---- views ------------------------------------------------------------ */

const fti_quorum_t *fti_quorum_prev(fti_quorum_state_h st)
{
    return st ? st->prev : NULL;
}

int64_t fti_quorum_last_id(fti_quorum_state_h st)
{
    return st->last_id;
}

static void group_view(const struct fti_quorum_state *st, const qgroup_t *g, int64_t now_ms,
                       fti_qgroup_view_t *v)
{
    memset(v, 0, sizeof(*v));
    v->replica_id = g->member.replica_id;
    v->member = g->has_member ? &g->member : NULL;
    v->last_heartbeat_ms = g->last_hb_ms;
    v->heartbeat_age_ms = now_ms > g->last_hb_ms ? now_ms - g->last_hb_ms : 0;
    v->healthy = group_healthy(st, g, now_ms);
    v->waiting = g->pending;
    v->waiting_since_ms = g->pending ? g->joined_ms : -1;
    v->in_quorum = g->in_prev;
}

size_t fti_quorum_n_groups(fti_quorum_state_h st)
{
    return st ? st->n_groups : 0;
}

int fti_quorum_group_at(fti_quorum_state_h st, size_t i, int64_t now_ms, fti_qgroup_view_t *v_p)
{
    if (!st || !v_p || i >= st->n_groups)
        return FT_ERR_ARG;
    group_view(st, st->groups[i], now_ms, v_p);
    return FT_SUCCESS;
}

int fti_quorum_group_find(fti_quorum_state_h st, const char *replica_id, int64_t now_ms,
                          fti_qgroup_view_t *v_p)
{
    if (!st || !v_p)
        return FT_ERR_ARG;
    const qgroup_t *g = group_find(st, replica_id);
    if (!g)
        return FT_ERR_NOT_FOUND;
    group_view(st, g, now_ms, v_p);
    return FT_SUCCESS;
}

bool fti_quorum_is_healthy(fti_quorum_state_h st, const char *replica_id, int64_t now_ms)
{
    const qgroup_t *g = st ? group_find(st, replica_id) : NULL;
    return g && group_healthy(st, g, now_ms);
}

bool fti_quorum_is_waiting(fti_quorum_state_h st, const char *replica_id)
{
    const qgroup_t *g = st ? group_find(st, replica_id) : NULL;
    return g && g->pending;
}

size_t fti_quorum_n_healthy(fti_quorum_state_h st, int64_t now_ms)
{
    size_t n = 0;
    for (size_t i = 0; st && i < st->n_groups; i++)
        if (group_healthy(st, st->groups[i], now_ms))
            n++;
    return n;
}

size_t fti_quorum_n_waiting(fti_quorum_state_h st)
{
    size_t n = 0;
    for (size_t i = 0; st && i < st->n_groups; i++)
        if (st->groups[i]->pending)
            n++;
    return n;
}
