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

#include <cmocka.h>

#include "comm/nccl_slice.h"

static void test_shrink(void **state)
{
    (void)state;
    fti_nccl_member_t m[2] = {{42, 0, 4}, {42, 2, 4}}; /* old ranks 1 and 3 gone */
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
    fti_nccl_member_t fresh[2] = {{42, 0, 3}, {0, -1, 0}}; /* a newcomer */
    fti_nccl_decide(fresh, 2, &p);
    assert_false(p.shrink);
    fti_nccl_member_t other[2] = {{42, 0, 3}, {43, 1, 3}}; /* another communicator */
    fti_nccl_decide(other, 2, &p);
    assert_false(p.shrink);
    fti_nccl_member_t order[2] = {{42, 2, 3}, {42, 0, 3}}; /* reordered */
    fti_nccl_decide(order, 2, &p);
    assert_false(p.shrink);
    fti_nccl_member_t same[3] = {{42, 0, 3}, {42, 1, 3}, {42, 2, 3}}; /* nobody dropped */
    fti_nccl_decide(same, 3, &p);
    assert_false(p.shrink);
    fti_nccl_member_t none[1] = {{0, -1, 0}};
    fti_nccl_decide(none, 1, &p);
    assert_false(p.shrink);
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
