/*
 * comm/ucx.c - the ucx data plane (DESIGN section 5): the rendezvous
 * through the quorum's store, the allreduce (a ring reduce-scatter +
 * all-gather, or for small buffers every member's buffer to every other
 * and a local reduction in replica-rank order: the same bits on every
 * rank either way) and the table entry fti_backend_ucx.  The worker,
 * sends, receives and waits are ucx_wait.c; loading UCX is ucx_lib.c.
 * Errors as comm.h says: a failure is logged at debug level here, the
 * communicator is dead after it, failed_peer names the peer.
 */
#include "comm/ucx.h"
#include "comm/ucx_comm.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftmpi_errors.h"
#include "base/auth.h"
#include "base/log.h"
#include "base/rpc.h"
#include "control/store.h"
#include "comm/ring.h"
#include "comm/slice.h"
#include "base/util.h"

#define UCX_SMALL_MAX (64u * 1024u) /* as the tcp ring's */
#define UCX_GRACE_MS 1000            /* fti_ucx_abort's without a timeout_ms */
#define UCX_CHUNK (256u * 1024u)     /* the ring's chunk without FTMPI_CHUNK_BYTES */
#define UCX_REDUCE_PIECE (64u * 1024u) /* bytes reduced between two rounds of progress */

/* ---- rendezvous ------------------------------------------------------------ */

/* The store key of a member's worker address: under the quorum's prefix,
 * so fti_slice_forget_older deletes it with the tcp ring's keys. */
static void ucx_key(char *buf, size_t len, int64_t quorum_id, int group_rank, int replica_rank)
{
    snprintf(buf, len, "/ftmpi/%" PRId64 "/%d/ucx/%d", quorum_id, group_rank, replica_rank);
}

/* Tag bits 63..40: 24 bits of HMAC(job key, quorum id) with a key (a
 * process without the secret cannot make a tag that matches), the quorum
 * id's low 24 bits without. */
static uint64_t ucx_salt(const fti_auth_key_t *key, int64_t quorum_id)
{
    char hex[2 * FTI_AUTH_MAC_LEN + 1];
    uint64_t s = (uint64_t)quorum_id;
    if (key != NULL &&
        fti_auth_mac_hex(key, "ftmpi-ucx-tag", &quorum_id, sizeof(quorum_id), hex) == FT_SUCCESS) {
        hex[6] = '\0';
        s = strtoull(hex, NULL, 16);
    }
    return (s & 0xffffffu) << 40;
}

/* The worker of c (SERIALIZED: the progress thread may run an operation
 * the application's thread did not) and its event fd; its address into
 * *addr_p (release with worker_release_address). */
static int worker_open(struct fti_ucx_comm *c, int timeout_ms, ucp_address_t **addr_p,
                       size_t *alen_p)
{
    ucp_context_h ctx;
    int rc = fti_ucx_context(timeout_ms, &ctx);
    if (rc != FT_SUCCESS)
        return rc;
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                              .thread_mode = UCS_THREAD_MODE_SERIALIZED};
    ucs_status_t st = fti_ucx.worker_create(ctx, &wp, &c->worker);
    if (st == UCS_OK && (st = fti_ucx.worker_get_efd(c->worker, &c->efd)) == UCS_OK) {
        ucp_worker_attr_t wa = {.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS};
        st = fti_ucx.worker_query(c->worker, &wa);
        if (st == UCS_OK) {
            *addr_p = wa.address;
            *alen_p = wa.address_length;
        }
    }
    if (st != UCS_OK) {
        FTI_WARN("ucx: cannot make a worker: %s", fti_ucx.status_string(st));
        return FT_ERR_SYSTEM;
    }
    return FT_SUCCESS;
}

/* "host pid N": how an error line names this rank. */
static void self_label(char *buf, size_t len)
{
    char host[FTI_ADDRESS_SIZE / 2] = "localhost";
    (void)gethostname(host, sizeof(host) - 1);
    snprintf(buf, len, "%s pid %ld", host, (long)getpid());
}

