/* base/rpc_client.c - framed RPC, the client: one call at a time under a
 * mutex, lazy (re)connection with the job secret's handshake, a deadline on
 * every wait (see base/rpc.h; the server is base/rpc_server.c). */
#include "base/rpc.h"

#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/error.h"
#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/net.h"
#include "base/rpc_int.h"
#include "base/sizes.h"
#include "base/util.h"

/* ---- client ------------------------------------------------------------ */

/* Requests up to this size go out in one write with their header. */
#define RPC_INLINE_REQUEST 4096
/* Connect timeout when the caller gives none. */
#define RPC_DEFAULT_CONNECT_MS 5000

struct fti_rpc_client {
    char addr[FTI_ADDRESS_SIZE];
    int fd;
    int connect_timeout_ms;
    size_t max_reply;
    bool has_key;
    bool warned_auth; /* an authentication failure was logged once */
    fti_auth_key_t key;
    pthread_mutex_t mu;
    char last_error[RPC_MAX_ERROR_MSG + 1]; /* the last error reply's message (under mu) */
};

int fti_rpc_client_create(const char *addr, const fti_auth_key_t *key, int connect_timeout_ms,
                          size_t max_reply, fti_rpc_client_h *client_p)
{
    struct fti_rpc_client *c;
    char host[FTI_ADDRESS_SIZE];
    int port;
    if (addr == NULL || fti_addr_split(addr, host, sizeof(host), &port) != FT_SUCCESS ||
        strlen(addr) >= sizeof(c->addr))
        return FT_ERR_ARG;
    c = calloc(1, sizeof(*c));
    if (c == NULL)
        return FT_ERR_NO_MEMORY;
    strcpy(c->addr, addr);
    c->fd = -1;
    c->connect_timeout_ms = connect_timeout_ms > 0 ? connect_timeout_ms : RPC_DEFAULT_CONNECT_MS;
    c->max_reply = max_reply;
    c->has_key = key != NULL;
    if (key != NULL)
        c->key = *key;
    else
        fti_auth_warn_unauthenticated();
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

void fti_rpc_client_last_error(fti_rpc_client_h c, char *buf, size_t len)
{
    pthread_mutex_lock(&c->mu);
    fti_strlcpy(buf, c->last_error, len);
    pthread_mutex_unlock(&c->mu);
}

const char *fti_rpc_client_address(fti_rpc_client_h c)
{
    return c->addr;
}

/* Logs an authentication failure once per client (a heartbeating client
 * would otherwise repeat it ten times a second). */
static void client_auth_failed(struct fti_rpc_client *c, const char *why)
{
    if (!c->warned_auth)
        FTI_WARN("rpc %s: %s", c->addr, why);
    c->warned_auth = true;
}

/* The server answered the handshake with an error frame whose first four
 * bytes are in first: reads the rest and returns its status (FT_ERR_AUTH
 * when the server takes no handshake at all: it has no job secret). */
static int client_refused(struct fti_rpc_client *c, const uint8_t *first, int64_t deadline)
{
    uint8_t hdr[FTI_RPC_HEADER_LEN];
    char msg[RPC_MAX_ERROR_MSG + 1];
    fti_rpc_header_t h;
    memcpy(hdr, first, FTI_AUTH_MAGIC_LEN);
    int rc = fti_read_full(c->fd, hdr + FTI_AUTH_MAGIC_LEN, sizeof(hdr) - FTI_AUTH_MAGIC_LEN,
                           deadline);
    if (rc != FT_SUCCESS)
        return rc;
    fti_rpc_header_decode(hdr, &h);
    if (!(h.flags & FTI_RPC_F_REPLY) || h.status >= 0 || h.length > RPC_MAX_ERROR_MSG ||
        fti_read_full(c->fd, msg, h.length, deadline) != FT_SUCCESS)
        return FT_ERR_BAD_MESSAGE;
    msg[h.length] = '\0';
    if (h.status == FT_ERR_BAD_MESSAGE) {
        client_auth_failed(c, "the server takes no authentication handshake (it has no job "
                              "secret; start it with the same FTMPI_TOKEN_FILE / --token-file)");
        return FT_ERR_AUTH;
    }
    if (h.status == FT_ERR_AUTH)
        client_auth_failed(c, "the server refused our job secret (FTMPI_TOKEN_FILE differs)");
    FTI_DEBUG("rpc %s: handshake refused: %s", c->addr, msg);
    return h.status;
}

/* Whether the 4 bytes at p are the start of an RPC frame header. */
static bool is_frame_magic(const uint8_t *p)
{
    uint32_t m;
    memcpy(&m, p, 4);
    return ntohl(m) == FTI_RPC_MAGIC;
}

/* Reads the server's next handshake message (len bytes) into buf.  When
 * its first four bytes start an RPC frame instead, the server refused the
 * handshake: reads that error frame and returns its status
 * (client_refused, never FT_SUCCESS). */
static int client_read_auth(struct fti_rpc_client *c, uint8_t *buf, size_t len, int64_t deadline)
{
    int rc = fti_read_full(c->fd, buf, FTI_AUTH_MAGIC_LEN, deadline);
    if (rc == FT_SUCCESS && is_frame_magic(buf))
        return client_refused(c, buf, deadline);
    if (rc == FT_SUCCESS)
        rc = fti_read_full(c->fd, buf + FTI_AUTH_MAGIC_LEN, len - FTI_AUTH_MAGIC_LEN, deadline);
    return rc;
}

/* auth.h's handshake, client side, on a new connection.  Called with c->mu
 * held. */
static int client_handshake(struct fti_rpc_client *c, int64_t deadline)
{
    fti_auth_state_t st;
    uint8_t hello[FTI_AUTH_HELLO_LEN], chal[FTI_AUTH_CHALLENGE_LEN], proof[FTI_AUTH_PROOF_LEN],
        ack[FTI_AUTH_ACK_LEN];
    int rc = fti_auth_client_hello(&st, hello);
    if (rc == FT_SUCCESS)
        rc = fti_write_full(c->fd, hello, sizeof(hello), deadline);
    if (rc == FT_SUCCESS)
        rc = client_read_auth(c, chal, sizeof(chal), deadline);
    if (rc == FT_SUCCESS && (rc = fti_auth_client_answer(&c->key, &st, chal, proof)) != FT_SUCCESS)
        return FT_ERR_BAD_MESSAGE;
    if (rc == FT_SUCCESS)
        rc = fti_write_full(c->fd, proof, sizeof(proof), deadline);
    if (rc == FT_SUCCESS)
        rc = client_read_auth(c, ack, sizeof(ack), deadline);
    if (rc == FT_SUCCESS && (rc = fti_auth_client_finish(&c->key, &st, ack)) != FT_SUCCESS) {
        client_auth_failed(c, "the server failed to prove the job secret: not talking to it");
        return FT_ERR_AUTH;
    }
    return rc;
}

static void client_drop(struct fti_rpc_client *c)
{
    if (c->fd >= 0) {
        close(c->fd);
        c->fd = -1;
    }
}

/* Whether a kept connection can no longer carry a call: between calls the
 * server sends nothing, so anything readable is its end (an idle timeout,
 * a restart) or an error. */
static bool client_stale(const struct fti_rpc_client *c)
{
    struct pollfd p = {c->fd, POLLIN | POLLRDHUP, 0};
    return poll(&p, 1, 0) != 0;
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
    if (c->fd >= 0 && client_stale(c))
        client_drop(c);
    if (c->fd < 0) {
        int64_t cdl = fti_now_ms() + c->connect_timeout_ms;
        rc = fti_tcp_connect(c->addr, cdl < deadline ? cdl : deadline, &c->fd);
        if (rc != FT_SUCCESS) {
            c->fd = -1;
            return rc == FT_ERR_TIMEOUT ? FT_ERR_TIMEOUT : FT_ERR_CONNECT;
        }
        if (c->has_key && (rc = client_handshake(c, deadline)) != FT_SUCCESS) {
            client_drop(c);
            return rc;
        }
    }
    fti_rpc_header_encode(&h, hdr);
    if (req_len <= RPC_INLINE_REQUEST) {
        uint8_t buf[FTI_RPC_HEADER_LEN + RPC_INLINE_REQUEST];
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
    if (h.status != 0 && h.length > RPC_MAX_ERROR_MSG) {
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
    char msg[RPC_MAX_ERROR_MSG + 1];
    int rc = fti_read_full(c->fd, msg, h->length, deadline);
    if (rc != FT_SUCCESS) {
        client_drop(c); /* the rest of the message must not be read as the next reply */
        return rc;
    }
    msg[h->length] = '\0';
    memcpy(c->last_error, msg, h->length + 1);
    FTI_DEBUG("rpc %s method %u: %s (%s): %s", c->addr, h->method, fti_error_name(h->status),
              FT_Error_string(h->status), msg);
    if (h->method == 0) /* the server rejected the frame and closes */
        client_drop(c);
    if (h->status == FT_ERR_AUTH)
        client_auth_failed(c, "the server needs the job secret (set FTMPI_TOKEN_FILE)");
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
    return fti_rpc_call_into_cb(c, method, req, req_len, timeout_ms, out, len, 0, NULL, NULL);
}

/* Reads the len payload bytes of a reply into out, step bytes at a time,
 * calling landed after each step. */
static int read_steps(int fd, unsigned char *out, size_t len, size_t step, int64_t deadline,
                      void (*landed)(void *arg, size_t done), void *arg)
{
    if (step == 0 || step > len)
        step = len;
    int rc = FT_SUCCESS;
    for (size_t done = 0; rc == FT_SUCCESS && done < len;) {
        size_t n = FTI_MIN(step, len - done);
        rc = fti_read_bulk(fd, out + done, n, deadline);
        done += n;
        if (rc == FT_SUCCESS && landed != NULL)
            landed(arg, done);
    }
    return rc;
}

int fti_rpc_call_into_cb(fti_rpc_client_h c, uint16_t method, const void *req, size_t req_len,
                         int timeout_ms, void *out, size_t len, size_t step,
                         void (*landed)(void *arg, size_t done), void *arg)
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
        rc = read_steps(c->fd, out, len, step, deadline, landed, arg);
    if (rc != FT_SUCCESS)
        client_drop(c);
    pthread_mutex_unlock(&c->mu);
    return rc;
}
