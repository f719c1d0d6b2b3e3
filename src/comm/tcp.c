/*
 * comm/tcp.c - the tcp data plane (DESIGN section 5): a ring of TCP
 * connections, each rank connected to the next and accepting from the
 * previous one; ring reduce-scatter + all-gather for large messages, a
 * ring all-gather and a local reduction in rank order for small ones, on
 * one streaming engine over non-blocking sockets.  Every rank ends with
 * the same bits.  Errors: a peer that closes or resets
 * (FT_ERR_PROC_FAILED) or a deadline (FT_ERR_TIMEOUT) is logged at debug
 * level here (the step logs the one error line, naming the neighbour:
 * fti_tcp_ring_failed_peer); the sockets close at once and later
 * allreduces return FT_ERR_ABORTED; buf is then unspecified.
 */
#include "comm/tcp.h"

#include <arpa/inet.h>
#include <errno.h>
#include <poll.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/auth.h"
#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/net.h"
#include "comm/ring.h"
#include "base/sizes.h"
#include "comm/slice.h"
#include "base/util.h"

#define TCP_MAGIC 0x46544d52u /* "FTMR" */
#define TCP_VERSION 1u
#define TCP_ROLE_PREV 1u      /* sent by the connecting side: "I am your prev" */
#define TCP_ROLE_NEXT 2u      /* sent by the accepting side: "I am your next" */
#define TCP_HELLO_BYTES 20
#define TCP_DEFAULT_CHUNK (256u * 1024u)
#define TCP_DEFAULT_SMALL_MAX (64u * 1024u)
#define TCP_DEADLINE_EVERY 64 /* engine iterations between clock checks */
#define TCP_SPIN_US 50        /* busy polling before a blocking poll() */

struct fti_tcp_listener {
    int fd;
    char addr[FTI_ADDRESS_SIZE];
};

/* Which neighbour's connection failed (tcp_comm.failed). */
enum tcp_side { SIDE_NONE, SIDE_NEXT, SIDE_PREV };

struct tcp_comm {
    struct fti_comm base;
    int next_fd, prev_fd;
    int dead;
    enum tcp_side failed;            /* the first failure's neighbour */
    char next_addr[FTI_ADDRESS_SIZE]; /* the listeners of the neighbours, "" unknown */
    char prev_addr[FTI_ADDRESS_SIZE];
    size_t chunk_bytes;
    size_t small_max;
    char *scratch;
    size_t scratch_cap;
};

/* ---- listener ------------------------------------------------------------ */

int fti_tcp_listener_create(const char *bind_host, fti_tcp_listener_h *l_p)
{
    char addr[FTI_ADDRESS_SIZE];
    const char *h = (bind_host && *bind_host) ? bind_host : "127.0.0.1";

    if (fti_addr_any_port(addr, sizeof(addr), h) != FT_SUCCESS)
        return FT_ERR_ARG;
    struct fti_tcp_listener *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return FT_ERR_NO_MEMORY;
    int rc = fti_tcp_listen(addr, 16, &l->fd);
    if (rc != FT_SUCCESS) {
        free(l);
        return rc;
    }
    /* accepted sockets inherit the buffer sizes, before the handshake */
    if ((rc = fti_sock_tune(l->fd)) != FT_SUCCESS ||
        (rc = fti_sock_name(l->fd, l->addr, sizeof(l->addr))) != FT_SUCCESS) {
        close(l->fd);
        free(l);
        return rc;
    }
    *l_p = l;
    return FT_SUCCESS;
}

const char *fti_tcp_listener_address(fti_tcp_listener_h l)
{
    return l ? l->addr : "";
}

void fti_tcp_listener_destroy(fti_tcp_listener_h l)
{
    if (l == NULL)
        return;
    close(l->fd);
    free(l);
}

/* ---- allreduce engine ---------------------------------------------------- */

enum plan_kind { PLAN_RING, PLAN_GATHER };

/* What one allreduce moves: the steps are computed on demand. */
struct plan {
    enum plan_kind kind;
    int rank, n, nsteps;
    char *buf;
    char *slots; /* PLAN_GATHER: n slots of bytes (slot rank unused) */
    size_t count, esize, bytes;
    enum fti_dtype dt;
    enum fti_op op;
};

/* One step: send src_len bytes from src, receive dst_len bytes into dst
 * (reduced into it, or copied). */
