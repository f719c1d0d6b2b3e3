/* manager.c - lighthouse client and heartbeats of group rank 0 (see
 * manager.h). */
#include "control/manager.h"
#include "control/message.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ftmpi_errors.h"
#include "control/lighthouse_client.h"
#include "base/log.h"
#include "base/net.h"
#include "control/results.h"
#include "base/sizes.h"
#include "base/util.h"

/* Pause between attempts when the lighthouse cannot be reached. */
#define MANAGER_RETRY_MS 200

struct fti_manager {
    fti_lighthouse_client_h quorum_client;
    fti_lighthouse_client_h hb_client;
    char replica_id[FTI_REPLICA_ID_SIZE];
    int heartbeat_ms;
    int hb_timeout_ms;

    pthread_t hb_thread;
    int hb_started;
    pthread_mutex_t mu;
    pthread_cond_t cv; /* CLOCK_MONOTONIC */
    int stop;
    int left;      /* fti_manager_leave ran */
    bool refused_said; /* the lighthouse's refusal of a second claim was logged */
    int leave_rc;
    fti_lighthouse_report_t report; /* under mu */
    _Atomic int killed; /* the lighthouse answered FT_ERR_KILLED */
    fti_obs_queue_t obs;      /* recoveries, failed steps, rank counters (own lock) */
    fti_obs_batch_t *batch;   /* the heartbeat thread's (then leave's) */
};

/* One heartbeat with the report and a batch of the observability queue;
 * the batch leaves the queue once the lighthouse answered. */
static int send_heartbeat(struct fti_manager *m, fti_lighthouse_report_t *rep)
{
    if (m->batch)
        fti_obs_take(&m->obs, m->batch);
    rep->obs = m->batch;
    int rc = fti_lighthouse_heartbeat_report(m->hb_client, m->replica_id, rep, m->hb_timeout_ms);
    if (rc == FT_SUCCESS && m->batch)
        fti_obs_acked(&m->obs, m->batch);
    return rc;
}

static void *heartbeat_thread(void *arg)
{
    struct fti_manager *m = arg;
    int failing = 0;

    pthread_mutex_lock(&m->mu);
    while (!m->stop) {
        fti_lighthouse_report_t rep = m->report;
        pthread_mutex_unlock(&m->mu);
        int rc = send_heartbeat(m, &rep);
        if (rc == FT_ERR_KILLED) { /* no more heartbeats: the group is to end */
            atomic_store(&m->killed, 1);
            FTI_WARN("manager: the lighthouse says %s was killed; heartbeats stop", m->replica_id);
            pthread_mutex_lock(&m->mu);
            break;
        }
        if (rc != FT_SUCCESS && !failing)
            FTI_WARN("manager: heartbeat to the lighthouse failed: %s%s%s (retrying every %d ms)",
                     FT_Error_string(rc), rc == FT_ERR_CONNECT ? ": " : "",
                     rc == FT_ERR_CONNECT ? fti_net_last_error() : "", m->heartbeat_ms);
        else if (rc == FT_SUCCESS && failing)
            FTI_INFO("manager: heartbeats reach the lighthouse again");
        failing = rc != FT_SUCCESS;

        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += m->heartbeat_ms / 1000;
        ts.tv_nsec += (long)(m->heartbeat_ms % 1000) * 1000000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&m->mu);
        while (!m->stop) {
            int w = pthread_cond_timedwait(&m->cv, &m->mu, &ts);
            if (w == ETIMEDOUT)
                break;
        }
    }
    pthread_mutex_unlock(&m->mu);
    return NULL;
}

