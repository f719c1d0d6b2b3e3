/*
 * test_rpc.c - the framed RPC layer (src/rpc.c) and the sockets under it
 * (src/net.c): a real server on 127.0.0.1 whose libevent loop runs in a
 * thread, real blocking clients, and raw sockets that send what a client
 * never would (bad magic, oversized and truncated frames).
 *
 * Also the server's limits (backpressure on a client that pipelines and
 * never reads, calls in flight, the connection cap, the idle timeout), its
 * survival of SIGPIPE, and a zero-copy reply that cannot be queued (rpc.c
 * is built into this program with -DFTI_TEST_HOOKS for that).
 *
 * Handlers run on the loop thread; the test thread touches loop state only
 * through run_on_loop() (or once the loop has stopped).  Counters the test
 * thread polls are atomics.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <event2/thread.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/net.h"
#include "control/proto/ftmpi.pb-c.h"
#include "base/rpc.h"
#include "base/util.h"
#include "control/message.h"

#ifndef FTI_TEST_HOOKS
#error "test_rpc needs rpc.c built with -DFTI_TEST_HOOKS (see src/base/Makefile.inc)"
#endif

#define MAX_FRAME (8u << 20)
#define CALL_MS 5000
#define SLACK_MS 1000 /* scheduling slack on a loaded 2-core machine */
#define REF_BUF_LEN (64u << 20)

/* Methods of the test server. */
enum {
    M_ECHO = 100,  /* reply = request */
    M_MSG,         /* QuorumMember in, Quorum out (quorum_id = 2 * step) */
    M_DEFER,       /* u32 delay_ms + data: reply data from an evtimer later */
    M_HOLD,        /* never answered until the test says so */
    M_SIZED,       /* u32 n: reply n pattern bytes */
    M_BADMSG,      /* reply_error(FT_ERR_BAD_MESSAGE) */
    M_REF,         /* u32 n: reply_ref of the first n bytes of the ref buffer */
    M_REF_HOLD,    /* held; answered with reply_ref by the test */
    M_REF_WATCH,   /* u32 n: reply_ref_watch of the first n bytes of the ref buffer */
    M_UNKNOWN = 999
};

typedef struct fx fx_t;

/* A call held on the loop thread (M_DEFER, M_HOLD, M_REF_HOLD). */
typedef struct held {
    fx_t *f;
    fti_rpc_call_h call;
    uint16_t method;
    struct event *timer; /* M_DEFER only */
    uint8_t data[64];
    size_t len;
    struct held *next;
} held_t;

struct fx {
    struct event_base *base;
    fti_rpc_server_h rpc;
    pthread_t loop;
    int running;
    char addr[128];
    held_t *held;       /* loop thread only */
    atomic_int n_held;  /* entries in held */
    atomic_int deferred_sent;
    atomic_int ref_done;
    uint8_t *ref_buf;   /* REF_BUF_LEN bytes, read-only once set up */
    /* watched replies (reply_ref_watch), in the order queued: written on
     * the loop thread, read after their done (ref_done) */
    struct watched {
        fx_t *f;
        size_t len;
        size_t last;    /* the last n of sent */
        int calls;      /* sent calls */
        int bad;        /* an n that did not grow, grew by more than a send, or passed len */
        size_t at_done; /* last when done came */
    } w[8];
    int n_w;
};

static uint8_t pattern_byte(size_t i)
{
    return (uint8_t)(i * 7 + 3 + (i >> 8));
}

/* ---- loop thread helpers -------------------------------------------------- */

