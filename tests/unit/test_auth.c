/*
 * test_auth.c - the job secret and the challenge-response (src/base/auth.c)
 * and its use by the RPC layer (src/base/rpc_conn.c, rpc_client.c): token files that must be
 * refused, the handshake's steps against forged, replayed and reflected
 * answers, the blocking form on a socket pair (the tcp ring's), and real
 * RPC servers and clients on 127.0.0.1 with the right, a wrong and no key.
 */
#include <errno.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "base/auth.h"
#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/net.h"
#include "base/rpc.h"
#include "base/settings.h"
#include "base/util.h"

#define M_ECHO 7
#define CALL_MS 5000

static char tmpdir[256];

static const char *write_file(const char *name, const char *content, mode_t mode)
{
    static char path[512];
    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    unlink(path);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, content, strlen(content)), (ssize_t)strlen(content));
    close(fd);
    assert_int_equal(chmod(path, mode), 0);
    return path;
}

/* ---- token files ---------------------------------------------------------- */

static void test_token_file_good(void **state)
{
    char tok[64], err[512] = "";
    (void)state;
    const char *p = write_file("good", "  s3cret-Value-4b1e9d0c77a2f3e8 \n", 0600);
    assert_int_equal(fti_auth_read_token(p, tok, sizeof(tok), err, sizeof(err)), FT_SUCCESS);
    assert_string_equal(tok, "s3cret-Value-4b1e9d0c77a2f3e8");
    p = write_file("group", "0123456789abcdef0123456789abcdef\n", 0640); /* group-readable: allowed */
    assert_int_equal(fti_auth_read_token(p, tok, sizeof(tok), err, sizeof(err)), FT_SUCCESS);
}

static void expect_refused(const char *path, const char *why)
{
    char tok[64], err[512] = "";
    assert_int_equal(fti_auth_read_token(path, tok, sizeof(tok), err, sizeof(err)),
                     FT_ERR_CONFIG);
    assert_non_null(strstr(err, path)); /* names the file */
    if (strstr(err, why) == NULL)
        fail_msg("error '%s' does not say '%s'", err, why);
    fti_auth_key_t k;
    assert_int_equal(fti_auth_load_key(path, &k, err, sizeof(err)), FT_ERR_CONFIG);
}