/* Publishes label '\n' worker address under this rank's key. */
static int publish(fti_rpc_client_h store, const fti_comm_rendezvous_t *r, const void *addr,
                   size_t alen, int64_t deadline_ms)
{
    char key[96], label[FTI_ADDRESS_SIZE];
    self_label(label, sizeof(label));
    size_t llen = strlen(label);
    char *val = malloc(llen + 1 + alen);
    if (val == NULL)
        return FT_ERR_NO_MEMORY;
    memcpy(val, label, llen);
    val[llen] = '\n';
    memcpy(val + llen + 1, addr, alen);
    ucx_key(key, sizeof(key), r->quorum_id, r->group_rank, r->replica_rank);
    int rc = fti_store_set(store, key, val, llen + 1 + alen, FTI_MAX(1, fti_ms_left(deadline_ms)));
    free(val);
    if (rc != FT_SUCCESS)
        FTI_WARN("ucx: publishing %s in the store %s failed: %s", key, r->store_address,
                 FT_Error_string(rc));
    return rc;
}

/* Reads member i's address from the store (waiting for it) and makes the
 * endpoint to it: the only endpoints this rank makes are to the members
 * the quorum named, at the addresses they published in its store. */
static int connect_peer(struct fti_ucx_comm *c, fti_rpc_client_h store,
                        const fti_comm_rendezvous_t *r, int i, int64_t deadline_ms)
{
    char key[96], *val = NULL;
    size_t len = 0;
    ucx_key(key, sizeof(key), r->quorum_id, r->group_rank, i);
    int rc = fti_store_get(store, key, FTI_MAX(1, fti_ms_left(deadline_ms)), (void **)&val, &len);
    if (rc != FT_SUCCESS) {
        FTI_WARN("ucx: waiting for %s in the store %s failed: %s", key, r->store_address,
                 FT_Error_string(rc));
        return rc;
    }
    char *nl = memchr(val, '\n', len);
    if (nl == NULL || nl + 1 == val + len) {
        FTI_WARN("ucx: %s in the store %s is no worker address", key, r->store_address);
        free(val);
        return FT_ERR_BAD_MESSAGE;
    }
    struct fti_ucx_peer *p = &c->peers[i];
    *nl = '\0';
    (void)fti_strlcpy(p->label, val, sizeof(p->label)); /* cut to fit */
    ucp_ep_params_t ep = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER,
        .address = (const ucp_address_t *)(nl + 1),
        .err_mode = UCP_ERR_HANDLING_MODE_PEER,
        .err_handler = {.cb = fti_ucx_ep_error, .arg = p},
    };
    ucs_status_t st = fti_ucx.ep_create(c->worker, &ep, &p->ep);
    free(val);
    if (st != UCS_OK) {
        p->ep = NULL;
        FTI_ERROR("ucx: no endpoint to replica rank %d (%s): %s (UCX_TLS needs a transport "
                  "that reports a dead peer: tcp; posix with UCX_POSIX_ERROR_HANDLING=y)",
                  i, p->label, fti_ucx.status_string(st));
        return FT_ERR_CONFIG;
    }
    return FT_SUCCESS;
}

/* Publishes this rank's worker address and connects to every other member. */
static int rendezvous(struct fti_ucx_comm *c, const fti_comm_rendezvous_t *r, const void *addr,
                      size_t alen, int64_t deadline_ms)
{
    fti_rpc_client_h store = NULL;
    if (r->store_address == NULL || r->store_address[0] == '\0')
        return FT_ERR_ARG;
    fti_slice_note(r->quorum_id);
    int rc = fti_rpc_client_create(r->store_address, r->key, r->connect_timeout_ms,
                                   FTI_STORE_MAX_FRAME, &store);
    if (rc != FT_SUCCESS) {
        FTI_WARN("ucx: cannot reach the store %s: %s", r->store_address, FT_Error_string(rc));
        return rc;
    }
    rc = publish(store, r, addr, alen, deadline_ms);
    for (int k = 1; rc == FT_SUCCESS && k < r->size; k++)
        rc = connect_peer(c, store, r, (r->replica_rank + k) % r->size, deadline_ms);
    fti_rpc_client_destroy(store);
    return rc;
}

/* What UCX found and the lanes it took to the next rank, logged once per
 * process. */
