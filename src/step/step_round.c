/*
 * step_round.c - the quorum round that FT_Quorum runs (see step.h): the
 * group's exchange and this rank's results (step_quorum.c), then what the
 * quorum brings: the failure count, a durable checkpoint at a fresh start,
 * the SDC verdict, the slice, the heal; the event log's quorum line.
 */
#include "step/step.h"

#include <inttypes.h>
#include <stdlib.h>

#include "ftmpi.h"
#include "base/log.h"
#include "base/util.h"

static void latch(struct fti_step *s, int rc)
{
    if (rc != FT_SUCCESS && s->latched == FT_SUCCESS)
        s->latched = rc;
}

void fti_step_log_ctx(const struct fti_step *s)
{
    fti_log_ctx.step = s->step;
    fti_log_ctx.quorum_id = s->have_quorum ? s->res.quorum_id : -1;
}

/* The event of this step's quorum (group rank 0 only); compact replies
 * carry no member list (the size says how many). */
static void quorum_event(const struct fti_step *s, const Ftmpi__LighthouseQuorumResponse *resp,
                         int64_t qms, bool changed, int rc)
{
    const Ftmpi__Quorum *q = resp ? resp->quorum : NULL;
    if (s->group_rank != 0)
        return;
    if (q == NULL) {
        fti_event_quorum(s->elog, s->step, -1, NULL, 0, -1, 0, qms, false, false, rc);
        return;
    }
    /* compact replies name the members in member_ids (up to 64) */
    size_t n = q->n_participants ? q->n_participants : resp->n_member_ids;
    const char **ids = calloc(n ? n : 1, sizeof(*ids));
    for (size_t i = 0; ids != NULL && i < n; i++)
        ids[i] = q->n_participants ? q->participants[i]->replica_id : resp->member_ids[i];
    fti_event_quorum(s->elog, s->step, s->res.quorum_id, ids, ids ? n : 0,
                     s->res.replica_rank, s->res.replica_world_size, qms, changed, s->res.heal, rc);
    free(ids);
}

/* Takes the quorum's results: failure counting, the slice, healing. */
static int quorum_apply(struct fti_step *s, const Ftmpi__LighthouseQuorumResponse *resp,
                        const fti_quorum_result_t *res, bool *changed_p, bool *survived_p)
{
    bool changed = !s->have_quorum || res->quorum_id != s->res.quorum_id;
    *survived_p = fti_step_count_failure(s, resp, res);
    s->res = *res;
    s->have_quorum = true;
    s->quorum_ok = true;
    s->commit_failures = 0;
    /* a fresh start (no group past step 0): the newest durable checkpoint */
    if (fti_ckpt_load_at_start(s->ckpt, res->max_step, s->step, &s->step) == FT_SUCCESS) {
        s->replaced++;
        s->res.heal = false;
        s->res.n_recover_dst = 0;
        s->res.n_stripe_dst = 0;
        fti_heal_set_step(s->heal, s->step, true);
    }
    if (s->res.n_stripe_dst > 0) /* healers come: copy device state out now (heal.h) */
        (void)fti_heal_refresh(s->heal);
    fti_step_log_ctx(s);
    int src = fti_step_sdc_verdict(&s->sdc, s->cfg, s->group_rank, res); /* a minority heals below */
    if (src != FT_SUCCESS) {
        *changed_p = changed;
        return src;
    }
    if (changed)
        FTI_INFO("quorum %" PRId64 ": %d groups (%d participate), replica rank %d%s, max step "
                 "%" PRId64 "%s",
                 res->quorum_id, res->replica_world_size, res->participants, res->replica_rank,
                 res->spare ? " (spare)" : "", res->max_step, s->res.heal ? ", healing" : "");
    int rc = FT_SUCCESS;
    int64_t t0 = fti_now_ms();
    if (s->slice == NULL || s->slice_quorum_id != res->quorum_id) {
        rc = fti_step_rebuild_slice(s, resp->quorum);
        fti_obs_slice(&s->obs, fti_now_ms() - t0);
    }
    if (s->res.heal) {
        /* also when the slice failed: every rank of the group takes part
         * in the group's decision on the heal */
        int64_t h0 = fti_now_ms(), b0 = s->heal_bytes;
        int hrc = fti_step_heal(s);
        fti_obs_heal(&s->obs, fti_now_ms() - h0, s->heal_bytes - b0);
        rc = rc != FT_SUCCESS && hrc != FT_ERR_GROUP_LOST ? rc : hrc;
    }
    *changed_p = changed;
    return rc;
}

int fti_step_quorum_round(struct fti_step *s, int flags, bool *survived_p)
{
    int64_t t0 = fti_now_ms();
    Ftmpi__LighthouseQuorumResponse *resp = NULL;
    /* every rank runs the same group operations in every FT_Quorum (their
     * messages are matched by sequence), also once killed: rank 0 keeps
     * broadcasting FT_ERR_KILLED */
    int rc = fti_step_exchange(s, flags, &resp);
    int64_t qms = fti_now_ms() - t0;
    fti_obs_quorum(&s->obs, qms);
    if (rc != FT_SUCCESS) {
        if (rc == FT_ERR_KILLED && !s->killed) {
            s->killed = true;
            FTI_WARN("FT_Quorum: this group was asked to stop");
        }
        latch(s, rc);
        quorum_event(s, NULL, qms, false, rc);
        return rc;
    }
    fti_quorum_result_t res;
    rc = fti_step_results(s, resp, &res);
    if (rc != FT_SUCCESS) {
        ftmpi__lighthouse_quorum_response__free_unpacked(resp, NULL);
        latch(s, rc);
        return rc;
    }
    bool changed = false;
    rc = quorum_apply(s, resp, &res, &changed, survived_p);
    latch(s, rc);
    fti_step_log_ctx(s);
    quorum_event(s, resp, qms, changed, rc);
    ftmpi__lighthouse_quorum_response__free_unpacked(resp, NULL);
    return rc;
}
