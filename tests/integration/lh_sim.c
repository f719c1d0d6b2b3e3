/*
 * lh_sim.c - simulated replica groups against a lighthouse: a load tool for
 * the tests and the quickstart demo.  No MPI.
 *
 * Each simulated group keeps its own connection to the lighthouse, sends a
 * heartbeat every --heartbeat-ms on it, and loops: ask for a quorum (with
 * its step), print the quorum it receives, "heal" (jump to the highest step
 * of the quorum's members, unless --no-heal), advance its step, pause
 * --step-ms, ask again.  With --rounds R every group stops after the quorum
 * of step R - 1.  Each group also serves MANAGER_KILL on its own
 * port (its "manager address" in the quorum) unless --no-manager, so the
 * dashboard's kill works against it.  Everything runs on one libevent loop,
 * so one process can simulate thousands of groups.
 *
 * Output (stdout, one line per event, flushed):
 *   g01 quorum 7 step 3 members 4 [g00 g01 g02 g03] created 1732259012345
 *   g02 drops out after 5 quorums (simulated failure)
 *   g02 killed by the lighthouse: <msg>
 *   g02 rejoins at step 0
 *   g02 heals: step 0 -> 7
 * --summary prints each quorum once per process instead of once per group:
 *   quorum 7: 4 members [g00 g01 g02 g03], max step 3
 * --timestamps prefixes lines with the wall clock in ms: "[1732259012345] ".
 * --light skips unpacking (a quorum of n groups sent to n groups is O(n^2)
 * bytes to decode in this one process) and prints instead
 *   g01 quorum 7: 4 members, 120 bytes, checksum 0123456789abcdef created 1732259012345
 *
 * The process ends when every group has finished its --rounds (or dropped
 * out for good), or on SIGTERM/SIGINT.  Exit status: 0; 1 with --strict
 * when any group saw an error (a timed-out quorum, an error reply, a lost
 * connection); 2 on bad flags.
 */
#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/auth.h"
#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/net.h"
#include "control/proto/ftmpi.pb-c.h"
#include "base/rpc.h"
#include "base/util.h"

#define SIM_MAX_REPLY (64u << 20)
#define SIM_RECONNECT_MS 500
#define SIM_MGR_LINGER_MS 200 /* a killed group's manager answers, then closes */
#define SIM_LIST_MAX 64       /* members printed by name; more are counted */

/* The job's key (FTMPI_TOKEN_FILE, read in main as a rank reads it); NULL: none. */
static fti_auth_key_t job_key_buf;
static const fti_auth_key_t *job_key;

struct sim;

struct group {
    struct sim *sim;
    char id[64];
    int rounds;     /* quorums received */
    int64_t step;
    int drop_after; /* drop out after this many quorums, -1 never */
    bool down;      /* dropped out (or killed), maybe rejoining later */
    bool done;
    bool waiting;   /* a quorum request is in flight */
    struct bufferevent *bev;
    struct event *hb_ev, *step_ev, *timeout_ev, *retry_ev, *rejoin_ev, *mgr_close_ev;
    fti_rpc_server_h mgr;
    char mgr_addr[128];
    uint64_t incarnation; /* --liveness: this process's, per group */
    uint64_t rejoin_inc;  /* without --liveness: the quorum requests' incarnation
                           * after a rejoin (a restarted group is a new one, which
                           * a lighthouse that killed the old one admits) */
};

struct sim {
    struct event_base *base;
    struct sockaddr_storage sa;
    socklen_t salen;
    char lighthouse[128];
    char bind_host[64];
    int n_groups, first, id_width;
    char prefix[32];
    int rounds, step_ms, heartbeat_ms, timeout_ms, rejoin_ms;
    uint64_t world_size;
    bool manager, summary, quiet, timestamps, strict, light, heal, liveness;
    struct group *groups;
    int n_done;
    uint64_t quorums, errors;
    /* --summary: the last few quorums printed (id, created) */
    int64_t seen_id[8], seen_created[8];
    int seen_next;
};