static void *loop_main(void *arg)
{
    fx_t *f = arg;
    event_base_loop(f->base, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

struct loop_job {
    void (*fn)(fx_t *, void *);
    fx_t *f;
    void *arg;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int done;
};

static void loop_job_cb(evutil_socket_t fd, short what, void *arg)
{
    struct loop_job *j = arg;
    (void)fd;
    (void)what;
    j->fn(j->f, j->arg);
    pthread_mutex_lock(&j->mu);
    j->done = 1;
    pthread_cond_signal(&j->cv);
    pthread_mutex_unlock(&j->mu);
}

/* Runs fn(f, arg) on the loop thread and waits for it. */
static void run_on_loop(fx_t *f, void (*fn)(fx_t *, void *), void *arg)
{
    struct loop_job j = {fn, f, arg, PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0};
    struct timeval now = {0, 0};
    assert_int_equal(event_base_once(f->base, -1, EV_TIMEOUT, loop_job_cb, &j, &now), 0);
    int64_t deadline = fti_now_ms() + 10000;
    pthread_mutex_lock(&j.mu);
    while (!j.done && fti_now_ms() < deadline) {
        pthread_mutex_unlock(&j.mu);
        fti_sleep_ms(1);
        pthread_mutex_lock(&j.mu);
    }
    int done = j.done;
    pthread_mutex_unlock(&j.mu);
    if (!done) {
        /* the job still points at this frame: nothing sane is left to do */
        fprintf(stderr, "test_rpc: the loop thread did not run a job in 10 s\n");
        abort();
    }
}

static void stats_job(fx_t *f, void *arg)
{
    fti_rpc_server_stats(f->rpc, arg);
}

static fti_rpc_stats_t get_stats(fx_t *f)
{
    fti_rpc_stats_t st;
    memset(&st, 0, sizeof(st));
    if (f->running)
        run_on_loop(f, stats_job, &st);
    else
        fti_rpc_server_stats(f->rpc, &st);
    return st;
}

/* Polls cond every 2 ms for up to ms milliseconds; fails the test if it
 * never holds. */
#define WAIT_FOR(cond, ms)                                                                         \
    do {                                                                                           \
        int64_t _dl = fti_now_ms() + (ms);                                                         \
        while (!(cond) && fti_now_ms() < _dl)                                                      \
            fti_sleep_ms(2);                                                                       \
        if (!(cond))                                                                               \
            fail_msg("%s:%d: timed out waiting for %s", __FILE__, __LINE__, #cond);                \
    } while (0)

/* ---- handlers (loop thread) ----------------------------------------------- */

static void h_echo(fti_rpc_call_h call, const uint8_t *p, size_t len, void *arg)
{
    (void)arg;
    fti_rpc_reply(call, p, len);
}

static void h_msg(fti_rpc_call_h call, const uint8_t *p, size_t len, void *arg)
{
    (void)arg;
    Ftmpi__QuorumMember *m = ftmpi__quorum_member__unpack(NULL, len, p);
    if (m == NULL) {
        fti_rpc_reply_error(call, FT_ERR_BAD_MESSAGE, "payload is not a QuorumMember");
        return;
    }
    Ftmpi__Quorum q = FTMPI__QUORUM__INIT;
    Ftmpi__QuorumMember *parts[1] = {m};
    q.quorum_id = 2 * m->step;
    q.n_participants = 1;
    q.participants = parts;
    q.created_ms = 12345;
    fti_rpc_reply_msg(call, &q.base);
    ftmpi__quorum_member__free_unpacked(m, NULL);
}

static uint32_t get_u32(const uint8_t *p, size_t len)
{
    uint32_t v = 0;
    if (len >= 4) {
        memcpy(&v, p, 4);
        v = ntohl(v);
    }
    return v;
}

static void held_remove(fx_t *f, held_t *h)
{
    for (held_t **pp = &f->held; *pp; pp = &(*pp)->next) {
        if (*pp == h) {
            *pp = h->next;
            atomic_fetch_sub(&f->n_held, 1);
            return;
        }
    }
}

static void defer_fire(evutil_socket_t fd, short what, void *arg)
{
    held_t *h = arg;
    fx_t *f = h->f;
    (void)fd;
    (void)what;
    held_remove(f, h);
    if (fti_rpc_reply(h->call, h->data, h->len) == FT_SUCCESS)
        atomic_fetch_add(&f->deferred_sent, 1);
    event_free(h->timer);
    free(h);
}

static held_t *hold(fx_t *f, fti_rpc_call_h call, const uint8_t *p, size_t len)
{
    held_t *h = calloc(1, sizeof(*h));
    if (h == NULL) {
        fti_rpc_reply_error(call, FT_ERR_NO_MEMORY, "test: no memory");
        return NULL;
    }
    h->f = f;
    h->call = call;
    h->method = fti_rpc_call_method(call);
    h->len = len < sizeof(h->data) ? len : sizeof(h->data);
    if (h->len)
        memcpy(h->data, p, h->len);
    h->next = f->held;
    f->held = h;
    atomic_fetch_add(&f->n_held, 1);
    return h;
}

static void h_defer(fti_rpc_call_h call, const uint8_t *p, size_t len, void *arg)
{
    fx_t *f = arg;
    uint32_t ms = get_u32(p, len);
    held_t *h = hold(f, call, len >= 4 ? p + 4 : p, len >= 4 ? len - 4 : 0);
    if (h == NULL)
        return;
    h->timer = evtimer_new(f->base, defer_fire, h);
    struct timeval tv = {ms / 1000, (ms % 1000) * 1000};
    evtimer_add(h->timer, &tv);
}

static void h_hold(fti_rpc_call_h call, const uint8_t *p, size_t len, void *arg)
{
    hold(arg, call, p, len);
}

static void h_sized(fti_rpc_call_h call, const uint8_t *p, size_t len, void *arg)
{
    (void)arg;
    uint32_t n = get_u32(p, len);
    uint8_t *buf = malloc(n ? n : 1);
    if (buf == NULL) {
        fti_rpc_reply_error(call, FT_ERR_NO_MEMORY, "test: no memory");
        return;
    }
    for (uint32_t i = 0; i < n; i++)
        buf[i] = pattern_byte(i);
    fti_rpc_reply(call, buf, n);
    free(buf);
}

static void h_badmsg(fti_rpc_call_h call, const uint8_t *p, size_t len, void *arg)
{
    (void)p;
    (void)len;
    (void)arg;
    fti_rpc_reply_error(call, FT_ERR_BAD_MESSAGE, "cannot decode");
}

static void ref_done_cb(void *arg)
{
    fx_t *f = arg;
    atomic_fetch_add(&f->ref_done, 1);
}

static void h_ref(fti_rpc_call_h call, const uint8_t *p, size_t len, void *arg)
{
    fx_t *f = arg;
    uint32_t n = get_u32(p, len);
    if (n > REF_BUF_LEN) {
        fti_rpc_reply_error(call, FT_ERR_ARG, "too large");
        return;
    }
    fti_rpc_reply_ref(call, f->ref_buf, n, ref_done_cb, f);
}

static void watch_sent_cb(void *arg, size_t n)
{
    struct watched *w = arg;
    w->bad |= n <= w->last || n - w->last > FTI_RPC_WATCH_SEND || n > w->len;
    w->last = n;
    w->calls++;
}

static void watch_done_cb(void *arg)
{
    struct watched *w = arg;
    w->at_done = w->last;
    atomic_fetch_add(&w->f->ref_done, 1);
}

/* reply_ref_watch of the first n bytes of the ref buffer, recorded in the
 * next free f->w (loop thread). */
static int reply_watched(fx_t *f, fti_rpc_call_h call, size_t n)
{
    if (f->n_w == (int)(sizeof(f->w) / sizeof(f->w[0])))
        return fti_rpc_reply_error(call, FT_ERR_NO_MEMORY, "test: no watch slot left");
    struct watched *w = &f->w[f->n_w++];
    *w = (struct watched){.f = f, .len = n};
    return fti_rpc_reply_ref_watch(call, f->ref_buf, n, watch_done_cb, watch_sent_cb, w);
}

static void h_ref_watch(fti_rpc_call_h call, const uint8_t *p, size_t len, void *arg)
{
    uint32_t n = get_u32(p, len);
    if (n > REF_BUF_LEN)
        fti_rpc_reply_error(call, FT_ERR_ARG, "too large");
    else
        reply_watched(arg, call, n);
}

static const fti_rpc_method_t test_methods[] = {
    {M_ECHO, h_echo},   {M_MSG, h_msg},       {M_DEFER, h_defer}, {M_HOLD, h_hold},
    {M_SIZED, h_sized}, {M_BADMSG, h_badmsg}, {M_REF, h_ref},     {M_REF_HOLD, h_hold},
    {M_REF_WATCH, h_ref_watch},
};

/* ---- fixture -------------------------------------------------------------- */

static int fx_setup_cfg(void **state, const fti_rpc_server_config_t *cfg)
{
    fx_t *f = calloc(1, sizeof(*f));
    if (f == NULL)
        return -1;
    f->ref_buf = calloc(1, REF_BUF_LEN); /* zero pages past the first MiB */
    f->base = event_base_new();
    if (f->ref_buf == NULL || f->base == NULL)
        return -1;
    for (size_t i = 0; i < (1u << 20) && f->ref_buf; i++)
        f->ref_buf[i] = pattern_byte(i * 3);
    if (fti_rpc_server_create_cfg(f->base, "127.0.0.1:0", cfg, test_methods,
                                  FTI_ARRAY_SIZE(test_methods), f, &f->rpc) != FT_SUCCESS)
        return -1;
    fti_strlcpy(f->addr, fti_rpc_server_address(f->rpc), sizeof(f->addr));
    if (strncmp(f->addr, "127.0.0.1:", 10) != 0 || strcmp(f->addr, "127.0.0.1:0") == 0)
        return -1;
    if (pthread_create(&f->loop, NULL, loop_main, f) != 0)
        return -1;
    f->running = 1;
    *state = f;
    return 0;
}

/* The server with the default limits (as ranks and the lighthouse run it). */
static int fx_setup(void **state)
{
    fti_rpc_server_config_t cfg;
    fti_rpc_server_config_init(&cfg, MAX_FRAME);
    return fx_setup_cfg(state, &cfg);
}

/* Small limits, so that tests reach them quickly (no idle timeout: a
 * loaded machine must not close connections under these tests). */
#define LIM_CONNS 4
#define LIM_HIGH (256u << 10)
#define LIM_LOW (64u << 10)
#define LIM_CALLS 8
#define LIM_IDLE_MS 400

static int fx_setup_limits(void **state)
{
    fti_rpc_server_config_t cfg;
    fti_rpc_server_config_init(&cfg, MAX_FRAME);
    cfg.max_conns = LIM_CONNS;
    cfg.out_high_water = LIM_HIGH;
    cfg.out_low_water = LIM_LOW;
    cfg.max_calls = LIM_CALLS;
    cfg.idle_ms = 0;
    return fx_setup_cfg(state, &cfg);
}

/* Default limits but a short idle timeout. */
static int fx_setup_idle(void **state)
{
    fti_rpc_server_config_t cfg;
    fti_rpc_server_config_init(&cfg, MAX_FRAME);
    cfg.idle_ms = LIM_IDLE_MS;
    return fx_setup_cfg(state, &cfg);
}

/* Answers every held call (error) and frees its timer. */
static void release_held(fx_t *f, void *arg)
{
    (void)arg;
    while (f->held) {
        held_t *h = f->held;
        held_remove(f, h);
        if (h->timer)
            event_free(h->timer);
        fti_rpc_reply_error(h->call, FT_ERR_PROC_FAILED, "test teardown");
        free(h);
    }
}

static void fx_stop_loop(fx_t *f)
{
    if (!f->running)
        return;
    event_base_loopbreak(f->base);
    pthread_join(f->loop, NULL);
    f->running = 0;
}

static int fx_teardown(void **state)
{
    fx_t *f = *state;
    if (f->running)
        run_on_loop(f, release_held, NULL);
    fx_stop_loop(f);
    release_held(f, NULL);
    fti_rpc_server_destroy(f->rpc);
    event_base_free(f->base);
    free(f->ref_buf);
    free(f);
    return 0;
}

/* ---- client helpers ------------------------------------------------------- */

static fti_rpc_client_h new_client(fx_t *f, size_t max_reply)
{
    fti_rpc_client_h c = NULL;
    assert_int_equal(fti_rpc_client_create(f->addr, NULL, 2000, max_reply, &c), FT_SUCCESS);
    assert_non_null(c);
    assert_string_equal(fti_rpc_client_address(c), f->addr);
    return c;
}

static void u32_req(uint8_t out[4], uint32_t v)
{
    v = htonl(v);
    memcpy(out, &v, 4);
}

/* Echo call that must succeed and give back exactly the request. */
static void echo_ok(fti_rpc_client_h c, const void *req, size_t len)
{
    void *rep = NULL;
    size_t rlen = 0;
    int rc = fti_rpc_call(c, M_ECHO, req, len, CALL_MS, &rep, &rlen);
    if (rc != FT_SUCCESS)
        fail_msg("echo of %zu bytes: %s", len, FT_Error_string(rc));
    assert_int_equal(rlen, len);
    if (len)
        assert_memory_equal(rep, req, len);
    free(rep);
}

/* ---- raw socket helpers --------------------------------------------------- */

static int raw_connect(fx_t *f)
{
    int fd = -1;
    assert_int_equal(fti_tcp_connect(f->addr, fti_now_ms() + 2000, &fd), FT_SUCCESS);
    return fd;
}

static void raw_frame(int fd, uint32_t magic, uint16_t flags, uint16_t method, int32_t status,
                      uint32_t length, const void *payload, size_t plen)
{
    fti_rpc_header_t h = {magic, flags, method, status, length};
    uint8_t *buf = malloc(FTI_RPC_HEADER_LEN + plen);
    assert_non_null(buf);
    fti_rpc_header_encode(&h, buf);
    if (plen)
        memcpy(buf + FTI_RPC_HEADER_LEN, payload, plen);
    /* one write, so the server reads the frame at once */
    assert_int_equal(fti_write_full(fd, buf, FTI_RPC_HEADER_LEN + plen, fti_now_ms() + 2000),
                     FT_SUCCESS);
    free(buf);
}

/* Reads until the peer closes or ms pass; returns the bytes read and sets
 * *eof_p when the peer closed. */
static size_t raw_read_all(int fd, uint8_t *buf, size_t cap, int ms, int *eof_p)
{
    size_t got = 0;
    int64_t deadline = fti_now_ms() + ms;
    *eof_p = 0;
    for (;;) {
        ssize_t n = recv(fd, buf + got, cap - got, 0);
        if (n > 0) {
            got += (size_t)n;
            if (got == cap)
                return got;
            continue;
        }
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
            *eof_p = 1;
            return got;
        }
        struct pollfd p = {fd, POLLIN, 0};
        int left = fti_ms_left(deadline);
        if (left == 0 || poll(&p, 1, left) == 0)
            return got;
    }
}

/* Reads one reply frame header (and its payload into msg, cut to msgcap). */
static fti_rpc_header_t raw_reply(int fd, char *msg, size_t msgcap)
{
    uint8_t hdr[FTI_RPC_HEADER_LEN];
    fti_rpc_header_t h;
    assert_int_equal(fti_read_full(fd, hdr, sizeof(hdr), fti_now_ms() + 3000), FT_SUCCESS);
    fti_rpc_header_decode(hdr, &h);
    assert_int_equal(h.magic, FTI_RPC_MAGIC);
    assert_true(h.flags & FTI_RPC_F_REPLY);
    assert_true(h.length < 1u << 20);
    char *tmp = malloc(h.length + 1);
    assert_non_null(tmp);
    assert_int_equal(fti_read_full(fd, tmp, h.length, fti_now_ms() + 3000), FT_SUCCESS);
    tmp[h.length] = '\0';
    if (msg)
        snprintf(msg, msgcap, "%s", tmp);
    free(tmp);
    return h;
}

/* ======================================================================== */
/* net                                                                      */
/* ======================================================================== */

static void test_addr_split(void **state)
{
    (void)state;
    char host[64];
    int port = -7;
    assert_int_equal(fti_addr_split("h:1", host, sizeof(host), &port), FT_SUCCESS);
    assert_string_equal(host, "h");
    assert_int_equal(port, 1);
    assert_int_equal(fti_addr_split("[::1]:80", host, sizeof(host), &port), FT_SUCCESS);
    assert_string_equal(host, "::1");
    assert_int_equal(port, 80);
    assert_int_equal(fti_addr_split("127.0.0.1:0", host, sizeof(host), &port), FT_SUCCESS);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(port, 0);
    assert_int_equal(fti_addr_split("node-17.cluster:65535", host, sizeof(host), &port),
                     FT_SUCCESS);
    assert_string_equal(host, "node-17.cluster");
    assert_int_equal(port, 65535);
    assert_int_equal(fti_addr_split("[fe80::1%lo]:29510", host, sizeof(host), &port), FT_SUCCESS);
    assert_string_equal(host, "fe80::1%lo");
    assert_int_equal(port, 29510);
    /* the host fits exactly (3 chars + NUL in 4) */
    assert_int_equal(fti_addr_split("abc:9", host, 4, &port), FT_SUCCESS);
    assert_string_equal(host, "abc");

    const char *bad[] = {"nocolon", "h:",   "h:99999", ":80",   "",     "[::1]", "[::1]80",
                         "[]:80",   "[::1", "h:-1",    "h:1x",  "h:0x50", "h: 80", "h:+80",
                         "h:80 ",   "[::1]:", "h:65536"};
    for (size_t i = 0; i < FTI_ARRAY_SIZE(bad); i++) {
        strcpy(host, "untouched");
        port = -7;
        if (fti_addr_split(bad[i], host, sizeof(host), &port) != FT_ERR_ARG)
            fail_msg("'%s' was accepted (host '%s' port %d)", bad[i], host, port);
        assert_string_equal(host, "untouched");
        assert_int_equal(port, -7);
    }
    assert_int_equal(fti_addr_split(NULL, host, sizeof(host), &port), FT_ERR_ARG);
    assert_int_equal(fti_addr_split("abcd:9", host, 4, &port), FT_ERR_ARG); /* host too long */
}

/* "host:0" for an ephemeral port: bare IPv6 literals get brackets, once. */
static void test_addr_any_port(void **state)
{
    (void)state;
    char buf[32];
    assert_int_equal(fti_addr_any_port(buf, sizeof(buf), "127.0.0.1"), FT_SUCCESS);
    assert_string_equal(buf, "127.0.0.1:0");
    assert_int_equal(fti_addr_any_port(buf, sizeof(buf), "::1"), FT_SUCCESS);
    assert_string_equal(buf, "[::1]:0");
    assert_int_equal(fti_addr_any_port(buf, sizeof(buf), "[::1]"), FT_SUCCESS);
    assert_string_equal(buf, "[::1]:0");
    assert_int_equal(fti_addr_any_port(buf, sizeof(buf), "node-17"), FT_SUCCESS);
    assert_string_equal(buf, "node-17:0");
    assert_int_equal(fti_addr_any_port(buf, 6, "node-17"), FT_ERR_ARG); /* does not fit */
}

static void test_listen_and_name(void **state)
{
    (void)state;
    int fd = -1;
    char name[128], host[64];
    int port = 0;
    assert_int_equal(fti_tcp_listen("127.0.0.1:0", 4, &fd), FT_SUCCESS);
    assert_int_equal(fti_sock_name(fd, name, sizeof(name)), FT_SUCCESS);
    assert_int_equal(fti_addr_split(name, host, sizeof(host), &port), FT_SUCCESS);
    assert_string_equal(host, "127.0.0.1");
    assert_true(port > 0);
    /* the same port cannot be bound twice while listening */
    int fd2 = -1;
    assert_int_not_equal(fti_tcp_listen(name, 4, &fd2), FT_SUCCESS);
    close(fd);
    assert_int_equal(fti_tcp_listen("not-an-address", 4, &fd2), FT_ERR_ARG);
    /* IPv6 loopback, where the kernel has it */
    if (fti_tcp_listen("[::1]:0", 4, &fd2) == FT_SUCCESS) {
        assert_int_equal(fti_sock_name(fd2, name, sizeof(name)), FT_SUCCESS);
        assert_int_equal(strncmp(name, "[::1]:", 6), 0);
        int c = -1;
        assert_int_equal(fti_tcp_connect(name, fti_now_ms() + 2000, &c), FT_SUCCESS);
        close(c);
        close(fd2);
    }
}

/* A port nothing listens on (bound and closed again). */
static void closed_port_addr(char *buf, size_t len)
{
    int fd = -1;
    assert_int_equal(fti_tcp_listen("127.0.0.1:0", 1, &fd), FT_SUCCESS);
    assert_int_equal(fti_sock_name(fd, buf, len), FT_SUCCESS);
    close(fd);
}

static void test_connect_refused(void **state)
{
    (void)state;
    char addr[64];
    int fd = -1;
    closed_port_addr(addr, sizeof(addr));
    int64_t t0 = fti_now_ms();
    assert_int_equal(fti_tcp_connect(addr, fti_now_ms() + 2000, &fd), FT_ERR_CONNECT);
    assert_int_equal(fti_tcp_connect("no-such-host.invalid:1", fti_now_ms() + 2000, &fd),
                     FT_ERR_CONNECT);
    assert_true(fti_now_ms() - t0 < 2000);
    assert_int_equal(fd, -1);
}

/* Reads and writes against a listener that never accepts (the kernel
 * completes the handshake, nobody reads), an accept with nobody
 * connecting, and a connect to a listener whose backlog is full. */
static void test_deadlines(void **state)
{
    (void)state;
    int lfd = -1, fd = -1, afd = -1;
    char addr[64];
    assert_int_equal(fti_tcp_listen("127.0.0.1:0", 1, &lfd), FT_SUCCESS);
    assert_int_equal(fti_sock_name(lfd, addr, sizeof(addr)), FT_SUCCESS);

    /* accept with nothing pending */
    int64_t t0 = fti_now_ms();
    assert_int_equal(fti_tcp_accept(lfd, t0 + 150, &afd), FT_ERR_TIMEOUT);
    int64_t dt = fti_now_ms() - t0;
    assert_true(dt >= 145 && dt < 150 + SLACK_MS);

    /* read deadline */
    assert_int_equal(fti_tcp_connect(addr, fti_now_ms() + 2000, &fd), FT_SUCCESS);
    char byte;
    t0 = fti_now_ms();
    assert_int_equal(fti_read_full(fd, &byte, 1, t0 + 200), FT_ERR_TIMEOUT);
    dt = fti_now_ms() - t0;
    assert_true(dt >= 195 && dt < 200 + SLACK_MS);
    /* a deadline already past returns at once */
    t0 = fti_now_ms();
    assert_int_equal(fti_read_full(fd, &byte, 1, t0 - 10), FT_ERR_TIMEOUT);
    assert_true(fti_now_ms() - t0 < 100);
    /* zero bytes need no time at all */
    assert_int_equal(fti_read_full(fd, &byte, 0, t0 - 10), FT_SUCCESS);

    /* write deadline: far more than the socket buffers hold */
    size_t big = 64u << 20;
    char *buf = calloc(1, big);
    assert_non_null(buf);
    t0 = fti_now_ms();
    assert_int_equal(fti_write_full(fd, buf, big, t0 + 300), FT_ERR_TIMEOUT);
    dt = fti_now_ms() - t0;
    assert_true(dt >= 295 && dt < 300 + SLACK_MS);

    /* the accepted peer closes: reads and writes fail with PROC_FAILED */
    assert_int_equal(fti_tcp_accept(lfd, fti_now_ms() + 2000, &afd), FT_SUCCESS);
    close(afd);
    int rc = FT_SUCCESS;
    for (int i = 0; i < 20 && rc == FT_SUCCESS; i++)
        rc = fti_write_full(fd, buf, 1 << 20, fti_now_ms() + 2000);
    assert_int_equal(rc, FT_ERR_PROC_FAILED);
    close(fd);

    int a = -1, b = -1;
    assert_int_equal(fti_tcp_connect(addr, fti_now_ms() + 2000, &a), FT_SUCCESS);
    assert_int_equal(fti_tcp_accept(lfd, fti_now_ms() + 2000, &b), FT_SUCCESS);
    assert_int_equal(fti_write_full(b, "xy", 2, fti_now_ms() + 2000), FT_SUCCESS);
    close(b);
    char two[3];
    assert_int_equal(fti_read_full(a, two, 3, fti_now_ms() + 2000), FT_ERR_PROC_FAILED);
    close(a);
    free(buf);

    /* a full backlog: the kernel drops further SYNs, so some connect must
     * hit its deadline (and none may take much longer than it) */
    int fds[16], n = 0, timed_out = 0;
    for (; n < 16 && !timed_out; n++) {
        t0 = fti_now_ms();
        rc = fti_tcp_connect(addr, t0 + 200, &fds[n]);
        dt = fti_now_ms() - t0;
        assert_true(dt < 200 + SLACK_MS);
        if (rc == FT_ERR_TIMEOUT)
            timed_out = 1;
        else
            assert_int_equal(rc, FT_SUCCESS);
    }
    assert_true(timed_out);
    for (int i = 0; i < n - 1; i++)
        close(fds[i]);
    close(lfd);
}

/* ======================================================================== */
/* rpc                                                                      */
/* ======================================================================== */

static void test_header_round_trip(void **state)
{
    (void)state;
    const fti_rpc_header_t cases[] = {
        {FTI_RPC_MAGIC, 0, 0, 0, 0},
        {FTI_RPC_MAGIC, FTI_RPC_F_REPLY, 31, FT_ERR_BAD_MESSAGE, 16u << 20},
        {0xffffffffu, 0xffff, 0xffff, INT32_MIN, 0xffffffffu},
        {0, 0, 0, INT32_MAX, 1},
        {0x01020304u, 0x0506, 0x0708, 0x090a0b0c, 0x0d0e0f10u},
    };
    for (size_t i = 0; i < FTI_ARRAY_SIZE(cases); i++) {
        uint8_t buf[FTI_RPC_HEADER_LEN];
        fti_rpc_header_t out;
        memset(&out, 0x55, sizeof(out));
        fti_rpc_header_encode(&cases[i], buf);
        fti_rpc_header_decode(buf, &out);
        assert_int_equal(out.magic, cases[i].magic);
        assert_int_equal(out.flags, cases[i].flags);
        assert_int_equal(out.method, cases[i].method);
        assert_int_equal(out.status, cases[i].status);
        assert_int_equal(out.length, cases[i].length);
    }
    /* the byte layout is network order, fields in the documented order */
    uint8_t buf[FTI_RPC_HEADER_LEN];
    fti_rpc_header_encode(&cases[4], buf);
    for (int i = 0; i < 16; i++)
        assert_int_equal(buf[i], i + 1);
    fti_rpc_header_encode(&cases[0], buf);
    assert_memory_equal(buf, "FTM1", 4);
    fti_rpc_header_t neg = {FTI_RPC_MAGIC, 1, 2, -1, 3}, back;
    fti_rpc_header_encode(&neg, buf);
    assert_memory_equal(buf + 8, "\xff\xff\xff\xff", 4);
    fti_rpc_header_decode(buf, &back);
    assert_int_equal(back.status, -1);
}

static void test_echo_sizes(void **state)
{
    fx_t *f = *state;
    fti_rpc_client_h c = new_client(f, MAX_FRAME);
    const size_t sizes[] = {0, 1, 15, 16, 17, 4095, 4096, 4097, 100000, 4u << 20, MAX_FRAME};
    uint8_t *buf = malloc(MAX_FRAME);
    assert_non_null(buf);
    for (size_t i = 0; i < MAX_FRAME; i++)
        buf[i] = pattern_byte(i + 11);
    for (size_t i = 0; i < FTI_ARRAY_SIZE(sizes); i++)
        echo_ok(c, buf, sizes[i]);
    free(buf);
    fti_rpc_stats_t st = get_stats(f);
    assert_int_equal(st.connections, 1); /* one connection for every call */
    assert_int_equal(st.requests, FTI_ARRAY_SIZE(sizes));
    assert_int_equal(st.rejected_garbage + st.rejected_oversize + st.rejected_truncated +
                         st.rejected_unknown + st.rejected_decode,
                     0);
    fti_rpc_client_destroy(c);
    fti_rpc_client_destroy(NULL);
}

static void test_call_msg(void **state)
{
    fx_t *f = *state;
    fti_rpc_client_h c = new_client(f, MAX_FRAME);
    Ftmpi__QuorumMember m = FTMPI__QUORUM_MEMBER__INIT;
    uint8_t blob[3000];
    for (size_t i = 0; i < sizeof(blob); i++)
        blob[i] = pattern_byte(i);
    m.replica_id = "g7";
    m.address = "127.0.0.1:4000";
    m.step = 41;
    m.world_size = 4;
    m.shrink_only = 1;
    m.data.data = blob;
    m.data.len = sizeof(blob); /* packs over the 1024-byte stack buffer */
    ProtobufCMessage *resp = NULL;
    assert_int_equal(fti_rpc_call_msg(c, M_MSG, &m.base, &ftmpi__quorum__descriptor, CALL_MS, &resp),
                     FT_SUCCESS);
    Ftmpi__Quorum *q = (Ftmpi__Quorum *)resp;
    assert_int_equal(q->quorum_id, 82);
    assert_int_equal(q->created_ms, 12345);
    assert_int_equal(q->n_participants, 1);
    assert_string_equal(q->participants[0]->replica_id, "g7");
    assert_string_equal(q->participants[0]->address, "127.0.0.1:4000");
    assert_int_equal(q->participants[0]->world_size, 4);
    assert_true(q->participants[0]->shrink_only);
    assert_int_equal(q->participants[0]->data.len, sizeof(blob));
    assert_memory_equal(q->participants[0]->data.data, blob, sizeof(blob));
    protobuf_c_message_free_unpacked(resp, NULL);

    /* a small message too (fits the stack buffers) */
    m.data.len = 0;
    m.step = 0;
    resp = NULL;
    assert_int_equal(fti_rpc_call_msg(c, M_MSG, &m.base, &ftmpi__quorum__descriptor, CALL_MS, &resp),
                     FT_SUCCESS);
    assert_int_equal(((Ftmpi__Quorum *)resp)->quorum_id, 0);
    protobuf_c_message_free_unpacked(resp, NULL);

    /* a reply that does not decode as the expected message */
    resp = (ProtobufCMessage *)0x1;
    uint8_t req[4];
    u32_req(req, 7);
    void *raw = NULL;
    size_t rlen = 0;
    assert_int_equal(fti_rpc_call(c, M_SIZED, req, 4, CALL_MS, &raw, &rlen), FT_SUCCESS);
    free(raw);
    Ftmpi__LighthouseQuorumRequest lq = FTMPI__LIGHTHOUSE_QUORUM_REQUEST__INIT;
    lq.requester = &m;
    /* echo of a LighthouseQuorumRequest read as a Quorum: field 1 (the
     * requester, a message) is not the int64 quorum_id, so it must fail */
    assert_int_equal(fti_rpc_call_msg(c, M_ECHO, &lq.base, &ftmpi__quorum__descriptor, CALL_MS,
                                      &resp),
                     FT_ERR_BAD_MESSAGE);
    assert_ptr_equal(resp, (ProtobufCMessage *)0x1); /* untouched */
    echo_ok(c, "still fine", 10);
    assert_int_equal(get_stats(f).connections, 1);
    fti_rpc_client_destroy(c);
}

/* A payload that does not decode: the handler replies FT_ERR_BAD_MESSAGE,
 * it is counted as a decode reject and the connection stays usable. */
static void test_decode_reject(void **state)
{
    fx_t *f = *state;
    fti_rpc_client_h c = new_client(f, MAX_FRAME);
    void *rep = (void *)0x1;
    size_t rlen = 99;
    assert_int_equal(fti_rpc_call(c, M_MSG, "\xff\xff\xff\xff", 4, CALL_MS, &rep, &rlen),
                     FT_ERR_BAD_MESSAGE);
    assert_ptr_equal(rep, (void *)0x1);
    assert_int_equal(rlen, 99);
    assert_int_equal(fti_rpc_call(c, M_BADMSG, "x", 1, CALL_MS, &rep, &rlen), FT_ERR_BAD_MESSAGE);
    echo_ok(c, "after", 5);
    fti_rpc_stats_t st = get_stats(f);
    assert_int_equal(st.rejected_decode, 2);
    assert_int_equal(st.connections, 1);
    assert_int_equal(st.requests, 3);
    fti_rpc_client_destroy(c);
}

/* fti_rpc_unpack refuses what protobuf-c decodes but cannot encode again
 * (tests/fuzz/corpus/client/regress-tag0), and takes what it can. */
static void test_unpack_reencodable(void **state)
{
    (void)state;
    /* field 1 (quorum), holding an unknown field numbered 0 whose tag is
     * written in two bytes (0x80 0x00), varint value 10 */
    static const uint8_t tag0[] = {0x0a, 0x03, 0x80, 0x00, 0x0a};
    ProtobufCMessage *m = protobuf_c_message_unpack(
        &ftmpi__lighthouse_quorum_response__descriptor, NULL, sizeof(tag0), tag0);
    assert_non_null(m); /* protobuf-c itself takes it: the check is ours */
    protobuf_c_message_free_unpacked(m, NULL);
    assert_null(fti_rpc_unpack(&ftmpi__lighthouse_quorum_response__descriptor, tag0,
                               sizeof(tag0)));
    /* a well-formed one still decodes: quorum { quorum_id: 7 } */
    static const uint8_t ok[] = {0x0a, 0x02, 0x08, 0x07};
    Ftmpi__LighthouseQuorumResponse *r = (Ftmpi__LighthouseQuorumResponse *)fti_rpc_unpack(
        &ftmpi__lighthouse_quorum_response__descriptor, ok, sizeof(ok));
    assert_non_null(r);
    assert_non_null(r->quorum);
    assert_int_equal(r->quorum->quorum_id, 7);
    ftmpi__lighthouse_quorum_response__free_unpacked(r, NULL);
}

/* Deferred replies come from an evtimer on the loop thread; the loop keeps
 * serving other clients meanwhile. */
struct defer_job {
    fx_t *f;
    uint32_t ms;
    const char *text;
    int timeout_ms;
    int rc;
    int64_t elapsed;
    char reply[64];
};

static void *defer_thread(void *arg)
{
    struct defer_job *j = arg;
    fti_rpc_client_h c = NULL;
    uint8_t req[64];
    size_t n = strlen(j->text);
    u32_req(req, j->ms);
    memcpy(req + 4, j->text, n);
    j->rc = fti_rpc_client_create(j->f->addr, NULL, 2000, 1024, &c);
    if (j->rc != FT_SUCCESS)
        return NULL;
    void *rep = NULL;
    size_t rlen = 0;
    int64_t t0 = fti_now_ms();
    j->rc = fti_rpc_call(c, M_DEFER, req, 4 + n, j->timeout_ms, &rep, &rlen);
    j->elapsed = fti_now_ms() - t0;
    if (j->rc == FT_SUCCESS) {
        snprintf(j->reply, sizeof(j->reply), "%.*s", (int)rlen, (char *)rep);
        free(rep);
    }
    fti_rpc_client_destroy(c);
    return NULL;
}

static void test_deferred_reply(void **state)
{
    fx_t *f = *state;
    struct defer_job j = {f, 600, "later", CALL_MS, -1, 0, ""};
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, defer_thread, &j), 0);
    WAIT_FOR(atomic_load(&f->n_held) == 1, 2000);
    /* another client is served while the deferred call waits */
    fti_rpc_client_h c = new_client(f, 1024);
    int64_t t0 = fti_now_ms();
    echo_ok(c, "quick", 5);
    assert_true(fti_now_ms() - t0 < 400); /* not queued behind the deferred call */
    assert_int_equal(atomic_load(&f->n_held), 1);
    pthread_join(t, NULL);
    assert_int_equal(j.rc, FT_SUCCESS);
    assert_string_equal(j.reply, "later");
    assert_true(j.elapsed >= 590 && j.elapsed < 600 + SLACK_MS);
    assert_int_equal(atomic_load(&f->deferred_sent), 1);
    assert_int_equal(atomic_load(&f->n_held), 0);
    fti_rpc_client_destroy(c);
}

