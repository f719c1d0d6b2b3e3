/*
 * lh_probe.c - a small client for the lighthouse tests (no curl, no bash
 * /dev/tcp needed):
 *
 *   lh_probe http ADDR METHOD PATH [-H 'Name: value']... [-d BODY] [-b FROM]
 *       one HTTP/1.1 request (from the IPv4 address FROM with -b); prints
 *       "HTTP <code>" on the first line, then the body.  Exit 0 when a
 *       response came, 1 otherwise.
 *   lh_probe frame ADDR KIND [MAX_FRAME]
 *       sends one bad RPC frame and reports what came back.  KIND:
 *       garbage      not a frame header        -> error reply, then closed
 *       oversize     length MAX_FRAME + 1      -> error reply, then closed
 *       truncated    says 100 bytes, sends 10, half-closes -> closed, no reply
 *       unknown      method 999                -> error reply, connection kept
 *       undecodable  LIGHTHOUSE_QUORUM payload that is not protobuf
 *                                              -> error reply, connection kept
 *       Exit 0 when the lighthouse answered as listed, 1 otherwise.
 *   lh_probe quorum ADDR REPLICA_ID [STEP [TIMEOUT_MS [INCARNATION [SDC_SUM]]]]
 *       asks for a quorum with the library's lighthouse client; prints
 *       "quorum ID members N [a b c]".  Each run is a new process, so a
 *       new incarnation (a restarted group) unless INCARNATION (nonzero)
 *       plays the same one again.  SDC_SUM: one fingerprint of STEP
 *       (buffer "w"); prints "sdc ID verdict V: REPORT" for each member
 *       with an SDC verdict.
 *   lh_probe heartbeat ADDR REPLICA_ID
 *   lh_probe slow ADDR N MAX_MS
 *       N connections sending an HTTP request a byte every 200 ms, never
 *       ending it, until the server closes them or MAX_MS pass
 *   lh_probe stall ADDR N MAX_MS FROM once|reopen
 *       N connections from the IPv4 address FROM that each send half an
 *       HTTP request head and stall, for MAX_MS; "reopen" opens a new one
 *       at once for each the server closes (a slowloris client)
 *   lh_probe cycle ADDR N PREFIX
 *       N groups PREFIX0 .. PREFIX<N-1>, one after the other, each on its
 *       own connection: a heartbeat with 4 ranks' counters, a recovery
 *       and a failed step, then a quorum request with an SDC fingerprint
 *       given up after 50 ms (a lighthouse that needs 2 groups never
 *       judges it), then the connection closes (the group died).  Prints
 *       "cycled N groups"; exit 1 when a heartbeat failed.
 *   lh_probe call ADDR KIND [ARGS]
 *       one well-formed request through the library's RPC client; prints
 *       "ok ..." or "error CODE (STRING)".  KIND: kill [MSG] (MANAGER_KILL),
 *       finalize ID (LIGHTHOUSE_FINALIZE), heal_metadata STEP, heal_fetch
 *       NAME STEP (8 bytes at offset 0), store_set KEY VALUE, store_get KEY,
 *       store_delete PREFIX.  Exit 0 on success, 3 on FT_ERR_AUTH, 1 on any
 *       other error.
 *
 * Every client takes the job secret of FTMPI_TOKEN_FILE when it is set and
 * not empty (as the library's ranks do); clear it to play an intruder.
 *
 * Every wait has a deadline (5 s, or TIMEOUT_MS).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "base/auth.h"
#include "ftmpi_errors.h"
#include "control/lighthouse_client.h"
#include "base/log.h"
#include "base/net.h"
#include "control/proto/ftmpi.pb-c.h"
#include "base/rpc.h"
#include "base/util.h"

#define PROBE_TIMEOUT_MS 5000

/* The job's key (FTMPI_TOKEN_FILE, read in main); NULL: none. */
static fti_auth_key_t job_key_buf;
static const fti_auth_key_t *job_key;