static void out(struct sim *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void out(struct sim *s, const char *fmt, ...)
{
    va_list ap;
    if (s->timestamps)
        printf("[%" PRId64 "] ", fti_wall_ms());
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    putchar('\n');
    fflush(stdout);
}

static void group_connect(struct group *g);
static void group_drop(struct group *g, const char *why);

/* ---- frames ----------------------------------------------------------- */

static int send_msg(struct group *g, uint16_t method, const ProtobufCMessage *msg)
{
    size_t len = protobuf_c_message_get_packed_size(msg);
    uint8_t hdr[FTI_RPC_HEADER_LEN], stackbuf[1024];
    uint8_t *buf = len <= sizeof(stackbuf) ? stackbuf : malloc(len);
    fti_rpc_header_t h = {FTI_RPC_MAGIC, 0, method, 0, (uint32_t)len};
    if (buf == NULL)
        return FT_ERR_NO_MEMORY;
    protobuf_c_message_pack(msg, buf);
    fti_rpc_header_encode(&h, hdr);
    struct evbuffer *o = bufferevent_get_output(g->bev);
    evbuffer_add(o, hdr, sizeof(hdr));
    evbuffer_add(o, buf, len);
    if (buf != stackbuf)
        free(buf);
    return FT_SUCCESS;
}

static void send_request(struct group *g)
{
    Ftmpi__QuorumMember me = FTMPI__QUORUM_MEMBER__INIT;
    Ftmpi__LighthouseQuorumRequest req = FTMPI__LIGHTHOUSE_QUORUM_REQUEST__INIT;
    struct timeval tv = {g->sim->timeout_ms / 1000, (g->sim->timeout_ms % 1000) * 1000};
    if (g->bev == NULL || g->waiting)
        return;
    me.replica_id = g->id;
    me.address = g->mgr_addr;
    me.store_address = "";
    me.step = g->step;
    me.world_size = g->sim->world_size;
    me.incarnation = g->incarnation ? g->incarnation : g->rejoin_inc;
    req.requester = &me;
    if (send_msg(g, FTMPI__METHOD__LIGHTHOUSE_QUORUM, &req.base) == FT_SUCCESS) {
        g->waiting = true;
        event_add(g->timeout_ev, &tv);
    }
}

static void send_heartbeat(struct group *g)
{
    Ftmpi__LighthouseHeartbeatRequest req = FTMPI__LIGHTHOUSE_HEARTBEAT_REQUEST__INIT;
    req.replica_id = g->id;
    req.incarnation = g->incarnation; /* --liveness: bind the connection */
    if (g->bev)
        (void)send_msg(g, FTMPI__METHOD__LIGHTHOUSE_HEARTBEAT, &req.base);
}

/* ---- connection ------------------------------------------------------ */

#define SIM_AUTH_MS 2000 /* connect + handshake deadline with a job secret */

static void close_conn(struct group *g)
{
    if (g->bev) {
        bufferevent_free(g->bev);
        g->bev = NULL;
    }
    g->waiting = false;
    event_del(g->hb_ev);
    event_del(g->step_ev);
    event_del(g->timeout_ev);
}

static void reconnect_later(struct group *g)
{
    struct timeval tv = {0, SIM_RECONNECT_MS * 1000};
    close_conn(g);
    if (!g->down && !g->done)
        event_add(g->retry_ev, &tv);
}

static void group_finish(struct group *g)
{
    struct sim *s = g->sim;
    if (g->done)
        return;
    g->done = true;
    close_conn(g);
    event_del(g->rejoin_ev);
    if (++s->n_done == s->n_groups)
        event_base_loopexit(s->base, NULL);
}

static void print_quorum(struct group *g, const Ftmpi__Quorum *q)
{
    struct sim *s = g->sim;
    char list[SIM_LIST_MAX * 70 + 64];
    size_t used = 0;
    int64_t max_step = -1;
    for (size_t i = 0; i < q->n_participants; i++) {
        const Ftmpi__QuorumMember *m = q->participants[i];
        if (m->step > max_step)
            max_step = m->step;
        if (i < SIM_LIST_MAX) {
            int n = snprintf(list + used, sizeof(list) - used, "%s%s", i ? " " : "",
                             m->replica_id);
            if (n > 0 && (size_t)n < sizeof(list) - used)
                used += (size_t)n;
        } else if (i == SIM_LIST_MAX) {
            snprintf(list + used, sizeof(list) - used, " +%zu more",
                     q->n_participants - SIM_LIST_MAX);
        }
    }
    if (s->quiet)
        return;
    if (!s->summary) {
        out(s, "%s quorum %" PRId64 " step %" PRId64 " members %zu [%s] created %" PRId64, g->id,
            q->quorum_id, g->step, q->n_participants, list, q->created_ms);
        return;
    }
    for (int i = 0; i < 8; i++)
        if (s->seen_id[i] == q->quorum_id && s->seen_created[i] == q->created_ms)
            return;
    s->seen_id[s->seen_next] = q->quorum_id;
    s->seen_created[s->seen_next] = q->created_ms;
    s->seen_next = (s->seen_next + 1) % 8;
    out(s, "quorum %" PRId64 ": %zu member%s [%s], max step %" PRId64, q->quorum_id,
        q->n_participants, q->n_participants == 1 ? "" : "s", list, max_step);
}

/* ---- --light: read the reply's wire format without unpacking members ---- */

static bool pb_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    uint64_t x = 0;
    for (int shift = 0; *p < end && shift < 64; shift += 7) {
        uint8_t b = *(*p)++;
        x |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = x;
            return true;
        }
    }
    return false;
}

