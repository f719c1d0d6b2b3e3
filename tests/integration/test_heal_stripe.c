/*
 * test_heal_stripe.c - striped healing over real sockets in one process
 * (src/heal/fetch.c, issue 15 item 4): three source registries, each
 * behind its own rank server (which answers CHECKPOINT_METADATA as a
 * manager does), serve the same state; a fourth registry heals from all
 * three at once with fti_heal_stage_multi.  Covers:
 *   - a heal from three sources equals the sources' state bitwise, more
 *     than one source delivered bytes, and every source counts the healer
 *     as served (the sums reply);
 *   - a source gone (server stopped) and a source at another step are
 *     dropped: the healer completes from the others;
 *   - a source serving one byte flipped, or two of three flipping a byte
 *     of every range (FTMPI_TEST_HEAL_CORRUPT): the pieces are fetched
 *     again from another source, the copy is bitwise right; when every source (or the only one) serves it flipped, the
 *     heal fails with FT_ERR_CHECKSUM and the healer's memory is bitwise
 *     as it was.
 * The state has a buffer of several checksum pieces whose length is no
 * multiple of the range size, and a small one.
 */
#include <inttypes.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ftmpi.h"
#include "ftmpi_config.h" /* FTMPI_TEST_HOOKS */
#include "heal/heal.h"
#include "control/rank_server.h"
#include "base/sizes.h"
#include "base/util.h"

#define N_SRC 3
#define W_BYTES (FTI_HEAL_SUM_BYTES * 2 + 12345) /* three pieces */
#define M_BYTES 777
#define STEP 9

struct fixture {
    unsigned char *w, *m;         /* the sources' state (shared, read only) */
    unsigned char *w_dst, *m_dst; /* the healer's */
    fti_heal_h src[N_SRC], dst;
    fti_rank_server_h srv[N_SRC];
    char mgr[N_SRC][FTI_ADDRESS_SIZE]; /* outlive a stopped source */
    const char *managers[N_SRC];
    fti_heal_opts_t opts;
};

/* A source registry and its server; corrupt (may be NULL) is the test
 * hook's value while it is created. */
static void source_start(struct fixture *f, int j, const char *corrupt)
{
#ifndef FTMPI_TEST_HOOKS
    if (corrupt != NULL) {
        print_message("skipped: built without configure --enable-test-hooks\n");
        skip();
    }
#endif
    if (corrupt != NULL)
        setenv("FTMPI_TEST_HEAL_CORRUPT", corrupt, 1);
    assert_int_equal(fti_heal_create(&f->src[j]), FT_SUCCESS);
    unsetenv("FTMPI_TEST_HEAL_CORRUPT");
    assert_int_equal(fti_heal_register(f->src[j], "w", f->w, W_BYTES), FT_SUCCESS);
    assert_int_equal(fti_heal_register(f->src[j], "m", f->m, M_BYTES), FT_SUCCESS);
    assert_int_equal(fti_rank_server_start("127.0.0.1", 1 << 20, NULL, true, fti_heal_rpc,
                                           f->src[j], &f->srv[j]),
                     FT_SUCCESS);
    const char *peers[] = {fti_rank_server_address(f->srv[j])};
    assert_int_equal(fti_rank_server_set_peers(f->srv[j], peers, 1), FT_SUCCESS);
    fti_strlcpy(f->mgr[j], fti_rank_server_address(f->srv[j]), sizeof(f->mgr[j]));
    f->managers[j] = f->mgr[j];
    fti_heal_set_step(f->src[j], STEP, true);
}

static void source_stop(struct fixture *f, int j)
{
    fti_rank_server_stop(f->srv[j]);
    fti_heal_destroy(f->src[j]);
    f->srv[j] = NULL;
    f->src[j] = NULL;
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    f->w = malloc(W_BYTES);
    f->m = malloc(M_BYTES);
    f->w_dst = calloc(1, W_BYTES);
    f->m_dst = calloc(1, M_BYTES);
    assert_true(f->w && f->m && f->w_dst && f->m_dst);
    uint64_t x = 88172645463325252ULL;
    for (size_t i = 0; i < W_BYTES; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        f->w[i] = (unsigned char)x;
    }
    for (size_t i = 0; i < M_BYTES; i++)
        f->m[i] = (unsigned char)(i * 7);
    assert_int_equal(fti_heal_create(&f->dst), FT_SUCCESS);
    assert_int_equal(fti_heal_register(f->dst, "m", f->m_dst, M_BYTES), FT_SUCCESS);
    assert_int_equal(fti_heal_register(f->dst, "w", f->w_dst, W_BYTES), FT_SUCCESS);
    fti_heal_set_step(f->dst, 2, true);
    f->opts.connect_timeout_ms = 1000;
    f->opts.max_reply = 1 << 20;
    f->opts.chunk_bytes = (1u << 20) + 4096; /* ~20 ranges, across piece borders */
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    for (int j = 0; j < N_SRC; j++)
        if (f->src[j] != NULL)
            source_stop(f, j);
    fti_heal_destroy(f->dst);
    free(f->w);
    free(f->m);
    free(f->w_dst);
    free(f->m_dst);
    free(f);
    return 0;
}

/* Stages from the n first sources and installs on success. */
static int heal(struct fixture *f, int n, fti_heal_stats_t *st)
{
    fti_heal_staged_h staged = NULL;
    int rc = fti_heal_stage_multi(f->dst, f->managers, n, 0, STEP, &f->opts, fti_now_ms() + 10000,
                                  &staged, st);
    if (rc == FT_SUCCESS)
        assert_true(fti_heal_install(f->dst, staged) >= 0);
    return rc;
}