static void log_transports_once(const struct fti_ucx_comm *c)
{
    static int logged;
    char ver[64], tls[512], lanes[512];
    if (logged++)
        return;
    if (fti_ucx_describe(ver, sizeof(ver), tls, sizeof(tls)) != FT_SUCCESS)
        return;
    const struct fti_ucx_peer *next = &c->peers[(c->base.rank + 1) % c->base.size];
    fti_ucx_ep_lanes(next->ep, lanes, sizeof(lanes));
    FTI_INFO("ucx: UCX %s, transports %s (UCX_TLS, UCX_NET_DEVICES choose); to replica rank "
             "%d: %s", ver, tls, next->rank, lanes[0] ? lanes : "no lane printed");
}

static void comm_free(struct fti_ucx_comm *c);
static void unpark_all(void);

static int ucx_create(const fti_comm_rendezvous_t *r, int64_t deadline_ms, fti_comm_h *comm_p)
{
    if (r->size < 1 || r->size > FTI_UCX_MAX_SIZE || r->replica_rank < 0 ||
        r->replica_rank >= r->size)
        return FT_ERR_ARG;
    struct fti_ucx_comm *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return FT_ERR_NO_MEMORY;
    c->base.ops = &fti_backend_ucx;
    c->base.rank = r->replica_rank;
    c->base.size = r->size;
    c->failed = -1;
    c->efd = -1;
    c->small_max = UCX_SMALL_MAX;
    c->chunk_bytes = r->chunk_bytes ? r->chunk_bytes : UCX_CHUNK;
    c->ops_cap = FTI_MAX(2 * r->size, 2 * FTI_UCX_WINDOW);
    c->salt = ucx_salt(r->key, r->quorum_id);
    c->grace_ms = r->timeout_ms > 0 ? r->timeout_ms / 2 : UCX_GRACE_MS;
    c->peers = calloc((size_t)r->size, sizeof(*c->peers));
    c->ops = calloc((size_t)c->ops_cap, sizeof(*c->ops));
    int rc = c->peers == NULL || c->ops == NULL ? FT_ERR_NO_MEMORY : FT_SUCCESS;
    for (int i = 0; rc == FT_SUCCESS && i < r->size; i++)
        c->peers[i] = (struct fti_ucx_peer){.c = c, .rank = i};
    if (rc == FT_SUCCESS && r->size > 1) {
        ucp_address_t *addr = NULL;
        size_t alen = 0;
        rc = worker_open(c, r->timeout_ms, &addr, &alen);
        if (rc == FT_SUCCESS) {
            /* a peer (or the store's host) gone: FT_ERR_PROC_FAILED */
            rc = rendezvous(c, r, addr, alen, deadline_ms);
            if (rc != FT_ERR_CONFIG)
                rc = fti_slice_error(rc);
            fti_ucx.worker_release_address(c->worker, addr);
        }
    }
    if (rc != FT_SUCCESS) {
        comm_free(c);
        return rc;
    }
    unpark_all();
    if (r->size > 1)
        log_transports_once(c);
    FTI_DEBUG("ucx: replica rank %d of %d connected (quorum %" PRId64 ")", r->replica_rank,
              r->size, r->quorum_id);
    *comm_p = &c->base;
    return FT_SUCCESS;
}

/* ---- allreduce ------------------------------------------------------------- */

static int scratch_reserve(struct fti_ucx_comm *c, size_t bytes)
{
    if (bytes <= c->scratch_cap)
        return FT_SUCCESS;
    char *s = malloc(bytes);
    if (s == NULL)
        return FT_ERR_NO_MEMORY;
    free(c->scratch);
    c->scratch = s;
    c->scratch_cap = bytes;
    return FT_SUCCESS;
}

