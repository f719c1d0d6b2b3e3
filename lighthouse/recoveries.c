/* recoveries.c - the groups' recoveries, failed steps and rank counters
 * (see recoveries.h). */
#include "lighthouse/recoveries.h"

#include <stdlib.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "base/util.h"

const double fti_lh_sec_bounds[FTI_LH_SEC_BUCKETS - 1] = {
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 120};
const double fti_lh_byte_bounds[FTI_LH_BYTE_BUCKETS - 1] = {
    4096.0, 65536.0, 1048576.0, 16777216.0, 268435456.0, 1073741824.0, 4294967296.0,
    17179869184.0, 68719476736.0};

const char *fti_lh_phase_name(int phase)
{
    static const char *const n[FTI_LH_PHASES] = {"detect", "restart", "quorum", "slice", "heal",
                                                        "duration"};
    return phase >= 0 && phase < FTI_LH_PHASES ? n[phase] : "?";
}

/* Adds v (units of the bounds' unit times scale) to h. */
static void hist_add(fti_lh_hist64_t *h, const double *bounds, size_t nb, int64_t v,
                     double scale)
{
    size_t k = 0;
    while (k < nb - 1 && (double)v * scale > bounds[k])
        k++;
    h->n[k]++;
    h->sum += v;
    h->count++;
}

static fti_lh_recov_group_t *group_get(fti_lh_recov_t *t, const char *id, uint64_t inc)
{
    fti_lh_recov_group_t *g = NULL;
    for (size_t i = 0; i < t->n_groups && g == NULL; i++)
        if (strcmp(t->groups[i].replica_id, id) == 0)
            g = &t->groups[i];
    if (g == NULL) {
        if (t->n_groups >= FTI_LH_RECOV_GROUPS) {
            t->groups_dropped++;
            return NULL;
        }
        if (t->n_groups == t->cap_groups) {
            size_t cap = t->cap_groups ? 2 * t->cap_groups : 8;
            fti_lh_recov_group_t *p = realloc(t->groups, cap * sizeof(*p));
            if (p == NULL)
                return NULL;
            t->groups = p;
            t->cap_groups = cap;
        }
        g = &t->groups[t->n_groups++];
        memset(g, 0, sizeof(*g));
        fti_strlcpy(g->replica_id, id, sizeof(g->replica_id));
        g->incarnation = inc;
    }
    if (g->incarnation != inc) { /* a new process: its seqs start again */
        g->incarnation = inc;
        g->rec_seq = g->fail_seq = 0;
    }
    return g;
}

static void take_recovery(fti_lh_recov_t *t, fti_lh_recov_group_t *g,
                          const Ftmpi__RecoveryReport *m)
{
    if (m->seq <= g->rec_seq)
        return;
    g->rec_seq = m->seq;
    fti_recovery_rec_t r = {
        .seq = m->seq, .kind = m->kind && strcmp(m->kind, "restart") == 0,
        .failed_step = m->failed_step, .start_ms = m->start_ms, .end_ms = m->end_ms,
        .detect_ms = m->detect_ms, .quorum_ms = m->quorum_ms, .slice_ms = m->slice_ms,
        .heal_ms = m->heal_ms, .heal_bytes = m->heal_bytes, .steps_lost = m->steps_lost,
        .resumed_step = m->resumed_step, .restart_ms = m->restart_ms};
    fti_strlcpy(r.error, m->error ? m->error : "", sizeof(r.error));
    fti_strlcpy(r.peer, m->peer ? m->peer : "", sizeof(r.peer));
    const int64_t ms[FTI_LH_PHASES] = {r.detect_ms, r.restart_ms, r.quorum_ms, r.slice_ms,
                                       r.heal_ms, r.end_ms - r.start_ms};
    for (int p = 0; p < FTI_LH_PHASES; p++)
        if (ms[p] >= 0)
            hist_add(&g->phase[p], fti_lh_sec_bounds, FTI_LH_SEC_BUCKETS, ms[p], 0.001);
    if (r.heal_bytes > 0) {
        hist_add(&g->heal_bytes, fti_lh_byte_bounds, FTI_LH_BYTE_BUCKETS, r.heal_bytes, 1.0);
        g->last_heal_rate = (double)r.heal_bytes * 1000.0 / (double)FTI_MAX(r.heal_ms, 1);
    }
    g->recoveries[r.kind]++;
    g->steps_lost += r.steps_lost;
    if (t->rec == NULL && (t->rec = calloc(FTI_LH_RECOV_KEEP, sizeof(*t->rec))) == NULL)
        return;
    fti_lh_recov_entry_t *e = &t->rec[t->rec_next];
    fti_strlcpy(e->replica_id, g->replica_id, sizeof(e->replica_id));
    e->r = r;
    t->rec_next = (t->rec_next + 1) % FTI_LH_RECOV_KEEP;
    t->n_rec = FTI_MIN(t->n_rec + 1, (size_t)FTI_LH_RECOV_KEEP);
}

