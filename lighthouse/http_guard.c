/* http_guard.c - the dashboard's connection cap and deadline (see
 * http_guard.h). */
#include "lighthouse/http_guard.h"

#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/listener.h>
#include <stdbool.h>
#include <stdlib.h>
#include <sys/socket.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/util.h"

#define HTTP_GUARD_SWEEP_MS 100

struct held {
    struct bufferevent *bev;
    int64_t accepted_ms;
    bool shut;
};

struct fti_http_guard {
    struct event_base *base;
    struct evconnlistener *listener;
    struct event *sweep;
    struct held *h;
    size_t n, max;
    int deadline_ms;
    bool paused;
    bool warned_cap;
};

static void pause_or_resume(struct fti_http_guard *g)
{
    if (g->listener == NULL)
        return;
    if (!g->paused && g->n >= g->max) {
        evconnlistener_disable(g->listener);
        g->paused = true;
        if (!g->warned_cap)
            FTI_WARN("http: %zu connections open, the most served at once: new ones wait", g->n);
        g->warned_cap = true;
    } else if (g->paused && g->n < g->max) {
        evconnlistener_enable(g->listener);
        g->paused = false;
    }
}

/* evhttp's new connection: a bufferevent the guard holds a reference on. */
static struct bufferevent *make_bev(struct event_base *base, void *arg)
{
    struct fti_http_guard *g = arg;
    struct bufferevent *bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (bev == NULL)
        return NULL;
    if (g->n < g->max) { /* never more: the listener pauses at max */
        bufferevent_incref(bev);
        g->h[g->n++] = (struct held){bev, fti_now_ms(), false};
    }
    pause_or_resume(g);
    return bev;
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
        if (!x->shut && now - x->accepted_ms >= g->deadline_ms) {
            evutil_socket_t s = bufferevent_getfd(x->bev);
            if (s >= 0)
                shutdown(s, SHUT_RDWR); /* evhttp sees it closed and frees it */
            FTI_DEBUG("http: a connection open for %d ms closed", g->deadline_ms);
            x->shut = true;
        }
        i++;
    }
    pause_or_resume(g);
}

int fti_http_guard_create(struct event_base *base, struct evhttp *http,
                          struct evhttp_bound_socket *bound, size_t max_conns, int deadline_ms,
                          fti_http_guard_h *g_p)
{
    struct fti_http_guard *g = calloc(1, sizeof(*g));
    if (g == NULL || max_conns == 0 || deadline_ms <= 0 ||
        (g->h = calloc(max_conns, sizeof(*g->h))) == NULL) {
        free(g);
        return max_conns == 0 || deadline_ms <= 0 ? FT_ERR_ARG : FT_ERR_NO_MEMORY;
    }
    g->base = base;
    g->max = max_conns;
    g->deadline_ms = deadline_ms;
    g->listener = bound ? evhttp_bound_socket_get_listener(bound) : NULL;
    struct timeval tv = {0, HTTP_GUARD_SWEEP_MS * 1000};
    g->sweep = event_new(base, -1, EV_PERSIST, sweep, g);
    if (g->sweep == NULL || event_add(g->sweep, &tv) != 0) {
        if (g->sweep)
            event_free(g->sweep);
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
    for (size_t i = 0; i < g->n; i++)
        bufferevent_decref(g->h[i].bev);
    free(g->h);
    free(g);
}