/* Skips one field of wire type wt; false if malformed. */
static bool pb_skip(const uint8_t **p, const uint8_t *end, unsigned wt)
{
    uint64_t v;
    switch (wt) {
    case 0: return pb_varint(p, end, &v);
    case 1: if (end - *p < 8) return false; *p += 8; return true;
    case 5: if (end - *p < 4) return false; *p += 4; return true;
    case 2:
        if (!pb_varint(p, end, &v) || v > (uint64_t)(end - *p))
            return false;
        *p += v;
        return true;
    }
    return false;
}

/* LighthouseQuorumResponse { Quorum quorum = 1 { int64 quorum_id = 1;
 * repeated QuorumMember participants = 2; int64 created_ms = 3 } }:
 * the id, the creation time and the number of participants. */
static bool light_parse(const uint8_t *p, size_t len, int64_t *id, int64_t *created, size_t *n)
{
    const uint8_t *end = p + len, *q = NULL, *qend = NULL;
    uint64_t key, v;
    while (p < end) {
        if (!pb_varint(&p, end, &key))
            return false;
        if (key == ((1u << 3) | 2)) {
            if (!pb_varint(&p, end, &v) || v > (uint64_t)(end - p))
                return false;
            q = p;
            qend = p + v;
            p += v;
        } else if (!pb_skip(&p, end, (unsigned)(key & 7))) {
            return false;
        }
    }
    if (q == NULL)
        return false;
    *id = 0;
    *created = 0;
    *n = 0;
    while (q < qend) {
        if (!pb_varint(&q, qend, &key))
            return false;
        if (key == ((1u << 3) | 0) || key == ((3u << 3) | 0)) {
            if (!pb_varint(&q, qend, &v))
                return false;
            *(key >> 3 == 1 ? id : created) = (int64_t)v;
        } else {
            if (key == ((2u << 3) | 2))
                (*n)++;
            if (!pb_skip(&q, qend, (unsigned)(key & 7)))
                return false;
        }
    }
    return true;
}

static bool next_round(struct group *g, int64_t job_step);

static void on_quorum_reply_light(struct group *g, const uint8_t *p, size_t len)
{
    struct sim *s = g->sim;
    int64_t id, created;
    size_t n;
    if (!light_parse(p, len, &id, &created, &n)) {
        out(s, "%s error: quorum reply does not decode", g->id);
        s->errors++;
        reconnect_later(g);
        return;
    }
    if (!s->quiet) {
        bool seen = false;
        for (int i = 0; i < 8; i++)
            seen |= s->seen_id[i] == id && s->seen_created[i] == created;
        if (!s->summary || !seen) {
            s->seen_id[s->seen_next] = id;
            s->seen_created[s->seen_next] = created;
            s->seen_next = (s->seen_next + 1) % 8;
            out(s, "%s%squorum %" PRId64 ": %zu members, %zu bytes, checksum %016" PRIx64
                   " created %" PRId64,
                s->summary ? "" : g->id, s->summary ? "" : " ", id, n, len,
                fti_checksum64(p, len, 0), created);
        }
    }
    s->quorums++;
    next_round(g, g->step + 1); /* the members' steps are not read here */
}