/* The pipelined ring (ring.h, DESIGN section 5).  Each step's segment goes
 * in chunks (c->chunk_bytes, larger when the tag's message numbers would
 * not suffice: fti_ring_chunk_plan); chunk j of step t is message
 * t * per_step + j of operation seq.  The receives are numbered in the
 * order of the steps ("units" 0..K-1); up to FTI_UCX_WINDOW of them are in
 * flight ahead of the one being reduced (a reducing step's into a scratch
 * slot, unit k into slot k % FTI_UCX_WINDOW; a copying step's straight
 * into buf), as are up to FTI_UCX_WINDOW sends.  The sends of step 0 are
 * buf's own; the send of chunk j of step t >= 1 is the receive of chunk j
 * of step t - 1 once reduced (or copied): send unit s >= n0 (step 0's
 * chunks) is receive unit s - n0.  A receive into buf is posted while
 * sends from buf may be in flight, but never overlaps what they read: the
 * region it fills was sent at an earlier step, and its bytes come back
 * only after the next rank received all of that send.  Each element is
 * reduced as the unpipelined ring reduced it (buf op received), so the
 * result is the same bits. */
struct ring_plan {
    int n, me, T;
    size_t count, esize, ce, per_step;
};

/* Unit k of the receive stream (k < K) or the send stream: its step and
 * chunk, and the chunk's offset and length in elements (0 for an empty
 * segment); returns 0 past the last unit. */
static int ring_unit(const struct ring_plan *p, int is_send, size_t k, int *t_p, size_t *j_p,
                     size_t *off_p, size_t *len_p)
{
    for (int t = 0; t < p->T; t++) {
        size_t off, len;
        int seg = is_send ? fti_ring_send_seg(p->me, p->n, t) : fti_ring_recv_seg(p->me, p->n, t);
        fti_ring_segment(p->count, p->n, seg, &off, &len);
        size_t nc = fti_ring_nchunks(len, p->ce);
        if (k < nc) {
            *t_p = t;
            *j_p = k;
            *off_p = off + k * p->ce;
            *len_p = FTI_MIN(p->ce, len - k * p->ce);
            return 1;
        }
        k -= nc;
    }
    return 0;
}

/* Units of a stream. */
static size_t ring_units(const struct ring_plan *p, int is_send)
{
    size_t k = 0;
    for (int t = 0; t < p->T; t++) {
        size_t off, len;
        int seg = is_send ? fti_ring_send_seg(p->me, p->n, t) : fti_ring_recv_seg(p->me, p->n, t);
        fti_ring_segment(p->count, p->n, seg, &off, &len);
        k += fti_ring_nchunks(len, p->ce);
    }
    return k;
}

/* dst op= src, len bytes, in pieces with progress between them, so that
 * the transfers in flight go on during the reduction. */
static void reduce_overlapped(struct fti_ucx_comm *c, char *dst, const char *src, size_t count,
                              size_t esize, enum fti_dtype dt, enum fti_op op)
{
    size_t piece = FTI_MAX((size_t)1, UCX_REDUCE_PIECE / esize);
    for (size_t i = 0; i < count; i += piece) {
        size_t m = FTI_MIN(piece, count - i);
        fti_reduce(dst + i * esize, src + i * esize, m, dt, op);
        if (i + m < count)
            fti_ucx_nudge(c);
    }
}

