/*
 * step_sdc.h - the rank's part of the silent data corruption check
 * (DESIGN section 11): its own state, which the step keeps and hands in
 * with the values the check reads.  Threads: the application's (inside
 * FT_Quorum's exchange), or the progress thread running an FT_QUORUM_ASYNC
 * quorum, never both.
 */
#ifndef FTI_STEP_SDC_H
#define FTI_STEP_SDC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/settings.h"
#include "control/manager.h"
#include "control/results.h"
#include "heal/heal.h"

typedef struct fti_sdc_step {
    const char *names[FTI_SDC_MAX_BUFS]; /* the last fingerprinted buffers' names */
    size_t n_names;
    bool stopped;               /* a tie with FTMPI_SDC_ON_TIE=stop: FT_ERR_SDC */
    int64_t us, prints;         /* time spent fingerprinting, fingerprints taken */
} fti_sdc_step_t;

/* The SDC check's part of this rank's quorum ask: every FTMPI_SDC_EVERY
 * committed steps (step > 0) the fingerprints of heal's registered state
 * of `step` (open: FT_Quorum served it), else none (sdc_step 0). */
void fti_step_sdc_ask(fti_sdc_step_t *sdc, const fti_config_t *cfg, fti_heal_h heal,
                      int64_t step, fti_quorum_ask_t *ask);

/* What the lighthouse's SDC verdict in res means here: logged (group rank
 * 0); a minority heals through res (FT_SUCCESS); a tie returns FT_ERR_SDC
 * with FTMPI_SDC_ON_TIE=stop (and sets sdc->stopped), else FT_SUCCESS. */
int fti_step_sdc_verdict(fti_sdc_step_t *sdc, const fti_config_t *cfg, int group_rank,
                         const fti_quorum_result_t *res);

#endif