static void on_quorum_reply(struct group *g, const uint8_t *p, size_t len)
{
    struct sim *s = g->sim;
    if (s->light) {
        on_quorum_reply_light(g, p, len);
        return;
    }
    Ftmpi__LighthouseQuorumResponse *r = ftmpi__lighthouse_quorum_response__unpack(NULL, len, p);
    if (r == NULL || r->quorum == NULL) {
        out(s, "%s error: quorum reply does not decode", g->id);
        s->errors++;
        if (r)
            ftmpi__lighthouse_quorum_response__free_unpacked(r, NULL);
        reconnect_later(g);
        return;
    }
    bool in = false;
    for (size_t i = 0; i < r->quorum->n_participants; i++)
        in |= strcmp(r->quorum->participants[i]->replica_id, g->id) == 0;
    if (!in) {
        out(s, "%s error: quorum %" PRId64 " does not include it", g->id, r->quorum->quorum_id);
        s->errors++;
    }
    print_quorum(g, r->quorum);
    int64_t max_step = g->step;
    for (size_t i = 0; i < r->quorum->n_participants; i++)
        max_step = FTI_MAX(max_step, r->quorum->participants[i]->step);
    ftmpi__lighthouse_quorum_response__free_unpacked(r, NULL);
    s->quorums++;
    if (s->heal && g->step < max_step) {
        out(s, "%s heals: step %" PRId64 " -> %" PRId64, g->id, g->step, max_step);
        g->step = max_step;
    }
    next_round(g, max_step + 1);
}

/* After a quorum (whose members' highest step + 1 is job_step): advance
 * the step; drop out, finish, or ask again after --step-ms.  False when the
 * group's connection is gone. */
static bool next_round(struct group *g, int64_t job_step)
{
    struct sim *s = g->sim;
    g->rounds++;
    g->step++;
    if (g->drop_after >= 0 && g->rounds >= g->drop_after) {
        char why[96];
        snprintf(why, sizeof(why), "after %d quorums (simulated failure)", g->rounds);
        g->drop_after = -1;
        group_drop(g, why);
        return false;
    }
    if (s->rounds > 0 && job_step >= s->rounds) {
        group_finish(g);
        return false;
    }
    struct timeval tv = {s->step_ms / 1000, (s->step_ms % 1000) * 1000};
    event_add(g->step_ev, &tv);
    return true;
}

static void read_cb(struct bufferevent *bev, void *arg)
{
    struct group *g = arg;
    struct sim *s = g->sim;
    struct evbuffer *in = bufferevent_get_input(bev);
    for (;;) {
        uint8_t hdr[FTI_RPC_HEADER_LEN];
        fti_rpc_header_t h;
        size_t avail = evbuffer_get_length(in);
        if (avail < FTI_RPC_HEADER_LEN)
            return;
        evbuffer_copyout(in, hdr, sizeof(hdr));
        fti_rpc_header_decode(hdr, &h);
        if (h.magic != FTI_RPC_MAGIC || !(h.flags & FTI_RPC_F_REPLY) || h.length > SIM_MAX_REPLY) {
            out(s, "%s error: malformed reply from the lighthouse", g->id);
            s->errors++;
            reconnect_later(g);
            return;
        }
        if (avail < FTI_RPC_HEADER_LEN + (size_t)h.length)
            return;
        uint8_t *p = evbuffer_pullup(in, FTI_RPC_HEADER_LEN + h.length) + FTI_RPC_HEADER_LEN;
        if (h.status != 0) {
            out(s, "%s error: lighthouse replied %d (%s): %.*s", g->id, h.status,
                FT_Error_string(h.status), (int)FTI_MIN(h.length, 200u), (const char *)p);
            s->errors++;
            evbuffer_drain(in, FTI_RPC_HEADER_LEN + h.length);
            if (h.method == FTMPI__METHOD__LIGHTHOUSE_QUORUM || h.method == 0) {
                reconnect_later(g);
                return;
            }
            continue;
        }
        if (h.method == FTMPI__METHOD__LIGHTHOUSE_QUORUM) {
            g->waiting = false;
            event_del(g->timeout_ev);
            on_quorum_reply(g, p, h.length);
            if (g->bev != bev) /* dropped or finished: bev is freed */
                return;
        }
        evbuffer_drain(in, FTI_RPC_HEADER_LEN + h.length);
    }
}

static void event_cb(struct bufferevent *bev, short what, void *arg)
{
    struct group *g = arg;
    (void)bev;
    if (what & BEV_EVENT_CONNECTED) {
        struct timeval tv = {g->sim->heartbeat_ms / 1000, (g->sim->heartbeat_ms % 1000) * 1000};
        event_add(g->hb_ev, &tv);
        send_heartbeat(g);
        send_request(g);
        return;
    }
    if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR)) {
        out(g->sim, "%s lost the lighthouse connection (%s); reconnecting", g->id,
            (what & BEV_EVENT_EOF) ? "closed" : "error");
        g->sim->errors++;
        reconnect_later(g);
    }
}