struct step {
    char *src;
    size_t src_len;
    char *dst;
    size_t dst_len;
    int reduce;
};

static void plan_step(const struct plan *p, int t, struct step *s)
{
    if (p->kind == PLAN_GATHER) {
        /* the whole-buffer twin of the reduce-scatter: at step t send slot
         * rank-t (our own buffer at t = 0), receive slot rank-t-1 */
        int ks = fti_ring_send_seg(p->rank, p->n, t), kr = fti_ring_recv_seg(p->rank, p->n, t);
        s->src = t == 0 ? p->buf : p->slots + (size_t)ks * p->bytes;
        s->dst = p->slots + (size_t)kr * p->bytes;
        s->src_len = s->dst_len = p->bytes;
        s->reduce = 0;
        return;
    }
    size_t off, len;
    fti_ring_segment(p->count, p->n, fti_ring_send_seg(p->rank, p->n, t), &off, &len);
    s->src = p->buf + off * p->esize;
    s->src_len = len * p->esize;
    fti_ring_segment(p->count, p->n, fti_ring_recv_seg(p->rank, p->n, t), &off, &len);
    s->dst = p->buf + off * p->esize;
    s->dst_len = len * p->esize;
    s->reduce = fti_ring_step_reduces(p->n, t);
}

/* Why the engine stopped; logged once by the caller. */
struct why {
    const char *what;
    int err;            /* errno, 0 if none */
    enum tcp_side side; /* whose connection failed, SIDE_NONE if none */
    int next_hup;       /* next closed after we sent it everything (engine_wait) */
    int prev_hup;       /* prev closed after it sent us everything */
};

static int engine_fail(struct why *w, const char *what, int err, enum tcp_side side, int rc)
{
    w->what = what;
    w->err = err;
    w->side = side;
    return rc;
}

/* The engine's streams: the send of step ts, the receive of step tr. */
struct engine {
    struct tcp_comm *tc;
    const struct plan *p;
    size_t cbytes;
    struct step ss, rs;
    int ts, tr;
    size_t sent, rcvd, done;
    int out_ready, in_ready;
};

/* Sends what step ts may send now (up to limit); *progress set on any. */
static int engine_send(struct engine *e, size_t limit, int *progress, struct why *why)
{
    size_t ask = limit - e->sent;
    ssize_t k = send(e->tc->next_fd, e->ss.src + e->sent, ask, MSG_NOSIGNAL);
    if (k > 0) {
        e->sent += (size_t)k;
        *progress = 1;
        if ((size_t)k < ask)
            e->out_ready = 0;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
        e->out_ready = 0;
    } else if (errno == EINTR) {
        *progress = 1;
    } else {
        return engine_fail(why, "send to next", errno, SIDE_NEXT, FT_ERR_PROC_FAILED);
    }
    return FT_SUCCESS;
}

/* Receives for step tr (a reducing step chunk by chunk through the
 * scratch buffer); *progress set on any. */
static int engine_recv(struct engine *e, int *progress, struct why *why)
{
    const struct plan *p = e->p;
    size_t cstart = 0, cend = e->rs.dst_len, ask;
    char *dst;
    if (e->rs.reduce) {
        cstart = e->rcvd - e->rcvd % e->cbytes;
        cend = FTI_MIN(e->rs.dst_len, cstart + e->cbytes);
        dst = e->tc->scratch + (e->rcvd - cstart);
    } else {
        dst = e->rs.dst + e->rcvd;
    }
    ask = cend - e->rcvd;
    ssize_t k = recv(e->tc->prev_fd, dst, ask, 0);
    if (k > 0) {
        e->rcvd += (size_t)k;
        *progress = 1;
        if ((size_t)k < ask)
            e->in_ready = 0;
        if (!e->rs.reduce) {
            e->done = e->rcvd;
        } else if (e->rcvd == cend) {
            fti_reduce(e->rs.dst + cstart, e->tc->scratch, (cend - cstart) / p->esize, p->dt,
                       p->op);
            e->done = e->rcvd;
        }
    } else if (k == 0) {
        return engine_fail(why, "previous rank closed the connection", 0, SIDE_PREV,
                           FT_ERR_PROC_FAILED);
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
        e->in_ready = 0;
    } else if (errno == EINTR) {
        *progress = 1;
    } else {
        return engine_fail(why, "recv from previous rank", errno, SIDE_PREV, FT_ERR_PROC_FAILED);
    }
    return FT_SUCCESS;
}

