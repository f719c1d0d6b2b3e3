/*
 * step_sdc.c - the rank's part of the silent data corruption check
 * (DESIGN section 11, see step_sdc.h): fingerprints of the registered state
 * on the quorum ask every FTMPI_SDC_EVERY committed steps, and what the
 * lighthouse's verdict in the quorum's results means for this group.
 */
#include "step/step_sdc.h"

#include <inttypes.h>

#include "ftmpi.h"
#include "base/log.h"
#include "base/util.h"

void fti_step_sdc_ask(fti_sdc_step_t *sdc, const fti_config_t *cfg, fti_heal_h heal,
                      int64_t step, fti_quorum_ask_t *ask)
{
    ask->sdc_step = 0;
    ask->sdc_n = 0;
    int every = cfg->sdc_every;
    if (every <= 0 || step <= 0 || step % every != 0)
        return;
    const char *names[FTI_SDC_MAX_BUFS];
    size_t n = 0;
    int64_t t0 = fti_now_us();
    int rc = fti_heal_fingerprint(heal, FTI_SDC_MAX_BUFS, ask->sdc_sum, names, &n);
    if (rc != FT_SUCCESS) {
        FTI_WARN("SDC: no fingerprint of step %" PRId64 " (%s): this check leaves the group out",
                 step, FT_Error_string(rc));
        return;
    }
    ask->sdc_step = step;
    ask->sdc_n = n;
    for (size_t i = 0; i < n; i++)
        sdc->names[i] = names[i];
    sdc->n_names = n;
    sdc->us += fti_now_us() - t0;
    sdc->prints++;
    FTI_DEBUG("SDC: fingerprints of step %" PRId64 " (%zu buffers) in %" PRId64 " us", step, n,
              fti_now_us() - t0);
}

int fti_step_sdc_verdict(fti_sdc_step_t *sdc, const fti_config_t *cfg, int group_rank,
                         const fti_quorum_result_t *res)
{
    switch (res->sdc_verdict) {
    case FTMPI__SDC_VERDICT__SDC_MINORITY:
        if (group_rank == 0 && res->heal)
            FTI_ERROR("SDC: this group's state disagrees with the majority's at %s: healing "
                      "from %s before the step counts",
                      res->sdc_report, res->recover_src_replica_id);
        else if (group_rank == 0)
            FTI_ERROR("SDC: this group's state disagrees with the majority's at %s, but no "
                      "group can heal it in this quorum",
                      res->sdc_report);
        return FT_SUCCESS;
    case FTMPI__SDC_VERDICT__SDC_TIE:
        if (cfg->sdc_on_tie == FTI_SDC_TIE_STOP) {
            if (group_rank == 0)
                FTI_ERROR("SDC: this group's state differs from another group's with no "
                          "majority at %s; FTMPI_SDC_ON_TIE=stop: FT_Quorum returns FT_ERR_SDC "
                          "from now on",
                          res->sdc_report);
            sdc->stopped = true;
            return FT_ERR_SDC;
        }
        if (group_rank == 0)
            FTI_ERROR("SDC: this group's state differs from another group's with no majority at "
                      "%s; FTMPI_SDC_ON_TIE=continue: going on",
                      res->sdc_report);
        return FT_SUCCESS;
    default:
        return FT_SUCCESS;
    }
}
