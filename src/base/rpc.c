/* rpc.c - framed RPC: libevent server with deferred replies, blocking
 * client with deadlines (see rpc.h). */
#include "rpc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <unistd.h>

#include "ftmpi_errors.h"
#include "log.h"
#include "net.h"
#include "util.h"

/* ---- header ------------------------------------------------------------ */

void fti_rpc_header_encode(const fti_rpc_header_t *h, uint8_t out[FTI_RPC_HEADER_LEN])
{
    uint32_t magic = htonl(h->magic), status = htonl((uint32_t)h->status),
             length = htonl(h->length);
    uint16_t flags = htons(h->flags), method = htons(h->method);
    memcpy(out, &magic, 4);
    memcpy(out + 4, &flags, 2);
    memcpy(out + 6, &method, 2);
    memcpy(out + 8, &status, 4);
    memcpy(out + 12, &length, 4);
}

void fti_rpc_header_decode(const uint8_t in[FTI_RPC_HEADER_LEN], fti_rpc_header_t *h)
{
    uint32_t magic, status, length;
    uint16_t flags, method;
    memcpy(&magic, in, 4);
    memcpy(&flags, in + 4, 2);
    memcpy(&method, in + 6, 2);
    memcpy(&status, in + 8, 4);
    memcpy(&length, in + 12, 4);
    h->magic = ntohl(magic);
    h->flags = ntohs(flags);
    h->method = ntohs(method);
    h->status = (int32_t)ntohl(status);
    h->length = ntohl(length);
}

/* ---- server ------------------------------------------------------------ */

struct rpc_conn {
    struct fti_rpc_server *srv;
    struct bufferevent *bev; /* NULL once closed */
    int refs;                /* the connection itself + pending calls */
    int close_after_write;
    char peer[INET6_ADDRSTRLEN + 8];
    LIST_ENTRY(rpc_conn) link;
};

struct fti_rpc_server {
    struct event_base *base;
    struct evconnlistener *listener;
    char addr[128];
    size_t max_frame;
    fti_rpc_method_t *methods;
    size_t n_methods;
    void *arg;
    fti_rpc_stats_t stats;
    LIST_HEAD(, rpc_conn) conns;
};

struct fti_rpc_call {
    struct rpc_conn *conn;
    uint16_t method;
};

static void conn_unref(struct rpc_conn *c)
{
    if (--c->refs == 0)
        free(c);
}

static void conn_close(struct rpc_conn *c)
{
    if (c->bev == NULL)
        return;
    bufferevent_free(c->bev);
    c->bev = NULL;
    LIST_REMOVE(c, link);
    conn_unref(c);
}

static void conn_send(struct rpc_conn *c, uint16_t method, int32_t status, const void *payload,
                      size_t len)
{
    fti_rpc_header_t h = {FTI_RPC_MAGIC, FTI_RPC_F_REPLY, method, status, (uint32_t)len};
    uint8_t hdr[FTI_RPC_HEADER_LEN];
    struct evbuffer *out = bufferevent_get_output(c->bev);
    fti_rpc_header_encode(&h, hdr);
    evbuffer_add(out, hdr, sizeof(hdr));
    if (len > 0)
        evbuffer_add(out, payload, len);
}

static void conn_reject(struct rpc_conn *c, uint64_t *counter, int status, const char *why)
{
    (*counter)++;
    FTI_WARN("rpc: rejected frame from %s: %s", c->peer, why);
    conn_send(c, 0, status, why, strlen(why));
    c->close_after_write = 1;
    bufferevent_disable(c->bev, EV_READ);
}

static const fti_rpc_method_t *find_method(struct fti_rpc_server *s, uint16_t m)
{
    for (size_t i = 0; i < s->n_methods; i++)
        if (s->methods[i].method == m)
            return &s->methods[i];
    return NULL;
}