int fti_manager_create(const char *lighthouse, const fti_auth_key_t *key, const char *replica_id,
                       int connect_timeout_ms, int heartbeat_ms, fti_manager_h *m_p)
{
    struct fti_manager *m = calloc(1, sizeof(*m));
    pthread_condattr_t ca;
    int rc;

    if (m == NULL)
        return FT_ERR_NO_MEMORY;
    fti_strlcpy(m->replica_id, replica_id, sizeof(m->replica_id));
    fti_obs_init(&m->obs);
    m->batch = malloc(sizeof(*m->batch)); /* NULL: heartbeats carry no batch */
    m->heartbeat_ms = heartbeat_ms > 0 ? heartbeat_ms : 100;
    /* a heartbeat may take a few periods, not more (it must not hold up
     * FT_Finalize long when the lighthouse is gone) */
    m->hb_timeout_ms = FTI_MIN(connect_timeout_ms, FTI_MAX(1000, 5 * m->heartbeat_ms));
    pthread_mutex_init(&m->mu, NULL);
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&m->cv, &ca);
    pthread_condattr_destroy(&ca);

    if ((rc = fti_lighthouse_client_create(lighthouse, key, connect_timeout_ms,
                                           &m->quorum_client)) != FT_SUCCESS ||
        (rc = fti_lighthouse_client_create(lighthouse, key, connect_timeout_ms, &m->hb_client)) !=
            FT_SUCCESS) {
        FTI_ERROR("manager: bad lighthouse address '%s' (FTMPI_LIGHTHOUSE)", lighthouse);
        fti_manager_destroy(m);
        return rc == FT_ERR_ARG ? FT_ERR_CONFIG : rc;
    }
    m->report.incarnation = fti_lighthouse_client_incarnation(m->quorum_client);
    if (pthread_create(&m->hb_thread, NULL, heartbeat_thread, m) != 0) {
        FTI_ERROR("manager: pthread_create failed: %m");
        fti_manager_destroy(m);
        return FT_ERR_SYSTEM;
    }
    m->hb_started = 1;
    *m_p = m;
    return FT_SUCCESS;
}

void fti_manager_report(fti_manager_h m, int64_t restarts, int64_t heals, int64_t heal_bytes)
{
    if (m == NULL)
        return;
    pthread_mutex_lock(&m->mu);
    m->report.restarts = restarts;
    m->report.heals = heals;
    m->report.heal_bytes = heal_bytes;
    pthread_mutex_unlock(&m->mu);
}

void fti_manager_report_failure(fti_manager_h m, const char *why)
{
    if (m == NULL || why == NULL)
        return;
    pthread_mutex_lock(&m->mu);
    fti_strlcpy(m->report.last_failure, why, sizeof(m->report.last_failure));
    pthread_mutex_unlock(&m->mu);
}

void fti_manager_report_recovery(fti_manager_h m, const fti_recovery_rec_t *r)
{
    if (m && r)
        fti_obs_add_recovery(&m->obs, r);
}

void fti_manager_report_step_failure(fti_manager_h m, const fti_step_failure_t *f)
{
    if (m && f)
        fti_obs_add_failure(&m->obs, f);
}

void fti_manager_report_ranks(fti_manager_h m, const fti_rank_metrics_t *r, size_t n)
{
    if (m && r)
        fti_obs_set_ranks(&m->obs, r, n);
}

void fti_manager_want_member_ids(fti_manager_h m)
{
    if (m)
        fti_lighthouse_client_want_ids(m->quorum_client, true);
}

static void stop_heartbeats(struct fti_manager *m)
{
    if (!m->hb_started)
        return;
    pthread_mutex_lock(&m->mu);
    m->stop = 1;
    pthread_cond_signal(&m->cv);
    pthread_mutex_unlock(&m->mu);
    pthread_join(m->hb_thread, NULL);
    m->hb_started = 0;
}

int fti_manager_leave(fti_manager_h m, int timeout_ms)
{
    if (m->left)
        return m->leave_rc;
    m->left = 1;
    /* the last heartbeat has been answered before the lighthouse hears
     * the finalize (one loop, in order): it cannot bring the group back */
    stop_heartbeats(m);
    /* what the heartbeats did not carry yet (the last recovery, the ranks'
     * final counters) goes in one more, before the group is forgotten */
    if (!atomic_load(&m->killed)) {
        pthread_mutex_lock(&m->mu);
        fti_lighthouse_report_t rep = m->report;
        pthread_mutex_unlock(&m->mu);
        (void)send_heartbeat(m, &rep);
    }
    m->leave_rc = fti_lighthouse_finalize(m->quorum_client, m->replica_id, timeout_ms);
    if (m->leave_rc != FT_SUCCESS)
        FTI_INFO("manager: telling the lighthouse that %s leaves failed: %s (it will notice "
                 "the heartbeats stopped)",
                 m->replica_id, FT_Error_string(m->leave_rc));
    return m->leave_rc;
}