static int ring_run(struct fti_ucx_comm *c, char *buf, size_t count, size_t esize,
                    enum fti_dtype dt, enum fti_op op, uint32_t seq, int64_t deadline_ms)
{
    struct ring_plan p = {.n = c->base.size, .me = c->base.rank, .count = count, .esize = esize};
    const int next = (p.me + 1) % p.n, prev = (p.me - 1 + p.n) % p.n;
    p.T = fti_ring_nsteps(p.n);
    p.ce = fti_ring_chunk_plan(count, p.n, esize, c->chunk_bytes, FTI_UCX_MAX_MSGS, &p.per_step);
    size_t off, len, j;
    int t;
    fti_ring_segment(count, p.n, fti_ring_send_seg(p.me, p.n, 0), &off, &len);
    const size_t cbytes = p.ce * esize, K = ring_units(&p, 0), S = ring_units(&p, 1);
    const size_t n0 = fti_ring_nchunks(len, p.ce); /* step 0's sends */
    struct fti_ucx_op *rops[FTI_UCX_WINDOW] = {0}, *sops[FTI_UCX_WINDOW] = {0};
    size_t posted = 0, consumed = 0, sent = 0;
    int in_flight = 0, rc = scratch_reserve(c, FTI_UCX_WINDOW * cbytes);
    while (rc == FT_SUCCESS) {
        /* receives: up to the window ahead of the one being reduced */
        while (posted < K && posted < consumed + FTI_UCX_WINDOW &&
               ring_unit(&p, 0, posted, &t, &j, &off, &len)) {
            char *dst = fti_ring_step_reduces(p.n, t)
                            ? c->scratch + (posted % FTI_UCX_WINDOW) * cbytes
                            : buf + off * esize;
            rops[posted % FTI_UCX_WINDOW] =
                fti_ucx_recv(c, prev, dst, len * esize,
                             fti_ucx_tag(c, prev, seq, (unsigned)((size_t)t * p.per_step + j)));
            posted++;
        }
        /* sends: the finished ones freed (once a wait looked at them),
         * then every ready one while the window has room */
        for (int i = 0; i < FTI_UCX_WINDOW; i++)
            if (sops[i] != NULL && sops[i]->done && sops[i]->seen) {
                fti_ucx_release(c, sops[i]);
                sops[i] = NULL;
                in_flight--;
            }
        while (sent < S && in_flight < FTI_UCX_WINDOW && (sent < n0 || sent - n0 < consumed) &&
               ring_unit(&p, 1, sent, &t, &j, &off, &len)) {
            int i = 0;
            while (sops[i] != NULL)
                i++;
            unsigned idx = (unsigned)((size_t)t * p.per_step + j);
            sops[i] = fti_ucx_send(c, next, buf + off * esize, len * esize,
                                   fti_ucx_tag(c, p.me, seq, idx));
            sent++;
            in_flight++;
        }
        if (consumed == K && sent == S && in_flight == 0)
            break;
        struct fti_ucx_op *head = consumed < K ? rops[consumed % FTI_UCX_WINDOW] : NULL;
        if (head != NULL && head->done && head->seen) {
            (void)ring_unit(&p, 0, consumed, &t, &j, &off, &len);
            fti_ucx_release(c, head);
            if (fti_ring_step_reduces(p.n, t))
                reduce_overlapped(c, buf + off * esize,
                                  c->scratch + (consumed % FTI_UCX_WINDOW) * cbytes, len, esize,
                                  dt, op);
            consumed++;
            continue;
        }
        /* until the receive to reduce next or a send finished */
        rc = fti_ucx_wait_some(c, head, deadline_ms);
    }
    return rc;
}

/* Small buffers: every member's buffer to every other (message 0 of
 * operation seq), then slot 0 op slot 1 op ... in replica-rank order,
 * the same order on every rank. */
static int gather_run(struct fti_ucx_comm *c, char *buf, size_t count, size_t esize,
                      enum fti_dtype dt, enum fti_op op, uint32_t seq, int64_t deadline_ms)
{
    const int n = c->base.size, me = c->base.rank;
    const size_t bytes = count * esize;
    int rc = scratch_reserve(c, bytes * (size_t)n);
    if (rc != FT_SUCCESS)
        return rc;
    char *slots = c->scratch;
    for (int k = 0; k < n; k++)
        if (k != me)
            fti_ucx_recv(c, k, slots + (size_t)k * bytes, bytes, fti_ucx_tag(c, k, seq, 0));
    for (int k = 0; k < n; k++)
        if (k != me)
            fti_ucx_send(c, k, buf, bytes, fti_ucx_tag(c, me, seq, 0));
    rc = fti_ucx_wait(c, deadline_ms);
    if (rc != FT_SUCCESS)
        return rc;
    char *acc = me == 0 ? buf : slots;
    for (int k = 1; k < n; k++)
        fti_reduce(acc, k == me ? buf : slots + (size_t)k * bytes, count, dt, op);
    if (acc != buf)
        memcpy(buf, acc, bytes);
    return FT_SUCCESS;
}

