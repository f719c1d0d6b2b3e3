/*
 * http_guard.h - bounds on the lighthouse dashboard's connections (issue
 * 23): at most max_conns open at once (past that the listener stops
 * accepting until one closes; the kernel's backlog holds the newcomers),
 * and each closed deadline_ms after it was accepted, whatever it sends
 * (evhttp's own timeout restarts with every byte: a client sending one
 * byte a second would hold a connection forever).
 *
 * evhttp 2.1 has no connection callbacks: the guard makes each
 * connection's bufferevent (evhttp_set_bevcb) and holds a reference on it,
 * so that its socket stays its own; a sweep every HTTP_GUARD_SWEEP_MS
 * releases those evhttp let go of (their callbacks cleared by
 * bufferevent_free) and shuts down those past the deadline, which evhttp
 * then frees as closed by the peer.  Loop thread only.
 */
#ifndef FTI_LH_HTTP_GUARD_H
#define FTI_LH_HTTP_GUARD_H

#include <stddef.h>
#include <stdint.h>

struct event_base;
struct evhttp;
struct evhttp_bound_socket;

typedef struct fti_http_guard *fti_http_guard_h;

int fti_http_guard_create(struct event_base *base, struct evhttp *http,
                          struct evhttp_bound_socket *bound, size_t max_conns, int deadline_ms,
                          fti_http_guard_h *g_p);
/* After evhttp_free (which let go of every connection). */
void fti_http_guard_destroy(fti_http_guard_h g);

#endif
