/* http_guard.c - the dashboard's connection cap, per-address share and
 * deadlines (see http_guard.h). */
#include "lighthouse/http_guard.h"

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/util.h"

#define HTTP_GUARD_SWEEP_MS 100
#define ADDR_KEY_SIZE 17 /* family byte + 16 address bytes */

static const char too_many[] = "HTTP/1.1 503 Service Unavailable\r\n"
                               "Content-Type: text/plain; charset=utf-8\r\n"
                               "Content-Length: 39\r\nConnection: close\r\n\r\n"
                               "too many connections from your address\n";

struct held {
    struct bufferevent *bev;
    int64_t accepted_ms;
    int64_t head_from_ms;    /* rule 3's clock */
    bool classified;         /* its address is known (rule 2) */
    bool shut;
    uint8_t addr[ADDR_KEY_SIZE];
};

struct fti_http_guard {
    struct event_base *base;
    struct evconnlistener *listener;
    struct event *sweep;
    struct event *classify;  /* rule 2, right after an accept */
    struct held *h;
    size_t n;
    fti_http_guard_opts_t o;
    bool paused;
    bool warned_cap, warned_share, warned_head;
};

static void pause_or_resume(struct fti_http_guard *g)
{
    if (g->listener == NULL)
        return;
    if (!g->paused && g->n >= g->o.max_conns) {
        evconnlistener_disable(g->listener);
        g->paused = true;
        if (!g->warned_cap)
            FTI_WARN("http: %zu connections open, the most served at once: new ones wait", g->n);
        g->warned_cap = true;
    } else if (g->paused && g->n < g->o.max_conns) {
        evconnlistener_enable(g->listener);
        g->paused = false;
    }
}

/* The peer of fd as a key (an IPv4-mapped IPv6 address as IPv4, other
 * IPv6 addresses by their /64) and as text; false when unknown. */
static bool peer_key(evutil_socket_t fd, uint8_t key[ADDR_KEY_SIZE], char *text, size_t len)
{
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    memset(key, 0, ADDR_KEY_SIZE);
    if (fd < 0 || getpeername(fd, (struct sockaddr *)&ss, &sl) != 0)
        return false;
    if (ss.ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)&ss;
        key[0] = 4;
        memcpy(key + 1, &a->sin_addr, 4);
        inet_ntop(AF_INET, &a->sin_addr, text, (socklen_t)len);
        return true;
    }
    if (ss.ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)&ss;
        if (IN6_IS_ADDR_V4MAPPED(&a->sin6_addr)) {
            key[0] = 4;
            memcpy(key + 1, &a->sin6_addr.s6_addr[12], 4);
        } else {
            key[0] = 6;
            memcpy(key + 1, a->sin6_addr.s6_addr, 8); /* the /64 */
        }
        inet_ntop(AF_INET6, &a->sin6_addr, text, (socklen_t)len);
        return true;
    }
    return false;
}

static void shut(struct held *x)
{
    evutil_socket_t s = bufferevent_getfd(x->bev);
    if (s >= 0)
        shutdown(s, SHUT_RDWR); /* evhttp sees it closed and frees it */
    x->shut = true;
}