/* A call that times out returns FT_ERR_TIMEOUT in time; the next call on
 * the same client works, on a new connection, and never sees the late
 * reply of the call that timed out. */
static void test_timeout_then_next_call(void **state)
{
    fx_t *f = *state;
    fti_rpc_client_h c = new_client(f, 1024);
    uint8_t req[64];
    u32_req(req, 400);
    memcpy(req + 4, "stale", 5);
    void *rep = NULL;
    size_t rlen = 0;
    echo_ok(c, "first", 5);

    int64_t t0 = fti_now_ms();
    assert_int_equal(fti_rpc_call(c, M_DEFER, req, 9, 150, &rep, &rlen), FT_ERR_TIMEOUT);
    int64_t dt = fti_now_ms() - t0;
    assert_true(dt >= 145 && dt < 150 + SLACK_MS);
    /* (normally) before the late reply is sent */
    echo_ok(c, "fresh", 5);
    /* after it was due (the server finds the connection gone) */
    fti_sleep_ms(450);
    echo_ok(c, "fresh2", 6);
    assert_int_equal(atomic_load(&f->deferred_sent), 0);

    /* a held call: never answered */
    t0 = fti_now_ms();
    assert_int_equal(fti_rpc_call(c, M_HOLD, "h", 1, 200, &rep, &rlen), FT_ERR_TIMEOUT);
    dt = fti_now_ms() - t0;
    assert_true(dt >= 195 && dt < 200 + SLACK_MS);
    echo_ok(c, "fresh3", 6);
    /* the same through call_into */
    uint8_t into[5];
    assert_int_equal(fti_rpc_call_into(c, M_HOLD, "h", 1, 100, into, sizeof(into)),
                     FT_ERR_TIMEOUT);
    echo_ok(c, "fresh4", 6);

    fti_rpc_stats_t st = get_stats(f);
    assert_int_equal(st.connections, 4); /* one more after each timeout */
    fti_rpc_client_destroy(c);
}

