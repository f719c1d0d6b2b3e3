/* lighthouse/replies.c - the quorum replies, packed once per issued
 * quorum and shared by every waiter they answer: the full member list, or
 * each group's own compact results (see server_int.h). */
#include "lighthouse/server_int.h"

#include <stdlib.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/util.h"

void fti_lh_reply_release(void *arg)
{
    struct shared_reply *r = arg;
    if (--r->refs == 0)
        free(r);
}

void fti_lh_view_clear(struct quorum_view *v)
{
    fti_results_index_destroy(v->idx);
    if (v->full)
        fti_lh_reply_release(v->full);
    free(v->pm);
    free(v->pp);
    free(v->ids);
    free(v->sdc_report);
    memset(v, 0, sizeof(*v));
}

/* FT_ERR_NO_MEMORY leaves v cleared. */
int fti_lh_view_init(struct quorum_view *v, const fti_quorum_t *q, int64_t created_wall,
                     int64_t dropped, const fti_sdc_finding_t *sdc)
{
    memset(v, 0, sizeof(*v));
    v->q = q;
    v->dropped = dropped;
    v->pm = calloc(q->n_members, sizeof(*v->pm));
    v->pp = calloc(q->n_members, sizeof(*v->pp));
    if (sdc != NULL)
        v->sdc_report = calloc(q->n_members, sizeof(*v->sdc_report));
    if (v->pm == NULL || v->pp == NULL || (sdc != NULL && v->sdc_report == NULL)) {
        fti_lh_view_clear(v);
        return FT_ERR_NO_MEMORY;
    }
    Ftmpi__QuorumMember *pm = v->pm, **pp = v->pp;
    for (size_t i = 0; i < q->n_members; i++) {
        const fti_qmember_t *m = &q->members[i];
        ftmpi__quorum_member__init(&pm[i]);
        pm[i].replica_id = (char *)m->replica_id;
        pm[i].address = (char *)m->address;
        pm[i].store_address = (char *)m->store_address;
        pm[i].step = m->step;
        pm[i].world_size = m->world_size;
        pm[i].shrink_only = m->shrink_only;
        pm[i].commit_failures = m->commit_failures;
        pm[i].incarnation = m->incarnation;
        pm[i].data.data = m->data;
        pm[i].data.len = m->data_len;
        if (sdc != NULL && sdc[i].verdict != FTI_SDC_AGREE) {
            /* the results (control/results.c) heal a minority from the others */
            pm[i].sdc_verdict = sdc[i].verdict;
            fti_sdc_describe(&sdc[i], v->sdc_report[i], sizeof(v->sdc_report[i]));
            pm[i].sdc_report = v->sdc_report[i];
        }
        pp[i] = &pm[i];
    }
    if (q->n_members <= LH_COMPACT_MAX_IDS && (v->ids = calloc(q->n_members + 1, sizeof(char *))))
        for (size_t i = 0; i < q->n_members; i++)
            v->ids[i] = (char *)q->members[i].replica_id;
    ftmpi__quorum__init(&v->pq);
    v->pq.quorum_id = q->quorum_id;
    v->pq.n_participants = q->n_members;
    v->pq.participants = pp;
    v->pq.created_ms = created_wall;
    return FT_SUCCESS;
}

struct shared_reply *fti_lh_pack_response(const Ftmpi__LighthouseQuorumResponse *resp)
{
    size_t len = ftmpi__lighthouse_quorum_response__get_packed_size(resp);
    struct shared_reply *r = malloc(sizeof(*r) + len);
    if (r) {
        r->refs = 1;
        r->len = ftmpi__lighthouse_quorum_response__pack(resp, r->data);
    }
    return r;
}

/* The full reply (every member), packed on first use and shared.  NULL on
 * no memory. */
struct shared_reply *fti_lh_view_full(struct quorum_view *v)
{
    if (!v->full_tried) {
        Ftmpi__LighthouseQuorumResponse resp = FTMPI__LIGHTHOUSE_QUORUM_RESPONSE__INIT;
        v->full_tried = true;
        resp.quorum = &v->pq;
        v->full = fti_lh_pack_response(&resp);
    }
    return v->full;
}

/* The compact reply of group replica_id (one result per group rank; the
 * quorum without members).  Returns its own reply (refs 1) or NULL with
 * *rc_p set. */
struct shared_reply *fti_lh_view_compact(struct quorum_view *v, const char *replica_id,
                                         bool init_sync, bool want_ids, int *rc_p)
{
    if (!v->idx_tried) {
        v->idx_tried = true;
        if (fti_results_index_create(&v->pq, &v->idx) != FT_SUCCESS)
            v->idx = NULL;
    }
    if (v->idx == NULL) {
        *rc_p = FT_ERR_NO_MEMORY;
        return NULL;
    }
    int rank = fti_results_index_find(v->idx, replica_id);
    long at = fti_quorum_member_index(v->q, replica_id);
    if (rank < 0 || at < 0) {
        *rc_p = FT_ERR_NOT_FOUND;
        return NULL;
    }
    uint64_t ws = v->q->members[at].world_size ? v->q->members[at].world_size : 1;
    if (ws > LH_COMPACT_MAX_RANKS) {
        *rc_p = FT_ERR_ARG;
        return NULL;
    }
    fti_quorum_result_t *res = calloc(ws, sizeof(*res));
    Ftmpi__ManagerQuorumResult *msgs = calloc(ws, sizeof(*msgs));
    Ftmpi__ManagerQuorumResult **mp = calloc(ws, sizeof(*mp));
    int64_t(*dst)[FTI_ARRAY_SIZE(res->recover_dst_replica_ranks)] = calloc(ws, sizeof(*dst));
    char *(*srcs)[2 * FTI_RESULTS_MAX_SRC] = calloc(ws, sizeof(*srcs));
    struct shared_reply *r = NULL;
    int rc = FT_ERR_NO_MEMORY;
    if (res && msgs && mp && dst && srcs) {
        rc = FT_SUCCESS;
        for (uint64_t g = 0; g < ws && rc == FT_SUCCESS; g++) {
            rc = fti_results_compute_at(v->idx, rank, (int)g, init_sync, &res[g]);
            if (rc == FT_SUCCESS) {
                fti_results_to_msg(&res[g], dst[g], &msgs[g]);
                fti_results_to_msg_srcs(&res[g], srcs[g], &msgs[g]);
                mp[g] = &msgs[g];
            }
        }
    }
    if (rc == FT_SUCCESS) {
        Ftmpi__Quorum pq = FTMPI__QUORUM__INIT;
        Ftmpi__LighthouseQuorumResponse resp = FTMPI__LIGHTHOUSE_QUORUM_RESPONSE__INIT;
        pq.quorum_id = v->pq.quorum_id;
        pq.created_ms = v->pq.created_ms;
        resp.quorum = &pq;
        resp.n_results = ws;
        resp.results = mp;
        resp.dropped = v->dropped;
        if (v->ids && want_ids) {
            resp.n_member_ids = v->q->n_members;
            resp.member_ids = v->ids;
        }
        r = fti_lh_pack_response(&resp);
        if (r == NULL)
            rc = FT_ERR_NO_MEMORY;
    }
    free(srcs);
    free(dst);
    free(mp);
    free(msgs);
    free(res);
    *rc_p = rc;
    return r;
}

/* Members of prev missing from the sorted members[0..n) or there as
 * another incarnation or with another manager address (a restarted
 * group).  O(n + prev). */
