/* test_sdc.c - the lighthouse's silent data corruption rules (lighthouse/sdc.h):
 * majority and minority, ties, per group rank and buffer, the sticky
 * minority, fingerprints consumed once, bounds. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "lighthouse/sdc.h"

/* Prints of a group of `ranks` ranks and 2 buffers ("w", "m"), all sums
 * `base` + rank * 10 + index, except one (bad_rank, bad_index) +1. */
static void prints(fti_sdc_print_t *p, int ranks, uint64_t base, int bad_rank, int bad_index)
{
    for (int r = 0; r < ranks; r++) {
        for (int i = 0; i < 2; i++) {
            fti_sdc_print_t *q = &p[r * 2 + i];
            memset(q, 0, sizeof(*q));
            q->group_rank = r;
            q->index = (uint32_t)i;
            snprintf(q->buffer, sizeof(q->buffer), "%s", i ? "m" : "w");
            q->sum = base + (uint64_t)(r * 10 + i) + (r == bad_rank && i == bad_index);
        }
    }
}

static void test_three_one_flipped(void **unused)
{
    (void)unused;
    fti_sdc_print_t a[4], b[4], c[4];
    prints(a, 2, 100, -1, -1);
    prints(b, 2, 100, 1, 0); /* group rank 1, buffer "w" */
    prints(c, 2, 100, -1, -1);
    fti_sdc_group_t g[3] = {{"g0", a, 4}, {"g1", b, 4}, {"g2", c, 4}};
    fti_sdc_finding_t f[3];
    fti_sdc_compare(g, 3, f);
    assert_int_equal(f[0].verdict, FTI_SDC_AGREE);
    assert_int_equal(f[2].verdict, FTI_SDC_AGREE);
    assert_int_equal(f[1].verdict, FTI_SDC_MINORITY);
    assert_int_equal(f[1].group_rank, 1);
    assert_string_equal(f[1].buffer, "w");
    assert_string_equal(f[1].other, "g0");
    assert_int_equal(f[1].others, 2);
    assert_int_equal(f[1].of, 3);
    char d[FTI_SDC_REPORT_SIZE];
    f[1].step = 20;
    fti_sdc_describe(&f[1], d, sizeof(d));
    assert_string_equal(d, "step 20: group rank 1, buffer 'w' differs from g0's (the majority's: "
                           "2 of 3 groups)");
}

static void test_two_differ_is_a_tie(void **unused)
{
    (void)unused;
    fti_sdc_print_t a[4], b[4];
    prints(a, 2, 100, -1, -1);
    prints(b, 2, 100, 0, 1);
    fti_sdc_group_t g[2] = {{"g0", a, 4}, {"g1", b, 4}};
    fti_sdc_finding_t f[2];
    fti_sdc_compare(g, 2, f);
    for (int i = 0; i < 2; i++) {
        assert_int_equal(f[i].verdict, FTI_SDC_TIE);
        assert_int_equal(f[i].group_rank, 0);
        assert_string_equal(f[i].buffer, "m");
    }
    assert_string_equal(f[0].other, "g1");
    assert_string_equal(f[1].other, "g0");
    /* 2-2 and 1-1-1: no strict majority either */
    fti_sdc_print_t c[4], e[4];
    prints(c, 2, 100, -1, -1);
    prints(e, 2, 100, 0, 1);
    fti_sdc_group_t g4[4] = {{"a", a, 4}, {"b", b, 4}, {"c", c, 4}, {"d", e, 4}};
    fti_sdc_finding_t f4[4];
    fti_sdc_compare(g4, 4, f4);
    for (int i = 0; i < 4; i++)
        assert_int_equal(f4[i].verdict, FTI_SDC_TIE);
    fti_sdc_print_t x[4];
    prints(x, 2, 500, -1, -1);
    fti_sdc_group_t g3[3] = {{"a", a, 4}, {"b", b, 4}, {"x", x, 4}};
    fti_sdc_compare(g3, 3, f4);
    for (int i = 0; i < 3; i++)
        assert_int_equal(f4[i].verdict, FTI_SDC_TIE);
}

