/*
 * fuzz_http.c - the lighthouse's HTTP server (lighthouse/http.c: routing,
 * the token check, the same-origin check, the kill endpoint's id decoding)
 * behind a real evhttp server on 127.0.0.1, with a token configured and a
 * live group "g1" that a kill would stop.
 *
 * Input: the bytes a client sends on one connection (one or more requests),
 * then its end of the stream; everything the server sends is read until it
 * closes.  Checks: the server closes by itself; without the token no reply
 * shows the group's manager address and the group is never killed.
 */
#include "fuzz_lh.h"
#include "control/message.h"

#include <errno.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/net.h"
#include "control/proto/ftmpi.pb-c.h"
#include "base/rpc.h"

#define TOKEN "fuzz-token-123"
#define G1_ADDR "127.0.0.1:45678"

static struct {
    fti_lh_http_h http;
    char addr[FTI_ADDRESS_SIZE];
    fti_rpc_client_h c;
    uint8_t reply[1 << 20];
} H;

static void setup(struct event_base *base, fti_lighthouse_h lh)
{
    CHECK(fti_lh_http_create(base, lh, "127.0.0.1:0", TOKEN, &H.http) == FT_SUCCESS);
    fti_strlcpy(H.addr, fti_lh_http_address(H.http), sizeof(H.addr));
}

/* Keeps group g1, whose manager is at G1_ADDR, known to the lighthouse:
 * a quorum request first, then a heartbeat per input. */
static void heartbeat(void)
{
    if (H.c == NULL) {
        CHECK(fti_rpc_client_create(fti_lighthouse_address(LH.lh), NULL, 2000, 1 << 16, &H.c) ==
              FT_SUCCESS);
        Ftmpi__QuorumMember me = FTMPI__QUORUM_MEMBER__INIT;
        me.replica_id = "g1";
        me.address = G1_ADDR;
        me.store_address = G1_ADDR;
        me.world_size = 1;
        Ftmpi__LighthouseQuorumRequest qr = FTMPI__LIGHTHOUSE_QUORUM_REQUEST__INIT;
        qr.requester = &me;
        ProtobufCMessage *q = NULL;
        CHECK(fti_rpc_call_msg(H.c, FTMPI__METHOD__LIGHTHOUSE_QUORUM, &qr.base,
                               &ftmpi__lighthouse_quorum_response__descriptor, 5000,
                               &q) == FT_SUCCESS);
        protobuf_c_message_free_unpacked(q, NULL);
    }
    Ftmpi__LighthouseHeartbeatRequest hb = FTMPI__LIGHTHOUSE_HEARTBEAT_REQUEST__INIT;
    hb.replica_id = "g1";
    ProtobufCMessage *resp = NULL;
    CHECK(fti_rpc_call_msg(H.c, FTMPI__METHOD__LIGHTHOUSE_HEARTBEAT, &hb.base,
                           &ftmpi__lighthouse_heartbeat_response__descriptor, 5000,
                           &resp) == FT_SUCCESS);
    protobuf_c_message_free_unpacked(resp, NULL);
}

static size_t exchange(const uint8_t *d, size_t n)
{
    int fd = -1;
    CHECK(fti_tcp_connect(H.addr, fti_now_ms() + 5000, &fd) == FT_SUCCESS);
    int rc = fti_write_full(fd, d, n, fti_now_ms() + 5000);
    CHECK(rc == FT_SUCCESS || rc == FT_ERR_PROC_FAILED);
    shutdown(fd, SHUT_WR);
    size_t got = 0;
    int64_t deadline = fti_now_ms() + 10000;
    for (;;) {
        ssize_t k = recv(fd, H.reply + got, sizeof(H.reply) - 1 - got, 0);
        if (k > 0) {
            got += (size_t)k;
            if (got == sizeof(H.reply) - 1)
                got = 0;
            continue;
        }
        if (k == 0 || (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            break;
        struct pollfd p = {fd, POLLIN, 0};
        CHECK(fti_ms_left(deadline) > 0); /* the server must close */
        poll(&p, 1, fti_ms_left(deadline));
    }
    close(fd);
    H.reply[got] = '\0';
    return got;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    lh_start(setup);
    heartbeat();
    bool has_token = memmem(data, size, TOKEN, strlen(TOKEN)) != NULL;
    exchange(data, size);
    if (!has_token) {
        CHECK(strstr((char *)H.reply, G1_ADDR) == NULL); /* no address shown */
        CHECK(fti_lighthouse_group_status(LH.lh, "g1", NULL) != FTI_LH_GROUP_UNKNOWN);
    }
    return 0;
}

static void emit_str(fuzz_emit_fn emit, const char *s)
{
    emit((const uint8_t *)s, strlen(s));
}

void fuzz_generated(fuzz_emit_fn emit)
{
#define AUTH "Authorization: Bearer " TOKEN "\r\n"
    emit_str(emit, "GET / HTTP/1.1\r\nHost: x\r\n" AUTH "\r\n");
    emit_str(emit, "GET /status.json HTTP/1.1\r\nHost: x\r\n" AUTH "\r\n");
    emit_str(emit, "GET /metrics HTTP/1.0\r\n" AUTH "\r\n");
    emit_str(emit, "HEAD /index.html HTTP/1.1\r\nHost: x\r\n" AUTH "\r\n");
    emit_str(emit, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n");
    emit_str(emit, "GET /status.json HTTP/1.1\r\nAuthorization: Bearer wrong\r\n\r\n");
    emit_str(emit, "GET /status.json HTTP/1.1\r\nAuthorization: Basic Zm9vOmJhcg==\r\n\r\n");
    emit_str(emit, "POST /replica/g1/kill HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n");
    emit_str(emit, "POST /replica/g%31/kill HTTP/1.1\r\nHost: x\r\nOrigin: http://evil\r\n"
                   "Content-Length: 0\r\n" AUTH "\r\n");
    emit_str(emit, "POST /replica/nobody/kill HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n"
                   AUTH "\r\n");
    emit_str(emit, "GET /replica/g1/kill HTTP/1.1\r\n" AUTH "\r\n");
    emit_str(emit, "POST /replica/%00%ff/kill HTTP/1.1\r\nContent-Length: 0\r\n" AUTH "\r\n");
    emit_str(emit, "POST /replica//kill HTTP/1.1\r\nContent-Length: 0\r\n" AUTH "\r\n");
    emit_str(emit, "DELETE /metrics HTTP/1.1\r\n" AUTH "\r\n");
    emit_str(emit, "GET /nope HTTP/1.1\r\n" AUTH "\r\n");
    emit_str(emit, "GET http://x/metrics?a=b#c HTTP/1.1\r\n" AUTH "\r\n");
    emit_str(emit, "GET / HTTP/1.1\r\n" AUTH "\r\nGET /metrics HTTP/1.1\r\n" AUTH "\r\n");
    emit_str(emit, "GET /\x01\xff HTTP/1.1\r\n\r\n");
    emit_str(emit, "garbage\r\n\r\n");
    emit_str(emit, "");
}