static int ucx_allreduce(fti_comm_h comm, void *buf, size_t count, enum fti_dtype dt,
                         enum fti_op op, int64_t deadline_ms)
{
    struct fti_ucx_comm *c = (struct fti_ucx_comm *)comm;
    const int n = comm->size;
    if (c->dead)
        return FT_ERR_ABORTED;
    int bad = fti_reduce_check_args(buf, count, dt, op, n);
    if (bad != FT_SUCCESS)
        return bad;
    size_t esize = fti_dtype_size(dt);
    if (n == 1 || count == 0)
        return FT_SUCCESS; /* AVG over one rank divides by 1 */
    uint32_t seq = c->seq++;
    int rc;
    if (count * esize * (size_t)(n - 1) <= c->small_max)
        rc = gather_run(c, buf, count, esize, dt, op, seq, deadline_ms);
    else
        rc = ring_run(c, buf, count, esize, dt, op, seq, deadline_ms);
    if (rc != FT_SUCCESS) {
        /* the peers' operations went on without us: the slice is dead.
         * Debug only: the step logs the error, naming the failed peer. */
        FTI_DEBUG("ucx allreduce (replica rank %d of %d, %zu x %s): %s", comm->rank, n, count,
                  fti_dtype_name(dt), FT_Error_string(rc));
        fti_ucx_abort(c, 0); /* fti_ucx_wait's did it: no-op */
        return rc;
    }
    if (op == FTI_OP_AVG)
        fti_reduce_scale(buf, count, dt, n);
    return FT_SUCCESS;
}

static int ucx_failed_peer(fti_comm_h comm, int *replica_rank_p, char *addr, size_t len)
{
    const struct fti_ucx_comm *c = (const struct fti_ucx_comm *)comm;
    if (c == NULL || c->failed < 0)
        return FT_ERR_NOT_FOUND;
    if (addr != NULL && len > 0)
        (void)fti_strlcpy(addr, c->peers[c->failed].label, len); /* cut to fit */
    if (replica_rank_p != NULL)
        *replica_rank_p = c->failed;
    return FT_SUCCESS;
}

/* Frees c: closes its endpoints, destroys its worker. */
static void comm_free(struct fti_ucx_comm *c)
{
    if (c->worker != NULL) {
        fti_ucx_close(c);
        fti_ucx.worker_destroy(c->worker);
    }
    free(c->scratch);
    free(c->ops);
    free(c->peers);
    free(c);
}

/* Destroyed slices whose endpoints are still open (DESIGN section 5:
 * closing an endpoint is a failure to its peer, which must not blame us
 * for the peer that died): kept, with nothing in flight, until this
 * process has built the next slice (every member of that quorum has left
 * its old slice by then) or UCX_PARKED newer ones push them out. */
#define UCX_PARKED 4
static struct fti_ucx_comm *parked[UCX_PARKED];
static int n_parked;
static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;

static void park(struct fti_ucx_comm *c)
{
    struct fti_ucx_comm *out = NULL;
    pthread_mutex_lock(&park_lock);
    if (n_parked == UCX_PARKED) {
        out = parked[0];
        memmove(parked, parked + 1, (UCX_PARKED - 1) * sizeof(parked[0]));
        n_parked--;
    }
    parked[n_parked++] = c;
    pthread_mutex_unlock(&park_lock);
    if (out != NULL)
        comm_free(out);
}

static void unpark_all(void)
{
    struct fti_ucx_comm *out[UCX_PARKED];
    pthread_mutex_lock(&park_lock);
    int n = n_parked;
    memcpy(out, parked, (size_t)n * sizeof(out[0]));
    n_parked = 0;
    pthread_mutex_unlock(&park_lock);
    for (int i = 0; i < n; i++)
        comm_free(out[i]);
}

static void ucx_destroy(fti_comm_h comm)
{
    struct fti_ucx_comm *c = (struct fti_ucx_comm *)comm;
    if (c == NULL)
        return;
    if (c->worker == NULL) {
        comm_free(c);
        return;
    }
    fti_ucx_abort(c, 0); /* nothing in flight once parked */
    park(c);
}

const struct fti_comm_backend fti_backend_ucx = {
    .name = "ucx",
    .needs = FTI_COMM_NEEDS_STORE,
    .create = ucx_create,
    .allreduce = ucx_allreduce,
    .destroy = ucx_destroy,
    .failed_peer = ucx_failed_peer,
};
