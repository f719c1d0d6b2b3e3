/* base/rpc_reply.c - framed RPC, a call as its handler holds it (see
 * base/rpc.h): its method, peer and connection data, and its one reply
 * (copied, an error, zero-copy, watched), queued on its connection
 * (base/rpc_conn.c). */
#include "base/rpc.h"
#include "base/rpc_int.h"
#include "base/rpc_server_int.h"

#include <stdlib.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "base/log.h"

uint16_t fti_rpc_call_method(fti_rpc_call_h call)
{
    return call->method;
}

bool fti_rpc_call_alive(fti_rpc_call_h call)
{
    return call->conn->fd >= 0 && !call->conn->close_after_write;
}

const char *fti_rpc_call_peer(fti_rpc_call_h call)
{
    return call->conn->peer;
}

void *fti_rpc_call_conn_data(fti_rpc_call_h call)
{
    return call->conn->user;
}

bool fti_rpc_call_set_conn_data(fti_rpc_call_h call, void *data)
{
    if (call->conn->fd < 0)
        return false;
    call->conn->user = data;
    return true;
}

static void call_end(fti_rpc_call_h call)
{
    struct rpc_conn *c = call->conn;
    free(call);
    c->calls--;
    fti_rpc_conn_maybe_resume(c);
    fti_rpc_conn_unref(c);
}

int fti_rpc_reply(fti_rpc_call_h call, const void *payload, size_t len)
{
    int rc = FT_ERR_PROC_FAILED;
    if (fti_rpc_call_alive(call))
        rc = fti_rpc_conn_queue(call->conn, call->method, 0, payload, len, NULL);
    call_end(call);
    return rc;
}

int fti_rpc_reply_error(fti_rpc_call_h call, int status, const char *msg)
{
    int rc = FT_ERR_PROC_FAILED;
    /* counted only while the connection is open: once it is closed the
     * server may have been destroyed (a deferred call answered late) */
    if (status == FT_ERR_BAD_MESSAGE && call->conn->fd >= 0)
        call->conn->srv->stats.rejected_decode++;
    if (fti_rpc_call_alive(call))
        rc = fti_rpc_conn_queue(call->conn, call->method, status ? status : FT_ERR_INTERNAL, msg,
                        msg ? strnlen(msg, RPC_MAX_ERROR_MSG) : 0, NULL);
    call_end(call);
    return rc;
}

int fti_rpc_reply_ref(fti_rpc_call_h call, const void *payload, size_t len,
                      void (*done)(void *arg), void *arg)
{
    return fti_rpc_reply_ref_watch(call, payload, len, done, NULL, arg);
}

int fti_rpc_reply_ref_watch(fti_rpc_call_h call, const void *payload, size_t len,
                            void (*done)(void *arg), void (*sent)(void *arg, size_t n),
                            void *arg)
{
    struct ref_done *d = NULL;
    int rc = FT_ERR_PROC_FAILED;
    if (fti_rpc_call_alive(call)) {
        rc = FT_ERR_NO_MEMORY;
        if (len > 0 && (d = malloc(sizeof(*d))) == NULL) {
            FTI_ERROR("rpc: out of memory for a zero-copy reply");
            fti_rpc_conn_close(call->conn); /* the client would wait for this reply in vain */
        } else {
            if (d != NULL)
                *d = (struct ref_done){done, sent, arg};
            rc = fti_rpc_conn_queue(call->conn, call->method, 0, payload, len, d);
        }
    }
    if (rc != FT_SUCCESS || d == NULL) {
        free(d);
        done(arg); /* not referenced by any buffer */
    }
    call_end(call);
    return rc;
}
