/* obs_report.c - the manager's queue of recoveries, failed steps and rank
 * counters for the heartbeats (see obs_report.h). */
#include "control/obs_report.h"

#include <stdlib.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "base/util.h"

const char *fti_recovery_kind_name(int kind)
{
    return kind == FTI_RECOVERY_RESTART ? "restart" : "survivor";
}

int fti_fail_kind(int error)
{
    switch (error) {
    case FT_ERR_PROC_FAILED:
        return FTI_FAIL_PROC;
    case FT_ERR_TIMEOUT:
        return FTI_FAIL_TIMEOUT;
    case FT_ERR_ABORTED:
        return FTI_FAIL_ABORTED;
    case FT_ERR_QUORUM:
        return FTI_FAIL_QUORUM;
    default:
        return FTI_FAIL_OTHER;
    }
}

void fti_obs_init(fti_obs_queue_t *q)
{
    memset(q, 0, sizeof(*q));
    pthread_mutex_init(&q->mu, NULL);
}

void fti_obs_clear(fti_obs_queue_t *q)
{
    free(q->ranks);
    q->ranks = NULL;
    pthread_mutex_destroy(&q->mu);
}

/* Appends item (size bytes) to the array a of *n (cap FTI_OBS_QUEUE),
 * dropping the oldest when full. */
static void push(void *a, size_t *n, const void *item, size_t size)
{
    char *p = a;
    if (*n == FTI_OBS_QUEUE) {
        memmove(p, p + size, (FTI_OBS_QUEUE - 1) * size);
        (*n)--;
    }
    memcpy(p + *n * size, item, size);
    (*n)++;
}

void fti_obs_add_recovery(fti_obs_queue_t *q, const fti_recovery_rec_t *r)
{
    pthread_mutex_lock(&q->mu);
    push(q->rec, &q->n_rec, r, sizeof(*r));
    pthread_mutex_unlock(&q->mu);
}

void fti_obs_add_failure(fti_obs_queue_t *q, const fti_step_failure_t *f)
{
    pthread_mutex_lock(&q->mu);
    push(q->fail, &q->n_fail, f, sizeof(*f));
    pthread_mutex_unlock(&q->mu);
}

void fti_obs_set_ranks(fti_obs_queue_t *q, const fti_rank_metrics_t *m, size_t n)
{
    n = FTI_MIN(n, (size_t)FTI_OBS_MAX_RANKS);
    pthread_mutex_lock(&q->mu);
    if (n != q->n_ranks) {
        fti_rank_metrics_t *p = realloc(q->ranks, (n ? n : 1) * sizeof(*p));
        if (p == NULL) {
            pthread_mutex_unlock(&q->mu);
            return; /* the last counters stay */
        }
        q->ranks = p;
        q->n_ranks = n;
    }
    memcpy(q->ranks, m, n * sizeof(*m));
    q->ranks_gen++;
    pthread_mutex_unlock(&q->mu);
}

void fti_obs_take(fti_obs_queue_t *q, fti_obs_batch_t *b)
{
    pthread_mutex_lock(&q->mu);
    b->n_rec = FTI_MIN(q->n_rec, (size_t)FTI_OBS_BATCH);
    memcpy(b->rec, q->rec, b->n_rec * sizeof(b->rec[0]));
    b->n_fail = FTI_MIN(q->n_fail, (size_t)FTI_OBS_BATCH);
    memcpy(b->fail, q->fail, b->n_fail * sizeof(b->fail[0]));
    b->n_ranks = q->ranks_gen != q->ranks_acked ? q->n_ranks : 0;
    b->ranks_gen = q->ranks_gen;
    if (b->n_ranks)
        memcpy(b->ranks, q->ranks, b->n_ranks * sizeof(b->ranks[0]));
    pthread_mutex_unlock(&q->mu);
}