/* A server that accepts nothing at all (a bare listener). */
static void test_timeout_bare_listener(void **state)
{
    (void)state;
    int lfd = -1;
    char addr[64];
    assert_int_equal(fti_tcp_listen("127.0.0.1:0", 16, &lfd), FT_SUCCESS);
    assert_int_equal(fti_sock_name(lfd, addr, sizeof(addr)), FT_SUCCESS);
    fti_rpc_client_h c = NULL;
    assert_int_equal(fti_rpc_client_create(addr, NULL, 1000, 1024, &c), FT_SUCCESS);
    void *rep = NULL;
    size_t rlen = 0;
    for (int i = 0; i < 2; i++) {
        int64_t t0 = fti_now_ms();
        assert_int_equal(fti_rpc_call(c, M_ECHO, "x", 1, 150, &rep, &rlen), FT_ERR_TIMEOUT);
        int64_t dt = fti_now_ms() - t0;
        assert_true(dt >= 145 && dt < 150 + SLACK_MS);
    }
    /* zero or negative timeouts still end */
    assert_int_equal(fti_rpc_call(c, M_ECHO, "x", 1, 0, &rep, &rlen), FT_ERR_TIMEOUT);
    assert_int_equal(fti_rpc_call(c, M_ECHO, "x", 1, -5, &rep, &rlen), FT_ERR_TIMEOUT);
    fti_rpc_client_destroy(c);
    close(lfd);
}

static void test_connect_closed_port(void **state)
{
    (void)state;
    char addr[64];
    closed_port_addr(addr, sizeof(addr));
    fti_rpc_client_h c = NULL;
    assert_int_equal(fti_rpc_client_create(addr, NULL, 1000, 1024, &c), FT_SUCCESS);
    void *rep = NULL;
    size_t rlen = 0;
    uint8_t into[4];
    ProtobufCMessage *resp = NULL;
    Ftmpi__QuorumMember m = FTMPI__QUORUM_MEMBER__INIT;
    int64_t t0 = fti_now_ms();
    assert_int_equal(fti_rpc_call(c, M_ECHO, "x", 1, 2000, &rep, &rlen), FT_ERR_CONNECT);
    assert_int_equal(fti_rpc_call_into(c, M_ECHO, "x", 1, 2000, into, 4), FT_ERR_CONNECT);
    assert_int_equal(fti_rpc_call_msg(c, M_MSG, &m.base, &ftmpi__quorum__descriptor, 2000, &resp),
                     FT_ERR_CONNECT);
    assert_true(fti_now_ms() - t0 < 2000);
    assert_null(resp);
    fti_rpc_client_destroy(c);

    /* addresses that cannot be a client's */
    const char *bad[] = {"nocolon", "h:", ":80", "h:99999", ""};
    for (size_t i = 0; i < FTI_ARRAY_SIZE(bad); i++) {
        c = (fti_rpc_client_h)0x1;
        assert_int_equal(fti_rpc_client_create(bad[i], NULL, 1000, 1024, &c), FT_ERR_ARG);
        assert_ptr_equal(c, (fti_rpc_client_h)0x1);
    }
    assert_int_equal(fti_rpc_client_create(NULL, NULL, 1000, 1024, &c), FT_ERR_ARG);
    char longaddr[300];
    memset(longaddr, 'a', sizeof(longaddr));
    strcpy(longaddr + 250, ":80");
    assert_int_equal(fti_rpc_client_create(longaddr, NULL, 1000, 1024, &c), FT_ERR_ARG);
}

static void test_max_reply(void **state)
{
    fx_t *f = *state;
    fti_rpc_client_h c = new_client(f, 1000);
    uint8_t req[4];
    void *rep = NULL;
    size_t rlen = 0;
    u32_req(req, 1000);
    assert_int_equal(fti_rpc_call(c, M_SIZED, req, 4, CALL_MS, &rep, &rlen), FT_SUCCESS);
    assert_int_equal(rlen, 1000);
    for (size_t i = 0; i < rlen; i++)
        assert_int_equal(((uint8_t *)rep)[i], pattern_byte(i));
    free(rep);
    rep = (void *)0x1;
    u32_req(req, 1001);
    assert_int_equal(fti_rpc_call(c, M_SIZED, req, 4, CALL_MS, &rep, &rlen), FT_ERR_BAD_MESSAGE);
    assert_ptr_equal(rep, (void *)0x1);
    u32_req(req, 5u << 20);
    assert_int_equal(fti_rpc_call(c, M_SIZED, req, 4, CALL_MS, &rep, &rlen), FT_ERR_BAD_MESSAGE);
    /* the next call is not confused by the unread reply */
    echo_ok(c, "next", 4);
    u32_req(req, 0);
    assert_int_equal(fti_rpc_call(c, M_SIZED, req, 4, CALL_MS, &rep, &rlen), FT_SUCCESS);
    assert_int_equal(rlen, 0);
    free(rep);
    fti_rpc_client_destroy(c);
}

static void test_call_into(void **state)
{
    fx_t *f = *state;
    fti_rpc_client_h c = new_client(f, 16);
    uint8_t req[4], *buf = malloc(100001);
    assert_non_null(buf);
    /* call_into is not bound by max_reply: the caller's buffer is the cap */
    u32_req(req, 100000);
    assert_int_equal(fti_rpc_call_into(c, M_SIZED, req, 4, CALL_MS, buf, 100000), FT_SUCCESS);
    for (size_t i = 0; i < 100000; i++)
        assert_int_equal(buf[i], pattern_byte(i));
    memset(buf, 0xee, 100001);
    assert_int_equal(fti_rpc_call_into(c, M_SIZED, req, 4, CALL_MS, buf, 99999),
                     FT_ERR_BAD_MESSAGE);
    assert_int_equal(fti_rpc_call_into(c, M_SIZED, req, 4, CALL_MS, buf, 100001),
                     FT_ERR_BAD_MESSAGE);
    for (size_t i = 0; i < 100001; i++) /* nothing written on a wrong length */
        assert_int_equal(buf[i], 0xee);
    u32_req(req, 0);
    assert_int_equal(fti_rpc_call_into(c, M_SIZED, req, 4, CALL_MS, buf, 0), FT_SUCCESS);
    /* error replies come through as their status */
    assert_int_equal(fti_rpc_call_into(c, M_BADMSG, "", 0, CALL_MS, buf, 4), FT_ERR_BAD_MESSAGE);
    assert_int_equal(fti_rpc_call_into(c, M_UNKNOWN, "", 0, CALL_MS, buf, 4), FT_ERR_UNSUPPORTED);
    u32_req(req, 8);
    assert_int_equal(fti_rpc_call_into(c, M_SIZED, req, 4, CALL_MS, buf, 8), FT_SUCCESS);
    assert_int_equal(buf[7], pattern_byte(7));
    free(buf);
    fti_rpc_client_destroy(c);
}

/* ---- the client against a misbehaving server ----------------------------- */

/* One step of a scripted server: take the next request (on a new
 * connection, or on the one in hand) and answer it with raw bytes. */
typedef struct fake_step {
    int new_conn;      /* accept a new connection first */
    uint8_t out[64];   /* bytes sent back */
    size_t n_out;
    int close_after;   /* close the connection after sending */
} fake_step_t;

typedef struct fake_server {
    int lfd;
    char addr[64];
    fake_step_t steps[16];
    int n_steps;
    atomic_int errors;
    atomic_int step_done;
    pthread_t thread;
} fake_server_t;

