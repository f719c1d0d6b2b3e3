/*
 * test_goodput.c - the goodput gauge of the lighthouse's /metrics
 * (lighthouse/obs_pages.h): the healthy rate is the median of the sample
 * intervals' rates that had no recovery, no change of participants and an
 * advancing step; the committed rate is the last minute's; unknown (false)
 * until both exist.  Also the recoveries' ring, dedup and histograms
 * (lighthouse/recoveries.h).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <event2/buffer.h>

#include "lighthouse/history.h"
#include "lighthouse/obs_pages.h"
#include "lighthouse/recoveries.h"

/* One heartbeat with one recovery of [start, end] (seq). */
static void report(fti_lh_recov_t *t, uint64_t inc, uint64_t seq, int64_t start, int64_t end)
{
    Ftmpi__RecoveryReport r = FTMPI__RECOVERY_REPORT__INIT, *pr = &r;
    r.seq = seq;
    r.kind = "survivor";
    r.start_ms = start;
    r.end_ms = end;
    r.detect_ms = 3;
    r.quorum_ms = 1500;
    r.steps_lost = 1;
    Ftmpi__LighthouseHeartbeatRequest req = FTMPI__LIGHTHOUSE_HEARTBEAT_REQUEST__INIT;
    req.replica_id = "g0";
    req.incarnation = inc;
    req.n_recoveries = 1;
    req.recoveries = &pr;
    fti_lh_recov_report(t, &req);
}

static void test_goodput(void **state)
{
    (void)state;
    fti_lh_history_t h;
    fti_lh_recov_t t;
    memset(&t, 0, sizeof(t));
    assert_int_equal(fti_lh_history_init(&h, 0, 0, 0), 0);
    fti_lh_snapshot_t s;
    memset(&s, 0, sizeof(s));
    s.history = &h;
    s.recov = &t;
    double c, hr;
    assert_false(fti_lh_goodput(&s, &c, &hr));
    /* 10 steps/s healthy for 20 s, then 2 s of recovery (1 step), then a
     * participant fewer at 8 steps/s */
    int64_t step = 0, w = 100000;
    for (int i = 0; i <= 20; i++, w += 1000, step += 10)
        fti_lh_history_sample(&h, w, 3, step);
    report(&t, 7, 1, w - 500, w + 1500);
    fti_lh_history_sample(&h, w, 3, step + 1);
    w += 1000;
    step += 1;
    fti_lh_history_sample(&h, w, 3, step);
    w += 1000;
    for (int i = 0; i < 10; i++, w += 1000, step += 8)
        fti_lh_history_sample(&h, w, 2, step);
    assert_true(fti_lh_goodput(&s, &c, &hr));
    assert_true(hr > 9.99 && hr < 10.01); /* median: the 3-group intervals dominate */
    assert_true(c > 0 && c < hr);
    /* a repeated report changes nothing; a new incarnation starts over */
    report(&t, 7, 1, 1, 2);
    assert_int_equal(t.n_rec, 1);
    assert_int_equal(t.groups[0].phase[FTI_LH_PH_QUORUM].count, 1);
    assert_int_equal(t.groups[0].phase[FTI_LH_PH_QUORUM].sum, 1500);
    /* 1.5 s lands in the le=2.5 bucket */
    assert_int_equal(t.groups[0].phase[FTI_LH_PH_QUORUM].n[8], 1);
    report(&t, 8, 1, 1, 2);
    assert_int_equal(t.n_rec, 2);
    assert_int_equal(t.groups[0].steps_lost, 2);
    /* the pages: exact sums (2 x 1500 ms), labels, the tables */
    strcpy(s.job, "j");
    struct evbuffer *b = evbuffer_new();
    fti_lh_obs_metrics(b, &s);
    fti_lh_obs_html(b, &s);
    fti_lh_obs_json(b, &s);
    evbuffer_add(b, "", 1);
    const char *text = (const char *)evbuffer_pullup(b, -1);
    assert_non_null(strstr(text, "ftmpi_recovery_quorum_seconds_sum{job=\"j\",group=\"g0\"} 3.000\n"));
    assert_non_null(strstr(text, "ftmpi_recovery_quorum_seconds_bucket{job=\"j\",group=\"g0\",le=\"2.5\"} 2\n"));
    assert_non_null(strstr(text, "ftmpi_recovery_steps_lost_total{job=\"j\",group=\"g0\"} 2\n"));
    assert_non_null(strstr(text, "ftmpi_job_goodput_ratio{job=\"j\"} "));
    assert_non_null(strstr(text, "<table id=\"recoveries\">"));
    assert_non_null(strstr(text, "\"recoveries\":["));
    evbuffer_free(b);
    fti_lh_recov_t copy;
    assert_int_equal(fti_lh_recov_copy(&t, &copy), 0);
    assert_int_equal(fti_lh_recov_at(&copy, 1)->r.start_ms, 1);
    fti_lh_recov_clear(&copy);
    fti_lh_recov_clear(&t);
    fti_lh_history_clear(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_goodput)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
