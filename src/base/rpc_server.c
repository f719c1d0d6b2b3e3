/* base/rpc_server.c - framed RPC, the server: a
 * libevent loop with deferred and zero-copy replies (see base/rpc.h; the
 * client is base/rpc_client.c). */
#include "base/rpc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/error.h"
#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/net.h"
#include "base/sizes.h"
#include "base/util.h"

#include "base/rpc_int.h"

/* ---- server ------------------------------------------------------------ */

/* Bytes one read takes from a socket at most. */
#define RPC_READ_CHUNK (256u << 10)
/* Buffer segments one sendmsg takes at most. */
#define RPC_SEND_IOVECS 16
/* How long the listener rests after accept() failed (out of descriptors). */
#define RPC_ACCEPT_PAUSE_MS 100

#ifdef FTI_TEST_HOOKS
int fti_rpc_test_fail_refs;

static int add_reference(struct evbuffer *out, const void *data, size_t len,
                         evbuffer_ref_cleanup_cb cleanup, void *arg)
{
    if (fti_rpc_test_fail_refs > 0) {
        fti_rpc_test_fail_refs--;
        return -1;
    }
    return evbuffer_add_reference(out, data, len, cleanup, arg);
}
#else
#define add_reference evbuffer_add_reference
#endif

/* Where a connection is in auth.h's handshake. */
enum conn_auth_step { AUTH_DONE, AUTH_HELLO, AUTH_PROOF };

struct rpc_conn {
    struct fti_rpc_server *srv; /* valid while fd >= 0 */
    int fd;                     /* -1 once closed */
    int auth_step;              /* enum conn_auth_step */
    fti_auth_state_t auth_st;
    int64_t accepted_ms;
    struct event *rev, *wev, *idle_ev;
    struct evbuffer *in, *out; /* out is NULL once closed */
    int refs;                  /* the connection itself + calls + a running read callback */
    int calls;                 /* calls in flight */
    bool reading;              /* rev is added */
    bool writing;              /* wev is added */
    bool eof;                  /* the peer closed its side */
    bool close_after_write;
    int64_t last_progress_ms; /* last byte read or sent */
    char peer[INET6_ADDRSTRLEN + 8];
    void *user;                /* fti_rpc_call_set_conn_data; srv->on_close gets it */
    LIST_ENTRY(rpc_conn) link;
    uint64_t out_sent; /* bytes of out sent so far */
    /* watched replies (fti_rpc_reply_ref_watch), in stream order: the
     * payload's first byte at stream offset start (out_sent counts) */
    struct rpc_watch {
        uint64_t start;
        size_t len;
        void (*sent)(void *arg, size_t n);
        void *arg;
    } watch[FTI_RPC_MAX_WATCH];
    int n_watch;
};

struct fti_rpc_server {
    struct event_base *base;
    struct evconnlistener *listener;
    struct event *accept_ev; /* re-enables the listener after a pause */
    char addr[FTI_ADDRESS_SIZE];
    fti_rpc_server_config_t cfg; /* cfg.auth_key points at key, or is NULL */
    fti_auth_key_t key;
    fti_rpc_method_t *methods;
    size_t n_methods;
    void *arg;
    fti_rpc_stats_t stats;
    size_t n_conns;
    LIST_HEAD(, rpc_conn) conns;
    fti_rpc_close_fn on_close; /* fti_rpc_server_on_close */
    void *on_close_arg;
};

struct fti_rpc_call {
    struct rpc_conn *conn;
    uint16_t method;
};

struct ref_done {
    void (*done)(void *);
    void (*sent)(void *, size_t); /* NULL: not watched */
    void *arg;
};

static void conn_unref(struct rpc_conn *c)
{
    if (--c->refs == 0) {
        evbuffer_free(c->in);
        free(c);
    }
}

/* Closes the socket and frees the events and the unsent replies (their
 * done callbacks run now); the struct lives on while calls point at it. */
static void conn_close(struct rpc_conn *c)
{
    if (c->fd < 0)
        return;
    if (c->user && c->srv->on_close) {
        void *user = c->user;
        c->user = NULL;
        c->srv->on_close(user, c->srv->on_close_arg);
    }
    event_free(c->rev);
    event_free(c->wev);
    event_free(c->idle_ev);
    c->rev = c->wev = c->idle_ev = NULL;
    evutil_closesocket(c->fd);
    c->fd = -1;
    LIST_REMOVE(c, link);
    c->srv->n_conns--;
    struct evbuffer *out = c->out;
    c->out = NULL;
    evbuffer_free(out);
    conn_unref(c);
}