static void *fake_main(void *arg)
{
    fake_server_t *fs = arg;
    int fd = -1;
    for (int i = 0; i < fs->n_steps; i++) {
        fake_step_t *st = &fs->steps[i];
        if (st->new_conn || fd < 0) {
            int nfd = -1;
            if (fti_tcp_accept(fs->lfd, fti_now_ms() + 5000, &nfd) != FT_SUCCESS) {
                fprintf(stderr, "fake server step %d: no new connection\n", i);
                atomic_fetch_add(&fs->errors, 1);
                break;
            }
            if (fd >= 0)
                close(fd);
            fd = nfd;
        }
        uint8_t hdr[FTI_RPC_HEADER_LEN], payload[256];
        fti_rpc_header_t h;
        if (fti_read_full(fd, hdr, sizeof(hdr), fti_now_ms() + 5000) != FT_SUCCESS) {
            fprintf(stderr, "fake server step %d: no request on the connection\n", i);
            atomic_fetch_add(&fs->errors, 1);
            break;
        }
        fti_rpc_header_decode(hdr, &h);
        if (h.magic != FTI_RPC_MAGIC || h.length > sizeof(payload) ||
            fti_read_full(fd, payload, h.length, fti_now_ms() + 5000) != FT_SUCCESS) {
            fprintf(stderr, "fake server step %d: bad request\n", i);
            atomic_fetch_add(&fs->errors, 1);
            break;
        }
        if (st->n_out)
            fti_write_full(fd, st->out, st->n_out, fti_now_ms() + 5000);
        if (st->close_after) {
            close(fd);
            fd = -1;
        }
        atomic_fetch_add(&fs->step_done, 1);
    }
    if (fd >= 0) {
        fti_sleep_ms(50);
        close(fd);
    }
    return NULL;
}

static void fake_step(fake_server_t *fs, int new_conn, int close_after, uint32_t magic,
                      uint16_t flags, uint16_t method, int32_t status, uint32_t length,
                      const char *payload, size_t plen)
{
    fake_step_t *st = &fs->steps[fs->n_steps++];
    fti_rpc_header_t h = {magic, flags, method, status, length};
    st->new_conn = new_conn;
    st->close_after = close_after;
    fti_rpc_header_encode(&h, st->out);
    memcpy(st->out + FTI_RPC_HEADER_LEN, payload, plen);
    st->n_out = FTI_RPC_HEADER_LEN + plen;
}

static void test_client_against_bad_server(void **state)
{
    (void)state;
    fake_server_t fs;
    memset(&fs, 0, sizeof(fs));
    assert_int_equal(fti_tcp_listen("127.0.0.1:0", 16, &fs.lfd), FT_SUCCESS);
    assert_int_equal(fti_sock_name(fs.lfd, fs.addr, sizeof(fs.addr)), FT_SUCCESS);
    const uint32_t MG = FTI_RPC_MAGIC;
    const uint16_t RF = FTI_RPC_F_REPLY;
    /* 0: an error reply whose message never fully arrives */
    fake_step(&fs, 1, 0, MG, RF, M_ECHO, FT_ERR_STATE, 100, "0123456789", 10);
    /* 1: must come on a new connection: the old one holds the rest of the message */
    fake_step(&fs, 1, 0, MG, RF, M_ECHO, 0, 2, "ok", 2);
    /* 2: a reply to another method */
    fake_step(&fs, 0, 0, MG, RF, M_ECHO + 1, 0, 2, "no", 2);
    /* 3: a reply without the reply flag */
    fake_step(&fs, 1, 0, MG, 0, M_ECHO, 0, 2, "no", 2);
    /* 4: a bad magic */
    fake_step(&fs, 1, 0, MG ^ 0xff, RF, M_ECHO, 0, 2, "no", 2);
    /* 5: an error message over 4096 bytes */
    fake_step(&fs, 1, 0, MG, RF, M_ECHO, FT_ERR_STATE, 5000, "", 0);
    /* 6: a payload cut short by a close */
    fake_step(&fs, 1, 1, MG, RF, M_ECHO, 0, 100, "0123456789", 10);
    /* 7: a close without any reply */
    fs.steps[fs.n_steps++] = (fake_step_t){.new_conn = 1, .n_out = 0, .close_after = 1};
    /* 8: a positive status (not an FT_Error): internal error, connection kept */
    fake_step(&fs, 1, 0, MG, RF, M_ECHO, 7, 4, "huh?", 4);
    /* 9: same connection: a reject (method 0) ends it */
    fake_step(&fs, 0, 0, MG, RF, 0, FT_ERR_BAD_MESSAGE, 3, "bad", 3);
    /* 10: new connection, all well */
    fake_step(&fs, 1, 0, MG, RF, M_ECHO, 0, 4, "done", 4);
    assert_int_equal(pthread_create(&fs.thread, NULL, fake_main, &fs), 0);

    fti_rpc_client_h c = NULL;
    assert_int_equal(fti_rpc_client_create(fs.addr, NULL, 2000, 1024, &c), FT_SUCCESS);
    void *rep = NULL;
    size_t rlen = 0;
    const int want[] = {FT_ERR_TIMEOUT,     FT_SUCCESS,         FT_ERR_BAD_MESSAGE,
                        FT_ERR_BAD_MESSAGE, FT_ERR_BAD_MESSAGE, FT_ERR_BAD_MESSAGE,
                        FT_ERR_PROC_FAILED, FT_ERR_PROC_FAILED, FT_ERR_INTERNAL,
                        FT_ERR_BAD_MESSAGE, FT_SUCCESS};
    for (int i = 0; i < (int)FTI_ARRAY_SIZE(want); i++) {
        rep = NULL;
        int rc = fti_rpc_call(c, M_ECHO, "q", 1, i == 0 ? 300 : 3000, &rep, &rlen);
        if (rc != want[i])
            fail_msg("step %d: got %d (%s), expected %d (%s)", i, rc, FT_Error_string(rc),
                     want[i], FT_Error_string(want[i]));
        if (rc == FT_SUCCESS) {
            assert_int_equal(rlen, i == 1 ? 2 : 4);
            assert_memory_equal(rep, i == 1 ? "ok" : "done", rlen);
            free(rep);
        }
        WAIT_FOR(atomic_load(&fs.step_done) == i + 1 || atomic_load(&fs.errors) > 0, 5000);
        assert_int_equal(atomic_load(&fs.errors), 0);
    }
    fti_rpc_client_destroy(c);
    pthread_join(fs.thread, NULL);
    assert_int_equal(atomic_load(&fs.errors), 0);
    close(fs.lfd);
}

/* ---- server rejects ------------------------------------------------------- */

static void test_reject_bad_magic(void **state)
{
    fx_t *f = *state;
    uint8_t buf[4096];
    int eof = 0;
    /* wrong magic, a request carrying the reply flag, a request with a
     * status: each closes its connection (after one error frame at most) */
    const fti_rpc_header_t bad[] = {
        {0x47455420u /* "GET " */, 0, M_ECHO, 0, 0},
        {FTI_RPC_MAGIC, FTI_RPC_F_REPLY, M_ECHO, 0, 0},
        {FTI_RPC_MAGIC, 0, M_ECHO, -3, 0},
    };
    for (size_t i = 0; i < FTI_ARRAY_SIZE(bad); i++) {
        int fd = raw_connect(f);
        raw_frame(fd, bad[i].magic, bad[i].flags, bad[i].method, bad[i].status, bad[i].length,
                  "more bytes after it", 19);
        size_t n = raw_read_all(fd, buf, sizeof(buf), 3000, &eof);
        assert_true(eof);
        if (n > 0) {
            fti_rpc_header_t h;
            assert_true(n >= FTI_RPC_HEADER_LEN);
            fti_rpc_header_decode(buf, &h);
            assert_int_equal(h.magic, FTI_RPC_MAGIC);
            assert_int_equal(h.status, FT_ERR_BAD_MESSAGE);
            assert_int_equal(n, FTI_RPC_HEADER_LEN + h.length);
        }
        close(fd);
    }
    /* an HTTP request is garbage too */
    int fd = raw_connect(f);
    const char *http = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    assert_int_equal(fti_write_full(fd, http, strlen(http), fti_now_ms() + 2000), FT_SUCCESS);
    raw_read_all(fd, buf, sizeof(buf), 3000, &eof);
    assert_true(eof);
    close(fd);

    fti_rpc_stats_t st = get_stats(f);
    assert_int_equal(st.rejected_garbage, 4);
    assert_int_equal(st.requests, 0);
    /* the server still serves */
    fti_rpc_client_h c = new_client(f, 1024);
    echo_ok(c, "ok", 2);
    fti_rpc_client_destroy(c);
}

static void test_reject_oversize(void **state)
{
    fx_t *f = *state;
    const uint32_t lens[] = {MAX_FRAME + 1, 0xffffffffu};
    for (size_t i = 0; i < FTI_ARRAY_SIZE(lens); i++) {
        int fd = raw_connect(f);
        raw_frame(fd, FTI_RPC_MAGIC, 0, M_ECHO, 0, lens[i], "abc", 3);
        char msg[256];
        fti_rpc_header_t h = raw_reply(fd, msg, sizeof(msg));
        assert_int_equal(h.status, FT_ERR_BAD_MESSAGE);
        assert_true(strlen(msg) > 0);
        uint8_t buf[64];
        int eof = 0;
        assert_int_equal(raw_read_all(fd, buf, sizeof(buf), 3000, &eof), 0);
        assert_true(eof);
        close(fd);
    }
    /* through the client: the request over the server's cap */
    fti_rpc_client_h c = new_client(f, 1024);
    uint8_t *big = calloc(1, MAX_FRAME + 1);
    assert_non_null(big);
    void *rep = NULL;
    size_t rlen = 0;
    int rc = fti_rpc_call(c, M_ECHO, big, MAX_FRAME + 1, CALL_MS, &rep, &rlen);
    /* the error reply, or the reset if the server closed before it read
     * everything */
    assert_true(rc == FT_ERR_BAD_MESSAGE || rc == FT_ERR_PROC_FAILED);
    free(big);
    echo_ok(c, "next", 4);
    fti_rpc_stats_t st = get_stats(f);
    assert_int_equal(st.rejected_oversize, 3);
    assert_int_equal(st.rejected_garbage, 0);
    assert_int_equal(st.requests, 1);
    fti_rpc_client_destroy(c);
}

static void test_reject_truncated(void **state)
{
    fx_t *f = *state;
    /* a header that promises 100 bytes, then 10 of them */
    int fd = raw_connect(f);
    raw_frame(fd, FTI_RPC_MAGIC, 0, M_ECHO, 0, 100, "0123456789", 10);
    fti_sleep_ms(20);
    close(fd);
    WAIT_FOR(get_stats(f).rejected_truncated == 1, 3000);
    /* half a header */
    fd = raw_connect(f);
    assert_int_equal(fti_write_full(fd, "FTM1\0\0", 6, fti_now_ms() + 2000), FT_SUCCESS);
    fti_sleep_ms(20);
    close(fd);
    WAIT_FOR(get_stats(f).rejected_truncated == 2, 3000);
    /* a complete request, then the peer closes after the reply: not truncated */
    fd = raw_connect(f);
    raw_frame(fd, FTI_RPC_MAGIC, 0, M_ECHO, 0, 3, "abc", 3);
    char msg[16];
    fti_rpc_header_t h = raw_reply(fd, msg, sizeof(msg));
    assert_int_equal(h.status, 0);
    assert_string_equal(msg, "abc");
    close(fd);
    /* a complete request and half of the next in one write, then close */
    fd = raw_connect(f);
    uint8_t two[FTI_RPC_HEADER_LEN * 2 + 3];
    fti_rpc_header_t r = {FTI_RPC_MAGIC, 0, M_ECHO, 0, 3};
    fti_rpc_header_encode(&r, two);
    memcpy(two + FTI_RPC_HEADER_LEN, "xyz", 3);
    r.length = 50;
    fti_rpc_header_encode(&r, two + FTI_RPC_HEADER_LEN + 3);
    assert_int_equal(fti_write_full(fd, two, sizeof(two), fti_now_ms() + 2000), FT_SUCCESS);
    h = raw_reply(fd, msg, sizeof(msg));
    assert_string_equal(msg, "xyz");
    close(fd);
    WAIT_FOR(get_stats(f).rejected_truncated == 3, 3000);
    /* connections that close between frames: nothing more is counted */
    fti_rpc_client_h c = new_client(f, 1024);
    echo_ok(c, "z", 1);
    fti_rpc_client_destroy(c);
    fd = raw_connect(f);
    close(fd);
    fti_sleep_ms(100);
    fti_rpc_stats_t st = get_stats(f);
    assert_int_equal(st.rejected_truncated, 3);
    assert_int_equal(st.requests, 3);
    assert_int_equal(st.connections, 6);
    assert_int_equal(st.rejected_garbage + st.rejected_oversize, 0);
}