static int usage(void)
{
    fprintf(stderr, "usage: lh_probe http ADDR METHOD PATH [-H 'Name: value']... [-d BODY]\n"
                    "       lh_probe frame ADDR garbage|oversize|truncated|unknown|undecodable "
                    "[MAX_FRAME]\n"
                    "       lh_probe quorum ADDR REPLICA_ID [STEP [TIMEOUT_MS [INCARNATION "
                    "[SDC_SUM]]]]\n"
                    "       lh_probe heartbeat ADDR REPLICA_ID\n"
                    "       lh_probe slow ADDR N MAX_MS\n"
                    "       lh_probe stall ADDR N MAX_MS FROM once|reopen\n"
                    "       lh_probe cycle ADDR N PREFIX\n"
                    "       lh_probe call ADDR kill|finalize|heal_metadata|heal_fetch|store_set|"
                    "store_get|store_delete [ARGS]\n");
    return 2;
}

/* Reads until EOF or the deadline into a growing buffer.  Returns bytes
 * read, or -1 on a timeout (*buf_p still set). */
static ssize_t read_to_eof(int fd, char **buf_p, int64_t deadline)
{
    size_t cap = 4096, len = 0;
    char *buf = malloc(cap + 1);
    if (buf == NULL)
        return -1;
    for (;;) {
        struct pollfd p = {fd, POLLIN, 0};
        int left = fti_ms_left(deadline);
        if (left <= 0) {
            buf[len] = '\0';
            *buf_p = buf;
            return -1;
        }
        int n = poll(&p, 1, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            continue;
        if (len == cap) {
            char *nb = realloc(buf, 2 * cap + 1);
            if (nb == NULL)
                break;
            buf = nb;
            cap *= 2;
        }
        ssize_t r = recv(fd, buf + len, cap - len, 0);
        if (r < 0 && (errno == EAGAIN || errno == EINTR))
            continue;
        if (r <= 0)
            break; /* EOF or reset */
        len += (size_t)r;
    }
    buf[len] = '\0';
    *buf_p = buf;
    return (ssize_t)len;
}

/* A blocking TCP connection to the IPv4 ADDR (host:port) from the IPv4
 * address from (any port), within PROBE_TIMEOUT_MS; -1 on failure. */
static int connect_from(const char *addr, const char *from)
{
    char host[64];
    int port;
    struct sockaddr_in to = {.sin_family = AF_INET}, me = {.sin_family = AF_INET};
    struct timeval tv = {PROBE_TIMEOUT_MS / 1000, 0};
    if (fti_addr_split(addr, host, sizeof(host), &port) != FT_SUCCESS ||
        inet_pton(AF_INET, host, &to.sin_addr) != 1 || inet_pton(AF_INET, from, &me.sin_addr) != 1)
        return -1;
    to.sin_port = htons((uint16_t)port);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0 ||
        bind(fd, (struct sockaddr *)&me, sizeof(me)) != 0 ||
        connect(fd, (struct sockaddr *)&to, sizeof(to)) != 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* ---- http ------------------------------------------------------------- */

static int cmd_http(int argc, char **argv)
{
    if (argc < 3)
        return usage();
    const char *addr = argv[0], *method = argv[1], *path = argv[2], *body = "", *from = NULL;
    char headers[4096] = "";
    size_t hl = 0;
    for (int i = 3; i < argc; i++) {
        if (strcmp(argv[i], "-H") == 0 && i + 1 < argc) {
            int n = snprintf(headers + hl, sizeof(headers) - hl, "%s\r\n", argv[++i]);
            if (n < 0 || (size_t)n >= sizeof(headers) - hl)
                return usage();
            hl += (size_t)n;
        } else if (strcmp(argv[i], "-d") == 0 && i + 1 < argc) {
            body = argv[++i];
        } else if (strcmp(argv[i], "-b") == 0 && i + 1 < argc) {
            from = argv[++i];
        } else {
            return usage();
        }
    }
    int64_t deadline = fti_now_ms() + PROBE_TIMEOUT_MS;
    int fd = from ? connect_from(addr, from) : -1;
    if ((from && fd < 0) || (!from && fti_tcp_connect(addr, deadline, &fd) != FT_SUCCESS)) {
        fprintf(stderr, "lh_probe: cannot connect to %s\n", addr);
        return 1;
    }
    char req[8192];
    int n = snprintf(req, sizeof(req),
                     "%s %s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\nContent-Length: %zu\r\n"
                     "%s\r\n%s",
                     method, path, addr, strlen(body), headers, body);
    if (n < 0 || (size_t)n >= sizeof(req) || fti_write_full(fd, req, (size_t)n, deadline) != 0) {
        fprintf(stderr, "lh_probe: cannot send the request\n");
        close(fd);
        return 1;
    }
    char *resp = NULL;
    ssize_t len = read_to_eof(fd, &resp, deadline);
    close(fd);
    int code = 0;
    if (len < 0 || resp == NULL || sscanf(resp, "HTTP/1.%*d %d", &code) != 1) {
        fprintf(stderr, "lh_probe: no HTTP response from %s%s\n", addr,
                len < 0 ? " (timeout)" : "");
        free(resp);
        return 1;
    }
    char *b = strstr(resp, "\r\n\r\n");
    printf("HTTP %d\n%s", code, b ? b + 4 : "");
    free(resp);
    return 0;
}

/* ---- bad frames ------------------------------------------------------------- */

/* Reads one reply frame; returns 1 and fills h/msg, 0 on EOF, -1 on timeout
 * or a malformed reply. */
static int read_reply(int fd, fti_rpc_header_t *h, char *msg, size_t msglen, int64_t deadline)
{
    uint8_t hdr[FTI_RPC_HEADER_LEN];
    int rc = fti_read_full(fd, hdr, sizeof(hdr), deadline);
    if (rc == FT_ERR_PROC_FAILED)
        return 0;
    if (rc != FT_SUCCESS)
        return -1;
    fti_rpc_header_decode(hdr, h);
    if (h->magic != FTI_RPC_MAGIC || !(h->flags & FTI_RPC_F_REPLY) || h->length >= msglen)
        return -1;
    if (h->length && fti_read_full(fd, msg, h->length, deadline) != FT_SUCCESS)
        return -1;
    msg[h->length] = '\0';
    return 1;
}

/* True when the peer closes fd before the deadline (EOF or reset). */
static bool closed_by_peer(int fd, int64_t deadline)
{
    char *rest = NULL;
    ssize_t n = read_to_eof(fd, &rest, deadline);
    free(rest);
    return n == 0;
}

static int send_frame(int fd, uint16_t method, uint32_t length, const void *payload, size_t plen,
                      int64_t deadline)
{
    uint8_t hdr[FTI_RPC_HEADER_LEN];
    fti_rpc_header_t h = {FTI_RPC_MAGIC, 0, method, 0, length};
    fti_rpc_header_encode(&h, hdr);
    int rc = fti_write_full(fd, hdr, sizeof(hdr), deadline);
    if (rc == FT_SUCCESS && plen > 0)
        rc = fti_write_full(fd, payload, plen, deadline);
    return rc;
}

/* After an error reply the connection must still serve: a heartbeat. */
static bool still_serves(int fd, int64_t deadline)
{
    Ftmpi__LighthouseHeartbeatRequest hb = FTMPI__LIGHTHOUSE_HEARTBEAT_REQUEST__INIT;
    uint8_t buf[128];
    fti_rpc_header_t h;
    char msg[4096];
    hb.replica_id = "lh-probe";
    size_t len = ftmpi__lighthouse_heartbeat_request__pack(&hb, buf);
    if (send_frame(fd, FTMPI__METHOD__LIGHTHOUSE_HEARTBEAT, (uint32_t)len, buf, len, deadline) !=
        FT_SUCCESS)
        return false;
    return read_reply(fd, &h, msg, sizeof(msg), deadline) == 1 && h.status == 0 &&
           h.method == FTMPI__METHOD__LIGHTHOUSE_HEARTBEAT;
}

static int cmd_frame(int argc, char **argv)
{
    if (argc < 2)
        return usage();
    const char *addr = argv[0], *kind = argv[1];
    unsigned long cap = argc > 2 ? strtoul(argv[2], NULL, 10) : 4ul << 20;
    int64_t deadline = fti_now_ms() + PROBE_TIMEOUT_MS;
    int fd = -1, rc = FT_SUCCESS;
    bool expect_reply = true, expect_close = true;
    fti_rpc_header_t h;
    char msg[4096];

    if (fti_tcp_connect(addr, deadline, &fd) != FT_SUCCESS) {
        fprintf(stderr, "lh_probe: cannot connect to %s\n", addr);
        return 1;
    }
    if (strcmp(kind, "garbage") == 0) {
        static const char g[] = "GET / HTTP/1.0\r\nthis is not an ftmpi frame\r\n\r\n";
        rc = fti_write_full(fd, g, sizeof(g) - 1, deadline);
    } else if (strcmp(kind, "oversize") == 0) {
        rc = send_frame(fd, FTMPI__METHOD__LIGHTHOUSE_QUORUM, (uint32_t)(cap + 1), NULL, 0,
                        deadline);
    } else if (strcmp(kind, "truncated") == 0) {
        rc = send_frame(fd, FTMPI__METHOD__LIGHTHOUSE_QUORUM, 100, "0123456789", 10, deadline);
        shutdown(fd, SHUT_WR);
        expect_reply = false;
    } else if (strcmp(kind, "unknown") == 0) {
        rc = send_frame(fd, 999, 4, "abcd", 4, deadline);
        expect_close = false;
    } else if (strcmp(kind, "undecodable") == 0) {
        static const uint8_t bad[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f, 0x01};
        rc = send_frame(fd, FTMPI__METHOD__LIGHTHOUSE_QUORUM, sizeof(bad), bad, sizeof(bad),
                        deadline);
        expect_close = false;
    } else {
        close(fd);
        return usage();
    }
    if (rc != FT_SUCCESS) {
        fprintf(stderr, "lh_probe: cannot send the frame: %s\n", FT_Error_string(rc));
        close(fd);
        return 1;
    }
    int ok = 1;
    if (expect_reply) {
        int r = read_reply(fd, &h, msg, sizeof(msg), deadline);
        if (r == 1 && h.status != 0) {
            printf("%s: error reply status %d (%s) method %u: %s\n", kind, h.status,
                   FT_Error_string(h.status), h.method, msg);
        } else {
            printf("%s: %s\n", kind,
                   r == 1 ? "unexpected success reply" : r == 0 ? "closed without a reply"
                                                               : "no reply (timeout)");
            ok = 0;
        }
    }
    if (expect_close) {
        bool closed = closed_by_peer(fd, deadline);
        printf("%s: %s\n", kind, closed ? "connection closed" : "connection NOT closed");
        ok &= closed;
    } else {
        bool serves = still_serves(fd, deadline);
        printf("%s: %s\n", kind, serves ? "connection still serves" : "connection broken");
        ok &= serves;
    }
    close(fd);
    return ok ? 0 : 1;
}

/* ---- library client ------------------------------------------------------------ */

static int cmd_quorum(int argc, char **argv)
{
    if (argc < 2)
        return usage();
    fti_lighthouse_client_h c;
    Ftmpi__QuorumMember me = FTMPI__QUORUM_MEMBER__INIT;
    Ftmpi__Quorum *q = NULL;
    int timeout = argc > 3 ? atoi(argv[3]) : PROBE_TIMEOUT_MS;
    me.replica_id = argv[1];
    me.address = "127.0.0.1:1";
    me.store_address = "127.0.0.1:2";
    me.step = argc > 2 ? atoll(argv[2]) : 0;
    me.world_size = 1;
    me.incarnation = argc > 4 ? strtoull(argv[4], NULL, 10) : 0; /* 0: the client's own */
    /* SDC_SUM: one fingerprint (group rank 0, buffer "w") of this step */
    Ftmpi__SdcPrint sp = FTMPI__SDC_PRINT__INIT, *spp = &sp;
    if (argc > 5) {
        sp.buffer = "w";
        sp.sum = strtoull(argv[5], NULL, 10);
        me.sdc_step = me.step;
        me.n_sdc_prints = 1;
        me.sdc_prints = &spp;
    }
    int rc = fti_lighthouse_client_create(argv[0], job_key, 2000, &c);
    if (rc == FT_SUCCESS)
        rc = fti_lighthouse_quorum(c, &me, timeout, &q);
    if (rc != FT_SUCCESS) {
        fprintf(stderr, "lh_probe: quorum: %s\n", FT_Error_string(rc));
        fti_lighthouse_client_destroy(c);
        return 1;
    }
    printf("quorum %" PRId64 " members %zu [", q->quorum_id, q->n_participants);
    for (size_t i = 0; i < q->n_participants; i++)
        printf("%s%s", i ? " " : "", q->participants[i]->replica_id);
    printf("] created %" PRId64 "\n", q->created_ms);
    for (size_t i = 0; i < q->n_participants; i++)
        if (q->participants[i]->sdc_verdict != 0)
            printf("sdc %s verdict %d: %s\n", q->participants[i]->replica_id,
                   (int)q->participants[i]->sdc_verdict,
                   q->participants[i]->sdc_report ? q->participants[i]->sdc_report : "");
    ftmpi__quorum__free_unpacked(q, NULL);
    fti_lighthouse_client_destroy(c);
    return 0;
}

static int cmd_heartbeat(int argc, char **argv)
{
    if (argc < 2)
        return usage();
    fti_lighthouse_client_h c;
    int rc = fti_lighthouse_client_create(argv[0], job_key, 2000, &c);
    if (rc == FT_SUCCESS)
        rc = fti_lighthouse_heartbeat(c, argv[1], PROBE_TIMEOUT_MS);
    fti_lighthouse_client_destroy(c);
    if (rc != FT_SUCCESS) {
        fprintf(stderr, "lh_probe: heartbeat: %s\n", FT_Error_string(rc));
        return 1;
    }
    printf("heartbeat ok\n");
    return 0;
}

/* ---- one request of any kind ------------------------------------------------------ */

/* Packs the request of KIND from args into *buf (malloc'ed) and sets the
 * method; FT_ERR_ARG for a bad kind or missing args. */
static int pack_call(const char *kind, int argc, char **argv, uint16_t *method_p, uint8_t **buf_p,
                     size_t *len_p)
{
    const char *a0 = argc > 0 ? argv[0] : NULL, *a1 = argc > 1 ? argv[1] : NULL;
    ProtobufCMessage *m = NULL;
    Ftmpi__KillRequest kill = FTMPI__KILL_REQUEST__INIT;
    Ftmpi__LighthouseFinalizeRequest fin = FTMPI__LIGHTHOUSE_FINALIZE_REQUEST__INIT;
    Ftmpi__HealMetadataRequest hm = FTMPI__HEAL_METADATA_REQUEST__INIT;
    Ftmpi__HealFetchRequest hf = FTMPI__HEAL_FETCH_REQUEST__INIT;
    Ftmpi__StoreSetRequest ss = FTMPI__STORE_SET_REQUEST__INIT;
    Ftmpi__StoreGetRequest sg = FTMPI__STORE_GET_REQUEST__INIT;
    Ftmpi__StoreDeletePrefixRequest sd = FTMPI__STORE_DELETE_PREFIX_REQUEST__INIT;
    if (strcmp(kind, "kill") == 0) {
        kill.msg = a0 ? (char *)a0 : "lh_probe";
        *method_p = FTMPI__METHOD__MANAGER_KILL;
        m = &kill.base;
    } else if (strcmp(kind, "finalize") == 0 && a0) {
        fin.replica_id = (char *)a0;
        *method_p = FTMPI__METHOD__LIGHTHOUSE_FINALIZE;
        m = &fin.base;
    } else if (strcmp(kind, "heal_metadata") == 0 && a0) {
        hm.step = atoll(a0);
        *method_p = FTMPI__METHOD__HEAL_METADATA;
        m = &hm.base;
    } else if (strcmp(kind, "heal_fetch") == 0 && a1) {
        hf.name = (char *)a0;
        hf.length = 8;
        hf.step = atoll(a1);
        *method_p = FTMPI__METHOD__HEAL_FETCH;
        m = &hf.base;
    } else if (strcmp(kind, "store_set") == 0 && a1) {
        ss.key = (char *)a0;
        ss.value.data = (uint8_t *)a1;
        ss.value.len = strlen(a1);
        *method_p = FTMPI__METHOD__STORE_SET;
        m = &ss.base;
    } else if (strcmp(kind, "store_get") == 0 && a0) {
        sg.key = (char *)a0;
        sg.timeout_ms = 100;
        *method_p = FTMPI__METHOD__STORE_GET;
        m = &sg.base;
    } else if (strcmp(kind, "store_delete") == 0 && a0) {
        sd.prefix = (char *)a0;
        *method_p = FTMPI__METHOD__STORE_DELETE_PREFIX;
        m = &sd.base;
    }
    if (m == NULL)
        return FT_ERR_ARG;
    *len_p = protobuf_c_message_get_packed_size(m);
    *buf_p = malloc(*len_p ? *len_p : 1);
    if (*buf_p == NULL)
        return FT_ERR_NO_MEMORY;
    protobuf_c_message_pack(m, *buf_p);
    return FT_SUCCESS;
}

/* lh_probe slow ADDR N MAX_MS: N connections that send an HTTP request one
 * byte every 200 ms (never finishing it) until the server closes them or
 * MAX_MS pass; prints "closed K of N, the last after T ms". */
static int cmd_slow(int argc, char **argv)
{
    if (argc != 5)
        return usage();
    int n = atoi(argv[3]), max_ms = atoi(argv[4]);
    if (n < 1 || n > 1000 || max_ms < 1)
        return usage();
    int *fd = calloc((size_t)n, sizeof(*fd));
    int64_t t0 = fti_now_ms(), last = 0;
    int closed = 0;
    if (fd == NULL)
        return 1;
    for (int i = 0; i < n; i++) {
        fd[i] = -1;
        if (fti_tcp_connect(argv[2], t0 + PROBE_TIMEOUT_MS, &fd[i]) != FT_SUCCESS ||
            send(fd[i], "GET / HTTP/1.1\r\nX-Slow: ", 25, MSG_NOSIGNAL) != 25) {
            fprintf(stderr, "lh_probe: connection %d to %s failed\n", i, argv[2]);
            return 1;
        }
    }
    printf("opened %d\n", n);
    fflush(stdout);
    while (closed < n && fti_now_ms() - t0 < max_ms) {
        fti_sleep_ms(200);
        for (int i = 0; i < n; i++) {
            char c;
            if (fd[i] < 0)
                continue;
            ssize_t r = recv(fd[i], &c, 1, MSG_DONTWAIT);
            bool gone = r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK) ||
                        send(fd[i], "a", 1, MSG_NOSIGNAL) != 1;
            if (gone) {
                close(fd[i]);
                fd[i] = -1;
                closed++;
                last = fti_now_ms() - t0;
            }
        }
    }
    for (int i = 0; i < n; i++)
        if (fd[i] >= 0)
            close(fd[i]);
    free(fd);
    printf("closed %d of %d, the last after %" PRId64 " ms\n", closed, n, last);
    return 0;
}

/* lh_probe stall ADDR N MAX_MS FROM once|reopen: see the top.  Prints
 * "opened N" once N are open, the status line of the first 3 answers
 * ("answered: HTTP/1.1 503 ..."), then "closed K by the server, answered
 * A, open at the end O". */
static int cmd_stall(int argc, char **argv)
{
    static const char half[] = "GET /metrics HTTP/1.1\r\nHost: stall\r\nX-Stall: ";
    if (argc != 7)
        return usage();
    int n = atoi(argv[3]), max_ms = atoi(argv[4]);
    bool reopen = strcmp(argv[6], "reopen") == 0;
    if (n < 1 || n > 1000 || max_ms < 1 || (!reopen && strcmp(argv[6], "once") != 0))
        return usage();
    int *fd = calloc((size_t)n, sizeof(*fd)), closed = 0, answered = 0, open = 0;
    int64_t t0 = fti_now_ms();
    bool said = false;
    if (fd == NULL)
        return 1;
    for (int i = 0; i < n; i++)
        fd[i] = -2; /* to open */
    while (fti_now_ms() - t0 < max_ms) {
        for (int i = 0; i < n; i++) {
            if (fd[i] == -2 && fti_now_ms() - t0 < max_ms) {
                fd[i] = connect_from(argv[2], argv[5]);
                if (fd[i] >= 0 &&
                    send(fd[i], half, sizeof(half) - 1, MSG_NOSIGNAL) != (ssize_t)sizeof(half) - 1) {
                    close(fd[i]);
                    fd[i] = -1;
                }
                if (fd[i] < 0)
                    fd[i] = -2; /* again next round */
            }
        }
        open = 0;
        for (int i = 0; i < n; i++)
            open += fd[i] >= 0;
        if (!said && open == n) {
            printf("opened %d\n", n);
            fflush(stdout);
            said = true;
        }
        fti_sleep_ms(100);
        for (int i = 0; i < n; i++) {
            char buf[512];
            if (fd[i] < 0)
                continue;
            ssize_t r = recv(fd[i], buf, sizeof(buf) - 1, MSG_DONTWAIT);
            if (r > 0) {
                buf[r] = '\0';
                if (strncmp(buf, "HTTP/1.", 7) == 0 && answered++ < 3) { /* the first 3 */
                    char *eol = strpbrk(buf, "\r\n");
                    if (eol)
                        *eol = '\0';
                    printf("answered: %s\n", buf);
                    fflush(stdout);
                }
                continue; /* the close comes next */
            }
            if (r == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
                close(fd[i]);
                fd[i] = reopen ? -2 : -1;
                closed++;
            }
        }
        if (!reopen && closed == n)
            break;
    }
    open = 0;
    for (int i = 0; i < n; i++) {
        open += fd[i] >= 0;
        if (fd[i] >= 0)
            close(fd[i]);
    }
    free(fd);
    printf("closed %d by the server, answered %d, open at the end %d\n", closed, answered, open);
    return 0;
}

/* One group of lh_probe cycle on c: see the top.  FT_SUCCESS when its
 * heartbeat was answered. */
static int cycle_one(fti_rpc_client_h c, const char *id, uint64_t inc)
{
    Ftmpi__LighthouseHeartbeatRequest hb = FTMPI__LIGHTHOUSE_HEARTBEAT_REQUEST__INIT;
    Ftmpi__RankMetrics rm[4], *rmp[4];
    Ftmpi__RecoveryReport rec = FTMPI__RECOVERY_REPORT__INIT, *recp = &rec;
    Ftmpi__RecoveryStepFailure sf = FTMPI__RECOVERY_STEP_FAILURE__INIT, *sfp = &sf;
    Ftmpi__LighthouseQuorumRequest qr = FTMPI__LIGHTHOUSE_QUORUM_REQUEST__INIT;
    Ftmpi__QuorumMember me = FTMPI__QUORUM_MEMBER__INIT;
    Ftmpi__SdcPrint sp = FTMPI__SDC_PRINT__INIT, *spp = &sp;
    int64_t now = fti_wall_ms();
    for (int r = 0; r < 4; r++) {
        ftmpi__rank_metrics__init(&rm[r]);
        rm[r].group_rank = r;
        rm[r].steps = rm[r].commits = 5;
        rmp[r] = &rm[r];
    }
    rec.seq = 1;
    rec.kind = "survivor";
    rec.failed_step = 3;
    rec.start_ms = now - 100;
    rec.end_ms = now;
    rec.error = "FT_ERR_PROC_FAILED";
    sf.seq = 1;
    sf.step = 3;
    sf.wall_ms = now - 100;
    sf.error = "FT_ERR_PROC_FAILED";
    hb.replica_id = (char *)id;
    hb.incarnation = inc;
    hb.n_rank_metrics = 4;
    hb.rank_metrics = rmp;
    hb.n_recoveries = 1;
    hb.recoveries = &recp;
    hb.n_step_failures = 1;
    hb.step_failures = &sfp;
    sp.buffer = "w";
    sp.sum = 42;
    me.replica_id = (char *)id;
    me.address = "127.0.0.1:1";
    me.store_address = "127.0.0.1:2";
    me.step = me.sdc_step = 5;
    me.world_size = 4;
    me.incarnation = inc;
    me.n_sdc_prints = 1;
    me.sdc_prints = &spp;
    qr.requester = &me;
    const ProtobufCMessage *m[2] = {&hb.base, &qr.base};
    const uint16_t method[2] = {FTMPI__METHOD__LIGHTHOUSE_HEARTBEAT,
                                FTMPI__METHOD__LIGHTHOUSE_QUORUM};
    int rc[2] = {FT_ERR_NO_MEMORY, FT_ERR_NO_MEMORY};
    for (int k = 0; k < 2; k++) {
        size_t len = protobuf_c_message_get_packed_size(m[k]), rlen = 0;
        uint8_t *buf = malloc(len ? len : 1);
        void *reply = NULL;
        if (buf == NULL)
            break;
        protobuf_c_message_pack(m[k], buf);
        rc[k] = fti_rpc_call(c, method[k], buf, len, k == 0 ? PROBE_TIMEOUT_MS : 50, &reply,
                             &rlen);
        free(buf);
        free(reply);
    }
    return rc[0];
}

static int cmd_cycle(int argc, char **argv)
{
    if (argc != 3)
        return usage();
    int n = atoi(argv[1]), failed = 0;
    if (n < 1 || n > 100000 || strlen(argv[2]) > 32)
        return usage();
    for (int i = 0; i < n; i++) {
        char id[64];
        fti_rpc_client_h c = NULL;
        snprintf(id, sizeof(id), "%s%d", argv[2], i);
        int rc = fti_rpc_client_create(argv[0], job_key, 2000, 1u << 24, &c);
        if (rc == FT_SUCCESS)
            rc = cycle_one(c, id, 1000u + (uint64_t)i);
        fti_rpc_client_destroy(c);
        if (rc != FT_SUCCESS && failed++ == 0)
            fprintf(stderr, "lh_probe: cycle: %s: %s\n", id, FT_Error_string(rc));
    }
    printf("cycled %d groups%s\n", n, failed ? " (some heartbeats failed)" : "");
    return failed ? 1 : 0;
}

static int cmd_call(int argc, char **argv)
{
    if (argc < 2)
        return usage();
    uint16_t method = 0;
    uint8_t *req = NULL;
    void *reply = NULL;
    size_t len = 0, rlen = 0;
    fti_rpc_client_h c = NULL;
    if (pack_call(argv[1], argc - 2, argv + 2, &method, &req, &len) != FT_SUCCESS)
        return usage();
    int rc = fti_rpc_client_create(argv[0], job_key, 2000, 1u << 24, &c);
    if (rc == FT_SUCCESS)
        rc = fti_rpc_call(c, method, req, len, PROBE_TIMEOUT_MS, &reply, &rlen);
    free(req);
    free(reply);
    fti_rpc_client_destroy(c);
    if (rc != FT_SUCCESS) {
        printf("error %d (%s)\n", rc, FT_Error_string(rc));
        return rc == FT_ERR_AUTH ? 3 : 1;
    }
    printf("ok %s: %zu reply bytes\n", argv[1], rlen);
    return 0;
}

int main(int argc, char **argv)
{
    char err[512];
    signal(SIGPIPE, SIG_IGN);
    fti_log_init("lh_probe", FTI_LOG_WARN);
    const char *tok = getenv("FTMPI_TOKEN_FILE");
    if (tok != NULL && tok[0] != '\0') {
        if (fti_auth_load_key(tok, &job_key_buf, err, sizeof(err)) != FT_SUCCESS) {
            fprintf(stderr, "lh_probe: %s\n", err);
            return 2;
        }
        job_key = &job_key_buf;
    }
    if (argc < 3)
        return usage();
    if (strcmp(argv[1], "http") == 0)
        return cmd_http(argc - 2, argv + 2);
    if (strcmp(argv[1], "frame") == 0)
        return cmd_frame(argc - 2, argv + 2);
    if (strcmp(argv[1], "quorum") == 0)
        return cmd_quorum(argc - 2, argv + 2);
    if (strcmp(argv[1], "heartbeat") == 0)
        return cmd_heartbeat(argc - 2, argv + 2);
    if (strcmp(argv[1], "slow") == 0)
        return cmd_slow(argc, argv);
    if (strcmp(argv[1], "cycle") == 0)
        return cmd_cycle(argc - 2, argv + 2);
    if (strcmp(argv[1], "stall") == 0)
        return cmd_stall(argc, argv);
    if (strcmp(argv[1], "call") == 0)
        return cmd_call(argc - 2, argv + 2);
    return usage();
}
