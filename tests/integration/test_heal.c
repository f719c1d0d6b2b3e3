/*
 * test_heal.c - healing over real sockets in one process (src/heal.c,
 * src/rank_server.c): a "source" rank server (a manager, so it also
 * answers CHECKPOINT_METADATA) serves registered buffers; a second
 * registry fetches them.  Covers chunked fetches, the step and open
 * checks, registrations that differ, a stale checksum (also in a buffer of
 * several checksum pieces), the count of
 * complete copies a source waits for, the manager's kill flag and a source
 * that is gone.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ftmpi.h"
#include "heal.h"
#include "proto/ftmpi.pb-c.h"
#include "rank_server.h"
#include "rpc.h"
#include "util.h"

#define N_A 100000 /* doubles */
#define N_B 777    /* bytes */

struct fixture {
    fti_heal_h src, dst;
    fti_rank_server_h srv;
    double a_src[N_A], a_dst[N_A];
    unsigned char b_src[N_B], b_dst[N_B];
    fti_heal_opts_t opts;
};

static int setup(void **state)
{
    struct fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    for (int i = 0; i < N_A; i++)
        f->a_src[i] = i * 0.5;
    for (int i = 0; i < N_B; i++)
        f->b_src[i] = (unsigned char)(i * 7);
    assert_int_equal(fti_heal_create(&f->src), FT_SUCCESS);
    assert_int_equal(fti_heal_create(&f->dst), FT_SUCCESS);
    assert_int_equal(fti_heal_register(f->src, "a", f->a_src, sizeof(f->a_src)), FT_SUCCESS);
    assert_int_equal(fti_heal_register(f->src, "b", f->b_src, sizeof(f->b_src)), FT_SUCCESS);
    /* registered in the other order at the destination: matched by name */
    assert_int_equal(fti_heal_register(f->dst, "b", f->b_dst, sizeof(f->b_dst)), FT_SUCCESS);
    assert_int_equal(fti_heal_register(f->dst, "a", f->a_dst, sizeof(f->a_dst)), FT_SUCCESS);
    assert_int_equal(fti_rank_server_start("127.0.0.1", 1 << 20, true, f->src, &f->srv),
                     FT_SUCCESS);
    const char *peers[] = {fti_rank_server_address(f->srv)};
    assert_int_equal(fti_rank_server_set_peers(f->srv, peers, 1), FT_SUCCESS);
    f->opts.connect_timeout_ms = 1000;
    f->opts.max_reply = 1 << 20;
    f->opts.chunk_bytes = 4096 * 3 + 8; /* many chunks, not a multiple of the sizes */
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    fti_rank_server_stop(f->srv);
    fti_heal_destroy(f->src);
    fti_heal_destroy(f->dst);
    free(f);
    return 0;
}

static int fetch(struct fixture *f, int64_t step, fti_heal_stats_t *st)
{
    return fti_heal_fetch(f->dst, fti_rank_server_address(f->srv), 0, step, &f->opts,
                          fti_now_ms() + 5000, st);
}

static void test_register(void **state)
{
    struct fixture *f = *state;
    char x;
    assert_int_equal(fti_heal_register(f->dst, "a", &x, 1), FT_ERR_EXISTS);
    assert_int_equal(fti_heal_register(f->dst, "", &x, 1), FT_ERR_ARG);
    assert_int_equal(fti_heal_register(f->dst, "n", NULL, 1), FT_ERR_ARG);
    size_t n;
    uint64_t bytes;
    fti_heal_totals(f->dst, &n, &bytes);
    assert_int_equal(n, 2);
    assert_int_equal(bytes, sizeof(f->a_dst) + N_B);
}

static void test_heal_ok(void **state)
{
    struct fixture *f = *state;
    fti_heal_stats_t st;
    fti_heal_set_step(f->src, 42, true);
    assert_int_equal(fetch(f, 42, &st), FT_SUCCESS);
    assert_memory_equal(f->a_dst, f->a_src, sizeof(f->a_src));
    assert_memory_equal(f->b_dst, f->b_src, sizeof(f->b_src));
    assert_int_equal(st.bytes, sizeof(f->a_src) + N_B);
    assert_string_equal(st.source, fti_rank_server_address(f->srv));
}