void fti_obs_acked(fti_obs_queue_t *q, const fti_obs_batch_t *b)
{
    uint64_t rec_seq = b->n_rec ? b->rec[b->n_rec - 1].seq : 0;
    uint64_t fail_seq = b->n_fail ? b->fail[b->n_fail - 1].seq : 0;
    pthread_mutex_lock(&q->mu);
    size_t k = 0;
    while (k < q->n_rec && q->rec[k].seq <= rec_seq)
        k++;
    memmove(q->rec, q->rec + k, (q->n_rec - k) * sizeof(q->rec[0]));
    q->n_rec -= k;
    k = 0;
    while (k < q->n_fail && q->fail[k].seq <= fail_seq)
        k++;
    memmove(q->fail, q->fail + k, (q->n_fail - k) * sizeof(q->fail[0]));
    q->n_fail -= k;
    if (b->n_ranks)
        q->ranks_acked = b->ranks_gen;
    pthread_mutex_unlock(&q->mu);
}

static void rec_msg(const fti_recovery_rec_t *r, Ftmpi__RecoveryReport *m)
{
    ftmpi__recovery_report__init(m);
    m->seq = r->seq;
    m->kind = (char *)fti_recovery_kind_name(r->kind);
    m->failed_step = r->failed_step;
    m->start_ms = r->start_ms;
    m->end_ms = r->end_ms;
    m->detect_ms = r->detect_ms;
    m->quorum_ms = r->quorum_ms;
    m->slice_ms = r->slice_ms;
    m->heal_ms = r->heal_ms;
    m->heal_bytes = r->heal_bytes;
    m->steps_lost = r->steps_lost;
    m->error = (char *)r->error;
    m->peer = (char *)r->peer;
    m->resumed_step = r->resumed_step;
    m->restart_ms = r->restart_ms;
}

static void rank_msg(const fti_rank_metrics_t *r, int64_t group_rank, Ftmpi__RankMetrics *m)
{
    ftmpi__rank_metrics__init(m);
    m->group_rank = group_rank;
    m->steps = r->steps;
    m->commits = r->commits;
    m->bytes_reduced = r->bytes_reduced;
    m->heal_bytes = r->heal_bytes;
    m->fail_proc = r->fail[FTI_FAIL_PROC];
    m->fail_timeout = r->fail[FTI_FAIL_TIMEOUT];
    m->fail_aborted = r->fail[FTI_FAIL_ABORTED];
    m->fail_quorum = r->fail[FTI_FAIL_QUORUM];
    m->fail_other = r->fail[FTI_FAIL_OTHER];
    m->quorum_us = r->quorum_us;
    m->allreduce_us = r->allreduce_us;
    m->commit_us = r->commit_us;
    m->address = (char *)r->address; /* the batch's copy, kept until the call ends */
}

void fti_obs_batch_apply(fti_obs_batch_t *b, Ftmpi__LighthouseHeartbeatRequest *req)
{
    for (size_t i = 0; i < b->n_rec; i++) {
        rec_msg(&b->rec[i], &b->m_rec[i]);
        b->p_rec[i] = &b->m_rec[i];
    }
    for (size_t i = 0; i < b->n_fail; i++) {
        const fti_step_failure_t *f = &b->fail[i];
        Ftmpi__RecoveryStepFailure *m = &b->m_fail[i];
        ftmpi__recovery_step_failure__init(m);
        m->seq = f->seq;
        m->step = f->step;
        m->wall_ms = f->wall_ms;
        m->error = (char *)f->error;
        m->peer = (char *)f->peer;
        m->group_rank = f->group_rank;
        b->p_fail[i] = m;
    }
    for (size_t i = 0; i < b->n_ranks; i++) {
        rank_msg(&b->ranks[i], (int64_t)i, &b->m_ranks[i]);
        b->p_ranks[i] = &b->m_ranks[i];
    }
    req->n_recoveries = b->n_rec;
    req->recoveries = b->p_rec;
    req->n_step_failures = b->n_fail;
    req->step_failures = b->p_fail;
    req->n_rank_metrics = b->n_ranks;
    req->rank_metrics = b->p_ranks;
}
