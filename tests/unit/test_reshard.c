/* test_reshard.c - the reshard planner (a pure function), the metadata
 * file, and C1 in one process: arrays saved by a group of 4 ranks load
 * bitwise equal with 2, 3 and 1 ranks, and saved by 1 with 4. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "ftmpi_errors.h"
#include "state/ckpt_format.h"
#include "state/ckpt_io.h"
#include "state/ckpt_writer.h"
#include "state/reshard.h"

/* shards of 10 elements of 4 bytes over ranks 0..2: [0,3) [3,7) [7,10) */
static fti_ckpt_shard_t three[3] = {
    {0, 0, 3, 0, 0}, {1, 3, 7, 16, 0}, {2, 7, 10, 0, 0}};
static fti_ckpt_buf_t buf3 = {"w", FTI_CKPT_SHARD, "float", 4, 10, 3, three};

static void test_plan_overlaps(void **state)
{
    (void)state;
    fti_reshard_piece_t *p = NULL;
    size_t n = 0;
    /* new shard [2, 8) touches all three old ones */
    assert_int_equal(fti_reshard_plan(&buf3, 2, 6, &p, &n), FT_SUCCESS);
    assert_int_equal(n, 3);
    assert_int_equal(p[0].rank, 0);
    assert_int_equal(p[0].file_offset, 8);
    assert_int_equal(p[0].length, 4);
    assert_int_equal(p[0].dst_offset, 0);
    assert_int_equal(p[1].rank, 1);
    assert_int_equal(p[1].file_offset, 16);
    assert_int_equal(p[1].length, 16);
    assert_int_equal(p[1].dst_offset, 4);
    assert_int_equal(p[2].rank, 2);
    assert_int_equal(p[2].file_offset, 0);
    assert_int_equal(p[2].length, 4);
    assert_int_equal(p[2].dst_offset, 20);
    free(p);
    /* exactly one old shard: one piece, whole */
    assert_int_equal(fti_reshard_plan(&buf3, 3, 4, &p, &n), FT_SUCCESS);
    assert_int_equal(n, 1);
    assert_int_equal(p[0].file_offset, 16);
    assert_int_equal(p[0].length, 16);
    free(p);
    /* empty range: nothing; outside: refused */
    assert_int_equal(fti_reshard_plan(&buf3, 5, 0, &p, &n), FT_SUCCESS);
    assert_int_equal(n, 0);
    assert_int_equal(fti_reshard_plan(&buf3, 8, 3, &p, &n), FT_ERR_ARG);
    assert_int_equal(fti_reshard_plan(&buf3, -1, 2, &p, &n), FT_ERR_ARG);
}

/* Every split of [0, G) into R new shards is covered exactly once. */
static void test_plan_covers(void **state)
{
    (void)state;
    for (int r = 1; r <= 7; r++) {
        uint64_t covered = 0;
        for (int g = 0; g < r; g++) {
            int64_t lo = 10 * g / r, hi = 10 * (g + 1) / r;
            fti_reshard_piece_t *p = NULL;
            size_t n = 0;
            assert_int_equal(fti_reshard_plan(&buf3, lo, hi - lo, &p, &n), FT_SUCCESS);
            uint64_t at = 0;
            for (size_t i = 0; i < n; i++) {
                assert_int_equal(p[i].dst_offset, at);
                at += p[i].length;
            }
            assert_int_equal(at, (uint64_t)(hi - lo) * 4);
            covered += at;
            free(p);
        }
        assert_int_equal(covered, 40);
    }
}

static void test_meta_roundtrip(void **state)
{
    (void)state;
    uint64_t fb[3] = {12, 32, 12};
    fti_ckpt_meta_t m = {7, 3, fb, 1, &buf3}, back;
    char *text = NULL, err[256];
    size_t len = 0;
    assert_int_equal(fti_ckpt_meta_format(&m, &text, &len), FT_SUCCESS);
    assert_int_equal(fti_ckpt_meta_parse(text, len, &back, err, sizeof(err)), FT_SUCCESS);
    assert_int_equal(back.step, 7);
    assert_int_equal(back.group_size, 3);
    assert_int_equal(back.bufs[0].n_shards, 3);
    assert_int_equal(back.bufs[0].shards[1].offset, 16);
    fti_ckpt_meta_free(&back);
    /* torn (cut before the end line) and changed texts are refused */
    assert_int_equal(fti_ckpt_meta_parse(text, len - 10, &back, err, sizeof(err)),
                     FT_ERR_BAD_MESSAGE);
    text[strlen(FTI_CKPT_MAGIC) + 6] = '8'; /* step 7 -> 8 */
    assert_int_equal(fti_ckpt_meta_parse(text, len, &back, err, sizeof(err)), FT_ERR_BAD_MESSAGE);
    assert_non_null(strstr(err, "checksum"));
    free(text);
    /* a gap between shards is refused */
    fti_ckpt_shard_t gap[2] = {{0, 0, 3, 0, 0}, {1, 4, 10, 0, 0}};
    fti_ckpt_buf_t bg = {"w", FTI_CKPT_SHARD, "float", 4, 10, 2, gap};
    uint64_t fb2[2] = {12, 24};
    fti_ckpt_meta_t mg = {1, 2, fb2, 1, &bg};
    assert_int_equal(fti_ckpt_meta_format(&mg, &text, &len), FT_SUCCESS);
    assert_int_equal(fti_ckpt_meta_parse(text, len, &back, err, sizeof(err)), FT_ERR_BAD_MESSAGE);
    free(text);
}

