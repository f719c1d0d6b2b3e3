/*
 * step_sdc.c - the rank's part of the silent data corruption check
 * (DESIGN section 11, see step.h): fingerprints of the registered state
 * on the quorum ask every FTMPI_SDC_EVERY committed steps, and what the
 * lighthouse's verdict in the quorum's results means for this group.
 */
#include "step.h"

#include <inttypes.h>

#include "ftmpi.h"
#include "base/log.h"
#include "base/util.h"

void fti_step_sdc_ask(struct fti_step *s, fti_quorum_ask_t *ask)
{
    ask->sdc_step = 0;
    ask->sdc_n = 0;
    int every = s->cfg.sdc_every;
    if (every <= 0 || s->step <= 0 || s->step % every != 0)
        return;
    const char *names[FTI_SDC_MAX_BUFS];
    size_t n = 0;
    int64_t t0 = fti_now_us();
    int rc = fti_heal_fingerprint(s->heal, FTI_SDC_MAX_BUFS, ask->sdc_sum, names, &n);
    if (rc != FT_SUCCESS) {
        FTI_WARN("SDC: no fingerprint of step %" PRId64 " (%s): this check leaves the group out",
                 s->step, FT_Error_string(rc));
        return;
    }
    ask->sdc_step = s->step;
    ask->sdc_n = n;
    for (size_t i = 0; i < n; i++)
        s->sdc_names[i] = names[i];
    s->n_sdc_names = n;
    s->sdc_us += fti_now_us() - t0;
    s->sdc_prints++;
    FTI_DEBUG("SDC: fingerprints of step %" PRId64 " (%zu buffers) in %" PRId64 " us", s->step, n,
              fti_now_us() - t0);
}

int fti_step_sdc_verdict(struct fti_step *s, const fti_quorum_result_t *res)
{
    switch (res->sdc_verdict) {
    case FTMPI__SDC_VERDICT__SDC_MINORITY:
        if (s->group_rank == 0 && res->heal)
            FTI_ERROR("SDC: this group's state disagrees with the majority's at %s: healing "
                      "from %s before the step counts",
                      res->sdc_report, res->recover_src_replica_id);
        else if (s->group_rank == 0)
            FTI_ERROR("SDC: this group's state disagrees with the majority's at %s, but no "
                      "group can heal it in this quorum",
                      res->sdc_report);
        return FT_SUCCESS;
    case FTMPI__SDC_VERDICT__SDC_TIE:
        if (s->cfg.sdc_on_tie == FTI_SDC_TIE_STOP) {
            if (s->group_rank == 0)
                FTI_ERROR("SDC: this group's state differs from another group's with no "
                          "majority at %s; FTMPI_SDC_ON_TIE=stop: FT_Quorum returns FT_ERR_SDC "
                          "from now on",
                          res->sdc_report);
            s->sdc_stopped = true;
            return FT_ERR_SDC;
        }
        if (s->group_rank == 0)
            FTI_ERROR("SDC: this group's state differs from another group's with no majority at "
                      "%s; FTMPI_SDC_ON_TIE=continue: going on",
                      res->sdc_report);
        return FT_SUCCESS;
    default:
        return FT_SUCCESS;
    }
}
