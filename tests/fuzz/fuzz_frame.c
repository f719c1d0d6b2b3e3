/*
 * fuzz_frame.c - arbitrary bytes into a real RPC server connection.
 *
 * One server (src/base/rpc_server.c) runs on 127.0.0.1 with its libevent loop in a
 * thread.  Each input is written on a fresh connection, the write side is
 * shut, and everything the server sends is read until it closes.  Checks:
 *   - the server closes every connection by itself (no hang);
 *   - every byte it sends is a well-formed reply frame;
 *   - its reject and request counters move exactly as a reference reading
 *     of the input says (model_input below);
 *   - every zero-copy reply's done callback runs exactly once;
 *   - with small limits (FZ_HIGH_WATER, FZ_MAX_CALLS) that pause and resume
 *     connections, nothing is lost and the queued bytes stay bounded.
 * Any failure aborts (libFuzzer reports it as a crash).
 *
 * Built two ways:
 *   make fuzz-frame      clang -fsanitize=fuzzer,address: LLVMFuzzerTestOneInput
 *   -DFTI_FUZZ_REPLAY    tests/fuzz/fuzz_frame_replay, part of make check: a
 *                        built-in corpus of nasty inputs, then any files named
 *                        on the command line (e.g. crashes libFuzzer found).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/net.h"
#include "control/proto/ftmpi.pb-c.h"
#include "base/rpc.h"
#include "base/sizes.h"
#include "base/util.h"
#include "control/message.h"

#define FZ_MAX_FRAME 4096u
#define FZ_REF_LEN 65536u
#define FZ_HIGH_WATER (64u << 10) /* unsent reply bytes that pause a connection */
#define FZ_MAX_CALLS 8            /* calls in flight that pause a connection */

enum { FZ_ECHO = 1, FZ_DEFER = 2, FZ_BADMSG = 3, FZ_REF = 4, FZ_PROTO = 5, FZ_ERROR = 6 };

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "fuzz_frame: %s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* ---- the server ------------------------------------------------------------ */

struct timer_call {
    struct event *ev;
    fti_rpc_call_h call;
    struct timer_call *next;
};

static struct {
    struct event_base *base;
    fti_rpc_server_h srv;
    pthread_t loop;
    char addr[FTI_ADDRESS_SIZE];
    struct timer_call *timers; /* loop thread */
    atomic_int timers_pending;
    atomic_long ref_calls;
    atomic_long ref_done;
    uint8_t ref_buf[FZ_REF_LEN];
} S;

static void h_echo(fti_rpc_call_h call, const uint8_t *p, size_t len, void *arg)
{
    (void)arg;
    fti_rpc_reply(call, p, len);
}

static void timer_fire(evutil_socket_t fd, short what, void *arg)
{
    struct timer_call *t = arg;
    (void)fd;
    (void)what;
    for (struct timer_call **pp = &S.timers; *pp; pp = &(*pp)->next)
        if (*pp == t) {
            *pp = t->next;
            break;
        }
    fti_rpc_reply(t->call, "late", 4);
    event_free(t->ev);
    free(t);
    atomic_fetch_sub(&S.timers_pending, 1);
}

static void h_defer(fti_rpc_call_h call, const uint8_t *p, size_t len, void *arg)
{
    (void)arg;
    struct timer_call *t = calloc(1, sizeof(*t));
    CHECK(t != NULL);
    t->call = call;
    t->ev = evtimer_new(S.base, timer_fire, t);
    CHECK(t->ev != NULL);
    t->next = S.timers;
    S.timers = t;
    atomic_fetch_add(&S.timers_pending, 1);
    struct timeval tv = {0, (len > 0 ? p[0] : 0) * 1000};
    evtimer_add(t->ev, &tv);
}

static void h_badmsg(fti_rpc_call_h call, const uint8_t *p, size_t len, void *arg)
{
    (void)p;
    (void)len;
    (void)arg;
    fti_rpc_reply_error(call, FT_ERR_BAD_MESSAGE, "bad");
}

