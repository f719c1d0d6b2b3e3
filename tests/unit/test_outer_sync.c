/*
 * test_outer_sync.c - FT_Outer's sync (src/outer.c, compiled in here)
 * against a scripted step API: which syncs reset the caller's parameters
 * to the global ones and contribute nothing (issue 35 item 1).  A heal
 * that keeps the step (the SDC check's heal of a minority) and a heal
 * after which FT_Quorum fails are both heals: FT_Heal_count moves, FT_Step
 * need not.  The two other groups of the job are simulated inside the
 * fake FT_Allreduce: each contributes OTHER with weight 1.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ftmpi.h"

#define N 4
#define OTHER 2.0f /* each simulated other group's parameters (LocalSGD) */

static struct {
    int64_t step, heals;
    int quorum_rc;        /* what the next FT_Quorum returns */
    int heal;             /* the next FT_Quorum installs `healed` at heal_step */
    int64_t heal_step;
    float healed[N];
    float *global;        /* the registered "outer.w.g" */
    float weight;         /* this group's weight in the last reduction */
    int reductions;
} fake;

/* ---- the step API outer.c calls ------------------------------------------ */

int FT_State_register(const char *name, void *buf, size_t bytes)
{
    if (!strcmp(name, "outer.w.g") && bytes == N * sizeof(float))
        fake.global = buf;
    return FT_SUCCESS;
}

int FT_Quorum(int flags)
{
    (void)flags;
    if (fake.heal) {
        memcpy(fake.global, fake.healed, sizeof(fake.healed));
        fake.step = fake.heal_step;
        fake.heals++;
        fake.heal = 0;
    }
    return fake.quorum_rc;
}

int FT_Heal_count(int64_t *count_p)
{
    *count_p = fake.heals;
    return FT_SUCCESS;
}

int64_t FT_Step(void)
{
    return fake.step;
}

/* The sum over this group and two others that contribute OTHER (LocalSGD:
 * their parameters; DiLoCo: a pseudo-gradient of OTHER) with weight 1.  A
 * step whose quorum failed fails here too (the latched error). */
int FT_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype, MPI_Op op,
                 FT_Comm comm)
{
    (void)sendbuf, (void)datatype, (void)op, (void)comm;
    float *b = recvbuf;
    assert_int_equal(count, N + 1);
    fake.weight = b[N];
    fake.reductions++;
    if (fake.quorum_rc != FT_SUCCESS)
        return FT_ERR_ABORTED;
    for (int i = 0; i < N; i++)
        b[i] += 2 * OTHER;
    b[N] += 2;
    return FT_SUCCESS;
}

int FT_Commit(int *committed)
{
    *committed = fake.quorum_rc == FT_SUCCESS;
    if (*committed)
        fake.step++;
    return *committed ? FT_SUCCESS : fake.quorum_rc;
}

/* ---- the tests ------------------------------------------------------------- */

static void fill(float *v, float x)
{
    for (int i = 0; i < N; i++)
        v[i] = x;
}

/* A process that joined at a fresh start (one sync committed). */
static FT_Outer joined(int algorithm, float *w)
{
    memset(&fake, 0, sizeof(fake));
    FT_Outer o = NULL;
    assert_int_equal(FT_Outer_create(algorithm, 1, algorithm == FT_OUTER_DILOCO ? 1.0 : 0,
                                     algorithm == FT_OUTER_DILOCO ? 0.5 : 0, &o),
                     FT_SUCCESS);
    fill(w, 1.0f);
    assert_int_equal(FT_Outer_register(o, "w", w, N), FT_SUCCESS);
    assert_non_null(fake.global);
    int result = 0;
    assert_int_equal(FT_Outer_sync(o, &result), FT_SUCCESS);
    assert_int_equal(result, FT_OUTER_SYNC_RAN | FT_OUTER_COMMITTED | FT_OUTER_RESET);
    assert_int_equal(fake.reductions, 0); /* a fresh start reduces nothing */
    assert_int_equal(fake.step, 1);
    return o;
}

/* The SDC check's heal: the global state and the parameters were corrupted
 * (+1000 on the first one), the quorum heals the global state from the
 * majority at the same step.  The group contributes nothing and ends at
 * the others' state: LocalSGD the average of the other two groups' OTHER,
 * DiLoCo 1 - (OTHER + 0.5 * OTHER) from global 1, momentum 0. */
