/*
 * rpc.h - framed RPC over TCP for the control plane.
 *
 * Frame: 16-byte header in network byte order, then `length` payload bytes.
 *   uint32 magic  = FTI_RPC_MAGIC
 *   uint16 flags  = FTI_RPC_F_REPLY on replies
 *   uint16 method = ftmpi.Method id (src/control/proto/ftmpi.proto)
 *   int32  status = FT_Error code of a reply (0 on requests); on an error
 *                   reply the payload is a UTF-8 message
 *   uint32 length = payload bytes (capped; see max_frame)
 * Payloads are protobuf messages chosen by method, except HEAL_FETCH replies
 * (raw bytes).
 *
 * Server: runs on a libevent event_base; every handler runs on the loop's
 * thread and may reply at once or later (deferred calls, e.g. a quorum
 * request that waits for the quorum).  Rejects (bad magic, oversized or
 * truncated frames, unknown methods, payloads that do not decode) are
 * counted in fti_rpc_stats; garbage and oversized frames close the
 * connection, unknown methods and decode failures get an error reply.
 * With a key (cfg.auth_key), a connection must pass auth.h's handshake
 * within FTI_AUTH_TIMEOUT_MS before any of its bytes is taken as a frame; a
 * peer that fails gets an FT_ERR_AUTH error frame and is closed
 * (rejected_auth).
 *
 * Limits (fti_rpc_server_config_t): a connection whose unsent replies
 * reach out_high_water bytes, or that has max_calls calls in flight, is
 * not read any further until its replies drain below out_low_water and
 * its calls end (backpressure: TCP then slows the client down, so a client
 * that pipelines requests and never reads costs at most about
 * out_high_water + one reply + max_frame of memory).  Connections over
 * max_conns are refused at once (an error frame, then close; counted in
 * rejected_conn_cap).  A connection that moves no byte in either direction
 * for idle_ms is closed (closed_idle), unless it only waits for a deferred
 * reply.  The server writes with send(MSG_NOSIGNAL) itself, so a peer that
 * closes while a reply is being sent never raises SIGPIPE, whatever the
 * application's disposition of that signal and on whatever thread the loop
 * runs.
 *
 * Client: blocking calls with a deadline, one call at a time per client
 * (an internal mutex serialises threads).  It connects lazily and
 * reconnects on the next call after any error, and before a call on a
 * kept connection that the server has closed meanwhile (idle timeout); a
 * timed-out call closes the connection so a late reply can never be taken
 * for the next call's.
 */
#ifndef FTI_RPC_H
#define FTI_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/auth.h"

struct event_base;

#define FTI_RPC_MAGIC 0x46544d31u /* "FTM1" */
#define FTI_RPC_HEADER_LEN 16
#define FTI_RPC_F_REPLY 0x1

typedef struct fti_rpc_header {
    uint32_t magic;
    uint16_t flags;
    uint16_t method;
    int32_t status;
    uint32_t length;
} fti_rpc_header_t;

/* Encodes / decodes the 16-byte header (decode does not validate). */
void fti_rpc_header_encode(const fti_rpc_header_t *h, uint8_t out[FTI_RPC_HEADER_LEN]);
void fti_rpc_header_decode(const uint8_t in[FTI_RPC_HEADER_LEN], fti_rpc_header_t *h);

/* ---- server ----------------------------------------------------------- */

typedef struct fti_rpc_server *fti_rpc_server_h;
typedef struct fti_rpc_call *fti_rpc_call_h;

/* Called on the loop thread for each request whose method is in the table.
 * The handler owns `call` and must end it with exactly one fti_rpc_reply*
 * call, now or later (on the loop thread).  payload is valid only during
 * the handler. */
typedef void (*fti_rpc_handler_fn)(fti_rpc_call_h call, const uint8_t *payload, size_t len,
                                   void *arg);

typedef struct fti_rpc_method {
    uint16_t method;
    fti_rpc_handler_fn fn;
} fti_rpc_method_t;

