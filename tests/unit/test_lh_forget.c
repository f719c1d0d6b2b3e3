/*
 * test_lh_forget.c - the lighthouse forgets what it kept of a group gone
 * for longer than the history window (issue 35 item 4): its history entry
 * (the ftmpi_group_* series), its recoveries, failed steps and rank
 * counters (lighthouse/recoveries.h) and its SDC fingerprints
 * (lighthouse/sdc.h), with the clock passed in.  500 group ids that each
 * report, leave fingerprints that are never judged and die: what is kept
 * stays bounded by the groups of the last window, and the failure total
 * keeps the forgotten ones.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "ftmpi_errors.h"
#include "lighthouse/history.h"
#include "lighthouse/recoveries.h"
#include "lighthouse/sdc.h"

#define WINDOW_MS 10000
#define IDS 500

struct world {
    fti_lh_history_t h;
    fti_lh_recov_t t;
    fti_sdc_h sdc;
};

/* One heartbeat of id with 2 ranks' counters, a recovery and a failed step. */
static void report(fti_lh_recov_t *t, const char *id, int64_t wall)
{
    Ftmpi__RankMetrics rm[2], *rmp[2] = {&rm[0], &rm[1]};
    Ftmpi__RecoveryReport r = FTMPI__RECOVERY_REPORT__INIT, *pr = &r;
    Ftmpi__RecoveryStepFailure f = FTMPI__RECOVERY_STEP_FAILURE__INIT, *pf = &f;
    Ftmpi__LighthouseHeartbeatRequest req = FTMPI__LIGHTHOUSE_HEARTBEAT_REQUEST__INIT;
    ftmpi__rank_metrics__init(&rm[0]);
    ftmpi__rank_metrics__init(&rm[1]);
    r.seq = f.seq = 1;
    r.kind = "survivor";
    r.start_ms = wall - 10;
    r.end_ms = wall;
    f.step = 3;
    req.replica_id = (char *)id;
    req.incarnation = 1;
    req.n_rank_metrics = 2;
    req.rank_metrics = rmp;
    req.n_recoveries = 1;
    req.recoveries = &pr;
    req.n_step_failures = 1;
    req.step_failures = &pf;
    fti_lh_recov_report(t, &req);
}

static void forget_cb(const char *id, void *arg)
{
    struct world *w = arg;
    fti_sdc_forget(w->sdc, id);
    fti_lh_recov_forget(&w->t, id);
}

static bool known_cb(const char *id, void *arg)
{
    struct world *w = arg;
    return fti_lh_history_group(&w->h, id) != NULL;
}

/* The server's once-a-second step (server_history.c). */
static void tick(struct world *w, int64_t wall)
{
    fti_lh_history_expire(&w->h, wall, WINDOW_MS, forget_cb, w);
    fti_lh_recov_expire(&w->t, known_cb, w);
    fti_sdc_expire(w->sdc, known_cb, w);
}

static void world_init(struct world *w)
{
    memset(w, 0, sizeof(*w));
    assert_int_equal(fti_lh_history_init(&w->h, 0, 0, 0), FT_SUCCESS);
    assert_int_equal(fti_sdc_create(&w->sdc), FT_SUCCESS);
}

static void world_clear(struct world *w)
{
    fti_lh_history_clear(&w->h);
    fti_lh_recov_clear(&w->t);
    fti_sdc_destroy(w->sdc);
}

/* Every kept recovery and failed step belongs to a group still kept. */
static void rings_of_kept(const struct world *w)
{
    for (size_t i = 0; i < w->t.n_rec; i++)
        assert_non_null(fti_lh_history_group((fti_lh_history_t *)&w->h,
                                             fti_lh_recov_at(&w->t, i)->replica_id));
    for (size_t i = 0; i < w->t.n_fail; i++)
        assert_non_null(fti_lh_history_group((fti_lh_history_t *)&w->h,
                                             fti_lh_fail_at(&w->t, i)->replica_id));
}

static void test_cycle_bounded(void **state)
{
    (void)state;
    struct world w;
    fti_sdc_print_t p = {0, 0, "w", 42};
    world_init(&w);
    size_t most = 0;
    int64_t wall = 1000000;
    for (int i = 0; i < IDS; i++, wall += 1000) {
        char id[32];
        snprintf(id, sizeof(id), "cyc%d", i);
        fti_lh_history_request(&w.h, wall, id, 1, 5, 0);
        report(&w.t, id, wall);
        assert_int_equal(fti_sdc_note(w.sdc, id, 5, &p, 1), FT_SUCCESS);
        /* dies before its step is judged */
        fti_lh_history_gone(&w.h, wall + 500, id, FTI_LH_EV_DEAD_CLOSED);
        tick(&w, wall + 500);
        /* the groups of the last window only: WINDOW_MS / 1000 + 1 */
        assert_true(w.h.n_groups <= WINDOW_MS / 1000 + 1);
        assert_true(w.t.n_groups <= WINDOW_MS / 1000 + 1);
        assert_true(fti_sdc_groups(w.sdc) <= WINDOW_MS / 1000 + 1);
        assert_true(w.t.n_rec <= WINDOW_MS / 1000 + 1);
        rings_of_kept(&w);
        most = w.h.n_groups > most ? w.h.n_groups : most;
    }
    assert_int_equal(most, WINDOW_MS / 1000 + 1);
    tick(&w, wall + WINDOW_MS + 1000);
    assert_int_equal(w.h.n_groups, 0);
    assert_int_equal(w.t.n_groups, 0);
    assert_int_equal(w.t.n_rec, 0);
    assert_int_equal(w.t.n_fail, 0);
    assert_int_equal(fti_sdc_groups(w.sdc), 0);
    assert_int_equal(w.h.groups_forgotten, IDS);
    assert_int_equal(fti_lh_history_failures(&w.h), IDS); /* still counted */
    world_clear(&w);
}