/* Both directions blocked: waits until one can move or the deadline.  The
 * next rank never writes to us, so its socket turning readable while we
 * still owe it data means it closed or reset.  A neighbour we are done with
 * (everything sent to next, or received from prev) may close without
 * failing this allreduce (it may have finished and left); it is only noted
 * (why->next_hup, prev_hup: POLLRDHUP, not data of its next allreduce), so
 * that a failure seen later on the other side is blamed on the neighbour
 * that closed first, the one that died rather than the one that closed its
 * ring after seeing it. */
static int engine_wait(struct engine *e, int want_out, int want_in, int64_t deadline_ms,
                       struct why *why)
{
    const int T = e->p->nsteps;
    const short hup = (short)(POLLRDHUP | POLLERR | POLLHUP);
    int next_done = e->ts == T, prev_done = !want_in;
    struct pollfd pf[2] = {
        {!next_done || !why->next_hup ? e->tc->next_fd : -1,
         (short)(next_done ? POLLRDHUP : POLLIN | (want_out ? POLLOUT : 0)), 0},
        {!prev_done || !why->prev_hup ? e->tc->prev_fd : -1,
         (short)(prev_done ? POLLRDHUP : POLLIN), 0},
    };
    /* spin briefly first: the peer's bytes are often microseconds away,
     * and a sleep and wake-up cost more than that.  Yielding lets a peer
     * that shares our core run meanwhile. */
    int64_t spin_end = fti_now_us() + TCP_SPIN_US;
    int k;
    while ((k = poll(pf, 2, 0)) == 0 && fti_now_us() < spin_end)
        sched_yield();
    if (k == 0)
        k = poll(pf, 2, fti_ms_left(deadline_ms));
    if (k < 0) {
        if (errno == EINTR)
            return FT_SUCCESS;
        return engine_fail(why, "poll", errno, SIDE_NONE, FT_ERR_SYSTEM);
    }
    if (k == 0) {
        if (fti_ms_left(deadline_ms) == 0)
            return engine_fail(why, "deadline passed", 0, SIDE_NONE, FT_ERR_TIMEOUT);
        return FT_SUCCESS;
    }
    if (next_done && (pf[0].revents & hup))
        why->next_hup = 1;
    else if (!next_done && (pf[0].revents & (POLLIN | POLLERR | POLLHUP | POLLNVAL)))
        return engine_fail(why, "next rank closed the connection", 0, SIDE_NEXT,
                           FT_ERR_PROC_FAILED);
    if (pf[0].revents & POLLOUT)
        e->out_ready = 1;
    if (prev_done && (pf[1].revents & hup))
        why->prev_hup = 1;
    else if (!prev_done && pf[1].revents)
        e->in_ready = 1;
    return FT_SUCCESS;
}

/*
 * Runs the steps of p over the ring.  Send and receive streams advance
 * independently; the send of step t >= 1 may only go as far as the bytes of
 * step t-1 that are final ("done").  Invariant: tr >= ts - 1.
 */
static int engine_run(struct tcp_comm *tc, const struct plan *p, size_t cbytes,
                      int64_t deadline_ms, struct why *why)
{
    const int T = p->nsteps;
    struct engine e = {.tc = tc, .p = p, .cbytes = cbytes, .out_ready = 1, .in_ready = 1};
    unsigned iter = 0;
    int rc = FT_SUCCESS;

    plan_step(p, 0, &e.ss);
    e.rs = e.ss;
    for (;;) {
        /* finish completed (or empty) steps */
        while (e.tr < T && e.rcvd == e.rs.dst_len) {
            if (++e.tr < T)
                plan_step(p, e.tr, &e.rs);
            e.rcvd = e.done = 0;
        }
        while (e.ts < T && e.sent == e.ss.src_len) {
            if (++e.ts < T)
                plan_step(p, e.ts, &e.ss);
            e.sent = 0;
        }
        if (e.ts == T && e.tr == T)
            return FT_SUCCESS;

        size_t limit = 0;
        if (e.ts < T)
            limit = (e.ts == 0 || e.tr > e.ts - 1) ? e.ss.src_len : e.done;
        int want_out = e.ts < T && e.sent < limit;
        int want_in = e.tr < T;
        int progress = 0;

        if (want_out && e.out_ready && (rc = engine_send(&e, limit, &progress, why)) != FT_SUCCESS)
            return rc;
        if (want_in && e.in_ready && (rc = engine_recv(&e, &progress, why)) != FT_SUCCESS)
            return rc;
        if (progress) {
            if (++iter % TCP_DEADLINE_EVERY == 0 && fti_now_ms() >= deadline_ms)
                return engine_fail(why, "deadline passed", 0, SIDE_NONE, FT_ERR_TIMEOUT);
            continue;
        }
        if ((rc = engine_wait(&e, want_out, want_in, deadline_ms, why)) != FT_SUCCESS)
            return rc;
    }
}

