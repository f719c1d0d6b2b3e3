/*
 * test_store.c - the rendezvous store (src/store.c) served by a real RPC
 * server on 127.0.0.1 in a libevent thread, used by real blocking clients
 * from several threads; the slice rendezvous's key cleanup
 * (src/comm/slice.c) after failed builds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <event2/event.h>
#include <event2/thread.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftmpi_errors.h"
#include "base/net.h"
#include "control/proto/ftmpi.pb-c.h"
#include "base/rpc.h"
#include "comm/slice.h"
#include "control/store.h"
#include "base/util.h"

#define CALL_MS 5000

typedef struct fixture {
    struct event_base *base;
    fti_store_server_h store;
    fti_rpc_server_h rpc;
    pthread_t loop;
    int running;
    char addr[128];
} fixture_t;

static void *loop_main(void *arg)
{
    fixture_t *f = arg;
    event_base_loop(f->base, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

static int fixture_start(void **state, size_t max_keys)
{
    fixture_t *f = calloc(1, sizeof(*f));
    fti_rpc_method_t methods[8];
    if (f == NULL)
        return -1;
    f->base = event_base_new();
    if (f->base == NULL || fti_store_server_create(f->base, &f->store) != FT_SUCCESS)
        return -1;
    if (max_keys > 0)
        fti_store_server_limit_keys(f->store, max_keys);
    size_t n = fti_store_server_methods(methods, FTI_ARRAY_SIZE(methods));
    if (n != 4 || fti_store_server_methods(methods, 3) != 0)
        return -1;
    if (fti_rpc_server_create(f->base, "127.0.0.1:0", FTI_STORE_MAX_FRAME, NULL, methods, n,
                              f->store, &f->rpc) != FT_SUCCESS)
        return -1;
    fti_strlcpy(f->addr, fti_rpc_server_address(f->rpc), sizeof(f->addr));
    if (pthread_create(&f->loop, NULL, loop_main, f) != 0)
        return -1;
    f->running = 1;
    *state = f;
    return 0;
}

/* Stops the loop and frees the servers (the store first, so waiting gets
 * are answered, then the RPC server, which closes the connections). */
static void fixture_stop(fixture_t *f)
{
    if (!f->running)
        return;
    event_base_loopbreak(f->base);
    pthread_join(f->loop, NULL);
    fti_store_server_destroy(f->store);
    fti_rpc_server_destroy(f->rpc);
    event_base_free(f->base);
    f->running = 0;
}

static int setup(void **state)
{
    return fixture_start(state, 0);
}

static int setup_small(void **state)
{
    return fixture_start(state, 3);
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    fixture_stop(f);
    free(f);
    return 0;
}

static fti_rpc_client_h client_new(const fixture_t *f)
{
    fti_rpc_client_h c = NULL;
    assert_int_equal(fti_rpc_client_create(f->addr, NULL, 2000, FTI_STORE_MAX_FRAME, &c),
                     FT_SUCCESS);
    return c;
}

static void assert_value(fti_rpc_client_h c, const char *key, const char *want)
{
    void *v = NULL;
    size_t len = 0;
    assert_int_equal(fti_store_get(c, key, 0, &v, &len), FT_SUCCESS);
    assert_int_equal(len, strlen(want));
    assert_string_equal((char *)v, want); /* the copy is NUL-terminated */
    free(v);
}

static fti_store_stats_t stats_of(const fixture_t *f)
{
    fti_store_stats_t st;
    fti_store_server_stats(f->store, &st);
    return st;
}

/* ---- set / get ---------------------------------------------------------- */