/* ---- C1 in one process -------------------------------------------------- */

#define G 100003 /* doubles of the global array: splits unevenly */
#define REP 37   /* bytes of the replicated buffer */

static double val(int64_t step, int64_t i)
{
    return (double)step * 1e6 + (double)i * 0.5;
}

/* Saves step `step` from a group of r ranks into root (as the step layer
 * does: every rank's file by the writer, then the metadata). */
static void save(const char *root, int64_t step, int r)
{
    fti_ckpt_writer_h w;
    char dir[512];
    assert_int_equal(fti_ckpt_writer_create(NULL, &w), FT_SUCCESS);
    snprintf(dir, sizeof(dir), "%s/step-%lld.tmp-test", root, (long long)step);
    fti_ckpt_buf_t b[2] = {{"w", FTI_CKPT_SHARD, "double", 8, G, (size_t)r, NULL},
                           {"rep", FTI_CKPT_REPLICATED, "byte", 1, REP, 1, NULL}};
    b[0].shards = calloc((size_t)r, sizeof(fti_ckpt_shard_t));
    b[1].shards = calloc(1, sizeof(fti_ckpt_shard_t));
    uint64_t *fb = calloc((size_t)r, sizeof(uint64_t));
    for (int g = 0; g < r; g++) {
        int64_t lo = (int64_t)G * g / r, hi = (int64_t)G * (g + 1) / r;
        size_t len = (size_t)(hi - lo) * 8 + (g == 0 ? REP : 0);
        char *data = malloc(len ? len : 1);
        for (int64_t i = lo; i < hi; i++) {
            double v = val(step, i);
            memcpy(data + (i - lo) * 8, &v, 8);
        }
        if (g == 0)
            memset(data + (hi - lo) * 8, (int)step, REP);
        size_t off[2] = {0, (size_t)(hi - lo) * 8}, rl[2] = {(size_t)(hi - lo) * 8, REP};
        uint64_t sums[2];
        int rc = -1;
        assert_int_equal(fti_ckpt_writer_write(w, dir, g, data, len, off, rl, g == 0 ? 2 : 1),
                         FT_SUCCESS);
        fti_ckpt_writer_wait_idle(w);
        assert_int_equal(fti_ckpt_writer_write_state(w, &rc, sums, 2), FTI_WRITE_DONE);
        assert_int_equal(rc, FT_SUCCESS);
        fti_ckpt_writer_collect(w);
        b[0].shards[g] = (fti_ckpt_shard_t){g, lo, hi, 0, sums[0]};
        if (g == 0)
            b[1].shards[0] = (fti_ckpt_shard_t){0, 0, REP, off[1], sums[1]};
        fb[g] = len;
        free(data);
    }
    fti_ckpt_meta_t m = {step, r, fb, 2, malloc(sizeof(b))};
    memcpy(m.bufs, b, sizeof(b));
    assert_int_equal(fti_ckpt_writer_publish(w, root, dir, &m, 2), FT_SUCCESS);
    fti_ckpt_writer_wait_idle(w);
    fti_ckpt_writer_destroy(w);
}

/* Every rank of a group of r loads its shard: together bitwise the array. */
static void load_check(const char *root, int64_t step, int r)
{
    for (int g = 0; g < r; g++) {
        int64_t lo = (int64_t)G * g / r, hi = (int64_t)G * (g + 1) / r;
        fti_ckpt_target_t t[2] = {{"w", FTI_CKPT_SHARD, 8, G, lo, hi - lo},
                                  {"rep", FTI_CKPT_REPLICATED, 1, REP, 0, REP}};
        fti_ckpt_staged_t s;
        char err[512] = "";
        int rc = fti_ckpt_stage(root, NULL, t, 2, &s, err, sizeof(err));
        if (rc != FT_SUCCESS)
            fail_msg("load by %d of %d: %s", g, r, err);
        assert_int_equal(s.step, step);
        for (int64_t i = lo; i < hi; i++) {
            double v = val(step, i), got;
            memcpy(&got, (char *)s.bufs[0] + (i - lo) * 8, 8);
            assert_memory_equal(&got, &v, 8);
        }
        for (int k = 0; k < REP; k++)
            assert_int_equal(((unsigned char *)s.bufs[1])[k], (unsigned char)step);
        fti_ckpt_staged_free(&s);
    }
}

static void test_c1_reshard(void **state)
{
    (void)state;
    char root[] = "/tmp/test_reshard.XXXXXX";
    assert_non_null(mkdtemp(root));
    save(root, 4, 4);
    load_check(root, 4, 4);
    load_check(root, 4, 2);
    load_check(root, 4, 3);
    load_check(root, 4, 1);
    save(root, 5, 1);
    load_check(root, 5, 4);
    load_check(root, 5, 1);
    save(root, 6, 3); /* keep 2: step 4 pruned */
    int64_t *steps = NULL;
    size_t n = 0;
    char err[256];
    assert_int_equal(fti_ckpt_list(root, &steps, &n, err, sizeof(err)), FT_SUCCESS);
    assert_int_equal(n, 2);
    assert_int_equal(steps[0], 6);
    assert_int_equal(steps[1], 5);
    free(steps);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plan_overlaps),
        cmocka_unit_test(test_plan_covers),
        cmocka_unit_test(test_meta_roundtrip),
        cmocka_unit_test(test_c1_reshard),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