static int scratch_reserve(struct tcp_comm *tc, size_t bytes)
{
    if (bytes <= tc->scratch_cap)
        return FT_SUCCESS;
    char *s = malloc(bytes);
    if (s == NULL)
        return FT_ERR_NO_MEMORY; /* logged by the caller */
    free(tc->scratch);
    tc->scratch = s;
    tc->scratch_cap = bytes;
    return FT_SUCCESS;
}

static void tcp_close_fds(struct tcp_comm *tc)
{
    if (tc->next_fd >= 0)
        close(tc->next_fd);
    if (tc->prev_fd >= 0)
        close(tc->prev_fd);
    tc->next_fd = tc->prev_fd = -1;
}

/* Small path: buf = slot 0 op slot 1 op ... op slot n-1 (slot rank = buf),
 * the same order on every rank. */
static void gather_reduce(const struct plan *p)
{
    char *acc = p->rank == 0 ? p->buf : p->slots;
    for (int k = 1; k < p->n; k++) {
        const char *in = k == p->rank ? p->buf : p->slots + (size_t)k * p->bytes;
        fti_reduce(acc, in, p->count, p->dt, p->op);
    }
    if (acc != p->buf)
        memcpy(p->buf, acc, p->bytes);
}

int fti_tcp_ring_allreduce(fti_comm_h c, void *buf, size_t count, enum fti_dtype dt,
                         enum fti_op op, int64_t deadline_ms)
{
    struct tcp_comm *tc = (struct tcp_comm *)c;
    const int n = c->size;

    if (tc->dead)
        return FT_ERR_ABORTED;
    int bad = fti_reduce_check_args(buf, count, dt, op, n);
    if (bad != FT_SUCCESS)
        return bad;
    size_t esize = fti_dtype_size(dt);
    if (n == 1 || count == 0)
        return FT_SUCCESS; /* AVG over one rank divides by 1 */

    struct plan p = {.kind = PLAN_RING, .rank = c->rank, .n = n,
                     .nsteps = fti_ring_nsteps(n), .buf = buf, .count = count,
                     .esize = esize, .bytes = count * esize, .dt = dt, .op = op};
    size_t cbytes = fti_ring_chunk_elems(tc->chunk_bytes, esize) * esize;
    int rc;
    if (p.bytes * (size_t)(n - 1) <= tc->small_max) {
        p.kind = PLAN_GATHER;
        p.nsteps = n - 1;
        rc = scratch_reserve(tc, p.bytes * (size_t)n);
        p.slots = tc->scratch;
    } else {
        rc = scratch_reserve(tc, cbytes);
    }
    struct why why = {"out of memory", 0, SIDE_NONE, 0, 0};
    if (rc == FT_SUCCESS)
        rc = engine_run(tc, &p, cbytes, deadline_ms, &why);
    if (rc != FT_SUCCESS) {
        /* the peers' streams went on without us: the ring cannot be reused.
         * Debug only: the step logs the error, naming the failed peer. */
        if (why.err) {
            errno = why.err;
            FTI_DEBUG("tcp ring allreduce (rank %d of %d, %zu x %s): %s: %m", c->rank, n, count,
                      fti_dtype_name(dt), why.what);
        } else {
            FTI_DEBUG("tcp ring allreduce (rank %d of %d, %zu x %s): %s", c->rank, n, count,
                      fti_dtype_name(dt), why.what);
        }
        /* the neighbour that closed first is the one that failed; the other
         * closed its ring after seeing it */
        tc->failed = why.side;
        if (why.side == SIDE_PREV && why.next_hup)
            tc->failed = SIDE_NEXT;
        else if (why.side == SIDE_NEXT && why.prev_hup)
            tc->failed = SIDE_PREV;
        tc->dead = 1;
        tcp_close_fds(tc);
        return rc;
    }
    if (p.kind == PLAN_GATHER)
        gather_reduce(&p);
    if (op == FTI_OP_AVG)
        fti_reduce_scale(buf, count, dt, n);
    return FT_SUCCESS;
}

