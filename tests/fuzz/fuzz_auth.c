/*
 * fuzz_auth.c - the job-secret handshake (src/base/auth.c) fed bytes from a
 * peer that does not hold the secret.
 *
 * Input byte 0 picks the side, the rest is what the peer sends:
 *   0  a real RPC server with a key (base/rpc_conn.c's event-driven handshake) gets
 *      the bytes on a fresh connection: no request may reach a handler
 *   1  the same after a correct handshake (the harness holds the key): the
 *      bytes are frames of an authenticated peer, served as usual
 *   2  fti_auth_accept_fd (the tcp ring's server side) on a socketpair
 *   3  fti_auth_connect_fd (the client side) against fuzzed server bytes
 * Sides 0, 2 and 3 can never succeed: the peer would have to forge an
 * HMAC over a fresh random nonce.
 */
#include "fuzz_common.h"

#include <errno.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/auth.h"
#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/net.h"
#include "base/rpc.h"
#include "base/sizes.h"
#include "base/util.h"

static struct {
    struct event_base *base;
    fti_rpc_server_h srv;
    pthread_t loop;
    char addr[FTI_ADDRESS_SIZE];
    fti_auth_key_t key;
    atomic_long calls;
} S;

static void h_echo(fti_rpc_call_h call, const uint8_t *p, size_t len, void *arg)
{
    (void)arg;
    atomic_fetch_add(&S.calls, 1);
    fti_rpc_reply(call, p, len);
}

static const fti_rpc_method_t methods[] = {{1, h_echo}, {2, h_echo}};

static void *loop_main(void *arg)
{
    (void)arg;
    event_base_loop(S.base, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

static void start(void)
{
    static int started;
    if (started)
        return;
    started = 1;
    signal(SIGPIPE, SIG_IGN);
    fti_log_level = FTI_LOG_NONE;
    CHECK(fti_auth_key_from_token("fuzz-secret", &S.key) == FT_SUCCESS);
    CHECK(evthread_use_pthreads() == 0);
    S.base = event_base_new();
    CHECK(S.base != NULL);
    fti_rpc_server_config_t cfg;
    fti_rpc_server_config_init(&cfg, 4096);
    cfg.auth_key = &S.key;
    CHECK(fti_rpc_server_create_cfg(S.base, "127.0.0.1:0", &cfg, methods, 2, NULL, &S.srv) ==
          FT_SUCCESS);
    fti_strlcpy(S.addr, fti_rpc_server_address(S.srv), sizeof(S.addr));
    CHECK(pthread_create(&S.loop, NULL, loop_main, NULL) == 0);
}

/* Reads until the server closes (it must: our side is shut). */
static void drain(int fd)
{
    static uint8_t buf[1 << 16];
    int64_t deadline = fti_now_ms() + 10000;
    for (;;) {
        ssize_t k = recv(fd, buf, sizeof(buf), 0);
        if (k > 0)
            continue;
        if (k == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            return;
        struct pollfd p = {fd, POLLIN, 0};
        CHECK(fti_ms_left(deadline) > 0);
        poll(&p, 1, fti_ms_left(deadline));
    }
}

static void to_server(const uint8_t *d, size_t n, bool handshake)
{
    int fd = -1;
    start();
    long before = atomic_load(&S.calls);
    CHECK(fti_tcp_connect(S.addr, fti_now_ms() + 5000, &fd) == FT_SUCCESS);
    if (handshake)
        CHECK(fti_auth_connect_fd(fd, &S.key, fti_now_ms() + 5000) == FT_SUCCESS);
    int rc = fti_write_full(fd, d, n, fti_now_ms() + 5000);
    CHECK(rc == FT_SUCCESS || rc == FT_ERR_PROC_FAILED);
    shutdown(fd, SHUT_WR);
    drain(fd);
    close(fd);
    if (!handshake)
        CHECK(atomic_load(&S.calls) == before); /* nothing reached a handler */
}

/* The blocking sides on a socketpair: the peer's bytes are all there,
 * then its end of the stream. */
static void blocking(const uint8_t *d, size_t n, bool accept_side)
{
    int sv[2];
    start();
    CHECK(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, sv) == 0);
    int big = 1 << 20;
    setsockopt(sv[1], SOL_SOCKET, SO_SNDBUF, &big, sizeof(big));
    setsockopt(sv[0], SOL_SOCKET, SO_RCVBUF, &big, sizeof(big));
    if (n > 65536)
        n = 65536;
    CHECK(fti_write_full(sv[1], d, n, fti_now_ms() + 5000) == FT_SUCCESS);
    shutdown(sv[1], SHUT_WR);
    int rc = accept_side ? fti_auth_accept_fd(sv[0], &S.key, fti_now_ms() + 5000)
                         : fti_auth_connect_fd(sv[0], &S.key, fti_now_ms() + 5000);
    CHECK(rc == FT_ERR_AUTH || rc == FT_ERR_PROC_FAILED || rc == FT_ERR_BAD_MESSAGE);
    close(sv[0]);
    close(sv[1]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    switch (data[0] % 4) {
    case 0: to_server(data + 1, size - 1, false); break;
    case 1: to_server(data + 1, size - 1, true); break;
    case 2: blocking(data + 1, size - 1, true); break;
    default: blocking(data + 1, size - 1, false); break;
    }
    return 0;
}

void fuzz_generated(fuzz_emit_fn emit)
{
    fuzz_out_t o;
    uint8_t hdr[FTI_RPC_HEADER_LEN];
    fti_rpc_header_t h = {FTI_RPC_MAGIC, 0, 1, 0, 4};
    fti_rpc_header_encode(&h, hdr);
    for (uint8_t side = 0; side < 4; side++) {
        /* a hello, a proof of the wrong key, then a request */
        o.n = 0;
        fo_u8(&o, side);
        fo_bytes(&o, fti_auth_hello_magic, FTI_AUTH_MAGIC_LEN);
        for (int i = 0; i < FTI_AUTH_NONCE_LEN; i++)
            fo_u8(&o, (uint8_t)i);
        fo_bytes(&o, fti_auth_proof_magic, FTI_AUTH_MAGIC_LEN);
        for (int i = 0; i < FTI_AUTH_MAC_LEN; i++)
            fo_u8(&o, (uint8_t)(7 * i));
        fo_bytes(&o, hdr, sizeof(hdr));
        fo_bytes(&o, "ping", 4);
        emit(o.d, o.n);
        /* a plain request with no handshake, a half hello, nothing */
        o.n = 0;
        fo_u8(&o, side);
        fo_bytes(&o, hdr, sizeof(hdr));
        fo_bytes(&o, "ping", 4);
        emit(o.d, o.n);
        o.n = 0;
        fo_u8(&o, side);
        fo_bytes(&o, fti_auth_hello_magic, FTI_AUTH_MAGIC_LEN);
        fo_bytes(&o, "\x01\x02", 2);
        emit(o.d, o.n);
        o.n = 0;
        fo_u8(&o, side);
        emit(o.d, o.n);
        /* a challenge-shaped reply for the client side, an ack too early */
        o.n = 0;
        fo_u8(&o, side);
        fo_bytes(&o, fti_auth_hello_magic, FTI_AUTH_MAGIC_LEN);
        for (int i = 0; i < FTI_AUTH_NONCE_LEN; i++)
            fo_u8(&o, 0);
        fo_bytes(&o, fti_auth_ack_magic, FTI_AUTH_MAGIC_LEN);
        for (int i = 0; i < FTI_AUTH_MAC_LEN; i++)
            fo_u8(&o, 0);
        emit(o.d, o.n);
    }
}