static void test_set_get(void **state)
{
    fixture_t *f = *state;
    fti_rpc_client_h c = client_new(f);
    void *v = (void *)0x1;
    size_t len = 77;

    assert_int_equal(fti_store_get(c, "/ftmpi/1/0/addr", 0, &v, &len), FT_ERR_NOT_FOUND);
    assert_ptr_equal(v, (void *)0x1); /* outputs untouched on failure */
    assert_int_equal(len, 77);

    assert_int_equal(fti_store_set(c, "/ftmpi/1/0/addr", "127.0.0.1:4000", 14, CALL_MS),
                     FT_SUCCESS);
    assert_value(c, "/ftmpi/1/0/addr", "127.0.0.1:4000");
    assert_int_equal(fti_store_set(c, "/ftmpi/1/0/addr", "10.0.0.1:5", 10, CALL_MS), FT_SUCCESS);
    assert_value(c, "/ftmpi/1/0/addr", "10.0.0.1:5");

    /* empty and binary values */
    assert_int_equal(fti_store_set(c, "empty", NULL, 0, CALL_MS), FT_SUCCESS);
    assert_value(c, "empty", "");
    uint8_t bin[5] = {0, 1, 0, 255, 7};
    assert_int_equal(fti_store_set(c, "bin", bin, sizeof(bin), CALL_MS), FT_SUCCESS);
    assert_int_equal(fti_store_get(c, "bin", 0, &v, &len), FT_SUCCESS);
    assert_int_equal(len, sizeof(bin));
    assert_memory_equal(v, bin, sizeof(bin));
    free(v);

    fti_store_stats_t st = stats_of(f);
    assert_int_equal(st.keys, 3);
    assert_int_equal(st.bytes, strlen("/ftmpi/1/0/addr") + 10 + 5 + 3 + 5);
    fti_rpc_client_destroy(c);
}

/* Values up to the cap round-trip; one byte more is refused and the server
 * keeps serving. */
static void test_value_cap(void **state)
{
    fixture_t *f = *state;
    fti_rpc_client_h c = client_new(f);
    size_t big = FTI_STORE_MAX_VALUE;
    uint8_t *buf = malloc(big + 1);
    void *v;
    size_t len;
    assert_non_null(buf);
    for (size_t i = 0; i <= big; i++)
        buf[i] = (uint8_t)(i * 31 + 7);

    assert_int_equal(fti_store_set(c, "big", buf, big, CALL_MS), FT_SUCCESS);
    assert_int_equal(fti_store_get(c, "big", 0, &v, &len), FT_SUCCESS);
    assert_int_equal(len, big);
    assert_memory_equal(v, buf, big);
    free(v);

    assert_int_equal(fti_store_set(c, "big2", buf, big + 1, CALL_MS), FT_ERR_ARG);
    assert_int_equal(fti_store_get(c, "big2", 0, &v, &len), FT_ERR_NOT_FOUND);
    assert_int_equal(fti_store_set(c, "small", "x", 1, CALL_MS), FT_SUCCESS);
    assert_value(c, "small", "x");
    assert_true(stats_of(f).refused >= 1);
    free(buf);
    fti_rpc_client_destroy(c);
}

/* ---- waiting gets -------------------------------------------------------- */

struct setter_arg {
    const fixture_t *f;
    int delay_ms;
    const char *key;
    const char *val;
    int use_add;
    int rc;
};

static void *setter_main(void *p)
{
    struct setter_arg *a = p;
    fti_rpc_client_h c = NULL;
    a->rc = fti_rpc_client_create(a->f->addr, NULL, 2000, FTI_STORE_MAX_FRAME, &c);
    if (a->rc != FT_SUCCESS)
        return NULL;
    fti_sleep_ms(a->delay_ms);
    if (a->use_add)
        a->rc = fti_store_add(c, a->key, 41, CALL_MS, NULL);
    else
        a->rc = fti_store_set(c, a->key, a->val, strlen(a->val), CALL_MS);
    fti_rpc_client_destroy(c);
    return NULL;
}

struct getter_arg {
    const fixture_t *f;
    const char *key;
    int wait_ms;
    int rc;
    char val[64];
    int64_t elapsed_ms;
};

static void *getter_main(void *p)
{
    struct getter_arg *a = p;
    fti_rpc_client_h c = NULL;
    void *v = NULL;
    size_t len = 0;
    int64_t t0 = fti_now_ms();
    a->rc = fti_rpc_client_create(a->f->addr, NULL, 2000, FTI_STORE_MAX_FRAME, &c);
    if (a->rc != FT_SUCCESS)
        return NULL;
    a->rc = fti_store_get(c, a->key, a->wait_ms, &v, &len);
    a->elapsed_ms = fti_now_ms() - t0;
    if (a->rc == FT_SUCCESS) {
        fti_strlcpy(a->val, v, sizeof(a->val));
        free(v);
    }
    fti_rpc_client_destroy(c);
    return NULL;
}