static void conn_set_reading(struct rpc_conn *c, bool on)
{
    if (on == c->reading)
        return;
    if (on)
        event_add(c->rev, NULL);
    else
        event_del(c->rev);
    c->reading = on;
}

/* Whether c must not take another request now: too many unsent reply
 * bytes or too many calls in flight. */
static bool conn_full(const struct rpc_conn *c)
{
    const fti_rpc_server_config_t *cfg = &c->srv->cfg;
    return evbuffer_get_length(c->out) >= cfg->out_high_water || c->calls >= cfg->max_calls;
}

/* Takes requests again once the replies drained below the low-water mark
 * and a call may start; the read callback runs from the loop (never from
 * here: this is reached from inside handlers). */
static void conn_maybe_resume(struct rpc_conn *c)
{
    if (c->fd < 0 || c->reading || c->close_after_write ||
        evbuffer_get_length(c->out) > c->srv->cfg.out_low_water || c->calls >= c->srv->cfg.max_calls)
        return;
    if (!c->eof)
        conn_set_reading(c, true);
    event_active(c->rev, EV_READ, 0);
}

static int conn_queued(struct rpc_conn *c, int rc, size_t len);

static void ref_cleanup(const void *data, size_t len, void *arg)
{
    struct ref_done *d = arg;
    (void)data;
    (void)len;
    d->done(d->arg);
    free(d);
}

/* Queues a reply frame: the header, then the payload copied, or referenced
 * when d is not NULL (the buffer then owns d).  A frame that cannot be
 * queued whole closes the connection, since part of a frame would put the
 * stream out of sync; FT_ERR_NO_MEMORY then, and d is still the caller's. */
static int conn_queue(struct rpc_conn *c, uint16_t method, int32_t status, const void *payload,
                      size_t len, struct ref_done *d)
{
    fti_rpc_header_t h = {FTI_RPC_MAGIC, FTI_RPC_F_REPLY, method, status, (uint32_t)len};
    uint8_t hdr[FTI_RPC_HEADER_LEN];
    int rc = len > UINT32_MAX ? -1 : 0;

    fti_rpc_header_encode(&h, hdr);
    if (rc == 0)
        rc = evbuffer_add(c->out, hdr, sizeof(hdr));
    uint64_t start = c->out_sent + evbuffer_get_length(c->out);
    if (rc == 0 && len > 0)
        rc = d != NULL ? add_reference(c->out, payload, len, ref_cleanup, d)
                       : evbuffer_add(c->out, payload, len);
    if (rc == 0 && d != NULL && d->sent != NULL && c->n_watch < FTI_RPC_MAX_WATCH)
        c->watch[c->n_watch++] = (struct rpc_watch){start, len, d->sent, d->arg};
    return conn_queued(c, rc, len);
}

/* Tells the watched replies that n more bytes of the stream were sent
 * (before they are drained: a done callback comes after the last sent). */
static void conn_watch_sent(struct rpc_conn *c, size_t n)
{
    uint64_t from = c->out_sent, to = from + n;
    c->out_sent = to;
    int k = 0;
    while (k < c->n_watch) {
        const struct rpc_watch *w = &c->watch[k];
        if (w->start >= to)
            break;
        if (w->start + w->len > from)
            w->sent(w->arg, (size_t)(FTI_MIN(to, w->start + w->len) - w->start));
        if (w->start + w->len > to)
            break;
        k++;
    }
    if (k > 0) {
        memmove(c->watch, c->watch + k, (size_t)(c->n_watch - k) * sizeof(c->watch[0]));
        c->n_watch -= k;
    }
}

/* Queues raw handshake bytes (no frame header); see conn_queue. */
static int conn_queue_raw(struct rpc_conn *c, const void *data, size_t len)
{
    return conn_queued(c, evbuffer_add(c->out, data, len), len);
}