static void test_unknown_method(void **state)
{
    fx_t *f = *state;
    fti_rpc_client_h c = new_client(f, 1024);
    void *rep = (void *)0x1;
    size_t rlen = 0;
    echo_ok(c, "a", 1);
    assert_int_equal(fti_rpc_call(c, M_UNKNOWN, "payload", 7, CALL_MS, &rep, &rlen),
                     FT_ERR_UNSUPPORTED);
    assert_ptr_equal(rep, (void *)0x1);
    echo_ok(c, "b", 1);
    fti_rpc_stats_t st = get_stats(f);
    assert_int_equal(st.rejected_unknown, 1);
    assert_int_equal(st.connections, 1); /* the connection stayed open */
    fti_rpc_client_destroy(c);

    /* pipelined on a raw connection: unknown (with payload), then echo */
    int fd = raw_connect(f);
    uint8_t buf[2 * FTI_RPC_HEADER_LEN + 50 + 4];
    fti_rpc_header_t h1 = {FTI_RPC_MAGIC, 0, M_UNKNOWN, 0, 50}, h2 = {FTI_RPC_MAGIC, 0, M_ECHO, 0, 4};
    fti_rpc_header_encode(&h1, buf);
    memset(buf + FTI_RPC_HEADER_LEN, 'u', 50);
    fti_rpc_header_encode(&h2, buf + FTI_RPC_HEADER_LEN + 50);
    memcpy(buf + 2 * FTI_RPC_HEADER_LEN + 50, "pong", 4);
    assert_int_equal(fti_write_full(fd, buf, sizeof(buf), fti_now_ms() + 2000), FT_SUCCESS);
    char msg[64];
    fti_rpc_header_t r = raw_reply(fd, msg, sizeof(msg));
    assert_int_equal(r.status, FT_ERR_UNSUPPORTED);
    assert_int_equal(r.method, M_UNKNOWN);
    r = raw_reply(fd, msg, sizeof(msg));
    assert_int_equal(r.status, 0);
    assert_int_equal(r.method, M_ECHO);
    assert_string_equal(msg, "pong");
    close(fd);
    assert_int_equal(get_stats(f).rejected_unknown, 2);
}

/* ---- zero-copy replies ---------------------------------------------------- */

static void test_reply_ref_sent(void **state)
{
    fx_t *f = *state;
    fti_rpc_client_h c = new_client(f, 4u << 20);
    uint8_t req[4];
    void *rep = NULL;
    size_t rlen = 0;
    u32_req(req, 1u << 20);
    assert_int_equal(fti_rpc_call(c, M_REF, req, 4, CALL_MS, &rep, &rlen), FT_SUCCESS);
    assert_int_equal(rlen, 1u << 20);
    assert_memory_equal(rep, f->ref_buf, rlen);
    free(rep);
    WAIT_FOR(atomic_load(&f->ref_done) == 1, 2000);
    /* an empty reply_ref calls done too, once */
    u32_req(req, 0);
    assert_int_equal(fti_rpc_call(c, M_REF, req, 4, CALL_MS, &rep, &rlen), FT_SUCCESS);
    assert_int_equal(rlen, 0);
    free(rep);
    WAIT_FOR(atomic_load(&f->ref_done) == 2, 2000);
    /* many in a row */
    u32_req(req, 777);
    for (int i = 0; i < 50; i++) {
        assert_int_equal(fti_rpc_call(c, M_REF, req, 4, CALL_MS, &rep, &rlen), FT_SUCCESS);
        assert_int_equal(rlen, 777);
        free(rep);
    }
    WAIT_FOR(atomic_load(&f->ref_done) == 52, 2000);
    fti_sleep_ms(50);
    assert_int_equal(atomic_load(&f->ref_done), 52);
    fti_rpc_client_destroy(c);
}

/* A watched reply tells its progress in steps of at most one send, in
 * stream order across replies of one connection, before its done. */
static void test_reply_ref_watch(void **state)
{
    fx_t *f = *state;
    fti_rpc_client_h c = new_client(f, 4u << 20);
    const size_t lens[] = {3u << 20, (3u << 20) + 5, 1000};
    for (int i = 0; i < 3; i++) {
        uint8_t req[4];
        void *rep = NULL;
        size_t rlen = 0;
        u32_req(req, (uint32_t)lens[i]);
        assert_int_equal(fti_rpc_call(c, M_REF_WATCH, req, 4, CALL_MS, &rep, &rlen), FT_SUCCESS);
        assert_int_equal(rlen, lens[i]);
        assert_memory_equal(rep, f->ref_buf, rlen);
        free(rep);
        WAIT_FOR(atomic_load(&f->ref_done) == i + 1, 2000);
        const struct watched *w = &f->w[i];
        assert_int_equal(w->bad, 0);
        assert_int_equal(w->last, lens[i]);
        assert_int_equal(w->at_done, lens[i]); /* every byte told before done */
        assert_true((size_t)w->calls >= (lens[i] + FTI_RPC_WATCH_SEND - 1) / FTI_RPC_WATCH_SEND);
    }
    fti_rpc_client_destroy(c);
}

/* Answers every held call with a watched 1 MiB reply, all queued before
 * the first is sent. */
static void answer_held_watched(fx_t *f, void *arg)
{
    int *failed = arg;
    held_t *order[8];
    int n = 0;
    for (held_t *h = f->held; h != NULL && n < 8; h = h->next)
        order[n++] = h;
    for (int i = n - 1; i >= 0; i--) { /* the list holds the newest first */
        held_remove(f, order[i]);
        *failed += reply_watched(f, order[i]->call, 1u << 20) != FT_SUCCESS;
        free(order[i]);
    }
}

/* Past FTI_RPC_MAX_WATCH queued watched replies a reply goes out unwatched,
 * whole and in order. */
static void test_reply_ref_watch_limit(void **state)
{
    fx_t *f = *state;
    const int n = FTI_RPC_MAX_WATCH + 2;
    int fd = raw_connect(f);
    for (int i = 0; i < n; i++)
        raw_frame(fd, FTI_RPC_MAGIC, 0, M_REF_HOLD, 0, 4, "wait", 4);
    WAIT_FOR(atomic_load(&f->n_held) == n, 2000);
    int failed = 0;
    run_on_loop(f, answer_held_watched, &failed);
    assert_int_equal(failed, 0);
    uint8_t *buf = malloc(1u << 20);
    assert_non_null(buf);
    for (int i = 0; i < n; i++) {
        uint8_t hdr[FTI_RPC_HEADER_LEN];
        fti_rpc_header_t h;
        assert_int_equal(fti_read_full(fd, hdr, sizeof(hdr), fti_now_ms() + 3000), FT_SUCCESS);
        fti_rpc_header_decode(hdr, &h);
        assert_int_equal(h.status, 0);
        assert_int_equal(h.length, 1u << 20);
        assert_int_equal(fti_read_full(fd, buf, h.length, fti_now_ms() + 3000), FT_SUCCESS);
        assert_memory_equal(buf, f->ref_buf, h.length);
    }
    free(buf);
    WAIT_FOR(atomic_load(&f->ref_done) == n, 2000);
    for (int i = 0; i < n; i++) {
        const struct watched *w = &f->w[i];
        assert_int_equal(w->bad, 0);
        assert_int_equal(w->last, i < FTI_RPC_MAX_WATCH ? 1u << 20 : 0);
        assert_int_equal(w->at_done, w->last);
    }
    close(fd);
}

struct ref_hold_job {
    int alive;
    int rc;
};

static void check_held_alive(fx_t *f, void *arg)
{
    struct ref_hold_job *j = arg;
    j->alive = f->held != NULL && fti_rpc_call_alive(f->held->call);
}

static void answer_held_ref(fx_t *f, void *arg)
{
    struct ref_hold_job *j = arg;
    held_t *h = f->held;
    held_remove(f, h);
    j->rc = fti_rpc_reply_ref(h->call, f->ref_buf, 1000, ref_done_cb, f);
    free(h);
}

/* done runs exactly once when the connection is gone before the reply
 * (the call is dead), and when it goes away while the reply is being sent. */
static void test_reply_ref_closed_first(void **state)
{
    fx_t *f = *state;
    /* 1: the client leaves while the call is held */
    int fd = raw_connect(f);
    raw_frame(fd, FTI_RPC_MAGIC, 0, M_REF_HOLD, 0, 4, "wait", 4);
    WAIT_FOR(atomic_load(&f->n_held) == 1, 2000);
    struct ref_hold_job j = {1, 0};
    run_on_loop(f, check_held_alive, &j);
    assert_true(j.alive);
    close(fd);
    WAIT_FOR((run_on_loop(f, check_held_alive, &j), !j.alive), 2000);
    run_on_loop(f, answer_held_ref, &j);
    assert_int_equal(j.rc, FT_ERR_PROC_FAILED);
    assert_int_equal(atomic_load(&f->ref_done), 1);

    /* 2: a reply far larger than the socket buffers; the client reads none
     * of it and resets the connection */
    fd = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(fd >= 0);
    int small = 4096;
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
    struct sockaddr_storage sa;
    socklen_t salen;
    assert_int_equal(fti_addr_resolve(f->addr, &sa, &salen), FT_SUCCESS);
    assert_int_equal(connect(fd, (struct sockaddr *)&sa, salen), 0);
    uint8_t req[4];
    u32_req(req, REF_BUF_LEN);
    raw_frame(fd, FTI_RPC_MAGIC, 0, M_REF, 0, 4, req, 4);
    fti_sleep_ms(300);
    assert_int_equal(atomic_load(&f->ref_done), 1); /* still being sent */
    struct linger lg = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(fd);
    WAIT_FOR(atomic_load(&f->ref_done) == 2, 3000);
    fti_sleep_ms(100);
    assert_int_equal(atomic_load(&f->ref_done), 2);
    /* the server goes on */
    fti_rpc_client_h c = new_client(f, 1024);
    echo_ok(c, "alive", 5);
    fti_rpc_client_destroy(c);
}

/* ---- many clients --------------------------------------------------------- */

#define N_THREADS 50
#define N_CALLS 100
#define N_SHARED 8

struct many_job {
    fx_t *f;
    fti_rpc_client_h shared; /* NULL: own client */
    int id;
    int failures;
    char why[128];
};

static void *many_thread(void *arg)
{
    struct many_job *j = arg;
    fti_rpc_client_h c = j->shared;
    if (c == NULL && fti_rpc_client_create(j->f->addr, NULL, 2000, 4096, &c) != FT_SUCCESS) {
        j->failures = N_CALLS;
        return NULL;
    }
    uint8_t req[400];
    for (int i = 0; i < N_CALLS; i++) {
        int n = snprintf((char *)req, sizeof(req), "thread %d call %d:", j->id, i);
        size_t len = (size_t)n + (size_t)((j->id * 31 + i * 17) % 300);
        for (size_t k = (size_t)n; k < len; k++)
            req[k] = (uint8_t)(j->id + i + k);
        void *rep = NULL;
        size_t rlen = 0;
        int rc = fti_rpc_call(c, M_ECHO, req, len, CALL_MS, &rep, &rlen);
        if (rc != FT_SUCCESS || rlen != len || memcmp(rep, req, len) != 0) {
            if (j->failures++ == 0)
                snprintf(j->why, sizeof(j->why), "thread %d call %d: rc %d, %zu bytes", j->id, i,
                         rc, rlen);
        }
        free(rep);
    }
    if (j->shared == NULL)
        fti_rpc_client_destroy(c);
    return NULL;
}

static void test_many_clients(void **state)
{
    fx_t *f = *state;
    struct many_job jobs[N_THREADS + N_SHARED];
    pthread_t t[N_THREADS + N_SHARED];
    fti_rpc_client_h shared = new_client(f, 4096);
    int64_t t0 = fti_now_ms();
    for (int i = 0; i < N_THREADS + N_SHARED; i++) {
        jobs[i] = (struct many_job){f, i < N_THREADS ? NULL : shared, i, 0, ""};
        assert_int_equal(pthread_create(&t[i], NULL, many_thread, &jobs[i]), 0);
    }
    int failures = 0;
    for (int i = 0; i < N_THREADS + N_SHARED; i++) {
        pthread_join(t[i], NULL);
        if (jobs[i].failures) {
            fprintf(stderr, "%s (%d failures)\n", jobs[i].why, jobs[i].failures);
            failures += jobs[i].failures;
        }
    }
    fprintf(stderr, "# %d calls from %d threads in %lld ms\n", (N_THREADS + N_SHARED) * N_CALLS,
            N_THREADS + N_SHARED, (long long)(fti_now_ms() - t0));
    assert_int_equal(failures, 0);
    fti_rpc_stats_t st = get_stats(f);
    assert_int_equal(st.requests, (N_THREADS + N_SHARED) * N_CALLS);
    assert_int_equal(st.connections, N_THREADS + 1);
    fti_rpc_client_destroy(shared);
}

/* ---- destroying a busy server --------------------------------------------- */

struct busy_call {
    fx_t *f;
    uint16_t method;
    uint32_t defer_ms;
    int timeout_ms;
    int rc;
    int64_t elapsed;
};

