/* base/rpc_server.c - framed RPC, the server: a
 * libevent loop with deferred and zero-copy replies (see base/rpc.h; the
 * client is base/rpc_client.c).  This file: the listener, the connection
 * cap, create and destroy, the counters; a connection is base/rpc_conn.c,
 * a call and its reply base/rpc_reply.c. */
#include "base/rpc.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/queue.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/net.h"
#include "base/sizes.h"
#include "base/util.h"

#include "base/rpc_server_int.h"

/* How long the listener rests after accept() failed (out of descriptors). */
#define RPC_ACCEPT_PAUSE_MS 100

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
    if (c == NULL || !fti_rpc_conn_setup(s, c, fd)) {
        FTI_ERROR("rpc: out of memory for a connection from %s", peer);
        if (c)
            fti_rpc_conn_setup_undo(c);
        evutil_closesocket(fd);
        return;
    }
    fti_strlcpy(c->peer, peer, sizeof(c->peer));
    (void)fti_sock_tune(fd);
    LIST_INSERT_HEAD(&s->conns, c, link);
    s->n_conns++;
    s->stats.connections++;
    fti_rpc_conn_set_reading(c, true);
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
        fti_rpc_conn_close(LIST_FIRST(&s->conns));
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

void fti_rpc_server_on_close(fti_rpc_server_h s, fti_rpc_close_fn fn, void *arg)
{
    s->on_close = fn;
    s->on_close_arg = arg;
}
