/*
 * test_recovery.c - the recovery tracker (src/obs/recovery.c) and the
 * manager's report queue (src/control/obs_report.c): phases add up only
 * while a recovery is open, the first failure names it, failed commits are
 * lost steps, a commit closes it with a new seq; the queue hands out the
 * oldest records, an answered heartbeat drops exactly those, a full queue
 * drops the oldest.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ftmpi.h"
#include "obs/recovery.h"
#include "control/obs_report.h"

static void test_survivor(void **state)
{
    (void)state;
    fti_recovery_t r = {0};
    fti_recovery_rec_t out;
    fti_recovery_quorum(&r, 50); /* nothing open: not counted */
    assert_false(fti_recovery_step_end(&r, true, 4, 5, 1000, 0, &out));
    fti_recovery_failed(&r, 5, 2000, 7, FT_ERR_PROC_FAILED, "g1");
    fti_recovery_failed(&r, 5, 2001, 9, FT_ERR_TIMEOUT, "g2"); /* the first names it */
    assert_false(fti_recovery_step_end(&r, false, 5, 5, 2002, FT_ERR_PROC_FAILED, &out));
    fti_recovery_quorum(&r, 30);
    fti_recovery_slice(&r, 4);
    assert_false(fti_recovery_step_end(&r, false, 5, 5, 2100, FT_ERR_ABORTED, &out));
    fti_recovery_quorum(&r, 11);
    fti_recovery_heal(&r, 20, 4096);
    assert_true(fti_recovery_step_end(&r, true, 5, 6, 2300, 0, &out));
    assert_int_equal(out.seq, 1);
    assert_int_equal(out.kind, FTI_RECOVERY_SURVIVOR);
    assert_int_equal(out.failed_step, 5);
    assert_int_equal(out.start_ms, 2000);
    assert_int_equal(out.end_ms, 2300);
    assert_int_equal(out.detect_ms, 7);
    assert_int_equal(out.quorum_ms, 41);
    assert_int_equal(out.slice_ms, 4);
    assert_int_equal(out.heal_ms, 20);
    assert_int_equal(out.heal_bytes, 4096);
    assert_int_equal(out.steps_lost, 2);
    assert_int_equal(out.resumed_step, 6);
    assert_string_equal(out.error, "FT_ERR_PROC_FAILED");
    assert_string_equal(out.peer, "g1");
    fti_recovery_quorum(&r, 99); /* closed: not counted */
    fti_recovery_failed(&r, 8, 3000, -1, FT_ERR_QUORUM, NULL);
    assert_true(fti_recovery_step_end(&r, true, 8, 9, 3100, 0, &out));
    assert_int_equal(out.seq, 2);
    assert_int_equal(out.quorum_ms, 0);
    assert_int_equal(out.detect_ms, -1);
    assert_string_equal(out.peer, "");
}

static void test_restart(void **state)
{
    (void)state;
    fti_recovery_t r = {0};
    fti_recovery_rec_t out;
    fti_recovery_restart(&r, 500, 450);
    fti_recovery_quorum(&r, 40);
    fti_recovery_heal(&r, 10, 100);
    assert_true(fti_recovery_step_end(&r, true, 30, 31, 600, 0, &out));
    assert_int_equal(out.kind, FTI_RECOVERY_RESTART);
    assert_int_equal(out.failed_step, -1);
    assert_int_equal(out.detect_ms, -1);
    assert_int_equal(out.steps_lost, 0);
    assert_int_equal(out.start_ms, 450); /* when the agent saw the last run fail */
    assert_int_equal(out.restart_ms, 50);
    assert_int_equal(out.end_ms - out.start_ms, 150);
    fti_recovery_restart(&r, 500, 0); /* unknown: from FT_Init */
    assert_true(fti_recovery_step_end(&r, true, 30, 31, 600, 0, &out));
    assert_int_equal(out.restart_ms, -1);
    assert_int_equal(out.start_ms, 500);
}

static void test_queue(void **state)
{
    (void)state;
    static fti_obs_queue_t q;
    static fti_obs_batch_t b;
    fti_obs_init(&q);
    for (uint64_t s = 1; s <= FTI_OBS_QUEUE + 3; s++) {
        fti_recovery_rec_t r = {.seq = s};
        fti_obs_add_recovery(&q, &r);
    }
    fti_obs_take(&q, &b); /* the oldest 3 were dropped */
    assert_int_equal(b.n_rec, FTI_OBS_BATCH);
    assert_int_equal(b.rec[0].seq, 4);
    fti_recovery_rec_t late = {.seq = FTI_OBS_QUEUE + 4};
    fti_obs_add_recovery(&q, &late); /* added while the heartbeat flies */
    fti_obs_acked(&q, &b);
    assert_int_equal(q.n_rec, FTI_OBS_QUEUE - FTI_OBS_BATCH + 1);
    assert_int_equal(q.rec[0].seq, 4 + FTI_OBS_BATCH);
    fti_rank_metrics_t m[2] = {{.commits = 3}, {.commits = 4}};
    fti_obs_set_ranks(&q, m, 2);
    fti_obs_take(&q, &b);
    Ftmpi__LighthouseHeartbeatRequest req = FTMPI__LIGHTHOUSE_HEARTBEAT_REQUEST__INIT;
    fti_obs_batch_apply(&b, &req);
    assert_int_equal(req.n_rank_metrics, 2);
    assert_int_equal(req.rank_metrics[1]->commits, 4);
    assert_int_equal(req.rank_metrics[1]->group_rank, 1);
    assert_int_equal(req.n_recoveries, FTI_OBS_BATCH);
    fti_obs_acked(&q, &b); /* the counters went: not again until they change */
    fti_obs_take(&q, &b);
    assert_int_equal(b.n_ranks, 0);
    fti_obs_set_ranks(&q, m, 2);
    fti_obs_take(&q, &b);
    assert_int_equal(b.n_ranks, 2);
    fti_obs_clear(&q);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_survivor),
        cmocka_unit_test(test_restart),
        cmocka_unit_test(test_queue),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