static void wait_for_waiters(const fixture_t *f, uint64_t n)
{
    int64_t deadline = fti_now_ms() + 3000;
    while (stats_of(f).waiters != n && fti_ms_left(deadline) > 0)
        fti_sleep_ms(5);
    assert_int_equal(stats_of(f).waiters, n);
}

/* Two gets wait for a key that another thread sets later; both get it. */
static void test_get_waits_for_set(void **state)
{
    fixture_t *f = *state;
    struct getter_arg g = {f, "/ftmpi/7/1/port", 5000, -1, "", 0};
    struct setter_arg s = {f, 300, "/ftmpi/7/1/port", "4242", 0, -1};
    pthread_t tg, ts;
    fti_rpc_client_h c = client_new(f);
    void *v = NULL;
    size_t len = 0;

    assert_int_equal(pthread_create(&tg, NULL, getter_main, &g), 0);
    assert_int_equal(pthread_create(&ts, NULL, setter_main, &s), 0);
    int64_t t0 = fti_now_ms();
    assert_int_equal(fti_store_get(c, "/ftmpi/7/1/port", 5000, &v, &len), FT_SUCCESS);
    int64_t elapsed = fti_now_ms() - t0;
    pthread_join(ts, NULL);
    pthread_join(tg, NULL);

    assert_int_equal(s.rc, FT_SUCCESS);
    assert_int_equal(len, 4);
    assert_string_equal((char *)v, "4242");
    assert_true(elapsed >= 250);
    assert_true(elapsed < 4000);
    assert_int_equal(g.rc, FT_SUCCESS);
    assert_string_equal(g.val, "4242");
    assert_true(g.elapsed_ms >= 250);
    assert_int_equal(stats_of(f).waiters, 0);
    free(v);
    fti_rpc_client_destroy(c);
}

/* An add that creates the key wakes the gets waiting for it. */
static void test_get_woken_by_add(void **state)
{
    fixture_t *f = *state;
    struct getter_arg g = {f, "counter", 5000, -1, "", 0};
    struct setter_arg s = {f, 0, "counter", NULL, 1, -1};
    pthread_t tg, ts;
    assert_int_equal(pthread_create(&tg, NULL, getter_main, &g), 0);
    wait_for_waiters(f, 1);
    assert_int_equal(pthread_create(&ts, NULL, setter_main, &s), 0);
    pthread_join(ts, NULL);
    pthread_join(tg, NULL);
    assert_int_equal(s.rc, FT_SUCCESS);
    assert_int_equal(g.rc, FT_SUCCESS);
    assert_string_equal(g.val, "41");
}

/* A get on a key nobody sets ends with FT_ERR_TIMEOUT when its time is
 * up (not before, and within a second after). */
static void test_get_times_out(void **state)
{
    fixture_t *f = *state;
    fti_rpc_client_h c = client_new(f);
    void *v = NULL;
    size_t len = 0;
    int64_t t0 = fti_now_ms();
    assert_int_equal(fti_store_get(c, "never", 600, &v, &len), FT_ERR_TIMEOUT);
    int64_t elapsed = fti_now_ms() - t0;
    assert_true(elapsed >= 590);
    assert_true(elapsed <= 600 + 1000);
    fti_store_stats_t st = stats_of(f);
    assert_int_equal(st.timeouts, 1);
    assert_int_equal(st.waiters, 0);
    assert_int_equal(st.keys, 0);
    /* the key still works afterwards, and the same client too */
    assert_int_equal(fti_store_set(c, "never", "now", 3, CALL_MS), FT_SUCCESS);
    assert_value(c, "never", "now");
    fti_rpc_client_destroy(c);
}