void fti_manager_destroy(fti_manager_h m)
{
    if (m == NULL)
        return;
    stop_heartbeats(m);
    fti_lighthouse_client_destroy(m->quorum_client);
    fti_lighthouse_client_destroy(m->hb_client);
    pthread_cond_destroy(&m->cv);
    pthread_mutex_destroy(&m->mu);
    fti_obs_clear(&m->obs);
    free(m->batch);
    free(m);
}

/* Asks for the quorum with `me` as this group's member (see
 * fti_manager_round); compact, init_sync: see fti_lighthouse_quorum_resp. */
static int fti_manager_quorum(fti_manager_h m, const Ftmpi__QuorumMember *me, bool compact,
                              bool init_sync, int timeout_ms,
                              Ftmpi__LighthouseQuorumResponse **resp_p)
{
    int64_t deadline = fti_now_ms() + timeout_ms;
    int rc, tries = 0;
    for (;;) {
        Ftmpi__LighthouseQuorumResponse *resp = NULL;
        tries++;
        rc = fti_lighthouse_quorum_resp(m->quorum_client, me, compact, init_sync,
                                        FTI_MAX(1, fti_ms_left(deadline)), &resp);
        if (rc == FT_SUCCESS) {
            *resp_p = resp;
            return FT_SUCCESS;
        }
        if (rc != FT_ERR_CONNECT && rc != FT_ERR_PROC_FAILED)
            break;
        if (tries == 1)
            FTI_WARN("manager: lighthouse unreachable (%s%s%s); asking again every %d ms until "
                     "the quorum timeout",
                     FT_Error_string(rc), rc == FT_ERR_CONNECT ? ": " : "",
                     rc == FT_ERR_CONNECT ? fti_net_last_error() : "", MANAGER_RETRY_MS);
        if (fti_ms_left(deadline) <= MANAGER_RETRY_MS) {
            rc = FT_ERR_TIMEOUT;
            break;
        }
        fti_sleep_ms(MANAGER_RETRY_MS);
    }
    if (rc == FT_ERR_TIMEOUT) {
        FTI_WARN("manager: no quorum within %d ms", timeout_ms);
    } else if (rc == FT_ERR_EXISTS) {
        /* another live process holds this group (issue 23): this one never
         * takes part while it lives; said once, asked again as a standby */
        if (!m->refused_said) {
            char why[512];
            fti_lighthouse_client_last_error(m->quorum_client, why, sizeof(why));
            FTI_ERROR("manager: the lighthouse refused this group: %s", why);
            m->refused_said = true;
        }
    } else {
        FTI_WARN("manager: quorum request failed: %s", FT_Error_string(rc));
    }
    return rc;
}

/* The step to ask with (the group's lowest) and whether any rank asked for
 * a shrink-only quorum. */
static int64_t fold_asks(const fti_quorum_ask_t *asks, int n, bool *shrink_p)
{
    int64_t step = asks[0].step;
    bool shrink = false, mixed = false;
    for (int i = 0; i < n; i++) {
        mixed |= asks[i].step != asks[0].step;
        step = FTI_MIN(step, asks[i].step);
        shrink |= asks[i].shrink_only != 0;
    }
    if (mixed)
        FTI_WARN("quorum: the group's ranks are at different steps; asking with the lowest, %" PRId64,
                 step);
    *shrink_p = shrink;
    return step;
}

/* The ranks' counters the asks carry, for the heartbeats. */
static void note_rank_metrics(struct fti_manager *m, const fti_quorum_ask_t *asks, int n)
{
    size_t k = FTI_MIN((size_t)n, (size_t)FTI_OBS_MAX_RANKS);
    fti_rank_metrics_t *r = malloc(k * sizeof(*r));
    if (r == NULL)
        return;
    for (size_t i = 0; i < k; i++)
        r[i] = asks[i].metrics;
    fti_obs_set_ranks(&m->obs, r, k);
    free(r);
}

/* The SDC fingerprints of the asks (every rank's, of step, in
 * QuorumMember.sdc_prints; names from r), or none when a rank took none
 * at that step.  prints: n * FTI_SDC_MAX_BUFS entries, pp as many
 * pointers; returns how many were set. */