static void test_token_file_refused(void **state)
{
    char dir[300];
    (void)state;
    expect_refused(write_file("world", "secret\n", 0644), "readable or writable by others");
    expect_refused(write_file("wworld", "secret\n", 0602), "readable or writable by others");
    expect_refused(write_file("empty", "", 0600), "empty");
    expect_refused(write_file("blank", " \n\t\n", 0600), "empty");
    snprintf(dir, sizeof(dir), "%s/missing", tmpdir);
    expect_refused(dir, "cannot open");
    snprintf(dir, sizeof(dir), "%s", tmpdir);
    chmod(tmpdir, 0700);
    expect_refused(dir, "not a regular file");
    char big[FTI_AUTH_FILE_MAX + 10];
    memset(big, 'a', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    expect_refused(write_file("big", big, 0600), "longer than");
    /* fewer than 128 bits: refused, saying how to make a good one (issue 23) */
    expect_refused(write_file("six", "493817\n", 0600), "too weak");
    expect_refused(write_file("six", "493817\n", 0600), "ftmpi-lighthouse --make-token FILE");
    expect_refused(write_file("hex31", "0123456789abcdef0123456789abcde\n", 0600), "too weak");
    expect_refused(write_file("words", "correct-horse-battery\n", 0600), "too weak");
}

static void test_key_derivation(void **state)
{
    fti_auth_key_t a, b, c;
    (void)state;
    assert_int_equal(fti_auth_key_from_token("alpha", &a), FT_SUCCESS);
    assert_int_equal(fti_auth_key_from_token("alpha", &b), FT_SUCCESS);
    assert_int_equal(fti_auth_key_from_token("alphb", &c), FT_SUCCESS);
    assert_memory_equal(a.k, b.k, sizeof(a.k));
    assert_memory_not_equal(a.k, c.k, sizeof(a.k));
    assert_memory_not_equal(a.k, "alpha", 5); /* the key is not the secret */
    assert_int_equal(fti_auth_key_from_token("", &a), FT_ERR_ARG);
}

/* ---- the steps -------------------------------------------------------------------- */

static void test_steps(void **state)
{
    fti_auth_key_t k, wrong;
    fti_auth_state_t cs, ss, ss2;
    uint8_t hello[FTI_AUTH_HELLO_LEN], chal[FTI_AUTH_CHALLENGE_LEN], chal2[FTI_AUTH_CHALLENGE_LEN],
        proof[FTI_AUTH_PROOF_LEN], forged[FTI_AUTH_PROOF_LEN], ack[FTI_AUTH_ACK_LEN],
        ack2[FTI_AUTH_ACK_LEN];
    (void)state;
    fti_auth_key_from_token("job-secret", &k);
    fti_auth_key_from_token("guess", &wrong);

    /* the right key both ways: the client proves first, then the server */
    assert_int_equal(fti_auth_client_hello(&cs, hello), FT_SUCCESS);
    assert_int_equal(fti_auth_server_challenge(&k, &ss, hello, chal), FT_SUCCESS);
    assert_int_equal(fti_auth_client_answer(&k, &cs, chal, proof), FT_SUCCESS);
    assert_int_equal(fti_auth_server_verify(&k, &ss, proof, ack), FT_SUCCESS);
    assert_int_equal(fti_auth_client_finish(&k, &cs, ack), FT_SUCCESS);

    /* the challenge holds nothing but the magic and the server's nonce:
     * nothing that depends on the key before the client proved it */
    assert_int_equal(FTI_AUTH_CHALLENGE_LEN, FTI_AUTH_MAGIC_LEN + FTI_AUTH_NONCE_LEN);
    assert_memory_equal(chal + FTI_AUTH_MAGIC_LEN, ss.ns, FTI_AUTH_NONCE_LEN);

    /* a client with a wrong key: its proof fails, and the server writes no ack */
    fti_auth_state_t ws = cs;
    assert_int_equal(fti_auth_client_answer(&wrong, &ws, chal, forged), FT_SUCCESS);
    memset(ack2, 0, sizeof(ack2));
    assert_int_equal(fti_auth_server_verify(&k, &ss, forged, ack2), FT_ERR_AUTH);
    for (size_t i = 0; i < sizeof(ack2); i++)
        assert_int_equal(ack2[i], 0);
    memcpy(forged, fti_auth_proof_magic, FTI_AUTH_MAGIC_LEN);
    memset(forged + FTI_AUTH_MAGIC_LEN, 0xab, FTI_AUTH_MAC_LEN);
    assert_int_equal(fti_auth_server_verify(&k, &ss, forged, ack2), FT_ERR_AUTH);

    /* reflection: the server's own MAC (its ack) sent back as a proof */
    memcpy(forged + FTI_AUTH_MAGIC_LEN, ack + FTI_AUTH_MAGIC_LEN, FTI_AUTH_MAC_LEN);
    assert_int_equal(fti_auth_server_verify(&k, &ss, forged, ack2), FT_ERR_AUTH);

    /* replay: a good proof recorded for one connection fails on the next
     * (the server draws a fresh nonce) */
    assert_int_equal(fti_auth_server_challenge(&k, &ss2, hello, chal2), FT_SUCCESS);
    assert_memory_not_equal(chal, chal2, sizeof(chal));
    assert_int_equal(fti_auth_server_verify(&k, &ss2, proof, ack2), FT_ERR_AUTH);

    /* a server with the wrong key cannot prove itself to the client */
    assert_int_equal(fti_auth_client_hello(&cs, hello), FT_SUCCESS);
    assert_int_equal(fti_auth_server_challenge(&wrong, &ss, hello, chal), FT_SUCCESS);
    assert_int_equal(fti_auth_client_answer(&k, &cs, chal, proof), FT_SUCCESS);
    memcpy(ack2, fti_auth_ack_magic, FTI_AUTH_MAGIC_LEN);
    memset(ack2 + FTI_AUTH_MAGIC_LEN, 0xcd, FTI_AUTH_MAC_LEN);
    assert_int_equal(fti_auth_client_finish(&k, &cs, ack2), FT_ERR_AUTH);
    assert_int_equal(fti_auth_client_finish(&k, &cs, ack), FT_ERR_AUTH); /* an old ack */

    /* something that is no hello (an RPC frame header) */
    memcpy(hello, "FTM1", 4);
    assert_int_equal(fti_auth_server_challenge(&k, &ss, hello, chal), FT_ERR_AUTH);
}

/* ---- blocking, on a socket pair ------------------------------------------------------ */

struct acceptor {
    int fd;
    const fti_auth_key_t *key;
    int rc;
};

static void *accept_main(void *arg)
{
    struct acceptor *a = arg;
    a->rc = fti_auth_accept_fd(a->fd, a->key, fti_now_ms() + CALL_MS);
    if (a->rc != FT_SUCCESS)
        shutdown(a->fd, SHUT_RDWR); /* as the ring does: close on failure */
    return NULL;
}

static int pair_handshake(const fti_auth_key_t *ck, const fti_auth_key_t *sk, int *server_rc)
{
    int sv[2];
    pthread_t t;
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    fcntl(sv[0], F_SETFL, O_NONBLOCK);
    fcntl(sv[1], F_SETFL, O_NONBLOCK);
    struct acceptor a = {sv[1], sk, -99};
    pthread_create(&t, NULL, accept_main, &a);
    int rc = fti_auth_connect_fd(sv[0], ck, fti_now_ms() + CALL_MS);
    pthread_join(t, NULL);
    close(sv[0]);
    close(sv[1]);
    *server_rc = a.rc;
    return rc;
}

static void test_fd_handshake(void **state)
{
    fti_auth_key_t k, wrong;
    int src;
    (void)state;
    fti_auth_key_from_token("ring-secret", &k);
    fti_auth_key_from_token("other", &wrong);
    assert_int_equal(pair_handshake(&k, &k, &src), FT_SUCCESS);
    assert_int_equal(src, FT_SUCCESS);
    assert_int_not_equal(pair_handshake(&wrong, &k, &src), FT_SUCCESS);
    assert_int_not_equal(src, FT_SUCCESS);
    assert_int_not_equal(pair_handshake(&k, &wrong, &src), FT_SUCCESS);
    assert_int_not_equal(src, FT_SUCCESS);
}

/* A ring of n ranks on socket pairs: rank r's next_fd is pair r's [0], its
 * prev_fd pair r-1's [1]; every rank runs fti_auth_ring in its thread. */
struct ring_rank {
    int next_fd, prev_fd;
    const fti_auth_key_t *key;
    int rc;
};

static void *ring_main(void *arg)
{
    struct ring_rank *r = arg;
    r->rc = fti_auth_ring(r->next_fd, r->prev_fd, r->key, fti_now_ms() + CALL_MS);
    if (r->rc != FT_SUCCESS) { /* as the ring does: close on failure */
        shutdown(r->next_fd, SHUT_RDWR);
        shutdown(r->prev_fd, SHUT_RDWR);
    }
    return NULL;
}

/* Runs a ring of n (<= 8) with keys[r]; returns how many ranks succeeded. */
static int ring_run(int n, const fti_auth_key_t *const *keys)
{
    int sv[8][2], ok = 0;
    pthread_t t[8];
    struct ring_rank rr[8];
    for (int i = 0; i < n; i++) {
        assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv[i]), 0);
        fcntl(sv[i][0], F_SETFL, O_NONBLOCK);
        fcntl(sv[i][1], F_SETFL, O_NONBLOCK);
    }
    for (int i = 0; i < n; i++) {
        rr[i] = (struct ring_rank){sv[i][0], sv[(i + n - 1) % n][1], keys[i], -99};
        pthread_create(&t[i], NULL, ring_main, &rr[i]);
    }
    for (int i = 0; i < n; i++) {
        pthread_join(t[i], NULL);
        ok += rr[i].rc == FT_SUCCESS;
    }
    for (int i = 0; i < n; i++) {
        close(sv[i][0]);
        close(sv[i][1]);
    }
    return ok;
}