/* A waiting get whose client went away is dropped by the sweep. */
static void test_waiter_dropped_when_client_leaves(void **state)
{
    fixture_t *f = *state;
    Ftmpi__StoreGetRequest req = FTMPI__STORE_GET_REQUEST__INIT;
    uint8_t frame[FTI_RPC_HEADER_LEN + 64];
    int fd = -1;

    req.key = "gone";
    req.timeout_ms = 60000;
    size_t n = ftmpi__store_get_request__get_packed_size(&req);
    assert_true(n <= 64);
    ftmpi__store_get_request__pack(&req, frame + FTI_RPC_HEADER_LEN);
    fti_rpc_header_t h = {FTI_RPC_MAGIC, 0, FTMPI__METHOD__STORE_GET, 0, (uint32_t)n};
    fti_rpc_header_encode(&h, frame);
    assert_int_equal(fti_tcp_connect(f->addr, fti_now_ms() + 2000, &fd), FT_SUCCESS);
    assert_int_equal(fti_write_full(fd, frame, FTI_RPC_HEADER_LEN + n, fti_now_ms() + 2000),
                     FT_SUCCESS);
    wait_for_waiters(f, 1);
    close(fd);

    int64_t deadline = fti_now_ms() + 3000;
    while (stats_of(f).dropped == 0 && fti_ms_left(deadline) > 0)
        fti_sleep_ms(20);
    fti_store_stats_t st = stats_of(f);
    assert_int_equal(st.dropped, 1);
    assert_int_equal(st.waiters, 0);
    assert_int_equal(st.timeouts, 0);
}

/* Stopping the store answers a waiting get at once: the client does not
 * wait for its timeout. */
static void test_shutdown_ends_waiters(void **state)
{
    fixture_t *f = *state;
    struct getter_arg g = {f, "late", 30000, 0, "", 0};
    pthread_t tg;
    assert_int_equal(pthread_create(&tg, NULL, getter_main, &g), 0);
    wait_for_waiters(f, 1);
    fixture_stop(f);
    pthread_join(tg, NULL);
    assert_true(g.rc == FT_ERR_PROC_FAILED || g.rc == FT_ERR_CONNECT);
    assert_true(g.elapsed_ms < 5000);
}

/* ---- add ----------------------------------------------------------------- */

struct adder_arg {
    const fixture_t *f;
    int n;
    int rc;
    int64_t last;
};

static void *adder_main(void *p)
{
    struct adder_arg *a = p;
    fti_rpc_client_h c = NULL;
    a->rc = fti_rpc_client_create(a->f->addr, NULL, 2000, FTI_STORE_MAX_FRAME, &c);
    for (int i = 0; i < a->n && a->rc == FT_SUCCESS; i++)
        a->rc = fti_store_add(c, "/ftmpi/3/count", 1, CALL_MS, &a->last);
    fti_rpc_client_destroy(c);
    return NULL;
}

static void test_add_two_threads(void **state)
{
    fixture_t *f = *state;
    struct adder_arg a[2] = {{f, 1000, -1, 0}, {f, 1000, -1, 0}};
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        assert_int_equal(pthread_create(&t[i], NULL, adder_main, &a[i]), 0);
    for (int i = 0; i < 2; i++)
        pthread_join(t[i], NULL);
    assert_int_equal(a[0].rc, FT_SUCCESS);
    assert_int_equal(a[1].rc, FT_SUCCESS);
    assert_true(a[0].last == 2000 || a[1].last == 2000);

    fti_rpc_client_h c = client_new(f);
    int64_t v = 0;
    assert_value(c, "/ftmpi/3/count", "2000");
    assert_int_equal(fti_store_add(c, "/ftmpi/3/count", -2500, CALL_MS, &v), FT_SUCCESS);
    assert_int_equal(v, -500);
    assert_value(c, "/ftmpi/3/count", "-500");

    /* not a number, or an overflow: refused, value unchanged */
    assert_int_equal(fti_store_set(c, "text", "12a", 3, CALL_MS), FT_SUCCESS);
    assert_int_equal(fti_store_add(c, "text", 1, CALL_MS, &v), FT_ERR_ARG);
    assert_value(c, "text", "12a");
    assert_int_equal(fti_store_set(c, "huge", "9223372036854775807", 19, CALL_MS), FT_SUCCESS);
    assert_int_equal(fti_store_add(c, "huge", 1, CALL_MS, &v), FT_ERR_ARG);
    assert_value(c, "huge", "9223372036854775807");
    assert_int_equal(v, -500);
    fti_rpc_client_destroy(c);
}