int fti_tcp_ring_failed_peer(fti_comm_h c, int *replica_rank_p, char *addr, size_t len)
{
    const struct tcp_comm *tc = (const struct tcp_comm *)c;
    if (tc == NULL || tc->failed == SIDE_NONE)
        return FT_ERR_NOT_FOUND;
    int n = c->size, next = tc->failed == SIDE_NEXT;
    if (addr != NULL && len > 0)
        (void)fti_strlcpy(addr, next ? tc->next_addr : tc->prev_addr, len); /* cut to fit */
    if (replica_rank_p != NULL)
        *replica_rank_p = next ? (c->rank + 1) % n : (c->rank - 1 + n) % n;
    return FT_SUCCESS;
}

void fti_tcp_set_prev_address(fti_comm_h c, const char *addr)
{
    if (c && c->ops == &fti_tcp_ring_ops && addr != NULL)
        (void)fti_strlcpy(((struct tcp_comm *)c)->prev_addr, addr,
                          sizeof(((struct tcp_comm *)c)->prev_addr)); /* cut to fit */
}

void fti_tcp_ring_destroy(fti_comm_h c)
{
    struct tcp_comm *tc = (struct tcp_comm *)c;
    tcp_close_fds(tc);
    free(tc->scratch);
    free(tc);
}

/* The operations of a ring communicator.  The table entry fti_backend_tcp
 * (slice.c) adds the store rendezvous; it lives there so that a program
 * that only runs rings (ftmpi-baby) links no control plane. */
const struct fti_comm_backend fti_tcp_ring_ops = {
    .name = "tcp",
    .needs = FTI_COMM_NEEDS_STORE,
    .create = NULL,
    .allreduce = fti_tcp_ring_allreduce,
    .destroy = fti_tcp_ring_destroy,
    .failed_peer = fti_tcp_ring_failed_peer,
};

void fti_tcp_set_small_max(fti_comm_h c, size_t small_max)
{
    if (c && c->ops == &fti_tcp_ring_ops)
        ((struct tcp_comm *)c)->small_max = small_max;
}

/* ---- ring build ---------------------------------------------------------- */

/* One connection of the ring while it is being set up. */
struct hs_conn {
    int fd;         /* -1 until connected / accepted */
    int connecting; /* connect() in progress */
    int expect_rank;
    uint32_t expect_role;
    unsigned char out[TCP_HELLO_BYTES], in[TCP_HELLO_BYTES];
    size_t out_off, in_off;
};

static void hello_pack(unsigned char *b, uint32_t role, int rank, int size)
{
    uint32_t w[5] = {htonl(TCP_MAGIC), htonl(TCP_VERSION), htonl(role), htonl((uint32_t)rank),
                     htonl((uint32_t)size)};
    memcpy(b, w, sizeof(w));
}

static int hello_check(const struct hs_conn *h, int size, const char *which)
{
    uint32_t w[5];
    memcpy(w, h->in, sizeof(w));
    for (int i = 0; i < 5; i++)
        w[i] = ntohl(w[i]);
    if (w[0] != TCP_MAGIC || w[1] != TCP_VERSION || w[2] != h->expect_role ||
        (int)w[3] != h->expect_rank || (int)w[4] != size) {
        FTI_WARN("tcp ring: bad hello from %s (magic %#x version %u role %u rank %d size %d; "
                 "expected rank %d size %d)", which, w[0], w[1], w[2], (int)w[3], (int)w[4],
                 h->expect_rank, size);
        return FT_ERR_BAD_MESSAGE;
    }
    return FT_SUCCESS;
}