static void conn_read_cb(struct bufferevent *bev, void *arg)
{
    struct rpc_conn *c = arg;
    struct fti_rpc_server *s = c->srv;
    struct evbuffer *in = bufferevent_get_input(bev);

    c->refs++; /* a handler may not free c under us */
    while (c->bev != NULL && !c->close_after_write) {
        uint8_t hdr[FTI_RPC_HEADER_LEN];
        fti_rpc_header_t h;
        size_t avail = evbuffer_get_length(in);
        if (avail < FTI_RPC_HEADER_LEN)
            break;
        evbuffer_copyout(in, hdr, sizeof(hdr));
        fti_rpc_header_decode(hdr, &h);
        if (h.magic != FTI_RPC_MAGIC || (h.flags & FTI_RPC_F_REPLY) || h.status != 0) {
            conn_reject(c, &s->stats.rejected_garbage, FT_ERR_BAD_MESSAGE, "bad frame header");
            break;
        }
        if (h.length > s->max_frame) {
            conn_reject(c, &s->stats.rejected_oversize, FT_ERR_BAD_MESSAGE,
                        "frame larger than the cap");
            break;
        }
        if (avail < FTI_RPC_HEADER_LEN + (size_t)h.length)
            break;
        const fti_rpc_method_t *m = find_method(s, h.method);
        if (m == NULL) {
            s->stats.rejected_unknown++;
            FTI_WARN("rpc: unknown method %u from %s", h.method, c->peer);
            conn_send(c, h.method, FT_ERR_UNSUPPORTED, "unknown method", 14);
            evbuffer_drain(in, FTI_RPC_HEADER_LEN + h.length);
            continue;
        }
        struct fti_rpc_call *call = malloc(sizeof(*call));
        if (call == NULL) {
            FTI_ERROR("rpc: out of memory for a call");
            conn_close(c);
            break;
        }
        const uint8_t *payload = evbuffer_pullup(in, FTI_RPC_HEADER_LEN + h.length);
        call->conn = c;
        call->method = h.method;
        c->refs++;
        s->stats.requests++;
        m->fn(call, payload + FTI_RPC_HEADER_LEN, h.length, s->arg);
        if (c->bev == NULL)
            break;
        evbuffer_drain(in, FTI_RPC_HEADER_LEN + h.length);
    }
    conn_unref(c);
}

static void conn_write_cb(struct bufferevent *bev, void *arg)
{
    struct rpc_conn *c = arg;
    if (c->close_after_write && evbuffer_get_length(bufferevent_get_output(bev)) == 0)
        conn_close(c);
}

static void conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct rpc_conn *c = arg;
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        if (evbuffer_get_length(bufferevent_get_input(bev)) > 0 && !c->close_after_write) {
            c->srv->stats.rejected_truncated++;
            FTI_WARN("rpc: connection from %s closed inside a frame", c->peer);
        }
        conn_close(c);
    }
}

static void accept_cb(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen,
                      void *arg)
{
    struct fti_rpc_server *s = arg;
    struct rpc_conn *c = calloc(1, sizeof(*c));
    (void)l;
    if (c == NULL) {
        FTI_ERROR("rpc: out of memory for a connection");
        close(fd);
        return;
    }
    char host[INET6_ADDRSTRLEN] = "?";
    if (sa->sa_family == AF_INET)
        inet_ntop(AF_INET, &((struct sockaddr_in *)sa)->sin_addr, host, sizeof(host));
    else if (sa->sa_family == AF_INET6)
        inet_ntop(AF_INET6, &((struct sockaddr_in6 *)sa)->sin6_addr, host, sizeof(host));
    snprintf(c->peer, sizeof(c->peer), "%s:%d", host,
             sa->sa_family == AF_INET ? ntohs(((struct sockaddr_in *)sa)->sin_port)
                                      : ntohs(((struct sockaddr_in6 *)sa)->sin6_port));
    (void)salen;
    (void)fti_sock_tune(fd);
    c->srv = s;
    c->refs = 1;
    c->bev = bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE);
    if (c->bev == NULL) {
        FTI_ERROR("rpc: bufferevent_socket_new failed");
        close(fd);
        free(c);
        return;
    }
    LIST_INSERT_HEAD(&s->conns, c, link);
    s->stats.connections++;
    bufferevent_setcb(c->bev, conn_read_cb, conn_write_cb, conn_event_cb, c);
    bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

int fti_rpc_server_create(struct event_base *base, const char *bind_addr, size_t max_frame,
                          const fti_rpc_method_t *methods, size_t n, void *arg,
                          fti_rpc_server_h *srv_p)
{
    int fd = -1, rc;
    struct fti_rpc_server *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return FT_ERR_NO_MEMORY;
    s->methods = calloc(n ? n : 1, sizeof(*methods));
    if (s->methods == NULL) {
        free(s);
        return FT_ERR_NO_MEMORY;
    }
    memcpy(s->methods, methods, n * sizeof(*methods));
    s->n_methods = n;
    s->base = base;
    s->max_frame = max_frame;
    s->arg = arg;
    LIST_INIT(&s->conns);
    if ((rc = fti_tcp_listen(bind_addr, 1024, &fd)) != FT_SUCCESS ||
        (rc = fti_sock_name(fd, s->addr, sizeof(s->addr))) != FT_SUCCESS) {
        if (fd >= 0)
            close(fd);
        free(s->methods);
        free(s);
        return rc;
    }
    s->listener = evconnlistener_new(base, accept_cb, s, LEV_OPT_CLOSE_ON_FREE, 0, fd);
    if (s->listener == NULL) {
        FTI_ERROR("rpc: evconnlistener_new failed");
        close(fd);
        free(s->methods);
        free(s);
        return FT_ERR_SYSTEM;
    }
    *srv_p = s;
    return FT_SUCCESS;
}