static void test_wait_served(void **state)
{
    struct fixture *f = *state;
    fti_heal_stats_t st;
    fti_heal_set_step(f->src, 9, true);
    assert_int_equal(fti_heal_wait_served(f->src, 1, fti_now_ms() + 50), FT_ERR_TIMEOUT);
    assert_int_equal(fetch(f, 9, &st), FT_SUCCESS);
    assert_int_equal(fti_heal_wait_served(f->src, 1, fti_now_ms() + 2000), FT_SUCCESS);
    assert_int_equal(fti_heal_wait_served(f->src, 2, fti_now_ms() + 50), FT_ERR_TIMEOUT);
    assert_int_equal(fetch(f, 9, &st), FT_SUCCESS);
    assert_int_equal(fti_heal_wait_served(f->src, 2, fti_now_ms() + 2000), FT_SUCCESS);
    fti_heal_set_step(f->src, 9, true); /* a new generation counts from 0 */
    assert_int_equal(fti_heal_wait_served(f->src, 1, fti_now_ms() + 50), FT_ERR_TIMEOUT);
    assert_int_equal(fti_heal_wait_served(f->src, 0, fti_now_ms()), FT_SUCCESS);
}

static void test_wait_served_nothing_registered(void **state)
{
    struct fixture *f = *state;
    fti_heal_h empty_src, empty_dst;
    fti_rank_server_h srv;
    fti_heal_stats_t st;
    assert_int_equal(fti_heal_create(&empty_src), FT_SUCCESS);
    assert_int_equal(fti_heal_create(&empty_dst), FT_SUCCESS);
    assert_int_equal(fti_rank_server_start("127.0.0.1", 1 << 20, true, empty_src, &srv),
                     FT_SUCCESS);
    const char *peers[] = {fti_rank_server_address(srv)};
    assert_int_equal(fti_rank_server_set_peers(srv, peers, 1), FT_SUCCESS);
    fti_heal_set_step(empty_src, 1, true);
    assert_int_equal(fti_heal_fetch(empty_dst, peers[0], 0, 1, &f->opts, fti_now_ms() + 5000,
                                    &st),
                     FT_SUCCESS);
    assert_int_equal(st.bytes, 0);
    assert_int_equal(fti_heal_wait_served(empty_src, 1, fti_now_ms() + 2000), FT_SUCCESS);
    fti_rank_server_stop(srv);
    fti_heal_destroy(empty_src);
    fti_heal_destroy(empty_dst);
}

static void test_wrong_step_or_closed(void **state)
{
    struct fixture *f = *state;
    fti_heal_stats_t st;
    fti_heal_set_step(f->src, 42, true);
    assert_int_equal(fetch(f, 41, &st), FT_ERR_PROC_FAILED);
    assert_int_equal(st.bytes, 0);
    fti_heal_set_step(f->src, 42, false); /* committed: nothing served */
    assert_int_equal(fetch(f, 42, &st), FT_ERR_PROC_FAILED);
}

static void test_stale_checksum(void **state)
{
    struct fixture *f = *state;
    fti_heal_stats_t st;
    fti_heal_set_step(f->src, 5, true);
    assert_int_equal(fetch(f, 5, &st), FT_SUCCESS); /* caches the checksums */
    f->a_src[1234] += 1.0; /* changed behind the library's back */
    assert_int_equal(fetch(f, 5, &st), FT_ERR_CHECKSUM);
    fti_heal_set_step(f->src, 5, true); /* drops the cache */
    assert_int_equal(fetch(f, 5, &st), FT_SUCCESS);
    assert_memory_equal(f->a_dst, f->a_src, sizeof(f->a_src));
}

/* A buffer of several checksum pieces (FTI_HEAL_SUM_BYTES): verified on
 * the healer's helper thread while later chunks stream; a change in the
 * first or the last piece is caught. */