/* The end of conn_queue*: rc is the evbuffer calls' outcome. */
static int conn_queued(struct rpc_conn *c, int rc, size_t len)
{
    if (rc != 0) {
        FTI_ERROR("rpc: cannot queue a %zu-byte reply to %s: closing the connection", len,
                  c->peer);
        c->srv->stats.closed_error++;
        conn_close(c);
        return FT_ERR_NO_MEMORY;
    }
    c->last_progress_ms = fti_now_ms(); /* the idle clock now waits for the client to read */
    size_t queued = evbuffer_get_length(c->out);
    if (queued > c->srv->stats.peak_queued_bytes)
        c->srv->stats.peak_queued_bytes = queued;
    if (!c->writing) {
        event_add(c->wev, NULL);
        c->writing = true;
    }
    return FT_SUCCESS;
}

static void conn_reject(struct rpc_conn *c, uint64_t *counter, int status, const char *why)
{
    (*counter)++;
    FTI_WARN("rpc: rejected frame from %s: %s", c->peer, why);
    conn_set_reading(c, false);
    c->close_after_write = true;
    (void)conn_queue(c, 0, status, why, strlen(why), NULL);
}

/* Counts a peer that failed the handshake, logs it (1st, 2nd, 4th, ...
 * time: a flood does not flood the log). */
static void auth_count(struct rpc_conn *c, const char *why)
{
    uint64_t n = ++c->srv->stats.rejected_auth;
    if ((n & (n - 1)) == 0)
        FTI_WARN("rpc %s: refused the connection from %s: %s (%" PRIu64 " refused so far)",
                 c->srv->addr, c->peer, why, n);
}

/* Refuses a peer that failed the handshake: an FT_ERR_AUTH error frame,
 * then close; nothing it sent is read any further. */
static void auth_refuse(struct rpc_conn *c, const char *why, const char *msg)
{
    auth_count(c, why);
    conn_set_reading(c, false);
    c->close_after_write = true;
    (void)conn_queue(c, 0, FT_ERR_AUTH, msg, strlen(msg), NULL);
}

/* One step of the handshake with the bytes in c->in.  Returns 1 after a
 * step, 0 when more bytes are needed, -1 when the connection was refused
 * or closed. */
static int conn_auth(struct rpc_conn *c)
{
    struct fti_rpc_server *s = c->srv;
    size_t avail = evbuffer_get_length(c->in);
    if (c->auth_step == AUTH_HELLO) {
        uint8_t hello[FTI_AUTH_HELLO_LEN], chal[FTI_AUTH_CHALLENGE_LEN];
        size_t look = avail < FTI_AUTH_MAGIC_LEN ? avail : FTI_AUTH_MAGIC_LEN;
        evbuffer_copyout(c->in, hello, look);
        if (memcmp(hello, fti_auth_hello_magic, look) != 0) {
            auth_refuse(c, "no authentication handshake",
                        "authentication required: this server needs the job secret "
                        "(FTMPI_TOKEN_FILE)");
            return -1;
        }
        if (avail < FTI_AUTH_HELLO_LEN)
            return 0;
        evbuffer_remove(c->in, hello, sizeof(hello));
        if (fti_auth_server_challenge(&s->key, &c->auth_st, hello, chal) != FT_SUCCESS) {
            s->stats.closed_error++;
            conn_close(c);
            return -1;
        }
        if (conn_queue_raw(c, chal, sizeof(chal)) != FT_SUCCESS)
            return -1;
        c->auth_step = AUTH_PROOF;
        return 1;
    }
    uint8_t proof[FTI_AUTH_PROOF_LEN];
    if (avail < sizeof(proof))
        return 0;
    evbuffer_remove(c->in, proof, sizeof(proof));
    uint8_t ack[FTI_AUTH_ACK_LEN];
    if (fti_auth_server_verify(&s->key, &c->auth_st, proof, ack) != FT_SUCCESS) {
        auth_refuse(c, "wrong job secret", "authentication failed: a different job secret");
        return -1;
    }
    if (conn_queue_raw(c, ack, sizeof(ack)) != FT_SUCCESS)
        return -1;
    c->auth_step = AUTH_DONE;
    return 1;
}

static const fti_rpc_method_t *find_method(struct fti_rpc_server *s, uint16_t m)
{
    for (size_t i = 0; i < s->n_methods; i++)
        if (s->methods[i].method == m)
            return &s->methods[i];
    return NULL;
}