/* With a job secret (FTMPI_TOKEN_FILE): connects and runs the handshake
 * blocking (a few groups only), then goes on as a connected bufferevent. */
static void group_connect_auth(struct group *g)
{
    struct sim *s = g->sim;
    int fd = -1;
    int64_t dl = fti_now_ms() + SIM_AUTH_MS;
    int rc = fti_tcp_connect(s->lighthouse, dl, &fd);
    if (rc == FT_SUCCESS)
        rc = fti_auth_connect_fd(fd, job_key, dl);
    if (rc == FT_SUCCESS &&
        (g->bev = bufferevent_socket_new(s->base, fd, BEV_OPT_CLOSE_ON_FREE)) == NULL)
        rc = FT_ERR_NO_MEMORY;
    if (rc != FT_SUCCESS) {
        if (fd >= 0)
            close(fd);
        out(s, "%s error: cannot connect to %s with the job secret: %s", g->id, s->lighthouse,
            FT_Error_string(rc));
        s->errors++;
        reconnect_later(g);
        return;
    }
    bufferevent_setcb(g->bev, read_cb, NULL, event_cb, g);
    bufferevent_enable(g->bev, EV_READ | EV_WRITE);
    event_cb(g->bev, BEV_EVENT_CONNECTED, g);
}

static void group_connect(struct group *g)
{
    struct sim *s = g->sim;
    close_conn(g);
    if (job_key != NULL) {
        group_connect_auth(g);
        return;
    }
    g->bev = bufferevent_socket_new(s->base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (g->bev == NULL) {
        out(s, "%s error: bufferevent_socket_new failed", g->id);
        s->errors++;
        reconnect_later(g);
        return;
    }
    bufferevent_setcb(g->bev, read_cb, NULL, event_cb, g);
    bufferevent_enable(g->bev, EV_READ | EV_WRITE);
    if (bufferevent_socket_connect(g->bev, (struct sockaddr *)&s->sa, (int)s->salen) != 0) {
        out(s, "%s error: cannot connect to %s", g->id, s->lighthouse);
        s->errors++;
        reconnect_later(g);
    }
}

/* ---- timers -------------------------------------------------------------- */

static void hb_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    send_heartbeat(arg);
}

static void step_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    send_request(arg);
}

static void timeout_cb(evutil_socket_t fd, short what, void *arg)
{
    struct group *g = arg;
    (void)fd;
    (void)what;
    out(g->sim, "%s error: no quorum within %d ms; reconnecting", g->id, g->sim->timeout_ms);
    g->sim->errors++;
    reconnect_later(g);
}

static void retry_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    group_connect(arg);
}

static void group_finish(struct group *g);

static void mgr_close_cb(evutil_socket_t fd, short what, void *arg)
{
    struct group *g = arg;
    (void)fd;
    (void)what;
    fti_rpc_server_destroy(g->mgr);
    g->mgr = NULL;
    g->mgr_addr[0] = '\0';
    if (g->down && g->sim->rejoin_ms == 0)
        group_finish(g); /* dropped for good, now that the kill was answered */
}

/* ---- the simulated manager: MANAGER_KILL ----------------------------------- */

static void on_kill(fti_rpc_call_h call, const uint8_t *payload, size_t len, void *arg)
{
    struct group *g = arg;
    Ftmpi__KillRequest *req = ftmpi__kill_request__unpack(NULL, len, payload);
    if (req == NULL) {
        fti_rpc_reply_error(call, FT_ERR_BAD_MESSAGE, "kill request does not decode");
        return;
    }
    fti_rpc_reply(call, NULL, 0); /* KillResponse packs to 0 bytes */
    if (!g->down && !g->done) {
        char why[320];
        snprintf(why, sizeof(why), "killed by the lighthouse: %s", req->msg ? req->msg : "");
        group_drop(g, why);
    }
    ftmpi__kill_request__free_unpacked(req, NULL);
}