/* ---- delete prefix --------------------------------------------------------- */

static void test_delete_prefix(void **state)
{
    fixture_t *f = *state;
    fti_rpc_client_h c = client_new(f);
    const char *keys[] = {"/ftmpi/1/0/addr", "/ftmpi/1/1/addr", "/ftmpi/10/0/addr",
                          "/ftmpi/2/0/addr"};
    int64_t deleted = -1;
    void *v;
    size_t len;
    for (size_t i = 0; i < FTI_ARRAY_SIZE(keys); i++)
        assert_int_equal(fti_store_set(c, keys[i], "a", 1, CALL_MS), FT_SUCCESS);

    assert_int_equal(fti_store_delete_prefix(c, "/ftmpi/1/", CALL_MS, &deleted), FT_SUCCESS);
    assert_int_equal(deleted, 2);
    assert_int_equal(fti_store_get(c, "/ftmpi/1/0/addr", 0, &v, &len), FT_ERR_NOT_FOUND);
    assert_int_equal(fti_store_get(c, "/ftmpi/1/1/addr", 0, &v, &len), FT_ERR_NOT_FOUND);
    assert_value(c, "/ftmpi/10/0/addr", "a");
    assert_value(c, "/ftmpi/2/0/addr", "a");
    assert_int_equal(stats_of(f).keys, 2);

    assert_int_equal(fti_store_delete_prefix(c, "/nothing", CALL_MS, &deleted), FT_SUCCESS);
    assert_int_equal(deleted, 0);
    assert_int_equal(fti_store_delete_prefix(c, "", CALL_MS, &deleted), FT_SUCCESS);
    assert_int_equal(deleted, 2);
    fti_store_stats_t st = stats_of(f);
    assert_int_equal(st.keys, 0);
    assert_int_equal(st.bytes, 0);
    fti_rpc_client_destroy(c);
}

/* ---- caps and bad requests ------------------------------------------------- */

static void test_oversized_key(void **state)
{
    fixture_t *f = *state;
    fti_rpc_client_h c = client_new(f);
    char key[FTI_STORE_MAX_KEY + 2];
    void *v;
    size_t len;

    memset(key, 'k', FTI_STORE_MAX_KEY + 1);
    key[FTI_STORE_MAX_KEY + 1] = '\0';
    assert_int_equal(fti_store_set(c, key, "v", 1, CALL_MS), FT_ERR_ARG);
    assert_int_equal(fti_store_get(c, key, 1000, &v, &len), FT_ERR_ARG);
    assert_int_equal(fti_store_add(c, key, 1, CALL_MS, NULL), FT_ERR_ARG);
    assert_int_equal(fti_store_delete_prefix(c, key, CALL_MS, NULL), FT_ERR_ARG);
    assert_int_equal(fti_store_set(c, "", "v", 1, CALL_MS), FT_ERR_ARG);

    /* exactly at the cap is fine, and the server still serves */
    key[FTI_STORE_MAX_KEY] = '\0';
    assert_int_equal(fti_store_set(c, key, "v", 1, CALL_MS), FT_SUCCESS);
    assert_value(c, key, "v");
    assert_int_equal(fti_store_set(c, "ok", "yes", 3, CALL_MS), FT_SUCCESS);
    assert_value(c, "ok", "yes");

    /* a payload that does not decode gets an error reply, then more work */
    uint8_t junk[3] = {0xff, 0xff, 0xff};
    void *reply = NULL;
    size_t rlen = 0;
    assert_int_equal(fti_rpc_call(c, FTMPI__METHOD__STORE_SET, junk, sizeof(junk), CALL_MS,
                                  &reply, &rlen),
                     FT_ERR_BAD_MESSAGE);
    assert_value(c, "ok", "yes");
    assert_true(stats_of(f).refused >= 6);
    fti_rpc_client_destroy(c);
}