/* Dispatches one request (header h, complete in c->in) to its handler. */
static void conn_dispatch(struct rpc_conn *c, const fti_rpc_header_t *h)
{
    struct fti_rpc_server *s = c->srv;
    const fti_rpc_method_t *m = find_method(s, h->method);
    if (m == NULL) {
        s->stats.rejected_unknown++;
        FTI_WARN("rpc: unknown method %u from %s", h->method, c->peer);
        static const char why[] = "unknown method";
        (void)conn_queue(c, h->method, FT_ERR_UNSUPPORTED, why, sizeof(why) - 1, NULL);
        return;
    }
    struct fti_rpc_call *call = malloc(sizeof(*call));
    if (call == NULL) {
        FTI_ERROR("rpc: out of memory for a call");
        s->stats.closed_error++;
        conn_close(c);
        return;
    }
    const uint8_t *payload = evbuffer_pullup(c->in, FTI_RPC_HEADER_LEN + h->length);
    call->conn = c;
    call->method = h->method;
    c->refs++;
    c->calls++;
    s->stats.requests++;
    m->fn(call, payload + FTI_RPC_HEADER_LEN, h->length, s->arg);
}

/* Handles the complete frames in c->in until it holds none or c is full
 * (its reading then pauses) or closed.  Returns whether it stopped for
 * want of a complete frame. */
static bool conn_process(struct rpc_conn *c)
{
    struct fti_rpc_server *s = c->srv;
    while (c->fd >= 0 && !c->close_after_write) {
        uint8_t hdr[FTI_RPC_HEADER_LEN];
        fti_rpc_header_t h;
        if (c->auth_step != AUTH_DONE) {
            int r = conn_auth(c);
            if (r <= 0)
                return r == 0;
            continue;
        }
        size_t avail = evbuffer_get_length(c->in);
        if (avail < FTI_RPC_HEADER_LEN)
            return true;
        if (conn_full(c)) {
            if (c->reading)
                s->stats.paused++;
            conn_set_reading(c, false);
            return false;
        }
        evbuffer_copyout(c->in, hdr, sizeof(hdr));
        fti_rpc_header_decode(hdr, &h);
        if (h.magic != FTI_RPC_MAGIC || (h.flags & FTI_RPC_F_REPLY) || h.status != 0) {
            conn_reject(c, &s->stats.rejected_garbage, FT_ERR_BAD_MESSAGE, "bad frame header");
            return false;
        }
        if (h.length > s->cfg.max_frame) {
            conn_reject(c, &s->stats.rejected_oversize, FT_ERR_BAD_MESSAGE,
                        "frame larger than the cap");
            return false;
        }
        if (avail < FTI_RPC_HEADER_LEN + (size_t)h.length)
            return true;
        conn_dispatch(c, &h);
        if (c->fd < 0)
            return false;
        evbuffer_drain(c->in, FTI_RPC_HEADER_LEN + h.length);
    }
    return false;
}

/* The peer closed, or reading failed: bytes left over are a truncated
 * frame. */
static void conn_ended(struct rpc_conn *c, const char *how)
{
    if (!c->close_after_write && (c->auth_step == AUTH_PROOF ||
                                  (c->auth_step == AUTH_HELLO && evbuffer_get_length(c->in) > 0))) {
        auth_count(c, "closed inside the handshake"); /* it may have refused our proof */
    } else if (evbuffer_get_length(c->in) > 0 && !c->close_after_write) {
        c->srv->stats.rejected_truncated++;
        FTI_WARN("rpc: connection from %s %s inside a frame", c->peer, how);
    }
    conn_close(c);
}

/* Reads (unless run only to take buffered requests after a pause), then
 * handles the complete frames; closes once the peer's end was reached and
 * every complete frame was handled. */
static void conn_read_cb(evutil_socket_t fd, short what, void *arg)
{
    struct rpc_conn *c = arg;
    (void)what;
    if (c->reading && !c->eof) {
        int n = evbuffer_read(c->in, fd, RPC_READ_CHUNK);
        if (n > 0) {
            c->last_progress_ms = fti_now_ms();
        } else if (n == 0) {
            c->eof = true;
            conn_set_reading(c, false);
        } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
            FTI_DEBUG("rpc: read from %s: %m", c->peer);
            conn_ended(c, "failed");
            return;
        }
    }
    c->refs++; /* a handler may not free c under us */
    bool drained = conn_process(c);
    if (c->fd >= 0 && c->eof && drained)
        conn_ended(c, "closed");
    conn_unref(c);
}