static int mgr_start(struct group *g)
{
    struct sim *s = g->sim;
    char bind[96];
    static const fti_rpc_method_t methods[] = {{FTMPI__METHOD__MANAGER_KILL, on_kill}};
    g->mgr_addr[0] = '\0';
    if (!s->manager)
        return FT_SUCCESS;
    if (g->mgr) { /* still lingering from the last drop */
        event_del(g->mgr_close_ev);
        mgr_close_cb(-1, 0, g);
    }
    snprintf(bind, sizeof(bind), "%s:0", s->bind_host);
    int rc = fti_rpc_server_create(s->base, bind, 4096, job_key, methods, 1, g, &g->mgr);
    if (rc != FT_SUCCESS) {
        out(s, "%s error: cannot serve its manager on %s: %s", g->id, bind, FT_Error_string(rc));
        s->errors++;
        g->mgr = NULL;
        return rc;
    }
    fti_strlcpy(g->mgr_addr, fti_rpc_server_address(g->mgr), sizeof(g->mgr_addr));
    return FT_SUCCESS;
}

/* ---- drop out and rejoin ----------------------------------------------------- */

static void rejoin_cb(evutil_socket_t fd, short what, void *arg)
{
    struct group *g = arg;
    (void)fd;
    (void)what;
    g->down = false;
    g->step = 0;
    g->rejoin_inc = ((uint64_t)getpid() << 32 | (uint64_t)fti_wall_ms() << 8) + 1;
    out(g->sim, "%s rejoins at step 0", g->id);
    (void)mgr_start(g);
    group_connect(g);
}

static void group_drop(struct group *g, const char *why)
{
    struct sim *s = g->sim;
    struct timeval linger = {0, SIM_MGR_LINGER_MS * 1000};
    out(s, "%s drops out %s", g->id, why);
    g->down = true;
    close_conn(g);
    event_del(g->retry_ev);
    if (g->mgr) /* answer the kill first, then vanish (and maybe finish) */
        event_add(g->mgr_close_ev, &linger);
    if (s->rejoin_ms > 0) {
        struct timeval tv = {s->rejoin_ms / 1000, (s->rejoin_ms % 1000) * 1000};
        event_add(g->rejoin_ev, &tv);
    } else if (g->mgr == NULL) {
        group_finish(g);
    }
}

/* ---- main ------------------------------------------------------------------------ */

static const char usage_text[] =
    "Usage: lh_sim --lighthouse HOST:PORT [options]\n"
    "Simulated replica groups: each heartbeats, asks for quorums and prints them.\n"
    "  --groups N             groups in this process (default 1)\n"
    "  --prefix P             replica ids are P + a number (default g)\n"
    "  --first K              number of the first group (default 0)\n"
    "  --id-width W           digits of the number, zero-padded (default 2)\n"
    "  --rounds R             a group stops after the quorum of step R - 1 (the\n"
    "                         highest step of its members; default 0 = never)\n"
    "  --step-ms MS           pause between a quorum and the next request (default 100)\n"
    "  --heartbeat-ms MS      heartbeat period (default 100)\n"
    "  --timeout-ms MS        give up on a quorum request after MS (default 30000)\n"
    "  --world-size N         ranks per group reported to the lighthouse (default 1)\n"
    "  --drop ID@R            group ID drops out (closes its connection, stops\n"
    "                         heartbeating) after R quorums; repeatable\n"
    "  --kill-after-rounds R  the last group of this process drops out after R quorums\n"
    "  --rejoin-ms MS         a dropped group comes back after MS at step 0\n"
    "                         (default 0 = never)\n"
    "  --no-heal              a group behind the quorum's highest step stays\n"
    "                         behind (default: it jumps there, as healing does)\n"
    "  --no-manager           do not serve MANAGER_KILL (no manager address)\n"
    "  --liveness             send an incarnation with requests and heartbeats, as\n"
    "                         a manager does: the lighthouse drops a group the\n"
    "                         moment this process's connection closes\n"
    "  --bind-host H          host the managers bind (default 127.0.0.1)\n"
    "  --summary              print each quorum once, not once per group\n"
    "  --quiet                print no quorums (errors and drops only)\n"
    "  --timestamps           prefix lines with the wall clock in ms\n"
    "  --strict               exit 1 if any group saw an error\n"
    "  --light                do not unpack quorums: print id, size, bytes and a\n"
    "                         checksum of the reply (for thousands of groups)\n"
    "  --log-level LEVEL      library log level (default warn)\n";

static void bad(const char *flag, const char *v)
{
    fprintf(stderr, "lh_sim: %s: bad value '%s'\n%s", flag, v ? v : "", usage_text);
    exit(2);
}

