/*
 * test_progress.c - the progress engine (src/step/progress.c): jobs run in the
 * order they were submitted on the engine's thread while the submitter
 * goes on; a failed abortable job fails every later one at once (not run)
 * until reset, a non-abortable one runs anyway; waits in any order; the
 * engine without a thread runs each job inside submit; run() on an idle
 * engine runs on the caller's thread.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <pthread.h>
#include <time.h>

#include <cmocka.h>

#include "ftmpi_errors.h"
#include "step/progress.h"

struct rec {
    int order[16];
    int n;
    pthread_t ran_on[16];
};

struct tjob {
    struct fti_job job;
    struct rec *rec;
    int id, rc, sleep_ms;
};

static int tjob_fn(void *arg)
{
    struct tjob *t = arg;
    if (t->sleep_ms > 0) {
        struct timespec ts = {0, (long)t->sleep_ms * 1000000L};
        nanosleep(&ts, NULL);
    }
    t->rec->ran_on[t->rec->n] = pthread_self();
    t->rec->order[t->rec->n++] = t->id;
    return t->rc;
}

static void init_job(struct tjob *t, struct rec *r, int id, int rc, bool abortable)
{
    *t = (struct tjob){.rec = r, .id = id, .rc = rc, .sleep_ms = 5};
    t->job.fn = tjob_fn;
    t->job.arg = t;
    t->job.abortable = abortable;
}

static void test_order_and_abort(void **state)
{
    (void)state;
    fti_progress_h p;
    struct rec r = {0};
    struct tjob t[5];
    assert_int_equal(fti_progress_create(true, &p), FT_SUCCESS);
    assert_true(fti_progress_threaded(p));
    init_job(&t[0], &r, 0, FT_SUCCESS, true);
    init_job(&t[1], &r, 1, FT_ERR_PROC_FAILED, true);
    init_job(&t[2], &r, 2, FT_SUCCESS, true);  /* skipped: FT_ERR_ABORTED */
    init_job(&t[3], &r, 3, FT_SUCCESS, false); /* not a collective: runs */
    init_job(&t[4], &r, 4, FT_SUCCESS, true);  /* skipped */
    for (int i = 0; i < 5; i++)
        fti_progress_submit(p, &t[i].job);
    assert_true(fti_progress_busy(p)); /* 5 ms each: still running */
    /* waits in reverse order */
    assert_int_equal(fti_progress_wait(p, &t[4].job), FT_ERR_ABORTED);
    assert_int_equal(fti_progress_wait(p, &t[3].job), FT_SUCCESS);
    assert_int_equal(fti_progress_wait(p, &t[2].job), FT_ERR_ABORTED);
    assert_int_equal(fti_progress_wait(p, &t[1].job), FT_ERR_PROC_FAILED);
    assert_int_equal(fti_progress_wait(p, &t[0].job), FT_SUCCESS);
    assert_int_equal(r.n, 3);
    assert_int_equal(r.order[0], 0);
    assert_int_equal(r.order[1], 1);
    assert_int_equal(r.order[2], 3);
    assert_false(pthread_equal(r.ran_on[0], pthread_self()));
    assert_int_equal(fti_progress_failed(p), FT_ERR_PROC_FAILED);
    fti_progress_drain(p);
    assert_false(fti_progress_busy(p));
    /* a new step: collectives run again; an idle run() is inline */
    fti_progress_reset(p);
    assert_int_equal(fti_progress_failed(p), FT_SUCCESS);
    init_job(&t[0], &r, 5, FT_SUCCESS, true);
    assert_int_equal(fti_progress_run(p, &t[0].job), FT_SUCCESS);
    assert_true(pthread_equal(r.ran_on[3], pthread_self()));
    fti_progress_destroy(p);
}

static void test_destroy_runs_queued(void **state)
{
    (void)state;
    fti_progress_h p;
    struct rec r = {0};
    struct tjob t[3];
    assert_int_equal(fti_progress_create(true, &p), FT_SUCCESS);
    for (int i = 0; i < 3; i++) {
        init_job(&t[i], &r, i, FT_SUCCESS, true);
        fti_progress_submit(p, &t[i].job);
    }
    fti_progress_destroy(p);
    assert_int_equal(r.n, 3);
    for (int i = 0; i < 3; i++)
        assert_true(t[i].job.done);
}

static void test_unthreaded(void **state)
{
    (void)state;
    fti_progress_h p;
    struct rec r = {0};
    struct tjob t[2];
    assert_int_equal(fti_progress_create(false, &p), FT_SUCCESS);
    assert_false(fti_progress_threaded(p));
    init_job(&t[0], &r, 0, FT_ERR_TIMEOUT, true);
    fti_progress_submit(p, &t[0].job);
    assert_true(t[0].job.done); /* ran inside submit */
    assert_int_equal(r.n, 1);
    assert_true(pthread_equal(r.ran_on[0], pthread_self()));
    init_job(&t[1], &r, 1, FT_SUCCESS, true);
    fti_progress_submit(p, &t[1].job);
    assert_int_equal(fti_progress_wait(p, &t[1].job), FT_ERR_ABORTED);
    assert_int_equal(r.n, 1);
    fti_progress_destroy(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_order_and_abort),
        cmocka_unit_test(test_destroy_runs_queued),
        cmocka_unit_test(test_unthreaded),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