/* Sends what the output holds, with MSG_NOSIGNAL (no SIGPIPE when the peer
 * went away), until the socket is full; resumes reading once drained. */
static void conn_send_some(struct rpc_conn *c, evutil_socket_t fd)
{
    while (evbuffer_get_length(c->out) > 0) {
        struct evbuffer_iovec v[RPC_SEND_IOVECS];
        struct iovec iov[RPC_SEND_IOVECS];
        int nv = evbuffer_peek(c->out, -1, NULL, v, RPC_SEND_IOVECS);
        nv = nv > RPC_SEND_IOVECS ? RPC_SEND_IOVECS : nv;
        /* a watched reply goes out in pieces that stay in the cache */
        size_t room = c->n_watch > 0 ? FTI_RPC_WATCH_SEND : SIZE_MAX;
        int k = 0;
        for (; k < nv && room > 0; k++) {
            iov[k].iov_base = v[k].iov_base;
            iov[k].iov_len = FTI_MIN(v[k].iov_len, room);
            room -= iov[k].iov_len;
        }
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)k};
        ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            c->last_progress_ms = fti_now_ms();
            if (c->n_watch > 0)
                conn_watch_sent(c, (size_t)n);
            else
                c->out_sent += (uint64_t)n;
            evbuffer_drain(c->out, (size_t)n); /* may run done callbacks */
            if (c->fd < 0)
                return;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        FTI_DEBUG("rpc: send to %s: %m", c->peer); /* the peer went away: not ours to report */
        c->srv->stats.closed_error++;
        conn_ended(c, "reset");
        return;
    }
    if (evbuffer_get_length(c->out) == 0) {
        event_del(c->wev);
        c->writing = false;
        if (c->close_after_write) {
            conn_close(c);
            return;
        }
    }
    conn_maybe_resume(c);
}

static void conn_write_cb(evutil_socket_t fd, short what, void *arg)
{
    struct rpc_conn *c = arg;
    (void)what;
    c->refs++; /* a done callback may close c */
    conn_send_some(c, fd);
    conn_unref(c);
}

/* Closes a connection that has not finished the handshake within
 * FTI_AUTH_TIMEOUT_MS, or that moved no byte either way for idle_ms (0 =
 * never) unless all it does is wait for a deferred reply. */
static void conn_idle_cb(evutil_socket_t fd, short what, void *arg)
{
    struct rpc_conn *c = arg;
    int64_t now = fti_now_ms(), idle = c->srv->cfg.idle_ms, next = INT64_MAX;
    (void)fd;
    (void)what;
    if (c->auth_step != AUTH_DONE) {
        next = c->accepted_ms + FTI_AUTH_TIMEOUT_MS - now;
        if (next <= 0) {
            auth_count(c, "no handshake in time");
            conn_close(c);
            return;
        }
    }
    if (idle > 0) {
        if (c->calls > 0 && evbuffer_get_length(c->out) == 0)
            c->last_progress_ms = now; /* the server owes it a reply */
        int64_t left = c->last_progress_ms + idle - now;
        if (left <= 0) {
            c->srv->stats.closed_idle++;
            FTI_DEBUG("rpc: closing the connection from %s: idle for %" PRId64 " ms", c->peer,
                      now - c->last_progress_ms);
            conn_close(c);
            return;
        }
        next = left < next ? left : next;
    }
    if (next == INT64_MAX)
        return;
    struct timeval tv = {(time_t)(next / 1000), (suseconds_t)(next % 1000) * 1000};
    evtimer_add(c->idle_ev, &tv);
}

/* Refuses fd at the connection cap: an error frame (best effort), then
 * close. */