static void test_ring_handshake(void **state)
{
    fti_auth_key_t k, wrong;
    (void)state;
    fti_auth_key_from_token("ring-secret", &k);
    fti_auth_key_from_token("other", &wrong);
    const fti_auth_key_t *all[8] = {&k, &k, &k, &k, &k, &k, &k, &k};
    assert_int_equal(ring_run(2, all), 2); /* no deadlock, every size */
    assert_int_equal(ring_run(3, all), 3);
    assert_int_equal(ring_run(8, all), 8);
    const fti_auth_key_t *one_wrong[3] = {&k, &wrong, &k};
    assert_true(ring_run(3, one_wrong) < 3); /* the intruder's neighbours refuse it */
}

/* ---- RPC -------------------------------------------------------------------------------- */

struct srv {
    struct event_base *base;
    fti_rpc_server_h rpc;
    pthread_t loop;
    int calls; /* loop thread; read after the loop stopped */
};

static void h_echo(fti_rpc_call_h call, const uint8_t *p, size_t len, void *arg)
{
    struct srv *s = arg;
    s->calls++;
    fti_rpc_reply(call, p, len);
}

static void *loop_main(void *arg)
{
    struct srv *s = arg;
    event_base_loop(s->base, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

static void srv_start(struct srv *s, const fti_auth_key_t *key)
{
    static const fti_rpc_method_t methods[] = {{M_ECHO, h_echo}};
    fti_rpc_server_config_t cfg;
    memset(s, 0, sizeof(*s));
    s->base = event_base_new();
    assert_non_null(s->base);
    fti_rpc_server_config_init(&cfg, 1 << 16);
    cfg.auth_key = key;
    assert_int_equal(fti_rpc_server_create_cfg(s->base, "127.0.0.1:0", &cfg, methods, 1, s,
                                               &s->rpc),
                     FT_SUCCESS);
    pthread_create(&s->loop, NULL, loop_main, s);
}

static void srv_stop(struct srv *s, fti_rpc_stats_t *st)
{
    event_base_loopbreak(s->base);
    pthread_join(s->loop, NULL);
    /* the loop is this thread's now: let the server see the clients' ends */
    int64_t dl = fti_now_ms() + CALL_MS;
    do {
        event_base_loop(s->base, EVLOOP_NONBLOCK);
        fti_rpc_server_stats(s->rpc, st);
        if (st->open_connections > 0)
            fti_sleep_ms(2);
    } while (st->open_connections > 0 && fti_now_ms() < dl);
    fti_rpc_server_destroy(s->rpc);
    event_base_free(s->base);
}

static int echo(const char *addr, const fti_auth_key_t *key)
{
    fti_rpc_client_h c;
    void *reply = NULL;
    size_t len = 0;
    assert_int_equal(fti_rpc_client_create(addr, key, 2000, 1 << 16, &c), FT_SUCCESS);
    int rc = fti_rpc_call(c, M_ECHO, "hello", 5, CALL_MS, &reply, &len);
    if (rc == FT_SUCCESS) {
        assert_int_equal(len, 5);
        assert_memory_equal(reply, "hello", 5);
        /* a second call on the kept connection needs no new handshake */
        free(reply);
        rc = fti_rpc_call(c, M_ECHO, "again", 5, CALL_MS, &reply, &len);
    }
    free(reply);
    fti_rpc_client_destroy(c);
    return rc;
}

static void test_rpc_auth(void **state)
{
    fti_auth_key_t k, wrong;
    struct srv s;
    fti_rpc_stats_t st;
    (void)state;
    fti_auth_key_from_token("rpc-secret", &k);
    fti_auth_key_from_token("not-it", &wrong);

    srv_start(&s, &k);
    const char *addr = fti_rpc_server_address(s.rpc);
    assert_int_equal(echo(addr, &k), FT_SUCCESS);
    assert_int_equal(echo(addr, NULL), FT_ERR_AUTH);   /* no key */
    assert_int_equal(echo(addr, &wrong), FT_ERR_AUTH); /* a wrong key */
    srv_stop(&s, &st);
    assert_int_equal(s.calls, 2); /* only the keyed client's calls reached the handler */
    assert_int_equal(st.requests, 2);
    assert_int_equal(st.rejected_auth, 2);
    assert_int_equal(st.rejected_garbage + st.rejected_decode + st.rejected_unknown, 0);

    /* a keyed client refuses a server without the secret */
    srv_start(&s, NULL);
    addr = fti_rpc_server_address(s.rpc);
    assert_int_equal(echo(addr, &k), FT_ERR_AUTH);
    assert_int_equal(echo(addr, NULL), FT_SUCCESS);
    srv_stop(&s, &st);
    assert_int_equal(s.calls, 2);
}

/* A raw frame (no handshake) to a keyed server: an FT_ERR_AUTH error frame,
 * then closed; the handler never runs.  A silent connection is closed by
 * the handshake deadline (not tested here: FTI_AUTH_TIMEOUT_MS is 10 s). */
static void test_rpc_raw_frame_refused(void **state)
{
    fti_auth_key_t k;
    struct srv s;
    fti_rpc_stats_t st;
    uint8_t hdr[FTI_RPC_HEADER_LEN];
    fti_rpc_header_t h = {FTI_RPC_MAGIC, 0, M_ECHO, 0, 0};
    int fd = -1;
    (void)state;
    fti_auth_key_from_token("rpc-secret", &k);
    srv_start(&s, &k);
    int64_t dl = fti_now_ms() + CALL_MS;
    assert_int_equal(fti_tcp_connect(fti_rpc_server_address(s.rpc), dl, &fd), FT_SUCCESS);
    fti_rpc_header_encode(&h, hdr);
    assert_int_equal(fti_write_full(fd, hdr, sizeof(hdr), dl), FT_SUCCESS);
    assert_int_equal(fti_read_full(fd, hdr, sizeof(hdr), dl), FT_SUCCESS);
    fti_rpc_header_decode(hdr, &h);
    assert_int_equal(h.status, FT_ERR_AUTH);
    assert_int_equal(h.method, 0);
    char msg[512];
    assert_true(h.length < sizeof(msg));
    assert_int_equal(fti_read_full(fd, msg, h.length, dl), FT_SUCCESS);
    assert_int_equal(fti_read_full(fd, msg, 1, dl), FT_ERR_PROC_FAILED); /* closed */
    close(fd);
    srv_stop(&s, &st);
    assert_int_equal(s.calls, 0);
    assert_int_equal(st.rejected_auth, 1);
}

/* Issue 23 finding 3: a client without the secret connects to a real
 * keyed RPC server on 127.0.0.1, sends a HELLO and keeps every byte the
 * server sends before it proved anything; an offline search over a
 * six-digit dictionary (holding the real secret) must find nothing to test
 * its guesses against (the old handshake's first reply carried
 * HMAC(key, server | Nc | Ns): the secret fell out in seconds). */
static void test_no_offline_search(void **state)
{
    static const char label[] = "ftmpi-auth-v1 server";
    fti_auth_key_t k;
    fti_auth_state_t st;
    struct srv s;
    fti_rpc_stats_t rs;
    uint8_t hello[FTI_AUTH_HELLO_LEN], got[256];
    size_t n = 0;
    int fd = -1;
    (void)state;
    fti_auth_key_from_token("493817", &k);
    srv_start(&s, &k);
    int64_t dl = fti_now_ms() + CALL_MS;
    assert_int_equal(fti_tcp_connect(fti_rpc_server_address(s.rpc), dl, &fd), FT_SUCCESS);
    assert_int_equal(fti_auth_client_hello(&st, hello), FT_SUCCESS);
    assert_int_equal(fti_write_full(fd, hello, sizeof(hello), dl), FT_SUCCESS);
    assert_int_equal(fti_read_full(fd, got, FTI_AUTH_MAGIC_LEN + FTI_AUTH_NONCE_LEN, dl),
                     FT_SUCCESS);
    n = FTI_AUTH_MAGIC_LEN + FTI_AUTH_NONCE_LEN;
    /* whatever else it sends unasked (nothing now: it waits for our proof) */
    int64_t more = fti_now_ms() + 1000;
    while (n < sizeof(got) && fti_now_ms() < more) {
        ssize_t r = recv(fd, got + n, sizeof(got) - n, MSG_DONTWAIT);
        if (r > 0)
            n += (size_t)r;
        else if (r == 0)
            break;
        else
            usleep(10000);
    }
    close(fd);
    srv_stop(&s, &rs);
    const uint8_t *ns = got + FTI_AUTH_MAGIC_LEN;
    uint8_t msg[sizeof(label) - 1 + 2 * FTI_AUTH_NONCE_LEN], mac[32];
    memcpy(msg, label, sizeof(label) - 1);
    memcpy(msg + sizeof(label) - 1, st.nc, FTI_AUTH_NONCE_LEN);
    memcpy(msg + sizeof(label) - 1 + FTI_AUTH_NONCE_LEN, ns, FTI_AUTH_NONCE_LEN);
    for (int guess = 490000; guess < 500000; guess++) {
        char tok[16];
        fti_auth_key_t g;
        unsigned int ml = 0;
        snprintf(tok, sizeof(tok), "%06d", guess);
        fti_auth_key_from_token(tok, &g);
        HMAC(EVP_sha256(), g.k, sizeof(g.k), msg, sizeof(msg), mac, &ml);
        for (size_t at = 0; at + sizeof(mac) <= n; at++)
            if (memcmp(got + at, mac, sizeof(mac)) == 0)
                fail_msg("the server's first reply lets an offline search find the secret '%s'",
                         tok);
    }
}

/* The job's key is the configuration's (fti_config_load from
 * FTMPI_TOKEN_FILE) and reaches only the servers and clients it is passed
 * to: there is no process-wide key. */
static void test_config_key(void **state)
{
    char err[512] = "";
    struct srv s;
    fti_rpc_stats_t st;
    fti_auth_key_t k, loaded;
    fti_config_t cfg;
    (void)state;
    const char *p = write_file("proc", "process-secret-5d2c8e1f0a9b7346\n", 0600);
    fti_auth_key_from_token("process-secret-5d2c8e1f0a9b7346", &k);
    assert_int_equal(fti_auth_load_key(p, &loaded, err, sizeof(err)), FT_SUCCESS);
    assert_memory_equal(loaded.k, k.k, sizeof(k.k));
    assert_int_equal(fti_auth_load_key("", &loaded, err, sizeof(err)), FT_ERR_ARG);
    setenv("FTMPI_TOKEN_FILE", p, 1);
    assert_int_equal(fti_config_load(&cfg, err, sizeof(err)), FT_SUCCESS);
    unsetenv("FTMPI_TOKEN_FILE");
    assert_non_null(fti_config_key(&cfg));
    assert_memory_equal(fti_config_key(&cfg)->k, k.k, sizeof(k.k));
    fti_rpc_server_config_t scfg;
    fti_rpc_server_config_init(&scfg, 1024);
    assert_null(scfg.auth_key); /* nothing implicit */
    srv_start(&s, fti_config_key(&cfg));
    assert_int_equal(echo(fti_rpc_server_address(s.rpc), fti_config_key(&cfg)), FT_SUCCESS);
    assert_int_equal(echo(fti_rpc_server_address(s.rpc), NULL), FT_ERR_AUTH);
    srv_stop(&s, &st);
    assert_int_equal(st.rejected_auth, 1);
    assert_int_equal(fti_config_load(&cfg, err, sizeof(err)), FT_SUCCESS);
    assert_null(fti_config_key(&cfg)); /* no FTMPI_TOKEN_FILE: no key */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_token_file_good),   cmocka_unit_test(test_token_file_refused),
        cmocka_unit_test(test_key_derivation),    cmocka_unit_test(test_steps),
        cmocka_unit_test(test_fd_handshake),      cmocka_unit_test(test_ring_handshake),
        cmocka_unit_test(test_rpc_auth),          cmocka_unit_test(test_rpc_raw_frame_refused),
        cmocka_unit_test(test_no_offline_search), cmocka_unit_test(test_config_key),
    };
    snprintf(tmpdir, sizeof(tmpdir), "%s/test_auth.XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (mkdtemp(tmpdir) == NULL)
        return 1;
    evthread_use_pthreads();
    fti_log_init("test_auth", FTI_LOG_ERROR);
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    char cmd[400];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    if (system(cmd) != 0)
        rc = rc ? rc : 1;
    return rc;
}
