/* recovery.c - the recovery tracker (see recovery.h). */
#include "obs/recovery.h"

#include <string.h>

#include "base/error.h"
#include "base/util.h"

static void open_rec(fti_recovery_t *r, int kind, int64_t step, int64_t wall)
{
    memset(&r->cur, 0, sizeof(r->cur));
    r->cur.kind = kind;
    r->cur.failed_step = step;
    r->cur.start_ms = wall;
    r->cur.detect_ms = -1;
    r->cur.resumed_step = -1;
    r->cur.restart_ms = -1;
    r->open = true;
}

void fti_recovery_restart(fti_recovery_t *r, int64_t wall, int64_t lost)
{
    bool known = lost > 0 && lost <= wall;
    open_rec(r, FTI_RECOVERY_RESTART, -1, known ? lost : wall);
    r->cur.restart_ms = known ? wall - lost : -1;
}

void fti_recovery_failed(fti_recovery_t *r, int64_t step, int64_t wall, int64_t detect_ms,
                         int error, const char *peer)
{
    if (!r->open)
        open_rec(r, FTI_RECOVERY_SURVIVOR, step, wall);
    if (r->cur.error[0] == '\0' && error != 0) {
        fti_strlcpy(r->cur.error, fti_error_name(error), sizeof(r->cur.error));
        r->cur.detect_ms = detect_ms;
        if (peer)
            fti_strlcpy(r->cur.peer, peer, sizeof(r->cur.peer));
    }
}

void fti_recovery_quorum(fti_recovery_t *r, int64_t ms)
{
    if (r->open)
        r->cur.quorum_ms += ms;
}

void fti_recovery_slice(fti_recovery_t *r, int64_t ms)
{
    if (r->open)
        r->cur.slice_ms += ms;
}

void fti_recovery_heal(fti_recovery_t *r, int64_t ms, int64_t bytes)
{
    if (!r->open)
        return;
    r->cur.heal_ms += ms;
    r->cur.heal_bytes += bytes;
}

bool fti_recovery_step_end(fti_recovery_t *r, bool committed, int64_t step, int64_t step_after,
                           int64_t wall, int error, fti_recovery_rec_t *rec_p)
{
    if (!committed) {
        fti_recovery_failed(r, step, wall, -1, error, NULL);
        r->cur.steps_lost++;
        return false;
    }
    if (!r->open)
        return false;
    r->cur.end_ms = wall;
    r->cur.resumed_step = step_after;
    r->cur.seq = ++r->seq;
    r->open = false;
    *rec_p = r->cur;
    return true;
}