typedef struct fti_rpc_stats {
    uint64_t connections;       /* accepted */
    uint64_t requests;          /* dispatched to a handler */
    uint64_t rejected_garbage;  /* bad magic or flags */
    uint64_t rejected_oversize; /* length over max_frame */
    uint64_t rejected_truncated;/* connection closed inside a frame */
    uint64_t rejected_unknown;  /* method not in the table */
    uint64_t rejected_decode;   /* handler could not decode the payload */
    uint64_t rejected_conn_cap; /* connections refused: max_conns were open */
    uint64_t rejected_auth;     /* connections refused: the peer failed the handshake
                                 * (no or a wrong job secret, or too slow) */
    uint64_t closed_idle;       /* connections closed by the idle timeout */
    uint64_t closed_error;      /* connections closed on a failed send or a broken reply */
    uint64_t paused;            /* times a connection's reading paused (backpressure) */
    uint64_t open_connections;  /* now */
    uint64_t queued_bytes;      /* unsent reply bytes now, all connections */
    uint64_t peak_queued_bytes; /* most unsent reply bytes ever seen on one connection */
} fti_rpc_stats_t;

/* Defaults of fti_rpc_server_config_t (see the comment at the top). */
/* Open connections: the soft RLIMIT_NOFILE when the config is made, less
 * FTI_RPC_FD_RESERVE for the process's other files (at least
 * FTI_RPC_MIN_MAX_CONNS).  The cap guards against running out of
 * descriptors, so it follows the limit: a lighthouse that raised it to
 * serve 10,000 groups gets them. */
#define FTI_RPC_FD_RESERVE 64
#define FTI_RPC_MIN_MAX_CONNS 64
#define FTI_RPC_DEFAULT_OUT_HIGH_WATER (4u << 20)
#define FTI_RPC_DEFAULT_OUT_LOW_WATER (1u << 20)
#define FTI_RPC_DEFAULT_MAX_CALLS 64
#define FTI_RPC_DEFAULT_IDLE_MS (5 * 60 * 1000)
#define FTI_RPC_DEFAULT_BACKLOG 1024

typedef struct fti_rpc_server_config {
    size_t max_frame;      /* request payload cap (bytes) */
    size_t max_conns;      /* open connections; more are refused */
    size_t out_high_water; /* unsent reply bytes that pause a connection's reading */
    size_t out_low_water;  /* ... and below which it resumes (<= out_high_water) */
    int max_calls;         /* calls in flight that pause a connection's reading */
    int idle_ms;           /* close a connection idle this long; 0 = never */
    int backlog;           /* listen(2) backlog */
    const fti_auth_key_t *auth_key; /* NULL: no handshake; else every connection must
                                     * pass auth.h's handshake first (copied) */
} fti_rpc_server_config_t;

/* Fills *cfg with max_frame, the FTI_RPC_DEFAULT_* limits and no key (the
 * caller sets auth_key to its job's key, if it has one). */
void fti_rpc_server_config_init(fti_rpc_server_config_t *cfg, size_t max_frame);

/* Binds bind_addr ("host:port", port 0 = ephemeral) and serves `methods`
 * (n entries, copied) on base with the limits of cfg (copied; FT_ERR_ARG
 * when a limit is 0 or out of order).  arg is passed to every handler.
 * Release with fti_rpc_server_destroy (on the loop thread, or with the
 * loop stopped). */
int fti_rpc_server_create_cfg(struct event_base *base, const char *bind_addr,
                              const fti_rpc_server_config_t *cfg, const fti_rpc_method_t *methods,
                              size_t n, void *arg, fti_rpc_server_h *srv_p);
/* Same with fti_rpc_server_config_init(max_frame)'s limits and key as its
 * auth_key (NULL: no handshake). */
int fti_rpc_server_create(struct event_base *base, const char *bind_addr, size_t max_frame,
                          const fti_auth_key_t *key, const fti_rpc_method_t *methods, size_t n,
                          void *arg, fti_rpc_server_h *srv_p);
void fti_rpc_server_destroy(fti_rpc_server_h srv);

/* "host:port" the server is bound to (valid until destroy). */
const char *fti_rpc_server_address(fti_rpc_server_h srv);

/* Copies the counters. */
void fti_rpc_server_stats(fti_rpc_server_h srv, fti_rpc_stats_t *stats_p);

/* Method of a call; whether its connection is still open (a deferred call
 * whose client went away can be dropped with fti_rpc_reply_error). */
uint16_t fti_rpc_call_method(fti_rpc_call_h call);
bool fti_rpc_call_alive(fti_rpc_call_h call);
/* Peer address "host:port" of the call's connection. */
const char *fti_rpc_call_peer(fti_rpc_call_h call);

/* Per-connection data (failure detection by connection close): a handler
 * may attach data to its call's connection; the server's on_close
 * callback gets it once, on the loop thread, when that connection closes
 * (peer gone, error, idle timeout, or fti_rpc_server_destroy).  set
 * returns false (and keeps nothing) when the connection is closed
 * already; the caller then still owns data. */