static void test_big_buffer(void **state)
{
    (void)state;
    size_t len = 2 * FTI_HEAL_SUM_BYTES + 4099;
    unsigned char *src = malloc(len), *dst = calloc(1, len);
    assert_non_null(src);
    assert_non_null(dst);
    for (size_t i = 0; i < len; i++)
        src[i] = (unsigned char)(i * 131 + (i >> 12));
    fti_heal_h hs, hd;
    fti_rank_server_h srv;
    assert_int_equal(fti_heal_create(&hs), FT_SUCCESS);
    assert_int_equal(fti_heal_create(&hd), FT_SUCCESS);
    assert_int_equal(fti_heal_register(hs, "big", src, len), FT_SUCCESS);
    assert_int_equal(fti_heal_register(hd, "big", dst, len), FT_SUCCESS);
    assert_int_equal(fti_rank_server_start("127.0.0.1", 1 << 20, true, hs, &srv), FT_SUCCESS);
    const char *peers[] = {fti_rank_server_address(srv)};
    assert_int_equal(fti_rank_server_set_peers(srv, peers, 1), FT_SUCCESS);
    fti_heal_opts_t o = {1000, 1 << 20, (3u << 20) + 5}; /* chunks across the pieces */
    fti_heal_stats_t st;
    const size_t spots[] = {0, len - 1, FTI_HEAL_SUM_BYTES};
    for (size_t k = 0; k < FTI_ARRAY_SIZE(spots); k++) {
        fti_heal_set_step(hs, 3, true);
        memset(dst, 0, len);
        assert_int_equal(fti_heal_fetch(hd, fti_rank_server_address(srv), 0, 3, &o,
                                        fti_now_ms() + 10000, &st),
                         FT_SUCCESS);
        assert_int_equal(st.bytes, len);
        assert_memory_equal(dst, src, len);
        src[spots[k]] ^= 0x04; /* behind the cached checksum's back */
        assert_int_equal(fti_heal_fetch(hd, fti_rank_server_address(srv), 0, 3, &o,
                                        fti_now_ms() + 10000, &st),
                         FT_ERR_CHECKSUM);
    }
    fti_rank_server_stop(srv);
    fti_heal_destroy(hs);
    fti_heal_destroy(hd);
    free(src);
    free(dst);
}

static void test_mismatch(void **state)
{
    struct fixture *f = *state;
    fti_heal_h other;
    char small[8];
    fti_heal_stats_t st;
    assert_int_equal(fti_heal_create(&other), FT_SUCCESS);
    assert_int_equal(fti_heal_register(other, "a", small, sizeof(small)), FT_SUCCESS);
    assert_int_equal(fti_heal_register(other, "b", small, sizeof(small)), FT_SUCCESS);
    fti_heal_set_step(f->src, 3, true);
    assert_int_equal(fti_heal_fetch(other, fti_rank_server_address(f->srv), 0, 3, &f->opts,
                                    fti_now_ms() + 5000, &st),
                     FT_ERR_ARG);
    fti_heal_destroy(other);
}

static void test_no_such_group_rank(void **state)
{
    struct fixture *f = *state;
    fti_heal_stats_t st;
    fti_heal_set_step(f->src, 3, true);
    assert_int_equal(fti_heal_fetch(f->dst, fti_rank_server_address(f->srv), 1, 3, &f->opts,
                                    fti_now_ms() + 5000, &st),
                     FT_ERR_PROC_FAILED);
}

static void test_kill(void **state)
{
    struct fixture *f = *state;
    fti_rpc_client_h c;
    char msg[64] = "";
    assert_false(fti_rank_server_killed(f->srv, msg, sizeof(msg)));
    assert_int_equal(fti_rpc_client_create(fti_rank_server_address(f->srv), 1000, 4096, &c),
                     FT_SUCCESS);
    Ftmpi__KillRequest req = FTMPI__KILL_REQUEST__INIT;
    ProtobufCMessage *resp = NULL;
    req.msg = "stop now";
    assert_int_equal(fti_rpc_call_msg(c, FTMPI__METHOD__MANAGER_KILL, &req.base,
                                      &ftmpi__kill_response__descriptor, 2000, &resp),
                     FT_SUCCESS);
    protobuf_c_message_free_unpacked(resp, NULL);
    fti_rpc_client_destroy(c);
    assert_true(fti_rank_server_killed(f->srv, msg, sizeof(msg)));
    assert_string_equal(msg, "stop now");
}

static void test_source_gone(void **state)
{
    struct fixture *f = *state;
    fti_heal_stats_t st;
    char addr[128];
    fti_strlcpy(addr, fti_rank_server_address(f->srv), sizeof(addr));
    fti_rank_server_stop(f->srv);
    f->srv = NULL;
    assert_int_equal(fti_heal_fetch(f->dst, addr, 0, 3, &f->opts, fti_now_ms() + 2000, &st),
                     FT_ERR_PROC_FAILED);
    /* restart for teardown */
    assert_int_equal(fti_rank_server_start("127.0.0.1", 1 << 20, true, f->src, &f->srv),
                     FT_SUCCESS);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_register, setup, teardown),
        cmocka_unit_test_setup_teardown(test_heal_ok, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_served, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wait_served_nothing_registered, setup, teardown),
        cmocka_unit_test_setup_teardown(test_wrong_step_or_closed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_checksum, setup, teardown),
        cmocka_unit_test(test_big_buffer),
        cmocka_unit_test_setup_teardown(test_mismatch, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_such_group_rank, setup, teardown),
        cmocka_unit_test_setup_teardown(test_kill, setup, teardown),
        cmocka_unit_test_setup_teardown(test_source_gone, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
