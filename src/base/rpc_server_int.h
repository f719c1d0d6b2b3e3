/* base/rpc_server_int.h - the RPC server's connections and calls, shared
 * by its files only: base/rpc_server.c (the listener, create and destroy,
 * the counters), base/rpc_conn.c (a connection: the handshake, frames in,
 * replies out, timers) and base/rpc_reply.c (a call and its reply).
 * Threads: all of it runs on the server's event loop thread. */
#ifndef FTI_BASE_RPC_SERVER_INT_H
#define FTI_BASE_RPC_SERVER_INT_H

#include <arpa/inet.h>
#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/queue.h>

#include "base/auth.h"
#include "base/rpc.h"
#include "base/sizes.h"

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

/* ---- rpc_conn.c ---- */

/* Drops a reference of c (the last one frees it). */
void fti_rpc_conn_unref(struct rpc_conn *c);
/* Closes the socket and frees the events and the unsent replies (their
 * done callbacks run now); the struct lives on while calls point at it. */
void fti_rpc_conn_close(struct rpc_conn *c);
/* Adds or removes c's read event. */
void fti_rpc_conn_set_reading(struct rpc_conn *c, bool on);
/* Takes requests again once the replies drained and a call may start. */
void fti_rpc_conn_maybe_resume(struct rpc_conn *c);
/* Queues a reply frame, the payload copied, or referenced when d is not
 * NULL (the buffer then owns d).  FT_ERR_NO_MEMORY closes c, and d is
 * still the caller's. */
int fti_rpc_conn_queue(struct rpc_conn *c, uint16_t method, int32_t status, const void *payload,
                       size_t len, struct ref_done *d);
/* The events and buffers of a new connection of s on fd; false when out
 * of memory (then fti_rpc_conn_setup_undo frees c). */
bool fti_rpc_conn_setup(struct fti_rpc_server *s, struct rpc_conn *c, evutil_socket_t fd);
void fti_rpc_conn_setup_undo(struct rpc_conn *c);

#endif