/* The key cap (lowered to 3 here) refuses new keys but not overwrites. */
static void test_key_count_cap(void **state)
{
    fixture_t *f = *state;
    fti_rpc_client_h c = client_new(f);
    assert_int_equal(fti_store_set(c, "a", "1", 1, CALL_MS), FT_SUCCESS);
    assert_int_equal(fti_store_set(c, "b", "1", 1, CALL_MS), FT_SUCCESS);
    assert_int_equal(fti_store_set(c, "c", "1", 1, CALL_MS), FT_SUCCESS);
    assert_int_equal(fti_store_set(c, "d", "1", 1, CALL_MS), FT_ERR_ARG);
    assert_int_equal(fti_store_add(c, "e", 1, CALL_MS, NULL), FT_ERR_ARG);
    assert_int_equal(fti_store_set(c, "c", "2", 1, CALL_MS), FT_SUCCESS);
    assert_value(c, "c", "2");
    assert_int_equal(fti_store_delete_prefix(c, "a", CALL_MS, NULL), FT_SUCCESS);
    assert_int_equal(fti_store_set(c, "d", "1", 1, CALL_MS), FT_SUCCESS);
    assert_int_equal(stats_of(f).keys, 3);
    fti_rpc_client_destroy(c);
}

/* ---- slice rendezvous keys (issue 10, item 5) ------------------------------ */

/* A run of failed slice builds, each of a new quorum, with the manager's
 * cleanup after each: the store holds the keys of the current quorum only,
 * so its key cap (8 here) never stops a later build.  Each build of 3
 * publishes replica rank 0's key, finds a dead peer's key (rank 2) and
 * waits in vain for rank 1's. */
static void test_failed_builds_leave_no_keys(void **state)
{
    fixture_t *f = *state;
    fti_rpc_client_h c = client_new(f);
    char key[96];
    for (int64_t q = 1000; q < 1040; q++) {
        fti_slice_params_t p = {.quorum_id = q, .group_rank = 0, .replica_rank = 0, .size = 3,
                                .store_address = f->addr, .bind_host = "127.0.0.1",
                                .chunk_bytes = 1 << 16, .connect_timeout_ms = 1000};
        fti_comm_h comm = NULL;
        fti_slice_key(key, sizeof(key), q, 0, 2);
        assert_int_equal(fti_store_set(c, key, "127.0.0.1:1", 11, CALL_MS), FT_SUCCESS);
        assert_int_equal(fti_slice_create(&p, fti_now_ms() + 30, &comm), FT_ERR_TIMEOUT);
        assert_null(comm);
        assert_int_equal(fti_slice_forget_older(f->addr, NULL, q, 1000, CALL_MS), FT_SUCCESS);
        assert_int_equal(stats_of(f).keys, 2); /* quorum q's own two */
        assert_int_equal(fti_slice_noted(), 1);
    }
    /* the next quorum's build forgets the last failed one too */
    assert_int_equal(fti_slice_forget_older(f->addr, NULL, 2000, 1000, CALL_MS), FT_SUCCESS);
    assert_int_equal(stats_of(f).keys, 0);
    assert_int_equal(fti_slice_noted(), 0);
    fti_rpc_client_destroy(c);
}

static int setup_8_keys(void **state)
{
    return fixture_start(state, 8);
}

int main(void)
{
    if (evthread_use_pthreads() != 0) {
        fprintf(stderr, "libevent has no pthreads support\n");
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_set_get, setup, teardown),
        cmocka_unit_test_setup_teardown(test_value_cap, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_waits_for_set, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_woken_by_add, setup, teardown),
        cmocka_unit_test_setup_teardown(test_get_times_out, setup, teardown),
        cmocka_unit_test_setup_teardown(test_waiter_dropped_when_client_leaves, setup, teardown),
        cmocka_unit_test_setup_teardown(test_shutdown_ends_waiters, setup, teardown),
        cmocka_unit_test_setup_teardown(test_add_two_threads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_delete_prefix, setup, teardown),
        cmocka_unit_test_setup_teardown(test_oversized_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_key_count_cap, setup_small, teardown),
        cmocka_unit_test_setup_teardown(test_failed_builds_leave_no_keys, setup_8_keys,
                                        teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