static void ref_done(void *arg)
{
    (void)arg;
    atomic_fetch_add(&S.ref_done, 1);
}

static size_t ref_len(const uint8_t *p, size_t len)
{
    return len >= 2 ? (size_t)p[0] << 8 | p[1] : 0;
}

static void h_ref(fti_rpc_call_h call, const uint8_t *p, size_t len, void *arg)
{
    (void)arg;
    atomic_fetch_add(&S.ref_calls, 1);
    fti_rpc_reply_ref(call, S.ref_buf, ref_len(p, len), ref_done, NULL);
}

static void h_proto(fti_rpc_call_h call, const uint8_t *p, size_t len, void *arg)
{
    (void)arg;
    Ftmpi__QuorumMember *m = (Ftmpi__QuorumMember *)fti_rpc_unpack(
        &ftmpi__quorum_member__descriptor, p, len);
    if (m == NULL) {
        fti_rpc_reply_error(call, FT_ERR_BAD_MESSAGE, "not a QuorumMember");
        return;
    }
    Ftmpi__Quorum q = FTMPI__QUORUM__INIT;
    q.quorum_id = m->step;
    q.n_participants = 1;
    q.participants = &m;
    fti_rpc_reply_msg(call, &q.base);
    ftmpi__quorum_member__free_unpacked(m, NULL);
}

static int32_t error_status(const uint8_t *p, size_t len)
{
    uint32_t v = 0;
    if (len >= 4) {
        memcpy(&v, p, 4);
        v = ntohl(v);
    }
    return (int32_t)v;
}

static void h_error(fti_rpc_call_h call, const uint8_t *p, size_t len, void *arg)
{
    (void)arg;
    fti_rpc_reply_error(call, error_status(p, len), "as asked");
}

static const fti_rpc_method_t fz_methods[] = {
    {FZ_ECHO, h_echo}, {FZ_DEFER, h_defer}, {FZ_BADMSG, h_badmsg},
    {FZ_REF, h_ref},   {FZ_PROTO, h_proto}, {FZ_ERROR, h_error},
};