static void *busy_thread(void *arg)
{
    struct busy_call *b = arg;
    fti_rpc_client_h c = NULL;
    uint8_t req[8];
    u32_req(req, b->defer_ms);
    memcpy(req + 4, "late", 4);
    b->rc = fti_rpc_client_create(b->f->addr, NULL, 2000, 1024, &c);
    if (b->rc != FT_SUCCESS)
        return NULL;
    void *rep = NULL;
    size_t rlen = 0;
    int64_t t0 = fti_now_ms();
    b->rc = fti_rpc_call(c, b->method, req, sizeof(req), b->timeout_ms, &rep, &rlen);
    b->elapsed = fti_now_ms() - t0;
    if (b->rc == FT_SUCCESS)
        free(rep);
    fti_rpc_client_destroy(c);
    return NULL;
}

struct answer_rcs {
    int destroy; /* destroy the server first */
    int rc[16];
    int n;
};

/* Answers every held call in each of the ways a handler can (a reply, an
 * error that counts as a decode reject, a message, a zero-copy reply). */
static void answer_all(fx_t *f, void *arg)
{
    struct answer_rcs *a = arg;
    if (a->destroy) {
        fti_rpc_server_destroy(f->rpc);
        f->rpc = NULL;
    }
    int k = 0;
    while (f->held) {
        held_t *h = f->held;
        held_remove(f, h);
        if (h->timer)
            event_free(h->timer);
        int rc;
        Ftmpi__Quorum q = FTMPI__QUORUM__INIT;
        switch (k % 4) {
        case 0: rc = fti_rpc_reply(h->call, "x", 1); break;
        case 1: rc = fti_rpc_reply_error(h->call, FT_ERR_BAD_MESSAGE, "late reject"); break;
        case 2: rc = fti_rpc_reply_msg(h->call, &q.base); break;
        default: rc = fti_rpc_reply_ref(h->call, f->ref_buf, 100, ref_done_cb, f); break;
        }
        if (a->n < 16)
            a->rc[a->n++] = rc;
        k++;
        free(h);
    }
}

static void start_busy(fx_t *f, struct busy_call *calls, pthread_t *t, int n, int timeout_ms,
                       int *idle, int n_idle)
{
    for (int i = 0; i < n; i++) {
        calls[i] = (struct busy_call){f, i % 2 ? M_DEFER : M_HOLD, 60000, timeout_ms, 1, 0};
        assert_int_equal(pthread_create(&t[i], NULL, busy_thread, &calls[i]), 0);
    }
    for (int i = 0; i < n_idle; i++)
        idle[i] = raw_connect(f);
    WAIT_FOR(atomic_load(&f->n_held) == n, 3000);
    WAIT_FOR(get_stats(f).connections == (uint64_t)(n + n_idle), 3000);
}

/* On the loop thread, while it runs: destroy, then answer the calls. */
static void test_destroy_busy_on_loop(void **state)
{
    fx_t *f = *state;
    struct busy_call calls[8];
    pthread_t t[8];
    int idle[3];
    start_busy(f, calls, t, 8, 20000, idle, 3);
    struct answer_rcs a = {.destroy = 1};
    run_on_loop(f, answer_all, &a);
    assert_null(f->rpc);
    assert_int_equal(a.n, 8);
    for (int i = 0; i < a.n; i++)
        assert_int_equal(a.rc[i], FT_ERR_PROC_FAILED); /* the connections are gone */
    assert_int_equal(atomic_load(&f->ref_done), 2);
    /* the clients learn it at once, not at their deadline */
    for (int i = 0; i < 8; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(calls[i].rc, FT_ERR_PROC_FAILED);
        assert_true(calls[i].elapsed < 5000);
    }
    for (int i = 0; i < 3; i++) {
        uint8_t b[8];
        int eof = 0;
        assert_int_equal(raw_read_all(idle[i], b, sizeof(b), 3000, &eof), 0);
        assert_true(eof);
        close(idle[i]);
    }
    /* nobody listens any more */
    fti_rpc_client_h c = NULL;
    void *rep = NULL;
    size_t rlen = 0;
    assert_int_equal(fti_rpc_client_create(f->addr, NULL, 1000, 1024, &c), FT_SUCCESS);
    assert_int_equal(fti_rpc_call(c, M_ECHO, "x", 1, 1000, &rep, &rlen), FT_ERR_CONNECT);
    fti_rpc_client_destroy(c);
}

/* With the loop stopped: destroy, answer the calls, free the base. */
static void test_destroy_busy_stopped(void **state)
{
    fx_t *f = *state;
    struct busy_call calls[4];
    pthread_t t[4];
    int idle[2];
    start_busy(f, calls, t, 4, 20000, idle, 2);
    fx_stop_loop(f);
    struct answer_rcs a = {.destroy = 1};
    answer_all(f, &a);
    assert_int_equal(a.n, 4);
    assert_int_equal(atomic_load(&f->ref_done), 1);
    event_base_free(f->base); /* runs the pending finalizers: sockets close */
    f->base = event_base_new();
    assert_non_null(f->base);
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        assert_int_equal(calls[i].rc, FT_ERR_PROC_FAILED);
        assert_true(calls[i].elapsed < 10000);
    }
    for (int i = 0; i < 2; i++) {
        uint8_t b[8];
        int eof = 0;
        raw_read_all(idle[i], b, sizeof(b), 3000, &eof);
        assert_true(eof);
        close(idle[i]);
    }
}

/* Answering first (as the lighthouse does), then destroying. */
static void test_answer_then_destroy(void **state)
{
    fx_t *f = *state;
    struct busy_call calls[4];
    pthread_t t[4];
    int idle[1];
    start_busy(f, calls, t, 4, 20000, idle, 1);
    struct answer_rcs a = {.destroy = 0};
    run_on_loop(f, answer_all, &a);
    for (int i = 0; i < a.n; i++)
        assert_int_equal(a.rc[i], FT_SUCCESS);
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        /* reply "x" and an empty Quorum go to M_HOLD / M_DEFER calls; the
         * decode reject comes back as its status; the ref reply as bytes */
        assert_true(calls[i].rc == FT_SUCCESS || calls[i].rc == FT_ERR_BAD_MESSAGE);
    }
    WAIT_FOR(atomic_load(&f->ref_done) == 1, 2000);
    assert_int_equal(get_stats(f).rejected_decode, 1);
    close(idle[0]);
    /* teardown destroys the server */
}

/* ======================================================================== */
/* limits: backpressure, calls in flight, connection cap, idle timeout,     */
/* SIGPIPE, a reply that cannot be queued                                   */
/* ======================================================================== */

/* Resident memory of this process in KiB (VmRSS of /proc/self/status). */
static long vm_rss_kb(void)
{
    FILE *fp = fopen("/proc/self/status", "r");
    char line[256];
    long kb = -1;
    assert_non_null(fp);
    while (fgets(line, sizeof(line), fp))
        if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
            break;
    fclose(fp);
    assert_true(kb > 0);
    return kb;
}

/* Writes n pipelined requests of `method` with a u32 argument in one go. */
static void pipeline_u32(int fd, uint16_t method, int n, uint32_t arg)
{
    size_t one = FTI_RPC_HEADER_LEN + 4;
    uint8_t *buf = malloc(one * (size_t)n);
    assert_non_null(buf);
    for (int i = 0; i < n; i++) {
        fti_rpc_header_t h = {FTI_RPC_MAGIC, 0, method, 0, 4};
        fti_rpc_header_encode(&h, buf + one * (size_t)i);
        u32_req(buf + one * (size_t)i + FTI_RPC_HEADER_LEN, arg);
    }
    assert_int_equal(fti_write_full(fd, buf, one * (size_t)n, fti_now_ms() + CALL_MS),
                     FT_SUCCESS);
    free(buf);
}

/* Reads one M_SIZED reply of `size` bytes and checks its bytes. */
static void read_sized_reply(int fd, uint32_t size, uint8_t *scratch)
{
    uint8_t hdr[FTI_RPC_HEADER_LEN];
    fti_rpc_header_t h;
    assert_int_equal(fti_read_full(fd, hdr, sizeof(hdr), fti_now_ms() + CALL_MS), FT_SUCCESS);
    fti_rpc_header_decode(hdr, &h);
    assert_int_equal(h.magic, FTI_RPC_MAGIC);
    assert_int_equal(h.method, M_SIZED);
    assert_int_equal(h.status, 0);
    assert_int_equal(h.length, size);
    assert_int_equal(fti_read_full(fd, scratch, size, fti_now_ms() + CALL_MS), FT_SUCCESS);
    for (uint32_t i = 0; i < size; i += 4093)
        assert_int_equal(scratch[i], pattern_byte(i));
    assert_int_equal(scratch[size - 1], pattern_byte(size - 1));
}

/* Waits until the server's request count stops moving (at most 5 s). */
static fti_rpc_stats_t settled_stats(fx_t *f)
{
    fti_rpc_stats_t st = get_stats(f);
    int64_t deadline = fti_now_ms() + 5000;
    for (int still = 0; still < 5 && fti_now_ms() < deadline;) {
        fti_sleep_ms(100);
        fti_rpc_stats_t now = get_stats(f);
        still = now.requests == st.requests ? still + 1 : 0;
        st = now;
    }
    return st;
}

#define FLOOD_N 3000
#define FLOOD_SIZE (1u << 20)

/* Issue 10 item 8 as reported: 3,000 pipelined requests for a 1 MiB reply
 * from a client that never reads (it took a rank from 11 MB to 2.1 GB).
 * The server stops reading that connection at the high-water mark: the
 * queued bytes and the process's memory stay bounded; the replies still
 * come, whole and in order, once the client reads; closing frees it all. */
static void test_flood_pipelined(void **state)
{
    fx_t *f = *state;
    long rss0 = vm_rss_kb();
    int fd = raw_connect(f);
    pipeline_u32(fd, M_SIZED, FLOOD_N, FLOOD_SIZE);
    fti_rpc_stats_t st = settled_stats(f);
    long grown_kb = vm_rss_kb() - rss0;
    fprintf(stderr,
            "# flood: %llu of %d requests taken, %llu bytes queued (peak %llu), RSS +%ld KiB\n",
            (unsigned long long)st.requests, FLOOD_N, (unsigned long long)st.queued_bytes,
            (unsigned long long)st.peak_queued_bytes, grown_kb);
    size_t bound = FTI_RPC_DEFAULT_OUT_HIGH_WATER + FLOOD_SIZE + FTI_RPC_HEADER_LEN;
    assert_true(st.paused >= 1);
    assert_true(st.requests >= 1 && st.requests < 100); /* the rest sits in socket buffers */
    assert_true(st.peak_queued_bytes <= bound);
    assert_true(st.queued_bytes <= bound);
    assert_int_equal(st.open_connections, 1);
    assert_true(grown_kb < 64 * 1024);

    /* reading resumes the server: the next replies come, in order */
    uint8_t *scratch = malloc(FLOOD_SIZE);
    assert_non_null(scratch);
    for (int i = 0; i < 40; i++)
        read_sized_reply(fd, FLOOD_SIZE, scratch);
    free(scratch);
    assert_true(get_stats(f).requests >= 40);
    assert_true(get_stats(f).peak_queued_bytes <= bound);

    close(fd);
    WAIT_FOR(get_stats(f).open_connections == 0, 3000);
    assert_int_equal(get_stats(f).queued_bytes, 0);
    fti_rpc_client_h c = new_client(f, 1024);
    echo_ok(c, "after the flood", 15);
    fti_rpc_client_destroy(c);
}

/* Backpressure loses nothing: 300 pipelined 64 KiB replies against a
 * 256 KiB high-water mark pause and resume the connection, and every
 * reply comes back whole and in order. */
static void test_pipelined_all_replies(void **state)
{
    fx_t *f = *state;
    const uint32_t size = 64u << 10;
    int fd = raw_connect(f);
    pipeline_u32(fd, M_SIZED, 300, size);
    uint8_t *scratch = malloc(size);
    assert_non_null(scratch);
    for (int i = 0; i < 300; i++)
        read_sized_reply(fd, size, scratch);
    free(scratch);
    fti_rpc_stats_t st = get_stats(f);
    assert_int_equal(st.requests, 300);
    assert_true(st.paused >= 1);
    assert_true(st.peak_queued_bytes <= LIM_HIGH + size + FTI_RPC_HEADER_LEN);
    close(fd);
}

static void answer_held_ok(fx_t *f, void *arg)
{
    int *n = arg;
    while (f->held) {
        held_t *h = f->held;
        held_remove(f, h);
        assert_int_equal(fti_rpc_reply(h->call, "x", 1), FT_SUCCESS);
        free(h);
        if (n)
            (*n)++;
    }
}