static void test_all_agree_and_shapes(void **unused)
{
    (void)unused;
    fti_sdc_print_t a[4], b[4];
    prints(a, 2, 7, -1, -1);
    prints(b, 2, 7, -1, -1);
    fti_sdc_group_t g[2] = {{"g0", a, 4}, {"g1", b, 4}};
    fti_sdc_finding_t f[2];
    fti_sdc_compare(g, 2, f);
    assert_int_equal(f[0].verdict, FTI_SDC_AGREE);
    assert_int_equal(f[1].verdict, FTI_SDC_AGREE);
    /* a missing entry (a group with a rank fewer) and another name differ */
    fti_sdc_group_t h[3] = {{"g0", a, 4}, {"g1", b, 4}, {"g2", a, 2}};
    fti_sdc_finding_t fh[3];
    fti_sdc_compare(h, 3, fh);
    assert_int_equal(fh[2].verdict, FTI_SDC_MINORITY);
    assert_int_equal(fh[2].group_rank, 1);
    assert_string_equal(fh[2].buffer, "w");
    fti_sdc_print_t c[4];
    prints(c, 2, 7, -1, -1);
    snprintf(c[3].buffer, sizeof(c[3].buffer), "other");
    fti_sdc_group_t k[3] = {{"g0", a, 4}, {"g1", b, 4}, {"g2", c, 4}};
    fti_sdc_compare(k, 3, fh);
    assert_int_equal(fh[2].verdict, FTI_SDC_MINORITY);
    assert_int_equal(fh[2].group_rank, 1);
}