/* Only gone groups go, and only after the whole window; one that comes
 * back stays; the others' recoveries keep their order. */
static void test_who_goes(void **state)
{
    (void)state;
    struct world w;
    fti_sdc_print_t p = {0, 0, "w", 42};
    world_init(&w);
    int64_t t0 = 5000000;
    const char *ids[] = {"alive", "dead", "silent", "fin", "back"};
    for (size_t i = 0; i < 5; i++) {
        fti_lh_history_request(&w.h, t0, ids[i], 1, 5, 0);
        report(&w.t, ids[i], t0 + (int64_t)i);
        assert_int_equal(fti_sdc_note(w.sdc, ids[i], 5, &p, 1), FT_SUCCESS);
    }
    fti_lh_history_gone(&w.h, t0, "dead", FTI_LH_EV_DEAD_CLOSED);
    fti_lh_history_gone(&w.h, t0, "silent", FTI_LH_EV_DEAD_TIMEOUT);
    fti_lh_history_gone(&w.h, t0, "fin", FTI_LH_EV_FINALIZED);
    fti_lh_history_gone(&w.h, t0, "back", FTI_LH_EV_DEAD_CLOSED);
    fti_lh_history_request(&w.h, t0 + WINDOW_MS - 1, "back", 2, 0, 0); /* restarted */
    tick(&w, t0 + WINDOW_MS); /* exactly a window: nobody yet */
    assert_int_equal(w.h.n_groups, 5);
    assert_int_equal(w.t.n_groups, 5);
    tick(&w, t0 + WINDOW_MS + 1);
    assert_int_equal(w.h.n_groups, 2);
    assert_non_null(fti_lh_history_group(&w.h, "alive"));
    assert_non_null(fti_lh_history_group(&w.h, "back"));
    assert_int_equal(w.t.n_groups, 2);
    assert_int_equal(fti_sdc_groups(w.sdc), 2);
    assert_int_equal(w.t.n_rec, 2);
    assert_string_equal(fti_lh_recov_at(&w.t, 0)->replica_id, "alive");
    assert_string_equal(fti_lh_recov_at(&w.t, 1)->replica_id, "back");
    /* an alive group is never forgotten, however long it is quiet */
    tick(&w, t0 + 100 * WINDOW_MS);
    assert_non_null(fti_lh_history_group(&w.h, "alive"));
    assert_non_null(fti_lh_history_group(&w.h, "back"));
    /* a group only the recoveries know (no history): goes at the next tick */
    report(&w.t, "stranger", t0);
    tick(&w, t0 + 100 * WINDOW_MS);
    assert_int_equal(w.t.n_groups, 2);
    world_clear(&w);
}

/* The ring of recoveries full and wrapped: forgetting one group keeps the
 * others oldest first. */
static void test_ring_wrapped(void **state)
{
    (void)state;
    fti_lh_recov_t t;
    memset(&t, 0, sizeof(t));
    for (int i = 0; i < FTI_LH_RECOV_KEEP + 10; i++)
        report(&t, i % 2 ? "odd" : "even", 1000 + i), t.groups[i % 2 ? 1 : 0].rec_seq = 0;
    assert_int_equal(t.n_rec, FTI_LH_RECOV_KEEP);
    int64_t last = 0;
    fti_lh_recov_forget(&t, "odd");
    assert_int_equal(t.n_rec, FTI_LH_RECOV_KEEP / 2);
    assert_int_equal(t.n_groups, 1);
    for (size_t i = 0; i < t.n_rec; i++) {
        const fti_lh_recov_entry_t *e = fti_lh_recov_at(&t, i);
        assert_string_equal(e->replica_id, "even");
        assert_true(e->r.end_ms > last);
        last = e->r.end_ms;
    }
    report(&t, "even", 5000); /* the ring goes on after a forget */
    t.groups[0].rec_seq = 0;
    report(&t, "even", 5001);
    assert_int_equal(fti_lh_recov_at(&t, t.n_rec - 1)->r.end_ms, 5001);
    fti_lh_recov_clear(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cycle_bounded),
        cmocka_unit_test(test_who_goes),
        cmocka_unit_test(test_ring_wrapped),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
