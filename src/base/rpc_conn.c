/* base/rpc_conn.c - framed RPC, the server's connections (see base/rpc.h
 * and base/rpc_server_int.h): the handshake, requests read, checked and
 * dispatched, replies queued and sent (copied or zero-copy, watched), the
 * idle and handshake timers.  The listener is base/rpc_server.c. */
#include "base/rpc.h"
#include "base/rpc_server_int.h"

#include <errno.h>
#include <inttypes.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/util.h"

/* Bytes one read takes from a socket at most. */
#define RPC_READ_CHUNK (256u << 10)
/* Buffer segments one sendmsg takes at most. */
#define RPC_SEND_IOVECS 16

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

void fti_rpc_conn_unref(struct rpc_conn *c)
{
    if (--c->refs == 0) {
        evbuffer_free(c->in);
        free(c);
    }
}

/* Closes the socket and frees the events and the unsent replies (their
 * done callbacks run now); the struct lives on while calls point at it. */
void fti_rpc_conn_close(struct rpc_conn *c)
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
    fti_rpc_conn_unref(c);
}

void fti_rpc_conn_set_reading(struct rpc_conn *c, bool on)
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
void fti_rpc_conn_maybe_resume(struct rpc_conn *c)
{
    if (c->fd < 0 || c->reading || c->close_after_write ||
        evbuffer_get_length(c->out) > c->srv->cfg.out_low_water || c->calls >= c->srv->cfg.max_calls)
        return;
    if (!c->eof)
        fti_rpc_conn_set_reading(c, true);
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
int fti_rpc_conn_queue(struct rpc_conn *c, uint16_t method, int32_t status, const void *payload,
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

/* Queues raw handshake bytes (no frame header); see fti_rpc_conn_queue. */
static int conn_queue_raw(struct rpc_conn *c, const void *data, size_t len)
{
    return conn_queued(c, evbuffer_add(c->out, data, len), len);
}

/* The end of fti_rpc_conn_queue*: rc is the evbuffer calls' outcome. */
static int conn_queued(struct rpc_conn *c, int rc, size_t len)
{
    if (rc != 0) {
        FTI_ERROR("rpc: cannot queue a %zu-byte reply to %s: closing the connection", len,
                  c->peer);
        c->srv->stats.closed_error++;
        fti_rpc_conn_close(c);
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
    fti_rpc_conn_set_reading(c, false);
    c->close_after_write = true;
    (void)fti_rpc_conn_queue(c, 0, status, why, strlen(why), NULL);
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
    fti_rpc_conn_set_reading(c, false);
    c->close_after_write = true;
    (void)fti_rpc_conn_queue(c, 0, FT_ERR_AUTH, msg, strlen(msg), NULL);
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
            fti_rpc_conn_close(c);
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
        (void)fti_rpc_conn_queue(c, h->method, FT_ERR_UNSUPPORTED, why, sizeof(why) - 1, NULL);
        return;
    }
    struct fti_rpc_call *call = malloc(sizeof(*call));
    if (call == NULL) {
        FTI_ERROR("rpc: out of memory for a call");
        s->stats.closed_error++;
        fti_rpc_conn_close(c);
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
            fti_rpc_conn_set_reading(c, false);
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
    fti_rpc_conn_close(c);
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
            fti_rpc_conn_set_reading(c, false);
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
    fti_rpc_conn_unref(c);
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
            fti_rpc_conn_close(c);
            return;
        }
    }
    fti_rpc_conn_maybe_resume(c);
}

static void conn_write_cb(evutil_socket_t fd, short what, void *arg)
{
    struct rpc_conn *c = arg;
    (void)what;
    c->refs++; /* a done callback may close c */
    conn_send_some(c, fd);
    fti_rpc_conn_unref(c);
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
            fti_rpc_conn_close(c);
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
            fti_rpc_conn_close(c);
            return;
        }
        next = left < next ? left : next;
    }
    if (next == INT64_MAX)
        return;
    struct timeval tv = {(time_t)(next / 1000), (suseconds_t)(next % 1000) * 1000};
    evtimer_add(c->idle_ev, &tv);
}

/* The events and buffers of a new connection; false when out of memory. */
bool fti_rpc_conn_setup(struct fti_rpc_server *s, struct rpc_conn *c, evutil_socket_t fd)
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

void fti_rpc_conn_setup_undo(struct rpc_conn *c)
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