/* Starts a non-blocking connect to addr. */
static int connect_start(const char *addr, struct hs_conn *h)
{
    int rc = fti_tcp_connect_start(addr, &h->fd, &h->connecting);
    if (rc == FT_ERR_ARG) {
        FTI_WARN("tcp ring: bad next address '%s'", addr);
        return FT_ERR_CONNECT;
    }
    if (rc == FT_ERR_CONNECT)
        FTI_WARN("tcp ring: connect to next rank at %s: %m", addr);
    return rc;
}

/* Moves a connected hs_conn's hello forward; *fin_p = 1 once both hellos
 * have crossed. */
static int hello_progress(struct hs_conn *h, int size, const char *which, int *fin_p)
{
    while (h->out_off < TCP_HELLO_BYTES) {
        ssize_t k = send(h->fd, h->out + h->out_off, TCP_HELLO_BYTES - h->out_off, MSG_NOSIGNAL);
        if (k > 0) {
            h->out_off += (size_t)k;
        } else if (errno == EINTR) {
            continue;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            break;
        } else {
            FTI_WARN("tcp ring: hello to %s: %m", which);
            return FT_ERR_PROC_FAILED;
        }
    }
    while (h->in_off < TCP_HELLO_BYTES) {
        ssize_t k = recv(h->fd, h->in + h->in_off, TCP_HELLO_BYTES - h->in_off, 0);
        if (k > 0) {
            h->in_off += (size_t)k;
        } else if (k == 0) {
            FTI_WARN("tcp ring: %s closed the connection during the hello", which);
            return FT_ERR_PROC_FAILED;
        } else if (errno == EINTR) {
            continue;
        } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
            break;
        } else {
            FTI_WARN("tcp ring: hello from %s: %m", which);
            return FT_ERR_PROC_FAILED;
        }
    }
    *fin_p = 0;
    if (h->in_off == TCP_HELLO_BYTES && h->out_off == TCP_HELLO_BYTES) {
        int rc = hello_check(h, size, which);
        if (rc != FT_SUCCESS)
            return rc;
        *fin_p = 1;
    }
    return FT_SUCCESS;
}

/* Notes that h's non-blocking connect to addr finished (h->connecting
 * cleared); FT_ERR_CONNECT, logged, when it failed. */
static int connect_check(struct hs_conn *h, const char *addr)
{
    int err = 0;
    socklen_t elen = sizeof(err);
    struct pollfd q = {h->fd, POLLOUT, 0};
    if (h->fd < 0 || !h->connecting || poll(&q, 1, 0) != 1)
        return FT_SUCCESS;
    if (getsockopt(h->fd, SOL_SOCKET, SO_ERROR, &err, &elen) < 0)
        err = errno;
    if (err != 0) {
        errno = err;
        FTI_WARN("tcp ring: connect to next rank at %s: %m", addr);
        return FT_ERR_CONNECT;
    }
    h->connecting = 0;
    return FT_SUCCESS;
}

/* Takes the previous rank's connection from lfd into h once one waits. */
static int accept_prev(int lfd, struct hs_conn *h)
{
    if (h->fd >= 0)
        return FT_SUCCESS;
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (fd >= 0) {
        int rc = fti_sock_tune(fd);
        if (rc != FT_SUCCESS) {
            close(fd);
            return rc;
        }
        h->fd = fd;
    } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED) {
        FTI_ERROR("tcp ring: accept: %m");
        return FT_ERR_SYSTEM;
    }
    return FT_SUCCESS;
}

/* Waits until nx or pv (lfd while pv is not accepted yet) that is not
 * finished can move, or until deadline_ms. */
static int ring_poll(int lfd, const struct hs_conn *nx, int nx_fin, const struct hs_conn *pv,
                     int pv_fin, int64_t deadline_ms)
{
    struct pollfd pf[2] = {{-1, 0, 0}, {-1, 0, 0}};
    if (!nx_fin) {
        pf[0].fd = nx->fd;
        pf[0].events = nx->connecting || nx->out_off < TCP_HELLO_BYTES ? POLLOUT : POLLIN;
    }
    if (!pv_fin) {
        pf[1].fd = pv->fd >= 0 ? pv->fd : lfd;
        pf[1].events = pv->fd >= 0 && pv->out_off < TCP_HELLO_BYTES ? POLLOUT : POLLIN;
    }
    if (poll(pf, 2, fti_ms_left(deadline_ms)) < 0 && errno != EINTR) {
        FTI_ERROR("tcp ring: poll: %m");
        return FT_ERR_SYSTEM;
    }
    return FT_SUCCESS;
}

