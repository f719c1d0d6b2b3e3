/*
 * test_heal_stripe_verify.c - a striped heal (fti_heal_stage_multi) whose
 * sources do not all tell the truth, over real sockets in one process
 * (issue 23 item 1).  Honest sources are real registries behind real rank
 * servers; a liar is an RPC server on 127.0.0.1 of this test that answers
 * as a heal source does (manager address, metadata, bytes, checksums) but
 * with checksums that are wrong in one way each:
 *   - MISSING: its checksum reply lacks buffer "m" (crashed the healer:
 *     issue 23, finding 1); the healer drops it and heals from the others;
 *   - PIECES: its piece sums are fewer than the pieces; dropped the same way;
 *   - ALT: it serves another state, bytes and checksums consistent with
 *     each other: with two honest sources it is outvoted and dropped; with
 *     one honest source nobody decides and the heal fails with
 *     FT_ERR_CHECKSUM, the healer's memory untouched, whichever is listed
 *     first (never "the first listed wins").
 */
#include <event2/event.h>
#include <event2/thread.h>
#include <inttypes.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ftmpi.h"
#include "heal/heal.h"
#include "control/message.h"
#include "control/proto/ftmpi.pb-c.h"
#include "control/rank_server.h"
#include "base/rpc.h"
#include "base/sizes.h"
#include "base/util.h"

#define N_MAX 3
#define W_BYTES (FTI_HEAL_SUM_BYTES + 4321) /* two pieces */
#define M_BYTES 777
#define STEP 9

enum lie { HONEST, MISSING, PIECES, ALT };

struct liar {
    enum lie lie;
    fti_rpc_server_h srv;
    char addr[FTI_ADDRESS_SIZE];
    const unsigned char *w, *m; /* what it serves */
    uint64_t w_sums[2], m_sum;
};

struct fixture {
    unsigned char *w, *m, *w_alt; /* the honest state, the liar's "w" */
    unsigned char *w_dst, *m_dst;
    fti_heal_h src[N_MAX], dst;
    fti_rank_server_h srv[N_MAX];
    struct liar liar[N_MAX];
    const char *managers[N_MAX];
    struct event_base *base;
    pthread_t loop;
    fti_heal_opts_t opts;
};