static void assert_healed(const struct fixture *f)
{
    assert_memory_equal(f->w_dst, f->w, W_BYTES);
    assert_memory_equal(f->m_dst, f->m, M_BYTES);
}

static void assert_untouched(const struct fixture *f)
{
    for (size_t i = 0; i < W_BYTES; i++)
        if (f->w_dst[i] != 0)
            fail_msg("byte %zu of the healer's 'w' changed by a failed heal", i);
    for (size_t i = 0; i < M_BYTES; i++)
        assert_int_equal(f->m_dst[i], 0);
}

static void test_three_sources(void **state)
{
    struct fixture *f = *state;
    for (int j = 0; j < N_SRC; j++)
        source_start(f, j, NULL);
    fti_heal_stats_t st;
    assert_int_equal(heal(f, N_SRC, &st), FT_SUCCESS);
    assert_healed(f);
    assert_int_equal(st.bytes, W_BYTES + M_BYTES);
    print_message("three sources: %d delivered bytes, %" PRIu64 " bytes in %" PRId64 " ms\n",
                  st.sources, st.bytes, st.ms);
    assert_true(st.sources >= 2);
    /* st.source is the first source, in the given order, that delivered
     * bytes (a loaded machine may leave source 0 none: the others took
     * every range while it connected) */
    int k = 0;
    while (k < N_SRC && strcmp(st.source, fti_rank_server_address(f->srv[k])) != 0)
        k++;
    assert_true(k < N_SRC);
    assert_true(k <= N_SRC - st.sources);
    /* every source sent its checksums: each counts one complete copy */
    for (int j = 0; j < N_SRC; j++)
        assert_int_equal(fti_heal_wait_served(f->src[j], 1, fti_now_ms() + 1000), FT_SUCCESS);
}

static void test_source_gone_or_other_step(void **state)
{
    struct fixture *f = *state;
    for (int j = 0; j < N_SRC; j++)
        source_start(f, j, NULL);
    source_stop(f, 0); /* the primary: nobody listens at its address any more */
    fti_heal_set_step(f->src[2], STEP + 1, true);
    fti_heal_stats_t st;
    assert_int_equal(heal(f, N_SRC, &st), FT_SUCCESS);
    assert_healed(f);
    assert_int_equal(st.sources, 1); /* source 1 alone */
}

static void test_all_sources_gone(void **state)
{
    struct fixture *f = *state;
    for (int j = 0; j < N_SRC; j++)
        source_start(f, j, NULL);
    for (int j = 0; j < N_SRC; j++)
        fti_heal_set_step(f->src[j], STEP, false); /* closed: every request refused */
    fti_heal_stats_t st;
    assert_int_equal(heal(f, N_SRC, &st), FT_ERR_PROC_FAILED);
    assert_untouched(f);
}

/* A byte inside the second piece of "w", in the middle of a range. */
#define BAD_AT "w:9000000"

/* Two of three sources flip the first byte of every range of "w" they
 * serve: whatever they served is fetched again from the third (small
 * ranges, so that all three take some). */
static void test_two_sources_corrupt(void **state)
{
    struct fixture *f = *state;
    source_start(f, 0, "w:*");
    source_start(f, 1, NULL);
    source_start(f, 2, "w:*");
    f->opts.chunk_bytes = 64u << 10;
    fti_heal_stats_t st;
    assert_int_equal(heal(f, N_SRC, &st), FT_SUCCESS);
    assert_healed(f);
    print_message("two corrupt sources: %d pieces fetched again\n", st.refetched);
    assert_true(st.refetched >= 1);
}

/* One source flips one byte: healed right whoever served that range. */
static void test_one_source_corrupt(void **state)
{
    struct fixture *f = *state;
    source_start(f, 0, NULL);
    source_start(f, 1, BAD_AT);
    source_start(f, 2, NULL);
    fti_heal_stats_t st;
    assert_int_equal(heal(f, N_SRC, &st), FT_SUCCESS);
    assert_healed(f);
}

static void test_only_source_corrupt(void **state)
{
    struct fixture *f = *state;
    source_start(f, 0, BAD_AT);
    fti_heal_stats_t st;
    assert_int_equal(heal(f, 1, &st), FT_ERR_CHECKSUM);
    assert_untouched(f);
}

static void test_every_source_corrupt(void **state)
{
    struct fixture *f = *state;
    for (int j = 0; j < N_SRC; j++)
        source_start(f, j, BAD_AT);
    fti_heal_stats_t st;
    assert_int_equal(heal(f, N_SRC, &st), FT_ERR_CHECKSUM);
    assert_untouched(f);
}

static void test_bad_arguments(void **state)
{
    struct fixture *f = *state;
    fti_heal_staged_h staged = NULL;
    assert_int_equal(fti_heal_stage_multi(f->dst, f->managers, 0, 0, STEP, &f->opts,
                                          fti_now_ms() + 1000, &staged, NULL),
                     FT_ERR_ARG);
    assert_null(staged);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_three_sources, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source_gone_or_other_step, setup, teardown),
        cmocka_unit_test_setup_teardown(test_all_sources_gone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_one_source_corrupt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_sources_corrupt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_only_source_corrupt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_source_corrupt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_arguments, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