static size_t fold_prints(const fti_quorum_ask_t *asks, int n, int64_t step,
                          const fti_manager_round_t *r, Ftmpi__SdcPrint *prints,
                          Ftmpi__SdcPrint **pp)
{
    size_t k = 0;
    for (int i = 0; i < n; i++)
        if (asks[i].sdc_step != step || asks[i].sdc_step <= 0)
            return 0;
    for (int i = 0; i < n; i++) {
        for (uint64_t j = 0; j < asks[i].sdc_n && j < FTI_SDC_MAX_BUFS; j++) {
            Ftmpi__SdcPrint *p = &prints[k];
            ftmpi__sdc_print__init(p);
            p->group_rank = i;
            p->index = (uint32_t)j;
            p->buffer = (char *)(j < r->n_sdc_names && r->sdc_names[j] ? r->sdc_names[j] : "");
            p->sum = asks[i].sdc_sum[j];
            pp[k++] = p;
        }
    }
    return k;
}

static bool killed(fti_rank_server_h server)
{
    char msg[FTI_REASON_SIZE] = "";
    return fti_rank_server_killed(server, msg, sizeof(msg));
}

int fti_manager_round(fti_manager_h m, const fti_quorum_ask_t *asks, int n,
                      const fti_manager_round_t *r, void **buf_p, size_t *len_p)
{
    if (m == NULL || asks == NULL || n < 1 || r == NULL)
        return FT_ERR_ARG;
    bool shrink = false;
    int64_t step = fold_asks(asks, n, &shrink);
    note_rank_metrics(m, asks, n);
    if (killed(r->server) || atomic_load(&m->killed))
        return FT_ERR_KILLED;

    Ftmpi__QuorumMember me = FTMPI__QUORUM_MEMBER__INIT;
    Ftmpi__LighthouseQuorumResponse *q = NULL;
    me.replica_id = m->replica_id;
    me.address = (char *)r->address;
    me.store_address = (char *)r->address;
    me.step = step;
    me.world_size = (uint64_t)n;
    me.shrink_only = shrink;
    me.commit_failures = r->commit_failures;
    me.data.data = (uint8_t *)r->data;
    me.data.len = r->data_len;
    Ftmpi__SdcPrint *prints = calloc((size_t)n * FTI_SDC_MAX_BUFS, sizeof(*prints));
    Ftmpi__SdcPrint **pp = calloc((size_t)n * FTI_SDC_MAX_BUFS, sizeof(*pp));
    if (prints == NULL || pp == NULL) {
        free(prints);
        free(pp);
        return FT_ERR_NO_MEMORY;
    }
    me.n_sdc_prints = fold_prints(asks, n, step, r, prints, pp);
    me.sdc_prints = pp;
    me.sdc_step = me.n_sdc_prints > 0 ? step : 0;
    int rc = fti_manager_quorum(m, &me, r->compact, r->init_sync, r->timeout_ms, &q);
    free(pp);
    free(prints);
    if (rc == FT_ERR_KILLED)
        atomic_store(&m->killed, 1);
    if (rc != FT_SUCCESS)
        return rc;
    if (killed(r->server)) {
        ftmpi__lighthouse_quorum_response__free_unpacked(q, NULL);
        return FT_ERR_KILLED;
    }
    size_t len = ftmpi__lighthouse_quorum_response__get_packed_size(q);
    void *buf = malloc(len ? len : 1);
    if (buf == NULL) {
        ftmpi__lighthouse_quorum_response__free_unpacked(q, NULL);
        return FT_ERR_NO_MEMORY;
    }
    ftmpi__lighthouse_quorum_response__pack(q, buf);
    ftmpi__lighthouse_quorum_response__free_unpacked(q, NULL);
    *buf_p = buf;
    *len_p = len;
    return FT_SUCCESS;
}

int fti_quorum_unpack(const void *buf, size_t len, Ftmpi__LighthouseQuorumResponse **resp_p)
{
    Ftmpi__LighthouseQuorumResponse *q = (Ftmpi__LighthouseQuorumResponse *)fti_rpc_unpack(
        &ftmpi__lighthouse_quorum_response__descriptor, buf, len);
    if (q == NULL || q->quorum == NULL || fti_quorum_check(q->quorum) != FT_SUCCESS) {
        FTI_ERROR("quorum: the group's broadcast does not decode");
        if (q)
            ftmpi__lighthouse_quorum_response__free_unpacked(q, NULL);
        return FT_ERR_BAD_MESSAGE;
    }
    *resp_p = q;
    return FT_SUCCESS;
}