typedef void (*fti_rpc_close_fn)(void *conn_data, void *arg);
void *fti_rpc_call_conn_data(fti_rpc_call_h call);
bool fti_rpc_call_set_conn_data(fti_rpc_call_h call, void *data);
void fti_rpc_server_on_close(fti_rpc_server_h srv, fti_rpc_close_fn fn, void *arg);

/* Replies end the call and free it (also when the connection is gone). */
int fti_rpc_reply(fti_rpc_call_h call, const void *payload, size_t len);

/* Error reply with status code and message.  FT_ERR_BAD_MESSAGE counts as a
 * decode reject. */
int fti_rpc_reply_error(fti_rpc_call_h call, int status, const char *msg);
/* Zero-copy reply: payload must stay valid until done(arg) is called (on the
 * loop thread, after the bytes were sent or the connection closed; at once
 * when the reply cannot be queued).  A reply that cannot be queued whole
 * closes the connection (its stream would be out of sync) and returns
 * FT_ERR_NO_MEMORY. */
int fti_rpc_reply_ref(fti_rpc_call_h call, const void *payload, size_t len,
                      void (*done)(void *arg), void *arg);
/* Bytes one send takes at most while a watched reply (below) is queued. */
#define FTI_RPC_WATCH_SEND ((size_t)512 << 10)
/* fti_rpc_reply_ref that also calls sent(arg, n) on the loop thread after
 * each send that took bytes of the payload, n being the payload's bytes
 * sent so far (growing to len), before done; a send then takes at most
 * FTI_RPC_WATCH_SEND bytes, so that sent finds them in this CPU's cache.
 * sent must not use the call or its connection.  A connection with
 * FTI_RPC_MAX_WATCH watched replies queued sends this one unwatched
 * (sent is not called); a closed connection stops calling sent. */
#define FTI_RPC_MAX_WATCH 4
int fti_rpc_reply_ref_watch(fti_rpc_call_h call, const void *payload, size_t len,
                            void (*done)(void *arg), void (*sent)(void *arg, size_t n),
                            void *arg);

#ifdef FTI_TEST_HOOKS
/* Test builds only (-DFTI_TEST_HOOKS): the next this many zero-copy
 * replies fail to queue their payload after their header was queued. */
extern int fti_rpc_test_fail_refs;
#endif

/* ---- client ----------------------------------------------------------- */

typedef struct fti_rpc_client *fti_rpc_client_h;

/* Creates a client for addr; does not connect yet.  max_reply caps reply
 * payloads.  With a key (copied; NULL: none, the job is unauthenticated)
 * each connection it makes first runs auth.h's handshake with it: a server
 * that refuses it or fails it makes the call return FT_ERR_AUTH.  Release
 * with fti_rpc_client_destroy. */
int fti_rpc_client_create(const char *addr, const fti_auth_key_t *key, int connect_timeout_ms,
                          size_t max_reply, fti_rpc_client_h *client_p);
void fti_rpc_client_destroy(fti_rpc_client_h client);
const char *fti_rpc_client_address(fti_rpc_client_h client);
/* The message of the last error reply the client received ("" if none). */
void fti_rpc_client_last_error(fti_rpc_client_h client, char *buf, size_t len);

/* One call: sends method + req, waits for the reply before timeout_ms.
 * On success *reply_p (malloc'ed, free with free()) and *len_p are set.
 * A reply with a non-zero status returns that status and logs its message
 * at debug level; FT_ERR_TIMEOUT / FT_ERR_CONNECT / FT_ERR_PROC_FAILED /
 * FT_ERR_BAD_MESSAGE on transport problems. */
int fti_rpc_call(fti_rpc_client_h client, uint16_t method, const void *req, size_t req_len,
                 int timeout_ms, void **reply_p, size_t *len_p);

/* Same, reading the reply into caller memory: the reply must be exactly
 * len bytes (used for heal data). */
int fti_rpc_call_into(fti_rpc_client_h client, uint16_t method, const void *req, size_t req_len,
                      int timeout_ms, void *buf, size_t len);

/* fti_rpc_call_into reporting progress: the payload is read in steps of
 * `step` bytes (0: all at once) and landed(arg, done) is called after each
 * with the bytes in place so far (on this thread; not after a failure),
 * so that a consumer can work on the bytes while they are still in the
 * cache. */
int fti_rpc_call_into_cb(fti_rpc_client_h client, uint16_t method, const void *req,
                         size_t req_len, int timeout_ms, void *out, size_t len, size_t step,
                         void (*landed)(void *arg, size_t done), void *arg);

#endif