static void refuse_conn(struct fti_rpc_server *s, evutil_socket_t fd, const char *peer)
{
    static const char why[] = "server busy: too many connections";
    fti_rpc_header_t h = {FTI_RPC_MAGIC, FTI_RPC_F_REPLY, 0, FT_ERR_CONNECT, sizeof(why) - 1};
    uint8_t frame[FTI_RPC_HEADER_LEN + sizeof(why) - 1];
    uint64_t n = ++s->stats.rejected_conn_cap;
    if ((n & (n - 1)) == 0) /* 1, 2, 4, 8, ...: a flood does not flood the log */
        FTI_WARN("rpc %s: refused the connection from %s: %zu open, the cap (%" PRIu64
                 " refused so far)",
                 s->addr, peer, s->n_conns, n);
    fti_rpc_header_encode(&h, frame);
    memcpy(frame + FTI_RPC_HEADER_LEN, why, sizeof(why) - 1);
    (void)send(fd, frame, sizeof(frame), MSG_NOSIGNAL | MSG_DONTWAIT);
    evutil_closesocket(fd);
}

static void peer_name(const struct sockaddr *sa, char *buf, size_t len)
{
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (sa->sa_family == AF_INET) {
        inet_ntop(AF_INET, &((const struct sockaddr_in *)sa)->sin_addr, host, sizeof(host));
        port = ntohs(((const struct sockaddr_in *)sa)->sin_port);
    } else if (sa->sa_family == AF_INET6) {
        inet_ntop(AF_INET6, &((const struct sockaddr_in6 *)sa)->sin6_addr, host, sizeof(host));
        port = ntohs(((const struct sockaddr_in6 *)sa)->sin6_port);
    }
    snprintf(buf, len, "%s:%d", host, port);
}

/* The events and buffers of a new connection; false when out of memory. */
static bool conn_setup(struct fti_rpc_server *s, struct rpc_conn *c, evutil_socket_t fd)
{
    c->srv = s;
    c->fd = (int)fd;
    c->refs = 1;
    c->last_progress_ms = c->accepted_ms = fti_now_ms();
    c->auth_step = s->cfg.auth_key != NULL ? AUTH_HELLO : AUTH_DONE;
    c->in = evbuffer_new();
    c->out = evbuffer_new();
    c->rev = event_new(s->base, fd, EV_READ | EV_PERSIST, conn_read_cb, c);
    c->wev = event_new(s->base, fd, EV_WRITE | EV_PERSIST, conn_write_cb, c);
    c->idle_ev = evtimer_new(s->base, conn_idle_cb, c);
    return c->in && c->out && c->rev && c->wev && c->idle_ev;
}

static void conn_setup_undo(struct rpc_conn *c)
{
    if (c->in)
        evbuffer_free(c->in);
    if (c->out)
        evbuffer_free(c->out);
    if (c->rev)
        event_free(c->rev);
    if (c->wev)
        event_free(c->wev);
    if (c->idle_ev)
        event_free(c->idle_ev);
    free(c);
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
                      void *arg)
{
    struct fti_rpc_server *s = arg;
    char peer[INET6_ADDRSTRLEN + 8];
    (void)l;
    (void)salen;
    peer_name(sa, peer, sizeof(peer));
    if (s->n_conns >= s->cfg.max_conns) {
        refuse_conn(s, fd, peer);
        return;
    }
    struct rpc_conn *c = calloc(1, sizeof(*c));
    if (c == NULL || !conn_setup(s, c, fd)) {
        FTI_ERROR("rpc: out of memory for a connection from %s", peer);
        if (c)
            conn_setup_undo(c);
        evutil_closesocket(fd);
        return;
    }
    fti_strlcpy(c->peer, peer, sizeof(c->peer));
    (void)fti_sock_tune(fd);
    LIST_INSERT_HEAD(&s->conns, c, link);
    s->n_conns++;
    s->stats.connections++;
    conn_set_reading(c, true);
    int first = s->cfg.idle_ms;
    if (c->auth_step != AUTH_DONE && (first == 0 || first > FTI_AUTH_TIMEOUT_MS))
        first = FTI_AUTH_TIMEOUT_MS;
    if (first > 0) {
        struct timeval tv = {first / 1000, (first % 1000) * 1000};
        evtimer_add(c->idle_ev, &tv);
    }
}

static void accept_resume_cb(evutil_socket_t fd, short what, void *arg)
{
    struct fti_rpc_server *s = arg;
    (void)fd;
    (void)what;
    evconnlistener_enable(s->listener);
}

/* accept() failed (EMFILE, ENFILE, ENOBUFS): rest a while instead of
 * spinning on the listening socket, which stays readable. */
