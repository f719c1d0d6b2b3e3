/* lighthouse/server_sdc.c - the server's side of the silent data
 * corruption check (lighthouse/sdc.h has the rules): the fingerprints of
 * a quorum request into the table, the judgement of an issued quorum, its
 * log lines, events and counters (see server_int.h). */
#include "lighthouse/server_int.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/util.h"

void fti_lh_sdc_note(struct fti_lighthouse *lh, const Ftmpi__QuorumMember *pm)
{
    if (pm == NULL || pm->n_sdc_prints == 0 || pm->sdc_step <= 0 || pm->sdc_step != pm->step)
        return;
    if (pm->n_sdc_prints > FTI_SDC_MAX_PRINTS) {
        FTI_WARN("SDC: %s sent %zu fingerprints, over the cap of %d: not compared",
                 pm->replica_id, pm->n_sdc_prints, FTI_SDC_MAX_PRINTS);
        return;
    }
    fti_sdc_print_t *p = calloc(pm->n_sdc_prints, sizeof(*p));
    if (p == NULL)
        return;
    size_t n = 0;
    for (size_t i = 0; i < pm->n_sdc_prints; i++) {
        const Ftmpi__SdcPrint *s = pm->sdc_prints[i];
        if (s == NULL || s->group_rank < 0)
            continue;
        p[n].group_rank = s->group_rank;
        p[n].index = s->index;
        fti_strlcpy(p[n].buffer, s->buffer ? s->buffer : "", sizeof(p[n].buffer));
        p[n].sum = s->sum;
        n++;
    }
    pthread_mutex_lock(&lh->mu);
    int rc = fti_sdc_note(lh->sdc, pm->replica_id, pm->sdc_step, p, n);
    pthread_mutex_unlock(&lh->mu);
    free(p);
    if (rc != FT_SUCCESS)
        FTI_WARN("SDC: the fingerprints of %s at step %" PRId64 " are not compared: %s",
                 pm->replica_id, pm->sdc_step, FT_Error_string(rc));
}

fti_sdc_finding_t *fti_lh_sdc_judge(struct fti_lighthouse *lh, const fti_quorum_t *q,
                                    int64_t wall_ms)
{
    size_t n = q->n_members;
    fti_sdc_finding_t *f = calloc(n, sizeof(*f));
    const char **ids = calloc(n, sizeof(*ids));
    int64_t *steps = calloc(n, sizeof(*steps));
    bool any = false;
    if (f && ids && steps) {
        for (size_t i = 0; i < n; i++) {
            ids[i] = q->members[i].replica_id;
            steps[i] = q->members[i].step;
        }
        int checks = fti_sdc_judge(lh->sdc, ids, steps, n, wall_ms, f);
        for (size_t i = 0; checks >= 0 && i < n; i++) {
            if (f[i].verdict == FTI_SDC_AGREE)
                continue;
            any = true;
            if (!f[i].fresh)
                continue;
            fti_lh_history_event(&lh->history, wall_ms, FTI_LH_EV_SDC, ids[i], f[i].step);
            fti_lh_gstats_t *g = fti_lh_history_group(&lh->history, ids[i]);
            if (g)
                g->sdc_mismatches++;
        }
    }
    free(ids);
    free(steps);
    if (!any) {
        free(f);
        return NULL;
    }
    return f;
}

void fti_lh_sdc_log(const fti_quorum_t *q, const fti_sdc_finding_t *f)
{
    for (size_t i = 0; f != NULL && i < q->n_members; i++) {
        if (f[i].verdict == FTI_SDC_AGREE || !f[i].fresh)
            continue;
        const char *id = q->members[i].replica_id;
        char what[FTI_SDC_NAME_SIZE + 64] = "its fingerprints";
        if (f[i].group_rank >= 0)
            snprintf(what, sizeof(what), "group rank %d, buffer '%s'", (int)f[i].group_rank,
                     f[i].buffer);
        if (f[i].verdict == FTI_SDC_MINORITY)
            FTI_ERROR("SDC: group %s disagrees with the majority at step %" PRId64 ": %s "
                      "differs from %s's (%d of %d groups hold it); %s heals from the majority "
                      "and is no heal source",
                      id, f[i].step, what, f[i].other, f[i].others, f[i].of, id);
        else
            FTI_ERROR("SDC: group %s differs from %s at step %" PRId64 " with no majority "
                      "among %d groups: %s; every rank's FTMPI_SDC_ON_TIE decides whether it "
                      "goes on",
                      id, f[i].other, f[i].step, f[i].of, what);
    }
}