/* Rule 2 for the connections accepted since the last run. */
static void classify(evutil_socket_t fd, short what, void *arg)
{
    struct fti_http_guard *g = arg;
    (void)fd;
    (void)what;
    for (size_t i = 0; i < g->n; i++) {
        struct held *x = &g->h[i];
        char text[INET6_ADDRSTRLEN] = "?";
        if (x->classified || x->shut)
            continue;
        evutil_socket_t s = bufferevent_getfd(x->bev);
        x->classified = true;
        if (!peer_key(s, x->addr, text, sizeof(text)))
            continue; /* unknown: counts for no address */
        size_t same = 0;
        for (size_t j = 0; j < g->n; j++)
            same += j != i && g->h[j].classified && !g->h[j].shut &&
                    memcmp(g->h[j].addr, x->addr, ADDR_KEY_SIZE) == 0;
        if (same < g->o.per_addr)
            continue;
        (void)!send(s, too_many, sizeof(too_many) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
        shut(x);
        if (!g->warned_share)
            FTI_WARN("http: %s holds %zu connections, its share of the %zu served at once: "
                     "more from it are refused (503)",
                     text, same, g->o.max_conns);
        else
            FTI_DEBUG("http: a connection from %s refused: %zu open from it", text, same);
        g->warned_share = true;
    }
}

/* evhttp's new connection: a bufferevent the guard holds a reference on. */
static struct bufferevent *make_bev(struct event_base *base, void *arg)
{
    struct fti_http_guard *g = arg;
    struct bufferevent *bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (bev == NULL)
        return NULL;
    if (g->n < g->o.max_conns) { /* never more: the listener pauses at max */
        int64_t now = fti_now_ms();
        bufferevent_incref(bev);
        g->h[g->n++] = (struct held){.bev = bev, .accepted_ms = now, .head_from_ms = now};
        event_active(g->classify, EV_TIMEOUT, 0); /* after evhttp gave it its socket */
    }
    pause_or_resume(g);
    return bev;
}

void fti_http_guard_request(fti_http_guard_h g, struct bufferevent *bev)
{
    for (size_t i = 0; g != NULL && i < g->n; i++)
        if (g->h[i].bev == bev)
            g->h[i].head_from_ms = fti_now_ms();
}

static void sweep(evutil_socket_t fd, short what, void *arg)
{
    struct fti_http_guard *g = arg;
    int64_t now = fti_now_ms();
    (void)fd;
    (void)what;
    for (size_t i = 0; i < g->n;) {
        struct held *x = &g->h[i];
        bufferevent_data_cb rd, wr;
        bufferevent_event_cb ev;
        void *cbarg;
        bufferevent_getcb(x->bev, &rd, &wr, &ev, &cbarg);
        if (rd == NULL && wr == NULL && ev == NULL) { /* evhttp let go of it */
            bufferevent_decref(x->bev);
            g->h[i] = g->h[--g->n];
            continue;
        }
        if (evbuffer_get_length(bufferevent_get_output(x->bev)) > 0)
            x->head_from_ms = now; /* a response is being written: rule 4 bounds it */
        if (!x->shut && now - x->accepted_ms >= g->o.deadline_ms) {
            shut(x);
            FTI_DEBUG("http: a connection open for %d ms closed", g->o.deadline_ms);
        } else if (!x->shut && now - x->head_from_ms >= g->o.head_ms) {
            shut(x);
            if (!g->warned_head)
                FTI_INFO("http: a connection sent no whole request within %d ms: closed "
                         "(said once; at debug level each time)", g->o.head_ms);
            else
                FTI_DEBUG("http: a connection sent no whole request within %d ms: closed",
                          g->o.head_ms);
            g->warned_head = true;
        }
        i++;
    }
    pause_or_resume(g);
}

int fti_http_guard_create(struct event_base *base, struct evhttp *http,
                          struct evhttp_bound_socket *bound, const fti_http_guard_opts_t *o,
                          fti_http_guard_h *g_p)
{
    if (o == NULL || o->max_conns == 0 || o->per_addr == 0 || o->per_addr > o->max_conns ||
        o->head_ms <= 0 || o->deadline_ms < o->head_ms)
        return FT_ERR_ARG;
    struct fti_http_guard *g = calloc(1, sizeof(*g));
    if (g == NULL || (g->h = calloc(o->max_conns, sizeof(*g->h))) == NULL) {
        free(g);
        return FT_ERR_NO_MEMORY;
    }
    g->base = base;
    g->o = *o;
    g->listener = bound ? evhttp_bound_socket_get_listener(bound) : NULL;
    struct timeval tv = {0, HTTP_GUARD_SWEEP_MS * 1000};
    g->sweep = event_new(base, -1, EV_PERSIST, sweep, g);
    g->classify = event_new(base, -1, 0, classify, g);
    if (g->sweep == NULL || g->classify == NULL || event_add(g->sweep, &tv) != 0) {
        if (g->sweep)
            event_free(g->sweep);
        if (g->classify)
            event_free(g->classify);
        free(g->h);
        free(g);
        return FT_ERR_NO_MEMORY;
    }
    evhttp_set_bevcb(http, make_bev, g);
    *g_p = g;
    return FT_SUCCESS;
}

void fti_http_guard_destroy(fti_http_guard_h g)
{
    if (g == NULL)
        return;
    event_free(g->sweep);
    event_free(g->classify);
    for (size_t i = 0; i < g->n; i++)
        bufferevent_decref(g->h[i].bev);
    free(g->h);
    free(g);
}