static void accept_error_cb(struct evconnlistener *l, void *arg)
{
    struct fti_rpc_server *s = arg;
    struct timeval tv = {0, RPC_ACCEPT_PAUSE_MS * 1000};
    FTI_ERROR("rpc %s: accept: %s; pausing for %d ms", s->addr,
              evutil_socket_error_to_string(EVUTIL_SOCKET_ERROR()), RPC_ACCEPT_PAUSE_MS);
    evconnlistener_disable(l);
    evtimer_add(s->accept_ev, &tv);
}

/* The default connection cap: what the descriptor limit leaves (rpc.h). */
static size_t default_max_conns(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return 1u << 20;
    if (rl.rlim_cur < FTI_RPC_FD_RESERVE + FTI_RPC_MIN_MAX_CONNS)
        return FTI_RPC_MIN_MAX_CONNS;
    return (size_t)rl.rlim_cur - FTI_RPC_FD_RESERVE;
}

void fti_rpc_server_config_init(fti_rpc_server_config_t *cfg, size_t max_frame)
{
    cfg->max_frame = max_frame;
    cfg->max_conns = default_max_conns();
    cfg->out_high_water = FTI_RPC_DEFAULT_OUT_HIGH_WATER;
    cfg->out_low_water = FTI_RPC_DEFAULT_OUT_LOW_WATER;
    cfg->max_calls = FTI_RPC_DEFAULT_MAX_CALLS;
    cfg->idle_ms = FTI_RPC_DEFAULT_IDLE_MS;
    cfg->backlog = FTI_RPC_DEFAULT_BACKLOG;
    cfg->auth_key = NULL;
}

static bool config_ok(const fti_rpc_server_config_t *cfg)
{
    return cfg->max_frame > 0 && cfg->max_frame <= UINT32_MAX && cfg->max_conns > 0 &&
           cfg->out_high_water > 0 && cfg->out_low_water <= cfg->out_high_water &&
           cfg->max_calls > 0 && cfg->idle_ms >= 0 && cfg->backlog > 0;
}

static void server_free(struct fti_rpc_server *s)
{
    if (s->listener)
        evconnlistener_free(s->listener);
    if (s->accept_ev)
        event_free(s->accept_ev);
    while (!LIST_EMPTY(&s->conns))
        conn_close(LIST_FIRST(&s->conns));
    free(s->methods);
    free(s);
}

int fti_rpc_server_create_cfg(struct event_base *base, const char *bind_addr,
                              const fti_rpc_server_config_t *cfg, const fti_rpc_method_t *methods,
                              size_t n, void *arg, fti_rpc_server_h *srv_p)
{
    int fd = -1, rc;
    if (cfg == NULL || !config_ok(cfg))
        return FT_ERR_ARG;
    struct fti_rpc_server *s = calloc(1, sizeof(*s));
    if (s == NULL || (s->methods = calloc(n ? n : 1, sizeof(*methods))) == NULL) {
        free(s);
        return FT_ERR_NO_MEMORY;
    }
    memcpy(s->methods, methods, n * sizeof(*methods));
    s->n_methods = n;
    s->base = base;
    s->cfg = *cfg;
    if (cfg->auth_key != NULL) {
        s->key = *cfg->auth_key;
        s->cfg.auth_key = &s->key;
    } else {
        fti_auth_warn_unauthenticated();
    }
    s->arg = arg;
    LIST_INIT(&s->conns);
    if ((rc = fti_tcp_listen(bind_addr, cfg->backlog, &fd)) != FT_SUCCESS ||
        (rc = fti_sock_name(fd, s->addr, sizeof(s->addr))) != FT_SUCCESS) {
        if (fd >= 0)
            close(fd);
        server_free(s);
        return rc;
    }
    s->accept_ev = evtimer_new(base, accept_resume_cb, s);
    s->listener = evconnlistener_new(base, accept_cb, s,
                                     LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, 0, fd);
    if (s->listener == NULL || s->accept_ev == NULL) {
        FTI_ERROR("rpc: cannot create the listener events of %s", s->addr);
        if (s->listener == NULL)
            close(fd);
        server_free(s);
        return FT_ERR_SYSTEM;
    }
    evconnlistener_set_error_cb(s->listener, accept_error_cb);
    *srv_p = s;
    return FT_SUCCESS;
}

