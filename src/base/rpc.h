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
 *
 * Client: blocking calls with a deadline, one call at a time per client
 * (an internal mutex serialises threads).  It connects lazily and
 * reconnects on the next call after any error; a timed-out call closes the
 * connection so a late reply can never be taken for the next call's.
 */
#ifndef FTI_RPC_H
#define FTI_RPC_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
} fti_rpc_stats_t;

/* Binds bind_addr ("host:port", port 0 = ephemeral) and serves `methods`
 * (n entries, copied) on base.  arg is passed to every handler.  Release
 * with fti_rpc_server_destroy (on the loop thread, or with the loop
 * stopped). */
int fti_rpc_server_create(struct event_base *base, const char *bind_addr, size_t max_frame,
                          const fti_rpc_method_t *methods, size_t n, void *arg,
                          fti_rpc_server_h *srv_p);
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

/* Replies end the call and free it (also when the connection is gone). */
int fti_rpc_reply(fti_rpc_call_h call, const void *payload, size_t len);
int fti_rpc_reply_msg(fti_rpc_call_h call, const ProtobufCMessage *msg);
/* Error reply with status code and message.  FT_ERR_BAD_MESSAGE counts as a
 * decode reject. */
int fti_rpc_reply_error(fti_rpc_call_h call, int status, const char *msg);
/* Zero-copy reply: payload must stay valid until done(arg) is called (on the
 * loop thread, after the bytes were sent or the connection closed). */
int fti_rpc_reply_ref(fti_rpc_call_h call, const void *payload, size_t len,
                      void (*done)(void *arg), void *arg);

/* ---- client ----------------------------------------------------------- */

typedef struct fti_rpc_client *fti_rpc_client_h;

/* Creates a client for addr; does not connect yet.  max_reply caps reply
 * payloads.  Release with fti_rpc_client_destroy. */
int fti_rpc_client_create(const char *addr, int connect_timeout_ms, size_t max_reply,
                          fti_rpc_client_h *client_p);
void fti_rpc_client_destroy(fti_rpc_client_h client);
const char *fti_rpc_client_address(fti_rpc_client_h client);

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

/* Protobuf convenience: packs req, unpacks the reply with rdesc.  Free
 * *resp_p with protobuf_c_message_free_unpacked(*resp_p, NULL). */
int fti_rpc_call_msg(fti_rpc_client_h client, uint16_t method, const ProtobufCMessage *req,
                     const ProtobufCMessageDescriptor *rdesc, int timeout_ms,
                     ProtobufCMessage **resp_p);

#endif