static void *loop_main(void *arg)
{
    (void)arg;
    event_base_loop(S.base, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

struct stats_job {
    fti_rpc_stats_t st;
    atomic_int done;
};

static void stats_cb(evutil_socket_t fd, short what, void *arg)
{
    struct stats_job *j = arg;
    (void)fd;
    (void)what;
    fti_rpc_server_stats(S.srv, &j->st);
    atomic_store(&j->done, 1);
}

static fti_rpc_stats_t server_stats(void)
{
    struct stats_job j;
    struct timeval now = {0, 0};
    memset(&j, 0, sizeof(j));
    CHECK(event_base_once(S.base, -1, EV_TIMEOUT, stats_cb, &j, &now) == 0);
    int64_t deadline = fti_now_ms() + 10000;
    while (!atomic_load(&j.done)) {
        CHECK(fti_now_ms() < deadline);
        sched_yield();
    }
    return j.st;
}

static void server_start(void)
{
    static int started;
    if (started)
        return;
    started = 1;
    signal(SIGPIPE, SIG_IGN);
    fti_log_level = FTI_LOG_NONE; /* every reject would log a warning */
    CHECK(evthread_use_pthreads() == 0);
    S.base = event_base_new();
    CHECK(S.base != NULL);
    for (size_t i = 0; i < FZ_REF_LEN; i++)
        S.ref_buf[i] = (uint8_t)(i * 13 + 1);
    /* small limits, so that inputs pause and resume connections often */
    fti_rpc_server_config_t cfg;
    fti_rpc_server_config_init(&cfg, FZ_MAX_FRAME);
    cfg.out_high_water = FZ_HIGH_WATER;
    cfg.out_low_water = FZ_HIGH_WATER / 4;
    cfg.max_calls = FZ_MAX_CALLS;
    CHECK(fti_rpc_server_create_cfg(S.base, "127.0.0.1:0", &cfg, fz_methods,
                                    sizeof(fz_methods) / sizeof(fz_methods[0]), NULL,
                                    &S.srv) == FT_SUCCESS);
    fti_strlcpy(S.addr, fti_rpc_server_address(S.srv), sizeof(S.addr));
    CHECK(pthread_create(&S.loop, NULL, loop_main, NULL) == 0);
}

/* ---- the reference reading of an input ------------------------------------- */

typedef struct model {
    uint64_t requests, garbage, oversize, truncated, unknown, decode, ref_calls;
} model_t;

static int known_method(uint16_t m)
{
    return m >= FZ_ECHO && m <= FZ_ERROR;
}

/* What the server must do with these bytes followed by the end of the
 * stream (rpc.h): frames are handled in order; a bad header (magic, the
 * reply flag, a status) or a length over the cap ends the connection;
 * bytes left over at the end are a truncated frame. */
static model_t model_input(const uint8_t *d, size_t n)
{
    model_t m;
    size_t pos = 0;
    memset(&m, 0, sizeof(m));
    while (n - pos >= FTI_RPC_HEADER_LEN) {
        fti_rpc_header_t h;
        fti_rpc_header_decode(d + pos, &h);
        if (h.magic != FTI_RPC_MAGIC || (h.flags & FTI_RPC_F_REPLY) || h.status != 0) {
            m.garbage++;
            return m;
        }
        if (h.length > FZ_MAX_FRAME) {
            m.oversize++;
            return m;
        }
        if (n - pos - FTI_RPC_HEADER_LEN < h.length)
            break;
        const uint8_t *p = d + pos + FTI_RPC_HEADER_LEN;
        if (!known_method(h.method)) {
            m.unknown++;
        } else {
            m.requests++;
            if (h.method == FZ_BADMSG)
                m.decode++;
            if (h.method == FZ_REF)
                m.ref_calls++;
            if (h.method == FZ_ERROR && error_status(p, h.length) == FT_ERR_BAD_MESSAGE)
                m.decode++;
            if (h.method == FZ_PROTO) {
                Ftmpi__QuorumMember *q = (Ftmpi__QuorumMember *)fti_rpc_unpack(
                    &ftmpi__quorum_member__descriptor, p, h.length);
                if (q == NULL)
                    m.decode++;
                else
                    ftmpi__quorum_member__free_unpacked(q, NULL);
            }
        }
        pos += FTI_RPC_HEADER_LEN + h.length;
    }
    if (pos < n)
        m.truncated++;
    return m;
}

/* ---- one input --------------------------------------------------------------- */

/* Every byte the server sent must be a reply frame (the last one may be
 * cut short when the server closed while sending it).  Checks the whole
 * frames at r[0..n) and returns the bytes they take; the caller keeps the
 * rest for the next read, so framing is followed across any number of
 * replies. */
static size_t check_replies(const uint8_t *r, size_t n)
{
    size_t pos = 0;
    while (n - pos >= FTI_RPC_HEADER_LEN) {
        fti_rpc_header_t h;
        fti_rpc_header_decode(r + pos, &h);
        CHECK(h.magic == FTI_RPC_MAGIC);
        CHECK(h.flags == FTI_RPC_F_REPLY);
        CHECK(h.method == 0 || known_method(h.method) || h.status == FT_ERR_UNSUPPORTED);
        CHECK(h.length <= FZ_REF_LEN);
        if (h.status == 0)
            CHECK(h.method != 0);
        else
            CHECK(h.length <= 4096);
        if (n - pos - FTI_RPC_HEADER_LEN < h.length)
            break;
        pos += FTI_RPC_HEADER_LEN + h.length;
    }
    return pos;
}

static void run_input(const uint8_t *d, size_t n)
{
    static uint8_t reply[1 << 22];
    int fd = -1;
    server_start();
    fti_rpc_stats_t before = server_stats();
    long ref_calls_before = atomic_load(&S.ref_calls);
    model_t m = model_input(d, n);

    CHECK(fti_tcp_connect(S.addr, fti_now_ms() + 5000, &fd) == FT_SUCCESS);
    int rc = fti_write_full(fd, d, n, fti_now_ms() + 5000);
    /* the server may close early (a rejected frame), never stall */
    CHECK(rc == FT_SUCCESS || rc == FT_ERR_PROC_FAILED);
    shutdown(fd, SHUT_WR);

    /* read until the server closes; it must, since we closed our side */
    size_t got = 0;
    int64_t deadline = fti_now_ms() + 10000;
    for (;;) {
        ssize_t k = recv(fd, reply + got, sizeof(reply) - got, 0);
        if (k > 0) {
            got += (size_t)k;
            size_t used = check_replies(reply, got); /* whole frames: checked, dropped */
            memmove(reply, reply + used, got - used);
            got -= used;
            continue;
        }
        if (k == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            break;
        struct pollfd p = {fd, POLLIN, 0};
        CHECK(fti_ms_left(deadline) > 0);
        poll(&p, 1, fti_ms_left(deadline));
    }
    close(fd);
    (void)check_replies(reply, got); /* a cut-short last frame is allowed */

    fti_rpc_stats_t after = server_stats();
    if (after.requests - before.requests != m.requests ||
        after.rejected_garbage - before.rejected_garbage != m.garbage ||
        after.rejected_oversize - before.rejected_oversize != m.oversize ||
        after.rejected_truncated - before.rejected_truncated != m.truncated ||
        after.rejected_unknown - before.rejected_unknown != m.unknown ||
        after.rejected_decode - before.rejected_decode != m.decode ||
        after.connections - before.connections != 1 || after.open_connections != 0 ||
        after.queued_bytes != 0) {
        fprintf(stderr,
                "fuzz_frame: %zu-byte input: server counted requests %llu garbage %llu "
                "oversize %llu truncated %llu unknown %llu decode %llu connections %llu; "
                "expected %llu %llu %llu %llu %llu %llu 1\n",
                n, (unsigned long long)(after.requests - before.requests),
                (unsigned long long)(after.rejected_garbage - before.rejected_garbage),
                (unsigned long long)(after.rejected_oversize - before.rejected_oversize),
                (unsigned long long)(after.rejected_truncated - before.rejected_truncated),
                (unsigned long long)(after.rejected_unknown - before.rejected_unknown),
                (unsigned long long)(after.rejected_decode - before.rejected_decode),
                (unsigned long long)(after.connections - before.connections),
                (unsigned long long)m.requests, (unsigned long long)m.garbage,
                (unsigned long long)m.oversize, (unsigned long long)m.truncated,
                (unsigned long long)m.unknown, (unsigned long long)m.decode);
        abort();
    }
    CHECK(atomic_load(&S.ref_calls) - ref_calls_before == (long)m.ref_calls);
    /* zero-copy replies: done runs once each, after the bytes went out or
     * the connection closed (the socket may close just before) */
    deadline = fti_now_ms() + 5000;
    while (atomic_load(&S.ref_done) != atomic_load(&S.ref_calls)) {
        CHECK(atomic_load(&S.ref_done) < atomic_load(&S.ref_calls));
        CHECK(fti_now_ms() < deadline);
        fti_sleep_ms(1);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    run_input(data, size);
    return 0;
}

#ifdef FTI_FUZZ_REPLAY
/* ---- the replay: a corpus of nasty inputs ------------------------------------ */

typedef struct buf {
    uint8_t *d;
    size_t n, cap;
} buf_t;

static void put(buf_t *b, const void *p, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->d = realloc(b->d, b->cap);
        CHECK(b->d != NULL);
    }
    if (n)
        memcpy(b->d + b->n, p, n);
    b->n += n;
}

static void frame(buf_t *b, uint32_t magic, uint16_t flags, uint16_t method, int32_t status,
                  uint32_t length, const void *p, size_t plen)
{
    fti_rpc_header_t h = {magic, flags, method, status, length};
    uint8_t hdr[FTI_RPC_HEADER_LEN];
    fti_rpc_header_encode(&h, hdr);
    put(b, hdr, sizeof(hdr));
    put(b, p, plen);
}

static void req(buf_t *b, uint16_t method, const void *p, size_t plen)
{
    frame(b, FTI_RPC_MAGIC, 0, method, 0, (uint32_t)plen, p, plen);
}

static uint64_t rng = 0x9E3779B97F4A7C15ULL;
static uint64_t rnd(void)
{
    rng ^= rng >> 12;
    rng ^= rng << 25;
    rng ^= rng >> 27;
    return rng * 0x2545F4914F6CDD1DULL;
}

static int n_inputs;

static void replay(buf_t *b)
{
    run_input(b->d ? b->d : (const uint8_t *)"", b->n);
    n_inputs++;
    b->n = 0;
}

/* A valid stream of every method, used as the seed of the mutations. */
static void mixed_stream(buf_t *b)
{
    uint8_t pm[256];
    Ftmpi__QuorumMember m = FTMPI__QUORUM_MEMBER__INIT;
    m.replica_id = "g1";
    m.step = 9;
    size_t pl = ftmpi__quorum_member__pack(&m, pm);
    req(b, FZ_ECHO, "hello", 5);
    req(b, FZ_PROTO, pm, pl);
    req(b, FZ_REF, "\x01\x00", 2);
    req(b, FZ_ERROR, "\xff\xff\xff\xe8", 4); /* FT_ERR_BAD_MESSAGE (-24) */
    req(b, FZ_DEFER, "\x05", 1);
    req(b, FZ_BADMSG, NULL, 0);
    req(b, 777, "zz", 2);
    req(b, FZ_ECHO, NULL, 0);
}

static void builtin_corpus(void)
{
    buf_t b = {NULL, 0, 0};
    uint8_t big[FZ_MAX_FRAME + 64];
    for (size_t i = 0; i < sizeof(big); i++)
        big[i] = (uint8_t)(i * 31 + 7);

    /* nothing, and pieces of a header */
    replay(&b);
    for (size_t k = 1; k < FTI_RPC_HEADER_LEN; k++) {
        req(&b, FZ_ECHO, "abc", 3);
        b.n = k;
        replay(&b);
    }
    /* headers that end the connection */
    frame(&b, 0, 0, FZ_ECHO, 0, 0, NULL, 0);
    replay(&b);
    frame(&b, FTI_RPC_MAGIC ^ 1, 0, FZ_ECHO, 0, 0, NULL, 0);
    replay(&b);
    frame(&b, FTI_RPC_MAGIC, FTI_RPC_F_REPLY, FZ_ECHO, 0, 0, NULL, 0);
    replay(&b);
    frame(&b, FTI_RPC_MAGIC, 0, FZ_ECHO, FT_ERR_TIMEOUT, 0, NULL, 0);
    replay(&b);
    frame(&b, FTI_RPC_MAGIC, 0, FZ_ECHO, 0, FZ_MAX_FRAME + 1, big, 100);
    replay(&b);
    frame(&b, FTI_RPC_MAGIC, 0, FZ_ECHO, 0, 0xffffffffu, NULL, 0);
    replay(&b);
    frame(&b, FTI_RPC_MAGIC, 0, FZ_ECHO, 0, 0xfffffff0u, big, 16);
    replay(&b);
    /* the cap exactly, and one under it */
    req(&b, FZ_ECHO, big, FZ_MAX_FRAME);
    replay(&b);
    req(&b, FZ_ECHO, big, FZ_MAX_FRAME - 1);
    req(&b, FZ_ECHO, big, 1);
    replay(&b);
    /* truncated payloads */
    frame(&b, FTI_RPC_MAGIC, 0, FZ_ECHO, 0, 100, big, 10);
    replay(&b);
    frame(&b, FTI_RPC_MAGIC, 0, FZ_ECHO, 0, FZ_MAX_FRAME, big, FZ_MAX_FRAME - 1);
    replay(&b);
    /* unknown methods, with and without payloads, then a good frame */
    const uint16_t unknown[] = {0, 7, 999, 0xffff};
    for (size_t i = 0; i < 4; i++) {
        req(&b, unknown[i], big, i * 100);
        req(&b, FZ_ECHO, "after", 5);
        replay(&b);
    }
    /* many small pipelined frames, and the same ending in garbage */
    for (int i = 0; i < 1000; i++)
        req(&b, FZ_ECHO, big, (size_t)(i % 32));
    replay(&b);
    for (int i = 0; i < 100; i++)
        req(&b, (uint16_t)(1 + i % 6), "\x00\x10\x00\x00", 4);
    put(&b, "GARBAGE GARBAGE!", 16);
    put(&b, big, 200);
    replay(&b);
    /* protobuf payloads: valid, empty (a valid empty message), broken */
    mixed_stream(&b);
    replay(&b);
    req(&b, FZ_PROTO, NULL, 0);
    req(&b, FZ_PROTO, "\xff\xff\xff\xff", 4);
    req(&b, FZ_PROTO, "\x0a\x7f""abc", 5); /* a string longer than the payload */
    req(&b, FZ_PROTO, "\x08", 1);          /* a varint cut short */
    req(&b, FZ_PROTO, big, 300);
    replay(&b);
    /* error replies with odd statuses */
    req(&b, FZ_ERROR, "\x00\x00\x00\x00", 4);
    req(&b, FZ_ERROR, "\x00\x00\x00\x05", 4);
    req(&b, FZ_ERROR, "\x80\x00\x00\x00", 4);
    req(&b, FZ_ERROR, "\xff\xff\xff\xe8", 4);
    req(&b, FZ_ECHO, "x", 1);
    replay(&b);
    /* deferred replies the connection does not wait for */
    req(&b, FZ_DEFER, "\x00", 1);
    req(&b, FZ_DEFER, "\xff", 1);
    req(&b, FZ_DEFER, NULL, 0);
    replay(&b);
    /* zero-copy replies of 0, 1 and the whole buffer */
    req(&b, FZ_REF, "\x00\x00", 2);
    req(&b, FZ_REF, "\x00\x01", 2);
    req(&b, FZ_REF, "\xff\xff", 2);
    req(&b, FZ_REF, "\xff\xff", 2);
    replay(&b);
    /* more replies than the high-water mark, and more deferred calls than
     * may be in flight, on a connection whose client has shut its side:
     * the server pauses, resumes as the replies drain and the calls end,
     * handles every frame and only then closes */
    for (int i = 0; i < 50; i++) /* 3.2 MB: within the reader's buffer */
        req(&b, FZ_REF, "\xff\xff", 2);
    replay(&b);
    for (int i = 0; i < 150; i++)
        req(&b, i % 3 ? FZ_DEFER : FZ_ECHO, "\x01", 1);
    replay(&b);
    /* other protocols */
    put(&b, "GET / HTTP/1.1\r\nHost: x\r\n\r\n", 27);
    replay(&b);
    put(&b, "\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03", 11);
    put(&b, big, 500);
    replay(&b);
    put(&b, "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 24);
    replay(&b);
    /* random bytes, and random bytes behind a good magic */
    for (int i = 0; i < 20; i++) {
        size_t len = (size_t)(rnd() % 70000);
        uint8_t *r = malloc(len + 1);
        CHECK(r != NULL);
        for (size_t k = 0; k < len; k++)
            r[k] = (uint8_t)rnd();
        if (i % 2 && len >= 4)
            memcpy(r, "FTM1", 4);
        put(&b, r, len);
        replay(&b);
        free(r);
    }
    /* mutations of a valid stream: flipped bytes, cut lengths, spliced headers */
    buf_t seed = {NULL, 0, 0};
    mixed_stream(&seed);
    mixed_stream(&seed);
    for (int i = 0; i < 300; i++) {
        put(&b, seed.d, seed.n);
        int flips = 1 + (int)(rnd() % 4);
        for (int k = 0; k < flips; k++) {
            size_t at = (size_t)(rnd() % b.n);
            switch (rnd() % 4) {
            case 0: b.d[at] ^= (uint8_t)(1u << (rnd() % 8)); break;
            case 1: b.d[at] = (uint8_t)rnd(); break;
            case 2: b.n = at; break;
            default: b.d[at] = (uint8_t)(rnd() % 2 ? 0xff : 0x00); break;
            }
            if (b.n == 0)
                break;
        }
        replay(&b);
    }
    free(seed.d);
    free(b.d);
}

static int replay_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "fuzz_frame_replay: %s: %s\n", path, strerror(errno));
        return -1;
    }
    buf_t b = {NULL, 0, 0};
    uint8_t chunk[65536];
    size_t k;
    while ((k = fread(chunk, 1, sizeof(chunk), f)) > 0)
        put(&b, chunk, k);
    fclose(f);
    replay(&b);
    free(b.d);
    return 0;
}

static void cancel_timers(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    while (S.timers) {
        struct timer_call *t = S.timers;
        S.timers = t->next;
        fti_rpc_reply_error(t->call, FT_ERR_PROC_FAILED, "shutting down");
        event_free(t->ev);
        free(t);
        atomic_fetch_sub(&S.timers_pending, 1);
    }
    event_base_loopbreak(S.base);
}

int main(int argc, char **argv)
{
    int64_t t0 = fti_now_ms();
    server_start();
    builtin_corpus();
    for (int i = 1; i < argc; i++)
        if (replay_file(argv[i]) != 0)
            return 1;
    fti_rpc_stats_t st = server_stats();
    /* every input was a connection, and the corpus hit every reject path */
    CHECK(st.connections == (uint64_t)n_inputs);
    CHECK(st.rejected_garbage > 0 && st.rejected_oversize > 0 && st.rejected_truncated > 0 &&
          st.rejected_unknown > 0 && st.rejected_decode > 0 && st.requests > 0);
    CHECK(st.paused > 0 && st.peak_queued_bytes <= FZ_HIGH_WATER + FZ_REF_LEN + FTI_RPC_HEADER_LEN);
    CHECK(atomic_load(&S.ref_calls) > 0);

    /* the server still answers a well-behaved client */
    fti_rpc_client_h c = NULL;
    void *rep = NULL;
    size_t rlen = 0;
    CHECK(fti_rpc_client_create(S.addr, NULL, 2000, 1024, &c) == FT_SUCCESS);
    CHECK(fti_rpc_call(c, FZ_ECHO, "ping", 4, 5000, &rep, &rlen) == FT_SUCCESS);
    CHECK(rlen == 4 && memcmp(rep, "ping", 4) == 0);
    free(rep);
    fti_rpc_client_destroy(c);

    /* clean shutdown: answer what is still deferred, stop, free */
    struct timeval now = {0, 0};
    CHECK(event_base_once(S.base, -1, EV_TIMEOUT, cancel_timers, NULL, &now) == 0);
    pthread_join(S.loop, NULL);
    fti_rpc_server_destroy(S.srv);
    event_base_free(S.base);
    CHECK(atomic_load(&S.ref_done) == atomic_load(&S.ref_calls));
    printf("fuzz_frame_replay: %d inputs, requests %llu garbage %llu oversize %llu "
           "truncated %llu unknown %llu decode %llu, paused %llu, peak queued %llu, %lld ms\n",
           n_inputs, (unsigned long long)st.requests, (unsigned long long)st.rejected_garbage,
           (unsigned long long)st.rejected_oversize, (unsigned long long)st.rejected_truncated,
           (unsigned long long)st.rejected_unknown, (unsigned long long)st.rejected_decode,
           (unsigned long long)st.paused, (unsigned long long)st.peak_queued_bytes,
           (long long)(fti_now_ms() - t0));
    return 0;
}
#endif
