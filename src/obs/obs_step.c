/* obs_step.c - the rank's counters, recoveries and flight recorder (see
 * obs_step.h). */
#include "obs/obs_step.h"

#include <inttypes.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "base/error.h"
#include "base/log.h"
#include "base/util.h"

int fti_obs_start(fti_obs_step_t *o, const fti_config_t *cfg, int group_rank,
                  fti_manager_h manager, fti_event_log_h elog)
{
    o->dumped_epoch = -1;
    o->group_rank = group_rank;
    o->manager = manager;
    o->elog = elog;
    if (cfg->restart_count > 0)
        fti_recovery_restart(&o->rec, fti_wall_ms(), cfg->restart_lost_ms);
    if (cfg->flight_records > 0)
        return fti_flight_create((size_t)cfg->flight_records, elog, &o->flight);
    return FT_SUCCESS;
}

void fti_obs_stop(fti_obs_step_t *o)
{
    fti_flight_destroy(o->flight);
    o->flight = NULL;
}

void fti_obs_quorum(fti_obs_step_t *o, int64_t ms)
{
    fti_recovery_quorum(&o->rec, ms);
}

void fti_obs_slice(fti_obs_step_t *o, int64_t ms)
{
    fti_recovery_slice(&o->rec, ms);
}

void fti_obs_heal(fti_obs_step_t *o, int64_t ms, int64_t bytes)
{
    fti_recovery_heal(&o->rec, ms, bytes);
    o->metrics.heal_bytes += bytes;
}

uint64_t fti_obs_call_begin(fti_obs_step_t *o, int op, uint64_t bytes, int64_t quorum_id,
                            int64_t step)
{
    if (op == FTI_FLIGHT_ALLREDUCE)
        o->call_start_ms = fti_now_ms();
    return fti_flight_begin(o->flight, op, bytes, quorum_id, step);
}

void fti_obs_call_end(fti_obs_step_t *o, int op, uint64_t seq, int rc, int64_t us,
                      uint64_t bytes, int64_t epoch)
{
    fti_flight_end(o->flight, seq, rc);
    switch (op) {
    case FTI_FLIGHT_QUORUM:
        o->metrics.steps++;
        o->metrics.quorum_us += us;
        break;
    case FTI_FLIGHT_ALLREDUCE:
        o->metrics.allreduce_us += us;
        if (rc == FT_SUCCESS)
            o->metrics.bytes_reduced += (int64_t)bytes;
        break;
    default:
        o->metrics.commit_us += us;
        break;
    }
    if (rc != FT_SUCCESS && o->dumped_epoch != epoch) {
        o->dumped_epoch = epoch; /* once per step: the first error shows the calls */
        fti_flight_dump(o->flight, "error");
    }
}

void fti_obs_collective_failed(fti_obs_step_t *o, int rc, const char *peer, int64_t step)
{
    if (o->step_error == 0) {
        o->step_error = rc;
        fti_strlcpy(o->step_peer, peer ? peer : "", sizeof(o->step_peer));
    }
    fti_recovery_failed(&o->rec, step, fti_wall_ms(), fti_now_ms() - o->call_start_ms, rc,
                        peer);
}

/* Group rank 0: the failed step's reason for the lighthouse's dashboard. */
static void report_step_failure(fti_obs_step_t *o, int64_t step, int rc)
{
    fti_step_failure_t f = {
        .seq = ++o->fail_seq,
        .step = step,
        .wall_ms = fti_wall_ms(),
        .group_rank = o->group_rank,
    };
    fti_strlcpy(f.error, fti_error_name(o->step_error ? o->step_error : rc), sizeof(f.error));
    fti_strlcpy(f.peer, o->step_peer, sizeof(f.peer));
    fti_manager_report_step_failure(o->manager, &f);
}

void fti_obs_commit(fti_obs_step_t *o, int64_t step, int64_t now, bool committed, int rc)
{
    fti_recovery_rec_t r;
    if (committed) {
        o->metrics.commits++;
    } else {
        int why = o->step_error ? o->step_error : rc;
        o->metrics.fail[fti_fail_kind(why)]++;
        if (o->group_rank == 0)
            report_step_failure(o, step, rc);
    }
    if (fti_recovery_step_end(&o->rec, committed, step, now, fti_wall_ms(),
                              o->step_error ? o->step_error : rc, &r) &&
        o->group_rank == 0) {
        fti_event_recovery(o->elog, &r);
        fti_manager_report_recovery(o->manager, &r);
        FTI_INFO("recovery %s (failed step %" PRId64 ", %s%s%s): detect %" PRId64
                 " ms, quorum %" PRId64 " ms, slice %" PRId64 " ms, heal %" PRId64 " ms (%" PRId64
                 " bytes), restart %" PRId64 " ms, %" PRId64 " step(s) lost, resumed at step %" PRId64,
                 fti_recovery_kind_name(r.kind), r.failed_step, r.error[0] ? r.error : "-",
                 r.peer[0] ? " from " : "", r.peer, r.detect_ms, r.quorum_ms, r.slice_ms,
                 r.heal_ms, r.heal_bytes, r.restart_ms, r.steps_lost, r.resumed_step);
    }
    o->step_error = 0;
    o->step_peer[0] = '\0';
}