/* A connection with max_calls calls in flight is not read further until
 * one ends; then it goes on, and every call gets its reply. */
static void test_calls_cap(void **state)
{
    fx_t *f = *state;
    int fd = raw_connect(f);
    pipeline_u32(fd, M_HOLD, 20, 7);
    WAIT_FOR(atomic_load(&f->n_held) == LIM_CALLS, 2000);
    fti_sleep_ms(100);
    assert_int_equal(atomic_load(&f->n_held), LIM_CALLS);
    fti_rpc_stats_t st = get_stats(f);
    assert_int_equal(st.requests, LIM_CALLS);
    assert_true(st.paused >= 1);
    int answered = 0;
    int64_t deadline = fti_now_ms() + 5000;
    while (answered < 20 && fti_now_ms() < deadline) {
        run_on_loop(f, answer_held_ok, &answered);
        assert_true(atomic_load(&f->n_held) <= LIM_CALLS);
        fti_sleep_ms(5);
    }
    assert_int_equal(answered, 20);
    for (int i = 0; i < 20; i++) {
        fti_rpc_header_t h = raw_reply(fd, NULL, 0);
        assert_int_equal(h.method, M_HOLD);
        assert_int_equal(h.status, 0);
        assert_int_equal(h.length, 1);
    }
    assert_int_equal(get_stats(f).requests, 20);
    close(fd);
}

/* Past max_conns a connection is refused at once (an error frame, then
 * close), counted; a slot that frees takes the next one. */
static void test_conn_cap(void **state)
{
    fx_t *f = *state;
    int fds[LIM_CONNS];
    for (int i = 0; i < LIM_CONNS; i++) {
        fds[i] = raw_connect(f);
        raw_frame(fds[i], FTI_RPC_MAGIC, 0, M_ECHO, 0, 2, "hi", 2);
        assert_int_equal(raw_reply(fds[i], NULL, 0).status, 0);
    }
    fti_rpc_client_h c = new_client(f, 1024);
    void *rep = NULL;
    size_t rlen = 0;
    int64_t t0 = fti_now_ms();
    int rc = fti_rpc_call(c, M_ECHO, "over", 4, CALL_MS, &rep, &rlen);
    assert_true(rc == FT_ERR_CONNECT || rc == FT_ERR_PROC_FAILED);
    assert_true(fti_now_ms() - t0 < CALL_MS / 2); /* refused, not left to time out */
    fti_rpc_stats_t st = get_stats(f);
    assert_int_equal(st.rejected_conn_cap, 1);
    assert_int_equal(st.open_connections, LIM_CONNS);
    assert_int_equal(st.connections, LIM_CONNS);
    /* the open ones still work */
    raw_frame(fds[1], FTI_RPC_MAGIC, 0, M_ECHO, 0, 2, "ok", 2);
    assert_int_equal(raw_reply(fds[1], NULL, 0).status, 0);
    close(fds[0]);
    WAIT_FOR(get_stats(f).open_connections == LIM_CONNS - 1, 2000);
    echo_ok(c, "in now", 6);
    assert_int_equal(get_stats(f).open_connections, LIM_CONNS);
    fti_rpc_client_destroy(c);
    for (int i = 1; i < LIM_CONNS; i++)
        close(fds[i]);
}

/* Waits for the server to close fd (reading what comes); returns the ms
 * it took. */
static int64_t wait_closed(int fd, int ms)
{
    uint8_t buf[256];
    int eof = 0;
    int64_t t0 = fti_now_ms();
    while (!eof && fti_now_ms() - t0 < ms)
        (void)raw_read_all(fd, buf, sizeof(buf), ms, &eof);
    if (!eof)
        fail_msg("the server did not close the connection in %d ms", ms);
    return fti_now_ms() - t0;
}

/* A connection that sends nothing (or half a header and then nothing) is
 * closed after idle_ms; one that waits for a deferred reply is not; a
 * client whose kept connection was closed meanwhile reconnects. */
static void test_idle_timeout(void **state)
{
    fx_t *f = *state;
    int fd = raw_connect(f);
    int64_t took = wait_closed(fd, LIM_IDLE_MS + 2000 + SLACK_MS);
    assert_true(took >= LIM_IDLE_MS - 20);
    close(fd);
    fd = raw_connect(f);
    uint8_t half[FTI_RPC_HEADER_LEN / 2] = {0x46, 0x54, 0x4d, 0x31};
    assert_int_equal(fti_write_full(fd, half, sizeof(half), fti_now_ms() + 1000), FT_SUCCESS);
    took = wait_closed(fd, LIM_IDLE_MS + 2000 + SLACK_MS);
    assert_true(took >= LIM_IDLE_MS - 20);
    close(fd);
    assert_int_equal(get_stats(f).closed_idle, 2);

    /* a held call keeps its connection past the timeout */
    fd = raw_connect(f);
    raw_frame(fd, FTI_RPC_MAGIC, 0, M_HOLD, 0, 4, "wait", 4);
    WAIT_FOR(atomic_load(&f->n_held) == 1, 2000);
    fti_sleep_ms(3 * LIM_IDLE_MS);
    struct ref_hold_job j = {0, 0};
    run_on_loop(f, check_held_alive, &j);
    assert_true(j.alive);
    run_on_loop(f, answer_held_ok, NULL);
    assert_int_equal(raw_reply(fd, NULL, 0).status, 0);
    (void)wait_closed(fd, LIM_IDLE_MS + 2000 + SLACK_MS); /* then idle again */
    close(fd);
    assert_int_equal(get_stats(f).closed_idle, 3);

    /* the client notices the closed connection before its next call */
    fti_rpc_client_h c = new_client(f, 1024);
    echo_ok(c, "one", 3);
    WAIT_FOR(get_stats(f).closed_idle == 4, LIM_IDLE_MS + 2000 + SLACK_MS);
    echo_ok(c, "two", 3);
    fti_rpc_client_destroy(c);
}

/* The child of test_sigpipe: SIGPIPE at its default disposition, a server,
 * and peers that reset their connections while large replies are being
 * sent to them.  Exits 0 when the server survived and still serves. */
static void sigpipe_child(void)
{
    void *state = NULL;
    signal(SIGPIPE, SIG_DFL);
    if (fx_setup(&state) != 0)
        _exit(2);
    fx_t *f = state;
    struct sockaddr_storage sa;
    socklen_t salen;
    if (fti_addr_resolve(f->addr, &sa, &salen) != FT_SUCCESS)
        _exit(3);
    for (int i = 0; i < 10; i++) {
        int fd = socket(AF_INET, SOCK_STREAM, 0), small = 4096;
        uint8_t frame[FTI_RPC_HEADER_LEN + 4], junk[8192];
        fti_rpc_header_t h = {FTI_RPC_MAGIC, 0, M_REF, 0, 4};
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &small, sizeof(small));
        if (fd < 0 || connect(fd, (struct sockaddr *)&sa, salen) != 0)
            _exit(4);
        fti_rpc_header_encode(&h, frame);
        u32_req(frame + FTI_RPC_HEADER_LEN, REF_BUF_LEN);
        if (send(fd, frame, sizeof(frame), MSG_NOSIGNAL) != (ssize_t)sizeof(frame))
            _exit(5);
        if (recv(fd, junk, sizeof(junk), MSG_WAITALL) <= 0)
            _exit(6);
        if (i % 2) { /* a reset, or a plain close with unread data */
            struct linger lg = {1, 0};
            setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
        }
        close(fd);
    }
    int64_t deadline = fti_now_ms() + 10000;
    while (atomic_load(&f->ref_done) < 10 && fti_now_ms() < deadline)
        fti_sleep_ms(5);
    fti_rpc_client_h c = NULL;
    void *rep = NULL;
    size_t rlen = 0;
    int ok = atomic_load(&f->ref_done) == 10 &&
             fti_rpc_client_create(f->addr, NULL, 2000, 1024, &c) == FT_SUCCESS &&
             fti_rpc_call(c, M_ECHO, "alive", 5, CALL_MS, &rep, &rlen) == FT_SUCCESS && rlen == 5;
    free(rep);
    fti_rpc_client_destroy(c);
    fx_teardown(&state);
    _exit(ok ? 0 : 7);
}

static void test_sigpipe(void **state)
{
    (void)state;
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0)
        sigpipe_child();
    int status = 0;
    int64_t deadline = fti_now_ms() + 30000;
    pid_t w;
    while ((w = waitpid(pid, &status, WNOHANG)) == 0 && fti_now_ms() < deadline)
        fti_sleep_ms(10);
    if (w == 0) {
        kill(pid, SIGKILL);
        waitpid(pid, &status, 0);
        fail_msg("the server child did not finish in 30 s");
    }
    if (WIFSIGNALED(status))
        fail_msg("the server child died of signal %d (%s)", WTERMSIG(status),
                 strsignal(WTERMSIG(status)));
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 0);
}

static void set_fail_refs(fx_t *f, void *arg)
{
    (void)f;
    fti_rpc_test_fail_refs = *(int *)arg;
}

/* Issue 9 item 7: a zero-copy reply whose payload cannot be queued after
 * its header closes the connection.  The client sees the end at once
 * (instead of waiting for bytes that never come, or reading the next
 * reply as this one's payload), done runs once, and the next call, on a
 * new connection, is in sync. */
static void test_reply_ref_queue_fails(void **state)
{
    fx_t *f = *state;
    int one = 1;
    fti_rpc_client_h c = new_client(f, 4u << 20);
    uint8_t req[4];
    void *rep = NULL;
    size_t rlen = 0;
    echo_ok(c, "warm", 4);
    run_on_loop(f, set_fail_refs, &one);
    u32_req(req, 1000);
    int64_t t0 = fti_now_ms();
    assert_int_equal(fti_rpc_call(c, M_REF, req, 4, CALL_MS, &rep, &rlen), FT_ERR_PROC_FAILED);
    assert_true(fti_now_ms() - t0 < CALL_MS / 2);
    WAIT_FOR(atomic_load(&f->ref_done) == 1, 2000);
    fti_rpc_stats_t st = get_stats(f);
    assert_int_equal(st.closed_error, 1);
    assert_int_equal(st.open_connections, 0);
    assert_int_equal(fti_rpc_call(c, M_REF, req, 4, CALL_MS, &rep, &rlen), FT_SUCCESS);
    assert_int_equal(rlen, 1000);
    assert_memory_equal(rep, f->ref_buf, 1000);
    free(rep);
    WAIT_FOR(atomic_load(&f->ref_done) == 2, 2000);
    fti_rpc_client_destroy(c);
}

int main(void)
{
    evthread_use_pthreads();
    signal(SIGPIPE, SIG_IGN); /* raw writes to reset peers in the tests */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_addr_split),
        cmocka_unit_test(test_addr_any_port),
        cmocka_unit_test(test_listen_and_name),
        cmocka_unit_test(test_connect_refused),
        cmocka_unit_test(test_deadlines),
        cmocka_unit_test(test_header_round_trip),
        cmocka_unit_test(test_unpack_reencodable),
        cmocka_unit_test_setup_teardown(test_echo_sizes, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_call_msg, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_decode_reject, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_deferred_reply, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_timeout_then_next_call, fx_setup, fx_teardown),
        cmocka_unit_test(test_timeout_bare_listener),
        cmocka_unit_test(test_connect_closed_port),
        cmocka_unit_test_setup_teardown(test_max_reply, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_call_into, fx_setup, fx_teardown),
        cmocka_unit_test(test_client_against_bad_server),
        cmocka_unit_test_setup_teardown(test_reject_bad_magic, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_reject_oversize, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_reject_truncated, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_unknown_method, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_reply_ref_sent, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_reply_ref_watch, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_reply_ref_watch_limit, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_reply_ref_closed_first, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_many_clients, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_destroy_busy_on_loop, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_destroy_busy_stopped, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_answer_then_destroy, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_flood_pipelined, fx_setup, fx_teardown),
        cmocka_unit_test_setup_teardown(test_pipelined_all_replies, fx_setup_limits, fx_teardown),
        cmocka_unit_test_setup_teardown(test_calls_cap, fx_setup_limits, fx_teardown),
        cmocka_unit_test_setup_teardown(test_conn_cap, fx_setup_limits, fx_teardown),
        cmocka_unit_test_setup_teardown(test_idle_timeout, fx_setup_idle, fx_teardown),
        cmocka_unit_test(test_sigpipe),
        cmocka_unit_test_setup_teardown(test_reply_ref_queue_fails, fx_setup, fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
