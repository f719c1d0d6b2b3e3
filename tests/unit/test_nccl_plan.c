/*
 * test_nccl_plan.c - the nccl rendezvous' decision (nccl_slice.h), pure:
 * shrink only when every member holds the same communicator, the quorum
 * only lost members and the old ranks keep their order; the exclude list
 * is the missing old ranks, ascending.  Needs NCCL built, not a GPU.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "comm/nccl_slice.h"

static void test_shrink(void **state)
{
    (void)state;
    fti_nccl_member_t m[2] = {{42, 0, 4, {0}}, {42, 2, 4, {0}}}; /* old ranks 1 and 3 gone */
    fti_nccl_plan_t p;
    fti_nccl_decide(m, 2, &p);
    assert_true(p.shrink);
    assert_int_equal(p.n_exclude, 2);
    assert_int_equal(p.exclude[0], 1);
    assert_int_equal(p.exclude[1], 3);
}

static void test_full_init(void **state)
{
    (void)state;
    fti_nccl_plan_t p;
    fti_nccl_member_t fresh[2] = {{42, 0, 3, {0}}, {0, -1, 0, {0}}}; /* a newcomer */
    fti_nccl_decide(fresh, 2, &p);
    assert_false(p.shrink);
    fti_nccl_member_t other[2] = {{42, 0, 3, {0}}, {43, 1, 3, {0}}}; /* another communicator */
    fti_nccl_decide(other, 2, &p);
    assert_false(p.shrink);
    fti_nccl_member_t order[2] = {{42, 2, 3, {0}}, {42, 0, 3, {0}}}; /* reordered */
    fti_nccl_decide(order, 2, &p);
    assert_false(p.shrink);
    fti_nccl_member_t same[3] = {{42, 0, 3, {0}}, {42, 1, 3, {0}}, {42, 2, 3, {0}}}; /* nobody dropped */
    fti_nccl_decide(same, 3, &p);
    assert_false(p.shrink);
    fti_nccl_member_t none[1] = {{0, -1, 0, {0}}};
    fti_nccl_decide(none, 1, &p);
    assert_false(p.shrink);
}

/* issue 29 item 5: members on one GPU (same UUID) get no NCCL communicator;
 * unknown GPUs (all 0) never count as shared */
static void test_shared_gpu(void **state)
{
    (void)state;
    fti_nccl_member_t m[3];
    memset(m, 0, sizeof(m));
    assert_false(fti_nccl_shared_gpu(m, 3)); /* all unknown */
    for (int i = 0; i < 3; i++)
        m[i].gpu[0] = (unsigned char)(i + 1); /* three GPUs */
    assert_false(fti_nccl_shared_gpu(m, 3));
    m[2].gpu[0] = 1; /* the third on the first one's GPU */
    assert_true(fti_nccl_shared_gpu(m, 3));
    assert_false(fti_nccl_shared_gpu(m, 2)); /* the first two alone */
    m[2].gpu[0] = 2;
    m[2].gpu[15] = 9; /* differs in the last byte only */
    assert_false(fti_nccl_shared_gpu(m, 3));
    memset(m[0].gpu, 0, 16);
    memset(m[1].gpu, 0, 16); /* two unknown: not shared */
    assert_false(fti_nccl_shared_gpu(m, 3));
    fti_nccl_member_t one[1];
    memset(one, 0, sizeof(one));
    one[0].gpu[3] = 7;
    assert_false(fti_nccl_shared_gpu(one, 1));
}

static void test_token(void **state)
{
    (void)state;
    unsigned char a[FTI_NCCL_ID_BYTES] = {1}, b[FTI_NCCL_ID_BYTES] = {2};
    assert_int_not_equal(fti_nccl_token(a, 0, 5), fti_nccl_token(b, 0, 5));
    assert_int_not_equal(fti_nccl_token(a, 0, 5), fti_nccl_token(a, 0, 6));
    assert_int_equal(fti_nccl_token(NULL, 9, 5), fti_nccl_token(NULL, 9, 5));
    assert_int_not_equal(fti_nccl_token(NULL, 9, 5), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shrink),
        cmocka_unit_test(test_full_init),
        cmocka_unit_test(test_token),
        cmocka_unit_test(test_shared_gpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