void fti_rpc_server_destroy(fti_rpc_server_h s)
{
    if (s == NULL)
        return;
    evconnlistener_free(s->listener);
    while (!LIST_EMPTY(&s->conns))
        conn_close(LIST_FIRST(&s->conns));
    free(s->methods);
    free(s);
}

const char *fti_rpc_server_address(fti_rpc_server_h s)
{
    return s->addr;
}

void fti_rpc_server_stats(fti_rpc_server_h s, fti_rpc_stats_t *stats_p)
{
    *stats_p = s->stats;
}

uint16_t fti_rpc_call_method(fti_rpc_call_h call)
{
    return call->method;
}

bool fti_rpc_call_alive(fti_rpc_call_h call)
{
    return call->conn->bev != NULL && !call->conn->close_after_write;
}

const char *fti_rpc_call_peer(fti_rpc_call_h call)
{
    return call->conn->peer;
}

static void call_end(fti_rpc_call_h call)
{
    conn_unref(call->conn);
    free(call);
}

int fti_rpc_reply(fti_rpc_call_h call, const void *payload, size_t len)
{
    int rc = FT_ERR_PROC_FAILED;
    if (fti_rpc_call_alive(call)) {
        conn_send(call->conn, call->method, 0, payload, len);
        rc = FT_SUCCESS;
    }
    call_end(call);
    return rc;
}

int fti_rpc_reply_msg(fti_rpc_call_h call, const ProtobufCMessage *msg)
{
    size_t len = protobuf_c_message_get_packed_size(msg);
    uint8_t stackbuf[512], *buf = len <= sizeof(stackbuf) ? stackbuf : malloc(len);
    if (buf == NULL) {
        FTI_ERROR("rpc: out of memory packing a %zu-byte reply", len);
        return fti_rpc_reply_error(call, FT_ERR_NO_MEMORY, "out of memory");
    }
    protobuf_c_message_pack(msg, buf);
    int rc = fti_rpc_reply(call, buf, len);
    if (buf != stackbuf)
        free(buf);
    return rc;
}

int fti_rpc_reply_error(fti_rpc_call_h call, int status, const char *msg)
{
    int rc = FT_ERR_PROC_FAILED;
    /* counted only while the connection is open: once it is closed the
     * server may have been destroyed (a deferred call answered late) */
    if (status == FT_ERR_BAD_MESSAGE && call->conn->bev != NULL)
        call->conn->srv->stats.rejected_decode++;
    if (fti_rpc_call_alive(call)) {
        conn_send(call->conn, call->method, status ? status : FT_ERR_INTERNAL, msg,
                  msg ? strlen(msg) : 0);
        rc = FT_SUCCESS;
    }
    call_end(call);
    return rc;
}

struct ref_done {
    void (*done)(void *);
    void *arg;
};

static void ref_cleanup(const void *data, size_t len, void *arg)
{
    struct ref_done *d = arg;
    (void)data;
    (void)len;
    d->done(d->arg);
    free(d);
}

int fti_rpc_reply_ref(fti_rpc_call_h call, const void *payload, size_t len,
                      void (*done)(void *arg), void *arg)
{
    struct rpc_conn *c = call->conn;
    struct ref_done *d;
    if (!fti_rpc_call_alive(call) || (d = malloc(sizeof(*d))) == NULL) {
        int alive = fti_rpc_call_alive(call);
        call_end(call);
        done(arg);
        return alive ? FT_ERR_NO_MEMORY : FT_ERR_PROC_FAILED;
    }
    d->done = done;
    d->arg = arg;
    fti_rpc_header_t h = {FTI_RPC_MAGIC, FTI_RPC_F_REPLY, call->method, 0, (uint32_t)len};
    uint8_t hdr[FTI_RPC_HEADER_LEN];
    struct evbuffer *out = bufferevent_get_output(c->bev);
    fti_rpc_header_encode(&h, hdr);
    evbuffer_add(out, hdr, sizeof(hdr));
    if (len == 0 || evbuffer_add_reference(out, payload, len, ref_cleanup, d) != 0) {
        done(arg);
        free(d);
    }
    call_end(call);
    return FT_SUCCESS;
}