/* Connects next and accepts prev concurrently, exchanges hellos, then runs
 * the job secret's handshake (auth.h) with key: both neighbours prove it
 * before any data. */
static int ring_connect(int lfd, int rank, int size, const char *next_addr,
                        const fti_auth_key_t *key, int64_t deadline_ms, int *next_fd_p,
                        int *prev_fd_p)
{
    struct hs_conn nx = {.fd = -1, .expect_rank = (rank + 1) % size,
                         .expect_role = TCP_ROLE_NEXT};
    struct hs_conn pv = {.fd = -1, .expect_rank = (rank - 1 + size) % size,
                         .expect_role = TCP_ROLE_PREV};
    int nx_fin = 0, pv_fin = 0;

    hello_pack(nx.out, TCP_ROLE_PREV, rank, size);
    hello_pack(pv.out, TCP_ROLE_NEXT, rank, size);
    int rc = connect_start(next_addr, &nx);
    while (rc == FT_SUCCESS && !(nx_fin && pv_fin)) {
        if ((rc = connect_check(&nx, next_addr)) != FT_SUCCESS ||
            (rc = accept_prev(lfd, &pv)) != FT_SUCCESS)
            break;
        if (!nx_fin && nx.fd >= 0 && !nx.connecting &&
            (rc = hello_progress(&nx, size, "next rank", &nx_fin)) != FT_SUCCESS)
            break;
        if (!pv_fin && pv.fd >= 0 &&
            (rc = hello_progress(&pv, size, "previous rank", &pv_fin)) != FT_SUCCESS)
            break;
        if (nx_fin && pv_fin)
            break;
        if (fti_ms_left(deadline_ms) == 0) {
            FTI_WARN("tcp ring: rank %d of %d: deadline passed while %s", rank, size,
                     !nx_fin ? "connecting to the next rank" : "waiting for the previous rank");
            rc = FT_ERR_TIMEOUT;
            break;
        }
        rc = ring_poll(lfd, &nx, nx_fin, &pv, pv_fin, deadline_ms);
    }
    if (rc == FT_SUCCESS)
        rc = fti_auth_ring(nx.fd, pv.fd, key, deadline_ms);
    if (rc != FT_SUCCESS) {
        if (nx.fd >= 0)
            close(nx.fd);
        if (pv.fd >= 0)
            close(pv.fd);
        return rc;
    }
    *next_fd_p = nx.fd;
    *prev_fd_p = pv.fd;
    return FT_SUCCESS;
}

int fti_tcp_ring_create(fti_tcp_listener_h l, int rank, int size, const char *next_addr,
                        size_t chunk_bytes, const fti_auth_key_t *key, int64_t deadline_ms,
                        fti_comm_h *comm_p)
{
    if (size < 1 || rank < 0 || rank >= size || comm_p == NULL)
        return FT_ERR_ARG;
    if (size > 1 && (l == NULL || next_addr == NULL))
        return FT_ERR_ARG;

    struct tcp_comm *tc = calloc(1, sizeof(*tc));
    if (tc == NULL)
        return FT_ERR_NO_MEMORY;
    tc->base.ops = &fti_tcp_ring_ops;
    tc->base.rank = rank;
    tc->base.size = size;
    tc->next_fd = tc->prev_fd = -1;
    tc->chunk_bytes = chunk_bytes ? chunk_bytes : TCP_DEFAULT_CHUNK;
    tc->small_max = TCP_DEFAULT_SMALL_MAX;
    if (size > 1) {
        (void)fti_strlcpy(tc->next_addr, next_addr, sizeof(tc->next_addr)); /* cut to fit */
        if (size == 2) /* one neighbour on both sides */
            (void)fti_strlcpy(tc->prev_addr, next_addr, sizeof(tc->prev_addr));
        int rc = ring_connect(l->fd, rank, size, next_addr, key, deadline_ms, &tc->next_fd,
                              &tc->prev_fd);
        if (rc != FT_SUCCESS) {
            free(tc);
            return rc;
        }
    }
    FTI_DEBUG("tcp ring: rank %d of %d connected (next %s)", rank, size,
              size > 1 ? next_addr : "-");
    *comm_p = &tc->base;
    return FT_SUCCESS;
}
