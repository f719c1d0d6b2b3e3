/*
 * http_guard.h - bounds on the lighthouse dashboard's connections (issues
 * 23 and 35):
 *   1. at most max_conns open at once (past that the listener stops
 *      accepting until one closes; the kernel's backlog holds the
 *      newcomers);
 *   2. at most per_addr of them from one address (an IPv6 address counts
 *      by its /64): one more from that address is answered "503 too many
 *      connections from your address" and closed at once, so that slow
 *      clients of one host never hold the slots that a scraper on another
 *      host needs;
 *   3. each connection closed head_ms after it was accepted, or after its
 *      last request, unless a whole request (head and body) came by then
 *      or a response is still being written: a client that sends half a
 *      request and stalls is cut in seconds;
 *   4. each closed deadline_ms after it was accepted, whatever it sends
 *      (evhttp's own timeout restarts with every byte: a client sending
 *      one byte a second would hold a connection forever).
 *
 * evhttp 2.1 has no connection callbacks: the guard makes each
 * connection's bufferevent (evhttp_set_bevcb) and holds a reference on it,
 * so that its socket stays its own; an event run right after the accept
 * reads its peer's address (rule 2); the HTTP handler tells the guard of
 * each request (fti_http_guard_request, rule 3); a sweep every
 * HTTP_GUARD_SWEEP_MS releases those evhttp let go of (their callbacks
 * cleared by bufferevent_free) and shuts down those past a deadline, which
 * evhttp then frees as closed by the peer.  Loop thread only.
 */
#ifndef FTI_LH_HTTP_GUARD_H
#define FTI_LH_HTTP_GUARD_H

#include <stddef.h>
#include <stdint.h>

struct bufferevent;
struct event_base;
struct evhttp;
struct evhttp_bound_socket;

typedef struct fti_http_guard *fti_http_guard_h;

typedef struct fti_http_guard_opts {
    size_t max_conns;  /* rule 1, >= 1 */
    size_t per_addr;   /* rule 2, 1 .. max_conns */
    int head_ms;       /* rule 3, >= 1 */
    int deadline_ms;   /* rule 4, >= head_ms */
} fti_http_guard_opts_t;

/* FT_ERR_ARG for bounds out of range. */
int fti_http_guard_create(struct event_base *base, struct evhttp *http,
                          struct evhttp_bound_socket *bound, const fti_http_guard_opts_t *o,
                          fti_http_guard_h *g_p);
/* After evhttp_free (which let go of every connection). */
void fti_http_guard_destroy(fti_http_guard_h g);

/* A whole request came on the connection of bev (its handler runs):
 * rule 3's clock starts again. */
void fti_http_guard_request(fti_http_guard_h g, struct bufferevent *bev);

#endif