static int int_arg(const char *flag, const char *v, int min, int max)
{
    char *end;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (v == NULL || errno || end == v || *end || x < min || x > max)
        bad(flag, v);
    return (int)x;
}

static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)sig;
    (void)what;
    event_base_loopexit(arg, NULL);
}

int main(int argc, char **argv)
{
    struct sim s;
    int kill_after = -1, n_drops = 0, log_level = FTI_LOG_WARN;
    const char *drops[256];

    memset(&s, 0, sizeof(s));
    s.n_groups = 1;
    s.id_width = 2;
    strcpy(s.prefix, "g");
    strcpy(s.bind_host, "127.0.0.1");
    s.step_ms = 100;
    s.heartbeat_ms = 100;
    s.timeout_ms = 30000;
    s.world_size = 1;
    s.manager = true;
    s.heal = true;
    for (int i = 0; i < 8; i++)
        s.seen_id[i] = s.seen_created[i] = INT64_MIN;

    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (strcmp(a, "--help") == 0) {
            fputs(usage_text, stdout);
            return 0;
        } else if (strcmp(a, "--no-manager") == 0) {
            s.manager = false;
            continue;
        } else if (strcmp(a, "--summary") == 0) {
            s.summary = true;
            continue;
        } else if (strcmp(a, "--quiet") == 0) {
            s.quiet = true;
            continue;
        } else if (strcmp(a, "--timestamps") == 0) {
            s.timestamps = true;
            continue;
        } else if (strcmp(a, "--strict") == 0) {
            s.strict = true;
            continue;
        } else if (strcmp(a, "--light") == 0) {
            s.light = true;
            continue;
        } else if (strcmp(a, "--no-heal") == 0) {
            s.heal = false;
            continue;
        } else if (strcmp(a, "--liveness") == 0) {
            s.liveness = true;
            continue;
        }
        i++; /* every other flag takes a value */
        if (strcmp(a, "--lighthouse") == 0) {
            if (v == NULL || fti_strlcpy(s.lighthouse, v, sizeof(s.lighthouse)) != 0)
                bad(a, v);
        } else if (strcmp(a, "--groups") == 0)
            s.n_groups = int_arg(a, v, 1, 1000000);
        else if (strcmp(a, "--prefix") == 0) {
            if (v == NULL || fti_strlcpy(s.prefix, v, sizeof(s.prefix)) != 0)
                bad(a, v);
        } else if (strcmp(a, "--first") == 0)
            s.first = int_arg(a, v, 0, 100000000);
        else if (strcmp(a, "--id-width") == 0)
            s.id_width = int_arg(a, v, 1, 12);
        else if (strcmp(a, "--rounds") == 0)
            s.rounds = int_arg(a, v, 0, 1 << 30);
        else if (strcmp(a, "--step-ms") == 0)
            s.step_ms = int_arg(a, v, 0, 3600000);
        else if (strcmp(a, "--heartbeat-ms") == 0)
            s.heartbeat_ms = int_arg(a, v, 1, 3600000);
        else if (strcmp(a, "--timeout-ms") == 0)
            s.timeout_ms = int_arg(a, v, 1, 86400000);
        else if (strcmp(a, "--world-size") == 0)
            s.world_size = (uint64_t)int_arg(a, v, 1, 1 << 30);
        else if (strcmp(a, "--drop") == 0) {
            if (v == NULL || strchr(v, '@') == NULL || n_drops == 256)
                bad(a, v);
            drops[n_drops++] = v;
        } else if (strcmp(a, "--kill-after-rounds") == 0)
            kill_after = int_arg(a, v, 1, 1 << 30);
        else if (strcmp(a, "--rejoin-ms") == 0)
            s.rejoin_ms = int_arg(a, v, 0, 3600000);
        else if (strcmp(a, "--bind-host") == 0) {
            if (v == NULL || fti_strlcpy(s.bind_host, v, sizeof(s.bind_host)) != 0)
                bad(a, v);
        } else if (strcmp(a, "--log-level") == 0) {
            if ((log_level = fti_log_level_parse(v)) < 0)
                bad(a, v);
        } else {
            fprintf(stderr, "lh_sim: unknown flag %s\n%s", a, usage_text);
            return 2;
        }
    }
    if (s.lighthouse[0] == '\0') {
        fprintf(stderr, "lh_sim: --lighthouse is required\n%s", usage_text);
        return 2;
    }
    if (fti_addr_resolve(s.lighthouse, &s.sa, &s.salen) != FT_SUCCESS)
        bad("--lighthouse", s.lighthouse);
    fti_log_init("lh_sim", log_level);
    char err[512];
    const char *tok = getenv("FTMPI_TOKEN_FILE"); /* the groups take the job secret as ranks do */
    if (tok != NULL && tok[0] != '\0') {
        if (fti_auth_load_key(tok, &job_key_buf, err, sizeof(err)) != FT_SUCCESS) {
            fprintf(stderr, "lh_sim: %s\n", err);
            return 2;
        }
        job_key = &job_key_buf;
    }
    signal(SIGPIPE, SIG_IGN);

    /* thousands of groups need thousands of descriptors */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        (void)setrlimit(RLIMIT_NOFILE, &rl);
    }

    s.base = event_base_new();
    s.groups = calloc((size_t)s.n_groups, sizeof(*s.groups));
    if (s.base == NULL || s.groups == NULL) {
        fprintf(stderr, "lh_sim: out of memory\n");
        return 1;
    }
    for (int i = 0; i < s.n_groups; i++) {
        struct group *g = &s.groups[i];
        g->sim = &s;
        g->drop_after = -1;
        snprintf(g->id, sizeof(g->id), "%s%0*d", s.prefix, s.id_width, s.first + i);
        if (s.liveness) /* nonzero, new with every process */
            g->incarnation = ((uint64_t)getpid() << 32 | (uint64_t)fti_wall_ms() << 8) + (uint64_t)i + 1;
        g->hb_ev = event_new(s.base, -1, EV_PERSIST, hb_cb, g);
        g->step_ev = evtimer_new(s.base, step_cb, g);
        g->timeout_ev = evtimer_new(s.base, timeout_cb, g);
        g->retry_ev = evtimer_new(s.base, retry_cb, g);
        g->rejoin_ev = evtimer_new(s.base, rejoin_cb, g);
        g->mgr_close_ev = evtimer_new(s.base, mgr_close_cb, g);
        if (!g->hb_ev || !g->step_ev || !g->timeout_ev || !g->retry_ev || !g->rejoin_ev ||
            !g->mgr_close_ev) {
            fprintf(stderr, "lh_sim: out of memory\n");
            return 1;
        }
    }
    if (kill_after > 0)
        s.groups[s.n_groups - 1].drop_after = kill_after;
    for (int k = 0; k < n_drops; k++) {
        const char *at = strchr(drops[k], '@');
        int r = int_arg("--drop", at + 1, 1, 1 << 30), found = 0;
        for (int i = 0; i < s.n_groups; i++)
            if (strncmp(s.groups[i].id, drops[k], (size_t)(at - drops[k])) == 0 &&
                s.groups[i].id[at - drops[k]] == '\0') {
                s.groups[i].drop_after = r;
                found = 1;
            }
        if (!found)
            bad("--drop", drops[k]);
    }

    struct event *sigterm = evsignal_new(s.base, SIGTERM, on_signal, s.base);
    struct event *sigint = evsignal_new(s.base, SIGINT, on_signal, s.base);
    evsignal_add(sigterm, NULL);
    evsignal_add(sigint, NULL);
    for (int i = 0; i < s.n_groups; i++) {
        (void)mgr_start(&s.groups[i]);
        group_connect(&s.groups[i]);
    }
    event_base_dispatch(s.base);

    bool complete = s.rounds == 0 || s.n_done == s.n_groups;
    fprintf(stderr, "lh_sim: %d groups, %" PRIu64 " quorums received, %" PRIu64 " errors%s\n",
            s.n_groups, s.quorums, s.errors, complete ? "" : ", stopped before the last round");
    for (int i = 0; i < s.n_groups; i++) {
        struct group *g = &s.groups[i];
        close_conn(g);
        fti_rpc_server_destroy(g->mgr);
        event_free(g->hb_ev);
        event_free(g->step_ev);
        event_free(g->timeout_ev);
        event_free(g->retry_ev);
        event_free(g->rejoin_ev);
        event_free(g->mgr_close_ev);
    }
    event_free(sigterm);
    event_free(sigint);
    free(s.groups);
    event_base_free(s.base);
    return s.strict && s.errors > 0 ? 1 : 0;
}