static void *loop_main(void *arg)
{
    event_base_loop(arg, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

static void liar_buffers(const struct liar *l, bool sums, Ftmpi__HealBuffer *hb,
                         Ftmpi__HealBuffer **phb, size_t *n)
{
    hb[0] = (Ftmpi__HealBuffer)FTMPI__HEAL_BUFFER__INIT;
    hb[1] = (Ftmpi__HealBuffer)FTMPI__HEAL_BUFFER__INIT;
    hb[0].name = "w";
    hb[0].length = W_BYTES;
    hb[1].name = "m";
    hb[1].length = M_BYTES;
    if (sums) {
        hb[0].checksum = l->w_sums[1];
        hb[0].n_piece_sums = l->lie == PIECES ? 1 : 2;
        hb[0].piece_sums = (uint64_t *)l->w_sums;
        hb[1].checksum = l->m_sum;
        hb[1].n_piece_sums = 1;
        hb[1].piece_sums = (uint64_t *)&l->m_sum;
    }
    phb[0] = &hb[0];
    phb[1] = &hb[1];
    *n = sums && l->lie == MISSING ? 1 : 2;
}

static void liar_answer(fti_rpc_call_h call, const uint8_t *p, size_t len, void *arg)
{
    struct liar *l = arg;
    Ftmpi__HealBuffer hb[2], *phb[2];
    Ftmpi__HealMetadataResponse md = FTMPI__HEAL_METADATA_RESPONSE__INIT;
    md.step = STEP;
    md.buffers = phb;
    switch (fti_rpc_call_method(call)) {
    case FTMPI__METHOD__MANAGER_CHECKPOINT_METADATA: {
        Ftmpi__CheckpointMetadataResponse r = FTMPI__CHECKPOINT_METADATA_RESPONSE__INIT;
        r.heal_address = l->addr;
        fti_rpc_reply_msg(call, &r.base);
        return;
    }
    case FTMPI__METHOD__HEAL_METADATA:
        liar_buffers(l, false, hb, phb, &md.n_buffers);
        md.sums_deferred = true;
        fti_rpc_reply_msg(call, &md.base);
        return;
    default:
        break;
    }
    Ftmpi__HealFetchRequest *req = ftmpi__heal_fetch_request__unpack(NULL, len, p);
    if (req == NULL) {
        fti_rpc_reply_error(call, FT_ERR_BAD_MESSAGE, "does not decode");
        return;
    }
    if (req->sums) {
        liar_buffers(l, true, hb, phb, &md.n_buffers);
        fti_rpc_reply_msg(call, &md.base);
    } else {
        bool w = strcmp(req->name, "w") == 0;
        size_t blen = w ? W_BYTES : M_BYTES;
        if (req->offset > blen || req->length > blen - req->offset)
            fti_rpc_reply_error(call, FT_ERR_ARG, "out of range");
        else
            fti_rpc_reply(call, (w ? l->w : l->m) + req->offset, req->length);
    }
    ftmpi__heal_fetch_request__free_unpacked(req, NULL);
}

static const uint16_t liar_methods[] = {FTMPI__METHOD__MANAGER_CHECKPOINT_METADATA,
                                        FTMPI__METHOD__HEAL_METADATA, FTMPI__METHOD__HEAL_FETCH};

static void liar_start(struct fixture *f, int j, enum lie lie)
{
    struct liar *l = &f->liar[j];
    l->lie = lie;
    l->w = lie == ALT ? f->w_alt : f->w;
    l->m = f->m;
    l->w_sums[0] = fti_heal_sum(l->w, FTI_HEAL_SUM_BYTES, 0);
    l->w_sums[1] = fti_heal_sum(l->w + FTI_HEAL_SUM_BYTES, W_BYTES - FTI_HEAL_SUM_BYTES,
                                l->w_sums[0]);
    l->m_sum = fti_heal_sum(l->m, M_BYTES, 0);
    fti_rpc_method_t m[3];
    for (int k = 0; k < 3; k++)
        m[k] = (fti_rpc_method_t){liar_methods[k], liar_answer};
    assert_int_equal(fti_rpc_server_create(f->base, "127.0.0.1:0", 1 << 20, NULL, m, 3, l, &l->srv),
                     FT_SUCCESS);
    fti_strlcpy(l->addr, fti_rpc_server_address(l->srv), sizeof(l->addr));
    f->managers[j] = l->addr;
}

static void honest_start(struct fixture *f, int j)
{
    assert_int_equal(fti_heal_create(&f->src[j]), FT_SUCCESS);
    assert_int_equal(fti_heal_register(f->src[j], "w", f->w, W_BYTES), FT_SUCCESS);
    assert_int_equal(fti_heal_register(f->src[j], "m", f->m, M_BYTES), FT_SUCCESS);
    assert_int_equal(fti_rank_server_start("127.0.0.1", 1 << 20, NULL, true, fti_heal_rpc,
                                           f->src[j], &f->srv[j]),
                     FT_SUCCESS);
    const char *peers[] = {fti_rank_server_address(f->srv[j])};
    assert_int_equal(fti_rank_server_set_peers(f->srv[j], peers, 1), FT_SUCCESS);
    f->managers[j] = fti_rank_server_address(f->srv[j]);
    fti_heal_set_step(f->src[j], STEP, true);
}

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    f->w = malloc(W_BYTES);
    f->w_alt = malloc(W_BYTES);
    f->m = malloc(M_BYTES);
    f->w_dst = calloc(1, W_BYTES);
    f->m_dst = calloc(1, M_BYTES);
    assert_true(f->w && f->w_alt && f->m && f->w_dst && f->m_dst);
    uint64_t x = 88172645463325252ULL;
    for (size_t i = 0; i < W_BYTES; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        f->w[i] = (unsigned char)x;
    }
    memcpy(f->w_alt, f->w, W_BYTES);
    f->w_alt[W_BYTES - 10] ^= 0x5a; /* in the second piece */
    for (size_t i = 0; i < M_BYTES; i++)
        f->m[i] = (unsigned char)(i * 7);
    assert_int_equal(evthread_use_pthreads(), 0);
    f->base = event_base_new();
    assert_non_null(f->base);
    assert_int_equal(pthread_create(&f->loop, NULL, loop_main, f->base), 0);
    assert_int_equal(fti_heal_create(&f->dst), FT_SUCCESS);
    assert_int_equal(fti_heal_register(f->dst, "m", f->m_dst, M_BYTES), FT_SUCCESS);
    assert_int_equal(fti_heal_register(f->dst, "w", f->w_dst, W_BYTES), FT_SUCCESS);
    fti_heal_set_step(f->dst, 2, true);
    f->opts.connect_timeout_ms = 5000;
    f->opts.max_reply = 1 << 20;
    f->opts.chunk_bytes = 256u << 10; /* ~33 ranges: every source takes some */
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    for (int j = 0; j < N_MAX; j++) {
        if (f->srv[j] != NULL)
            fti_rank_server_stop(f->srv[j]);
        if (f->src[j] != NULL)
            fti_heal_destroy(f->src[j]);
    }
    event_base_loopbreak(f->base);
    pthread_join(f->loop, NULL);
    for (int j = 0; j < N_MAX; j++)
        if (f->liar[j].srv != NULL)
            fti_rpc_server_destroy(f->liar[j].srv);
    event_base_free(f->base);
    fti_heal_destroy(f->dst);
    free(f->w);
    free(f->w_alt);
    free(f->m);
    free(f->w_dst);
    free(f->m_dst);
    free(f);
    return 0;
}

static int heal(struct fixture *f, int n, fti_heal_stats_t *st)
{
    fti_heal_staged_h staged = NULL;
    int rc = fti_heal_stage_multi(f->dst, f->managers, n, 0, STEP, &f->opts, fti_now_ms() + 60000,
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

/* honest, liar, honest: healed from the honest two */
static void liar_second(void **state, enum lie lie)
{
    struct fixture *f = *state;
    honest_start(f, 0);
    liar_start(f, 1, lie);
    honest_start(f, 2);
    fti_heal_stats_t st;
    assert_int_equal(heal(f, 3, &st), FT_SUCCESS);
    assert_healed(f);
}

static void test_sums_missing_buffer(void **state)
{
    liar_second(state, MISSING);
}

static void test_piece_sums_short(void **state)
{
    liar_second(state, PIECES);
}

static void test_alt_outvoted(void **state)
{
    liar_second(state, ALT);
}

/* the liar listed first, then also last: outvoted either way */
static void test_alt_first_outvoted(void **state)
{
    struct fixture *f = *state;
    liar_start(f, 0, ALT);
    honest_start(f, 1);
    honest_start(f, 2);
    fti_heal_stats_t st;
    assert_int_equal(heal(f, 3, &st), FT_SUCCESS);
    assert_healed(f);
}

/* two sources that disagree, nobody to decide: the heal fails, whichever
 * is listed first */
static void test_two_disagree_liar_first(void **state)
{
    struct fixture *f = *state;
    liar_start(f, 0, ALT);
    honest_start(f, 1);
    fti_heal_stats_t st;
    assert_int_equal(heal(f, 2, &st), FT_ERR_CHECKSUM);
    assert_untouched(f);
}

static void test_two_disagree_honest_first(void **state)
{
    struct fixture *f = *state;
    honest_start(f, 0);
    liar_start(f, 1, ALT);
    fti_heal_stats_t st;
    assert_int_equal(heal(f, 2, &st), FT_ERR_CHECKSUM);
    assert_untouched(f);
}

/* every source unusable but for checksums that lack a buffer: fails, untouched */
static void test_only_liars(void **state)
{
    struct fixture *f = *state;
    liar_start(f, 0, MISSING);
    liar_start(f, 1, PIECES);
    fti_heal_stats_t st;
    assert_int_not_equal(heal(f, 2, &st), FT_SUCCESS);
    assert_untouched(f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_sums_missing_buffer, setup, teardown),
        cmocka_unit_test_setup_teardown(test_piece_sums_short, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alt_outvoted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_alt_first_outvoted, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_disagree_liar_first, setup, teardown),
        cmocka_unit_test_setup_teardown(test_two_disagree_honest_first, setup, teardown),
        cmocka_unit_test_setup_teardown(test_only_liars, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