static void take_failure(fti_lh_recov_t *t, fti_lh_recov_group_t *g,
                         const Ftmpi__RecoveryStepFailure *m)
{
    if (m->seq <= g->fail_seq)
        return;
    g->fail_seq = m->seq;
    if (t->fail == NULL && (t->fail = calloc(FTI_LH_FAILS_KEEP, sizeof(*t->fail))) == NULL)
        return;
    fti_lh_fail_entry_t *e = &t->fail[t->fail_next];
    memset(e, 0, sizeof(*e));
    fti_strlcpy(e->replica_id, g->replica_id, sizeof(e->replica_id));
    e->f.seq = m->seq;
    e->f.step = m->step;
    e->f.wall_ms = m->wall_ms;
    e->f.group_rank = (int)m->group_rank;
    fti_strlcpy(e->f.error, m->error ? m->error : "", sizeof(e->f.error));
    fti_strlcpy(e->f.peer, m->peer ? m->peer : "", sizeof(e->f.peer));
    t->fail_next = (t->fail_next + 1) % FTI_LH_FAILS_KEEP;
    t->n_fail = FTI_MIN(t->n_fail + 1, (size_t)FTI_LH_FAILS_KEEP);
}

static void take_ranks(fti_lh_recov_group_t *g, Ftmpi__RankMetrics *const *m, size_t n)
{
    n = FTI_MIN(n, (size_t)FTI_OBS_MAX_RANKS);
    if (n != g->n_ranks) {
        fti_rank_metrics_t *p = realloc(g->ranks, (n ? n : 1) * sizeof(*p));
        if (p == NULL)
            return;
        g->ranks = p;
        g->n_ranks = n;
    }
    for (size_t i = 0; i < n; i++) {
        const Ftmpi__RankMetrics *r = m[i];
        g->ranks[i] = (fti_rank_metrics_t){
            .steps = r->steps, .commits = r->commits, .bytes_reduced = r->bytes_reduced,
            .heal_bytes = r->heal_bytes,
            .fail = {r->fail_proc, r->fail_timeout, r->fail_aborted, r->fail_quorum,
                     r->fail_other},
            .quorum_us = r->quorum_us, .allreduce_us = r->allreduce_us,
            .commit_us = r->commit_us};
        /* what the rank advertises; a longer string than an address holds
         * (a client of another build) is cut, never read past */
        if (r->address != NULL)
            fti_strlcpy(g->ranks[i].address, r->address, sizeof(g->ranks[i].address));
    }
}

void fti_lh_recov_report(fti_lh_recov_t *t, const Ftmpi__LighthouseHeartbeatRequest *req)
{
    if (req->replica_id == NULL || req->replica_id[0] == '\0' ||
        (req->n_recoveries == 0 && req->n_step_failures == 0 && req->n_rank_metrics == 0))
        return;
    fti_lh_recov_group_t *g = group_get(t, req->replica_id, req->incarnation);
    if (g == NULL)
        return;
    for (size_t i = 0; i < req->n_recoveries; i++)
        take_recovery(t, g, req->recoveries[i]);
    for (size_t i = 0; i < req->n_step_failures; i++)
        take_failure(t, g, req->step_failures[i]);
    if (req->n_rank_metrics > 0)
        take_ranks(g, req->rank_metrics, req->n_rank_metrics);
}

/* Removes replica_id's entries from a ring of keep entries of size sz
 * (each starting with its replica id), oldest first kept in order. */