int fti_rpc_server_create(struct event_base *base, const char *bind_addr, size_t max_frame,
                          const fti_auth_key_t *key, const fti_rpc_method_t *methods, size_t n,
                          void *arg, fti_rpc_server_h *srv_p)
{
    fti_rpc_server_config_t cfg;
    fti_rpc_server_config_init(&cfg, max_frame);
    cfg.auth_key = key;
    return fti_rpc_server_create_cfg(base, bind_addr, &cfg, methods, n, arg, srv_p);
}

void fti_rpc_server_destroy(fti_rpc_server_h s)
{
    if (s != NULL)
        server_free(s);
}

const char *fti_rpc_server_address(fti_rpc_server_h s)
{
    return s->addr;
}

void fti_rpc_server_stats(fti_rpc_server_h s, fti_rpc_stats_t *stats_p)
{
    struct rpc_conn *c;
    s->stats.open_connections = s->n_conns;
    s->stats.queued_bytes = 0;
    LIST_FOREACH(c, &s->conns, link)
        s->stats.queued_bytes += evbuffer_get_length(c->out);
    *stats_p = s->stats;
}

uint16_t fti_rpc_call_method(fti_rpc_call_h call)
{
    return call->method;
}

bool fti_rpc_call_alive(fti_rpc_call_h call)
{
    return call->conn->fd >= 0 && !call->conn->close_after_write;
}

const char *fti_rpc_call_peer(fti_rpc_call_h call)
{
    return call->conn->peer;
}

void *fti_rpc_call_conn_data(fti_rpc_call_h call)
{
    return call->conn->user;
}

bool fti_rpc_call_set_conn_data(fti_rpc_call_h call, void *data)
{
    if (call->conn->fd < 0)
        return false;
    call->conn->user = data;
    return true;
}

void fti_rpc_server_on_close(fti_rpc_server_h s, fti_rpc_close_fn fn, void *arg)
{
    s->on_close = fn;
    s->on_close_arg = arg;
}

static void call_end(fti_rpc_call_h call)
{
    struct rpc_conn *c = call->conn;
    free(call);
    c->calls--;
    conn_maybe_resume(c);
    conn_unref(c);
}

int fti_rpc_reply(fti_rpc_call_h call, const void *payload, size_t len)
{
    int rc = FT_ERR_PROC_FAILED;
    if (fti_rpc_call_alive(call))
        rc = conn_queue(call->conn, call->method, 0, payload, len, NULL);
    call_end(call);
    return rc;
}

int fti_rpc_reply_error(fti_rpc_call_h call, int status, const char *msg)
{
    int rc = FT_ERR_PROC_FAILED;
    /* counted only while the connection is open: once it is closed the
     * server may have been destroyed (a deferred call answered late) */
    if (status == FT_ERR_BAD_MESSAGE && call->conn->fd >= 0)
        call->conn->srv->stats.rejected_decode++;
    if (fti_rpc_call_alive(call))
        rc = conn_queue(call->conn, call->method, status ? status : FT_ERR_INTERNAL, msg,
                        msg ? strnlen(msg, RPC_MAX_ERROR_MSG) : 0, NULL);
    call_end(call);
    return rc;
}

int fti_rpc_reply_ref(fti_rpc_call_h call, const void *payload, size_t len,
                      void (*done)(void *arg), void *arg)
{
    return fti_rpc_reply_ref_watch(call, payload, len, done, NULL, arg);
}

int fti_rpc_reply_ref_watch(fti_rpc_call_h call, const void *payload, size_t len,
                            void (*done)(void *arg), void (*sent)(void *arg, size_t n),
                            void *arg)
{
    struct ref_done *d = NULL;
    int rc = FT_ERR_PROC_FAILED;
    if (fti_rpc_call_alive(call)) {
        rc = FT_ERR_NO_MEMORY;
        if (len > 0 && (d = malloc(sizeof(*d))) == NULL) {
            FTI_ERROR("rpc: out of memory for a zero-copy reply");
            conn_close(call->conn); /* the client would wait for this reply in vain */
        } else {
            if (d != NULL)
                *d = (struct ref_done){done, sent, arg};
            rc = conn_queue(call->conn, call->method, 0, payload, len, d);
        }
    }
    if (rc != FT_SUCCESS || d == NULL) {
        free(d);
        done(arg); /* not referenced by any buffer */
    }
    call_end(call);
    return rc;
}
