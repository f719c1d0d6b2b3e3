/*
 * test_outer.c - the arithmetic of LocalSGD and DiLoCo (src/outer.h) and
 * FT_Outer_create's argument checks: what a group contributes (its
 * parameters, its pseudo-gradient, zeros at weight 0), the average over the
 * weights, and DiLoCo's Nesterov outer step against values worked out by
 * hand (PyTorch's SGD(nesterov=True) on the pseudo-gradient); FT_Heal_count,
 * which tells a sync that its state was replaced, outside FT_Init.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "ftmpi.h"
#include "outer.h"

static void test_localsgd_average(void **state)
{
    (void)state;
    const float a[3] = {1.0f, -2.0f, 4.0f}, b[3] = {3.0f, 2.0f, 0.5f};
    float pa[3], pb[3], healed[3], sum[3], global[3] = {9.0f, 9.0f, 9.0f};
    fti_outer_pack_localsgd(pa, a, 3, 1.0f);
    fti_outer_pack_localsgd(pb, b, 3, 1.0f);
    fti_outer_pack_localsgd(healed, b, 3, 0.0f); /* a healed group: zeros */
    for (int i = 0; i < 3; i++) {
        assert_true(healed[i] == 0.0f);
        sum[i] = pa[i] + pb[i] + healed[i];
    }
    fti_outer_apply_localsgd(global, sum, 3, 2.0f); /* weights 1 + 1 + 0 */
    assert_true(global[0] == 2.0f);
    assert_true(global[1] == 0.0f);
    assert_true(global[2] == 2.25f);
    /* W = 0 (every group joined): nothing changes */
    fti_outer_apply_localsgd(global, sum, 3, 0.0f);
    assert_true(global[0] == 2.0f && global[2] == 2.25f);
}

static void test_diloco_nesterov(void **state)
{
    (void)state;
    /* two groups, one parameter: global 1; locals 0.5 and 0.7 */
    float global[1] = {1.0f}, mom[1] = {0.0f}, g1[1], g2[1], sum[1];
    const float l1[1] = {0.5f}, l2[1] = {0.7f};
    fti_outer_pack_diloco(g1, global, l1, 1, 1.0f);
    fti_outer_pack_diloco(g2, global, l2, 1, 1.0f);
    assert_float_equal(g1[0], 0.5f, 1e-7);
    sum[0] = g1[0] + g2[0];
    /* delta = 0.4; m = 0.4; global = 1 - 0.5 * (0.4 + 0.9 * 0.4) = 0.62 */
    fti_outer_apply_diloco(global, mom, sum, 1, 2.0f, 0.5f, 0.9f);
    assert_float_equal(mom[0], 0.4f, 1e-6);
    assert_float_equal(global[0], 0.62f, 1e-6);
    /* second sync, delta 0.1: m = 0.9 * 0.4 + 0.1 = 0.46;
     * global = 0.62 - 0.5 * (0.1 + 0.9 * 0.46) = 0.363 */
    sum[0] = 0.2f;
    fti_outer_apply_diloco(global, mom, sum, 1, 2.0f, 0.5f, 0.9f);
    assert_float_equal(mom[0], 0.46f, 1e-6);
    assert_float_equal(global[0], 0.363f, 1e-6);
    /* W = 0: neither the momentum nor the global copy move */
    fti_outer_apply_diloco(global, mom, sum, 1, 0.0f, 0.5f, 0.9f);
    assert_float_equal(mom[0], 0.46f, 1e-6);
    assert_float_equal(global[0], 0.363f, 1e-6);
    /* a healed group contributes zeros */
    fti_outer_pack_diloco(g1, global, l1, 1, 0.0f);
    assert_true(g1[0] == 0.0f);
}

/* With outer_lr 1 and momentum 0 DiLoCo is LocalSGD: the new global copy
 * is the groups' average (up to rounding). */
static void test_diloco_is_localsgd(void **state)
{
    (void)state;
    float global[2] = {1.0f, 2.0f}, mom[2] = {0, 0}, p[2], sum[2] = {0, 0};
    const float l[3][2] = {{0.5f, 2.5f}, {1.5f, 1.0f}, {0.25f, 3.0f}};
    for (int g = 0; g < 3; g++) {
        fti_outer_pack_diloco(p, global, l[g], 2, 1.0f);
        sum[0] += p[0];
        sum[1] += p[1];
    }
    fti_outer_apply_diloco(global, mom, sum, 2, 3.0f, 1.0f, 0.0f);
    assert_float_equal(global[0], (0.5f + 1.5f + 0.25f) / 3.0f, 1e-6);
    assert_float_equal(global[1], (2.5f + 1.0f + 3.0f) / 3.0f, 1e-6);
}

static void test_create_checks(void **state)
{
    (void)state;
    FT_Outer o = NULL;
    assert_int_equal(FT_Outer_create(3, 20, 0, 0, &o), FT_ERR_ARG);
    assert_int_equal(FT_Outer_create(FT_OUTER_LOCALSGD, 0, 0, 0, &o), FT_ERR_ARG);
    assert_int_equal(FT_Outer_create(FT_OUTER_LOCALSGD, 20, 0.7, 0, &o), FT_ERR_ARG);
    assert_int_equal(FT_Outer_create(FT_OUTER_DILOCO, 20, 0, 0.9, &o), FT_ERR_ARG);
    assert_int_equal(FT_Outer_create(FT_OUTER_DILOCO, 20, 0.7, 1.0, &o), FT_ERR_ARG);
    assert_int_equal(FT_Outer_create(FT_OUTER_DILOCO, 20, 0.7, 0.9, NULL), FT_ERR_ARG);
    assert_null(o); /* written only on success */
    assert_int_equal(FT_Outer_create(FT_OUTER_DILOCO, 20, 0.7, 0.9, &o), FT_SUCCESS);
    assert_non_null(o);
    float w[4] = {0};
    assert_int_equal(FT_Outer_register(o, "bad name", w, 4), FT_ERR_ARG);
    assert_int_equal(FT_Outer_register(o, "w", w, 0), FT_ERR_ARG);
    assert_int_equal(FT_Outer_step(o, NULL), FT_ERR_ARG); /* nothing registered */
    assert_int_equal(FT_Outer_free(&o), FT_SUCCESS);
    assert_null(o);
    assert_int_equal(FT_Outer_free(&o), FT_SUCCESS);
}

/* FT_Heal_count outside FT_Init..FT_Finalize: an error, and *count_p is
 * left alone (written only on success). */
static void test_heal_count_outside(void **state)
{
    (void)state;
    int64_t n = 42;
    assert_int_equal(FT_Heal_count(&n), FT_ERR_NOT_INITIALIZED);
    assert_int_equal(n, 42);
    assert_int_equal(FT_Heal_count(NULL), FT_ERR_NOT_INITIALIZED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_localsgd_average),
        cmocka_unit_test(test_diloco_nesterov),
        cmocka_unit_test(test_diloco_is_localsgd),
        cmocka_unit_test(test_create_checks),
        cmocka_unit_test(test_heal_count_outside),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