static void same_step_heal(int algorithm, float want)
{
    float w[N];
    FT_Outer o = joined(algorithm, w);
    fake.global[0] += 1000.0f;
    w[0] += 1000.0f;
    fill(fake.healed, 1.0f);
    fake.heal = 1;
    fake.heal_step = fake.step; /* FT_Step() does not move */
    int result = 0;
    assert_int_equal(FT_Outer_sync(o, &result), FT_SUCCESS);
    assert_int_equal(result, FT_OUTER_SYNC_RAN | FT_OUTER_COMMITTED | FT_OUTER_RESET);
    assert_true(fake.weight == 0.0f);
    for (int i = 0; i < N; i++) {
        assert_true(fake.global[i] == want);
        assert_true(w[i] == want);
    }
    ftmpi_outer_stats_t st;
    assert_int_equal(ftmpi_outer_stats(o, &st), FT_SUCCESS);
    assert_int_equal(st.healed, 1);
    assert_int_equal(st.contributors, 2);
    assert_int_equal(FT_Outer_free(&o), FT_SUCCESS);
}

static void test_sdc_heal_localsgd(void **state)
{
    (void)state;
    same_step_heal(FT_OUTER_LOCALSGD, OTHER);
}

static void test_sdc_heal_diloco(void **state)
{
    (void)state;
    same_step_heal(FT_OUTER_DILOCO, 1.0f - 1.5f * OTHER);
}

/* A heal to a later step after which FT_Quorum fails (a slice not built):
 * the parameters are the healed ones at once and the failed sync
 * contributes nothing; the next sync, with no heal, contributes what was
 * trained from them with weight 1. */
static void test_heal_then_quorum_fails(void **state)
{
    (void)state;
    float w[N];
    FT_Outer o = joined(FT_OUTER_LOCALSGD, w);
    fill(w, 7.0f); /* trained, from state that is about to be replaced */
    fill(fake.healed, 5.0f);
    fake.heal = 1;
    fake.heal_step = 10;
    fake.quorum_rc = FT_ERR_TIMEOUT;
    int result = 0;
    assert_int_equal(FT_Outer_sync(o, &result), FT_ERR_TIMEOUT);
    assert_int_equal(result, FT_OUTER_SYNC_RAN | FT_OUTER_RESET);
    assert_true(fake.weight == 0.0f);
    for (int i = 0; i < N; i++)
        assert_true(w[i] == 5.0f && fake.global[i] == 5.0f);
    /* the next sync: no heal, the group's work counts */
    fake.quorum_rc = FT_SUCCESS;
    fill(w, 5.0f + 3 * OTHER); /* (this + 2 * OTHER) / 3 = 5 */
    assert_int_equal(FT_Outer_sync(o, &result), FT_SUCCESS);
    assert_int_equal(result, FT_OUTER_SYNC_RAN | FT_OUTER_COMMITTED | FT_OUTER_RESET);
    assert_true(fake.weight == 1.0f);
    for (int i = 0; i < N; i++)
        assert_true(w[i] == 5.0f && fake.global[i] == 5.0f);
    ftmpi_outer_stats_t st;
    assert_int_equal(ftmpi_outer_stats(o, &st), FT_SUCCESS);
    assert_int_equal(st.healed, 1);
    assert_int_equal(st.committed, 2);
    assert_int_equal(FT_Outer_free(&o), FT_SUCCESS);
}

/* The fresh start's agreement (FTMPI_INIT_SYNC heals step 0 from one
 * group) resets the parameters but is no heal in the counters. */
static void test_fresh_start_heal_not_counted(void **state)
{
    (void)state;
    memset(&fake, 0, sizeof(fake));
    float w[N];
    FT_Outer o = NULL;
    assert_int_equal(FT_Outer_create(FT_OUTER_LOCALSGD, 1, 0, 0, &o), FT_SUCCESS);
    fill(w, 9.0f);
    assert_int_equal(FT_Outer_register(o, "w", w, N), FT_SUCCESS);
    fill(fake.healed, 3.0f);
    fake.heal = 1;
    fake.heal_step = 0;
    int result = 0;
    assert_int_equal(FT_Outer_sync(o, &result), FT_SUCCESS);
    for (int i = 0; i < N; i++)
        assert_true(w[i] == 3.0f);
    ftmpi_outer_stats_t st;
    assert_int_equal(ftmpi_outer_stats(o, &st), FT_SUCCESS);
    assert_int_equal(st.healed, 0);
    assert_int_equal(FT_Outer_free(&o), FT_SUCCESS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sdc_heal_localsgd),
        cmocka_unit_test(test_sdc_heal_diloco),
        cmocka_unit_test(test_heal_then_quorum_fails),
        cmocka_unit_test(test_fresh_start_heal_not_counted),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