/* ---- client ------------------------------------------------------------ */

struct fti_rpc_client {
    char addr[128];
    int fd;
    int connect_timeout_ms;
    size_t max_reply;
    pthread_mutex_t mu;
};

int fti_rpc_client_create(const char *addr, int connect_timeout_ms, size_t max_reply,
                          fti_rpc_client_h *client_p)
{
    struct fti_rpc_client *c;
    char host[128];
    int port;
    if (addr == NULL || fti_addr_split(addr, host, sizeof(host), &port) != FT_SUCCESS ||
        strlen(addr) >= sizeof(c->addr))
        return FT_ERR_ARG;
    c = calloc(1, sizeof(*c));
    if (c == NULL)
        return FT_ERR_NO_MEMORY;
    strcpy(c->addr, addr);
    c->fd = -1;
    c->connect_timeout_ms = connect_timeout_ms > 0 ? connect_timeout_ms : 5000;
    c->max_reply = max_reply;
    pthread_mutex_init(&c->mu, NULL);
    *client_p = c;
    return FT_SUCCESS;
}

void fti_rpc_client_destroy(fti_rpc_client_h c)
{
    if (c == NULL)
        return;
    if (c->fd >= 0)
        close(c->fd);
    pthread_mutex_destroy(&c->mu);
    free(c);
}

const char *fti_rpc_client_address(fti_rpc_client_h c)
{
    return c->addr;
}

static void client_drop(struct fti_rpc_client *c)
{
    if (c->fd >= 0) {
        close(c->fd);
        c->fd = -1;
    }
}

/* Sends the request and reads the reply header; on success the payload of
 * h_p->length bytes is next on c->fd.  Called with c->mu held. */
static int client_exchange(struct fti_rpc_client *c, uint16_t method, const void *req,
                           size_t req_len, int64_t deadline, fti_rpc_header_t *h_p)
{
    int rc;
    uint8_t hdr[FTI_RPC_HEADER_LEN];
    fti_rpc_header_t h = {FTI_RPC_MAGIC, 0, method, 0, (uint32_t)req_len};

    if (req_len > UINT32_MAX)
        return FT_ERR_ARG;
    if (c->fd < 0) {
        int64_t cdl = fti_now_ms() + c->connect_timeout_ms;
        rc = fti_tcp_connect(c->addr, cdl < deadline ? cdl : deadline, &c->fd);
        if (rc != FT_SUCCESS) {
            c->fd = -1;
            return rc == FT_ERR_TIMEOUT ? FT_ERR_TIMEOUT : FT_ERR_CONNECT;
        }
    }
    fti_rpc_header_encode(&h, hdr);
    if (req_len <= 4096) {
        uint8_t buf[FTI_RPC_HEADER_LEN + 4096];
        memcpy(buf, hdr, sizeof(hdr));
        if (req_len)
            memcpy(buf + sizeof(hdr), req, req_len);
        rc = fti_write_full(c->fd, buf, sizeof(hdr) + req_len, deadline);
    } else {
        rc = fti_write_full(c->fd, hdr, sizeof(hdr), deadline);
        if (rc == FT_SUCCESS)
            rc = fti_write_full(c->fd, req, req_len, deadline);
    }
    if (rc == FT_SUCCESS)
        rc = fti_read_full(c->fd, hdr, sizeof(hdr), deadline);
    if (rc != FT_SUCCESS)
        return rc;
    fti_rpc_header_decode(hdr, &h);
    if (h.magic != FTI_RPC_MAGIC || !(h.flags & FTI_RPC_F_REPLY) ||
        (h.method != method && h.method != 0)) {
        FTI_WARN("rpc %s: malformed reply header", c->addr);
        return FT_ERR_BAD_MESSAGE;
    }
    if (h.status != 0 && h.length > 4096) {
        FTI_WARN("rpc %s: error reply too long", c->addr);
        return FT_ERR_BAD_MESSAGE;
    }
    *h_p = h;
    return FT_SUCCESS;
}