static void test_state_judge(void **unused)
{
    (void)unused;
    fti_sdc_h h = NULL;
    assert_int_equal(fti_sdc_create(&h), FT_SUCCESS);
    fti_sdc_print_t a[4], b[4];
    prints(a, 2, 100, -1, -1);
    prints(b, 2, 100, 1, 1);
    /* unsorted input is sorted */
    fti_sdc_print_t rev[4] = {b[3], b[2], b[1], b[0]};
    assert_int_equal(fti_sdc_note(h, "g0", 20, a, 4), FT_SUCCESS);
    assert_int_equal(fti_sdc_note(h, "g1", 20, rev, 4), FT_SUCCESS);
    assert_int_equal(fti_sdc_note(h, "g2", 20, a, 4), FT_SUCCESS);
    const char *ids[3] = {"g0", "g1", "g2"};
    int64_t steps[3] = {20, 20, 20};
    fti_sdc_finding_t f[3];
    assert_int_equal(fti_sdc_judge(h, ids, steps, 3, 1000, f), 1);
    assert_int_equal(f[1].verdict, FTI_SDC_MINORITY);
    assert_true(f[1].fresh);
    assert_int_equal(f[1].step, 20);
    assert_int_equal(f[1].group_rank, 1);
    assert_string_equal(f[1].buffer, "m");
    assert_int_equal(f[0].verdict, FTI_SDC_AGREE);
    assert_int_equal(fti_sdc_checks(h), 1);
    fti_sdc_report_t r[4];
    assert_int_equal(fti_sdc_reports(h, r, 4), 1);
    assert_string_equal(r[0].replica_id, "g1");
    assert_int_equal(r[0].wall_ms, 1000);

    /* the heal failed: g1 asks at step 20 again, still a minority (not
     * reported again); the prints were consumed: no new check */
    assert_int_equal(fti_sdc_judge(h, ids, steps, 3, 2000, f), 0);
    assert_int_equal(f[1].verdict, FTI_SDC_MINORITY);
    assert_false(f[1].fresh);
    assert_int_equal(f[0].verdict, FTI_SDC_AGREE);
    assert_int_equal(fti_sdc_reports(h, r, 4), 1);
    /* it committed: step 21 clears it */
    int64_t next[3] = {21, 21, 21};
    assert_int_equal(fti_sdc_judge(h, ids, next, 3, 3000, f), 0);
    assert_int_equal(f[1].verdict, FTI_SDC_AGREE);

    /* prints of another step than the member's are not compared; a group
     * alone at its step is consumed without a check */
    assert_int_equal(fti_sdc_note(h, "g0", 25, a, 4), FT_SUCCESS);
    assert_int_equal(fti_sdc_note(h, "g1", 24, b, 4), FT_SUCCESS);
    int64_t s25[3] = {25, 25, 25};
    assert_int_equal(fti_sdc_judge(h, ids, s25, 3, 4000, f), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(f[i].verdict, FTI_SDC_AGREE);

    /* a tie: both reported */
    assert_int_equal(fti_sdc_note(h, "g0", 30, a, 4), FT_SUCCESS);
    assert_int_equal(fti_sdc_note(h, "g1", 30, b, 4), FT_SUCCESS);
    int64_t s30[2] = {30, 30};
    assert_int_equal(fti_sdc_judge(h, ids, s30, 2, 5000, f), 1);
    assert_int_equal(f[0].verdict, FTI_SDC_TIE);
    assert_int_equal(f[1].verdict, FTI_SDC_TIE);
    assert_int_equal(fti_sdc_reports(h, r, 4), 3);
    assert_int_equal(fti_sdc_reports(h, r, 1), 1);
    assert_int_equal(r[0].wall_ms, 5000); /* the newest */

    /* bounds */
    static fti_sdc_print_t many[FTI_SDC_MAX_PRINTS + 1];
    assert_int_equal(fti_sdc_note(h, "g0", 40, many, FTI_SDC_MAX_PRINTS + 1), FT_ERR_ARG);
    assert_int_equal(fti_sdc_note(h, "", 40, a, 4), FT_ERR_ARG);
    fti_sdc_forget(h, "g0");
    fti_sdc_destroy(h);
}

static bool known_none(const char *id, void *arg)
{
    (void)id;
    (void)arg;
    return false;
}

/* An open minority verdict listed (fti_sdc_open), restored into another
 * table (a new leader's), sticky there at its step, kept through expiry
 * until the group asks again, closed at another step. */
static void test_open_restore(void **unused)
{
    (void)unused;
    fti_sdc_h h, h2;
    fti_sdc_print_t a[4], b[4];
    fti_sdc_finding_t f[3];
    fti_sdc_report_t r[4];
    prints(a, 2, 100, -1, -1);
    prints(b, 2, 100, 0, 1); /* group rank 0, buffer "m" */
    assert_int_equal(fti_sdc_create(&h), FT_SUCCESS);
    assert_int_equal(fti_sdc_create(&h2), FT_SUCCESS);
    assert_int_equal(fti_sdc_open(h, r, 4), 0);
    assert_int_equal(fti_sdc_note(h, "g0", 7, a, 4), FT_SUCCESS);
    assert_int_equal(fti_sdc_note(h, "g1", 7, b, 4), FT_SUCCESS);
    assert_int_equal(fti_sdc_note(h, "g2", 7, a, 4), FT_SUCCESS);
    const char *ids[3] = {"g0", "g1", "g2"};
    int64_t s7[3] = {7, 7, 7}, s8[3] = {8, 8, 8};
    assert_int_equal(fti_sdc_judge(h, ids, s7, 3, 1000, f), 1);
    assert_int_equal(f[1].verdict, FTI_SDC_MINORITY);
    assert_int_equal(fti_sdc_open(h, r, 0), 1); /* counted, none copied */
    assert_int_equal(fti_sdc_open(h, r, 4), 1);
    assert_string_equal(r[0].replica_id, "g1");
    assert_int_equal(r[0].f.step, 7);
    assert_int_equal(r[0].f.group_rank, 0);
    assert_string_equal(r[0].f.buffer, "m");

    fti_sdc_finding_t bad = r[0].f;
    bad.verdict = FTI_SDC_TIE;
    assert_int_equal(fti_sdc_restore(h2, "g1", &bad), FT_ERR_ARG);
    assert_int_equal(fti_sdc_restore(h2, "", &r[0].f), FT_ERR_ARG);
    assert_int_equal(fti_sdc_restore(h2, "g1", &r[0].f), FT_SUCCESS);
    assert_int_equal(fti_sdc_expire(h2, known_none, NULL), 0); /* restored: kept */
    assert_int_equal(fti_sdc_judge(h2, ids, s7, 3, 2000, f), 0);
    assert_int_equal(f[0].verdict, FTI_SDC_AGREE);
    assert_int_equal(f[1].verdict, FTI_SDC_MINORITY);
    assert_false(f[1].fresh);
    assert_int_equal(f[1].step, 7);
    assert_string_equal(f[1].buffer, "m");
    assert_int_equal(fti_sdc_reports(h2, r, 4), 0); /* not a new report */
    assert_int_equal(fti_sdc_open(h2, r, 4), 1);
    /* asked once: expiry applies again; another step closes it */
    assert_int_equal(fti_sdc_judge(h2, ids, s8, 3, 3000, f), 0);
    assert_int_equal(f[1].verdict, FTI_SDC_AGREE);
    assert_int_equal(fti_sdc_open(h2, r, 4), 0);
    fti_sdc_destroy(h);
    fti_sdc_destroy(h2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_three_one_flipped),
        cmocka_unit_test(test_two_differ_is_a_tie),
        cmocka_unit_test(test_all_agree_and_shapes),
        cmocka_unit_test(test_state_judge),
        cmocka_unit_test(test_open_restore),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