static void ring_drop(void *ring, size_t sz, size_t keep, size_t *next, size_t *n,
                      const char *replica_id)
{
    char *r = ring, *tmp = ring ? malloc(keep * sz) : NULL;
    size_t start = *n < keep ? 0 : *next, m = 0;
    if (tmp == NULL)
        return;
    for (size_t i = 0; i < *n; i++) {
        const char *e = r + ((start + i) % keep) * sz;
        if (strcmp(e, replica_id) != 0)
            memcpy(tmp + (m++) * sz, e, sz);
    }
    if (m != *n) {
        memcpy(r, tmp, m * sz);
        *n = m;
        *next = m % keep;
    }
    free(tmp);
}

void fti_lh_recov_forget(fti_lh_recov_t *t, const char *replica_id)
{
    for (size_t i = 0; i < t->n_groups; i++) {
        if (strcmp(t->groups[i].replica_id, replica_id) != 0)
            continue;
        free(t->groups[i].ranks);
        memmove(&t->groups[i], &t->groups[i + 1], (t->n_groups - i - 1) * sizeof(*t->groups));
        t->n_groups--;
        break;
    }
    ring_drop(t->rec, sizeof(*t->rec), FTI_LH_RECOV_KEEP, &t->rec_next, &t->n_rec, replica_id);
    ring_drop(t->fail, sizeof(*t->fail), FTI_LH_FAILS_KEEP, &t->fail_next, &t->n_fail,
              replica_id);
}

size_t fti_lh_recov_expire(fti_lh_recov_t *t, bool (*known)(const char *replica_id, void *arg),
                           void *arg)
{
    size_t n = 0;
    for (size_t i = t->n_groups; i-- > 0;) {
        if (known(t->groups[i].replica_id, arg))
            continue;
        char id[FTI_REPLICA_ID_SIZE];
        memcpy(id, t->groups[i].replica_id, sizeof(id));
        fti_lh_recov_forget(t, id);
        n++;
    }
    return n;
}

const fti_lh_recov_entry_t *fti_lh_recov_at(const fti_lh_recov_t *t, size_t i)
{
    size_t start = t->n_rec < FTI_LH_RECOV_KEEP ? 0 : t->rec_next;
    return i < t->n_rec ? &t->rec[(start + i) % FTI_LH_RECOV_KEEP] : NULL;
}

const fti_lh_fail_entry_t *fti_lh_fail_at(const fti_lh_recov_t *t, size_t i)
{
    size_t start = t->n_fail < FTI_LH_FAILS_KEEP ? 0 : t->fail_next;
    return i < t->n_fail ? &t->fail[(start + i) % FTI_LH_FAILS_KEEP] : NULL;
}

int fti_lh_recov_copy(const fti_lh_recov_t *t, fti_lh_recov_t *dst)
{
    memset(dst, 0, sizeof(*dst));
    *dst = *t;
    dst->rec = NULL;
    dst->fail = NULL;
    dst->groups = NULL;
    dst->cap_groups = dst->n_groups = 0;
    if ((t->rec && (dst->rec = malloc(FTI_LH_RECOV_KEEP * sizeof(*t->rec))) == NULL) ||
        (t->fail && (dst->fail = malloc(FTI_LH_FAILS_KEEP * sizeof(*t->fail))) == NULL) ||
        (t->n_groups && (dst->groups = calloc(t->n_groups, sizeof(*t->groups))) == NULL)) {
        fti_lh_recov_clear(dst);
        return FT_ERR_NO_MEMORY;
    }
    if (t->rec)
        memcpy(dst->rec, t->rec, FTI_LH_RECOV_KEEP * sizeof(*t->rec));
    if (t->fail)
        memcpy(dst->fail, t->fail, FTI_LH_FAILS_KEEP * sizeof(*t->fail));
    for (size_t i = 0; i < t->n_groups; i++) {
        fti_lh_recov_group_t *g = &dst->groups[dst->n_groups++];
        *g = t->groups[i];
        g->ranks = NULL;
        if (g->n_ranks && (g->ranks = malloc(g->n_ranks * sizeof(*g->ranks))) == NULL) {
            g->n_ranks = 0;
            continue;
        }
        if (g->n_ranks)
            memcpy(g->ranks, t->groups[i].ranks, g->n_ranks * sizeof(*g->ranks));
    }
    dst->cap_groups = dst->n_groups;
    return FT_SUCCESS;
}

void fti_lh_recov_clear(fti_lh_recov_t *t)
{
    for (size_t i = 0; i < t->n_groups; i++)
        free(t->groups[i].ranks);
    free(t->groups);
    free(t->rec);
    free(t->fail);
    memset(t, 0, sizeof(*t));
}