/* Reads an error reply's message, logs it, returns its status. */
static int client_error_reply(struct fti_rpc_client *c, const fti_rpc_header_t *h,
                              int64_t deadline)
{
    char msg[4097];
    int rc = fti_read_full(c->fd, msg, h->length, deadline);
    if (rc != FT_SUCCESS) {
        client_drop(c); /* the rest of the message must not be read as the next reply */
        return rc;
    }
    msg[h->length] = '\0';
    FTI_DEBUG("rpc %s method %u: error %d (%s): %s", c->addr, h->method, h->status,
              FT_Error_string(h->status), msg);
    if (h->method == 0) /* the server rejected the frame and closes */
        client_drop(c);
    return h->status < 0 ? h->status : FT_ERR_INTERNAL;
}

int fti_rpc_call(fti_rpc_client_h c, uint16_t method, const void *req, size_t req_len,
                 int timeout_ms, void **reply_p, size_t *len_p)
{
    fti_rpc_header_t h;
    int64_t deadline = fti_now_ms() + (timeout_ms > 0 ? timeout_ms : 1);
    uint8_t *buf = NULL;

    pthread_mutex_lock(&c->mu);
    int rc = client_exchange(c, method, req, req_len, deadline, &h);
    if (rc == FT_SUCCESS && h.status != 0) {
        rc = client_error_reply(c, &h, deadline);
        pthread_mutex_unlock(&c->mu);
        return rc;
    }
    if (rc == FT_SUCCESS && h.length > c->max_reply) {
        FTI_WARN("rpc %s: reply of %u bytes over the cap of %zu", c->addr, h.length, c->max_reply);
        rc = FT_ERR_BAD_MESSAGE;
    }
    if (rc == FT_SUCCESS) {
        buf = malloc(h.length ? h.length : 1);
        if (buf == NULL)
            rc = FT_ERR_NO_MEMORY;
        else
            rc = fti_read_full(c->fd, buf, h.length, deadline);
    }
    if (rc != FT_SUCCESS) {
        client_drop(c);
        free(buf);
        pthread_mutex_unlock(&c->mu);
        return rc;
    }
    pthread_mutex_unlock(&c->mu);
    *reply_p = buf;
    *len_p = h.length;
    return FT_SUCCESS;
}

int fti_rpc_call_into(fti_rpc_client_h c, uint16_t method, const void *req, size_t req_len,
                      int timeout_ms, void *out, size_t len)
{
    fti_rpc_header_t h;
    int64_t deadline = fti_now_ms() + (timeout_ms > 0 ? timeout_ms : 1);

    pthread_mutex_lock(&c->mu);
    int rc = client_exchange(c, method, req, req_len, deadline, &h);
    if (rc == FT_SUCCESS && h.status != 0) {
        rc = client_error_reply(c, &h, deadline);
        pthread_mutex_unlock(&c->mu);
        return rc;
    }
    if (rc == FT_SUCCESS && h.length != len) {
        FTI_WARN("rpc %s: reply of %u bytes, expected %zu", c->addr, h.length, len);
        rc = FT_ERR_BAD_MESSAGE;
    }
    if (rc == FT_SUCCESS)
        rc = fti_read_full(c->fd, out, len, deadline);
    if (rc != FT_SUCCESS)
        client_drop(c);
    pthread_mutex_unlock(&c->mu);
    return rc;
}

int fti_rpc_call_msg(fti_rpc_client_h c, uint16_t method, const ProtobufCMessage *req,
                     const ProtobufCMessageDescriptor *rdesc, int timeout_ms,
                     ProtobufCMessage **resp_p)
{
    size_t len = protobuf_c_message_get_packed_size(req);
    uint8_t stackbuf[1024], *buf = len <= sizeof(stackbuf) ? stackbuf : malloc(len);
    void *reply = NULL;
    size_t rlen = 0;

    if (buf == NULL)
        return FT_ERR_NO_MEMORY;
    protobuf_c_message_pack(req, buf);
    int rc = fti_rpc_call(c, method, buf, len, timeout_ms, &reply, &rlen);
    if (buf != stackbuf)
        free(buf);
    if (rc != FT_SUCCESS)
        return rc;
    ProtobufCMessage *m = protobuf_c_message_unpack(rdesc, NULL, rlen, reply);
    free(reply);
    if (m == NULL) {
        FTI_WARN("rpc %s method %u: reply does not decode as %s", c->addr, method, rdesc->name);
        return FT_ERR_BAD_MESSAGE;
    }
    *resp_p = m;
    return FT_SUCCESS;
}
