/*
 * comm/ucx_heal.c - the heal's one-sided transport over UCX (see
 * ucx_heal.h, DESIGN section 7.1).
 */
#include "comm/ucx_heal.h"
#include "comm/ucx_lib.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/util.h"

/* How long a sleep on a worker's event fd lasts at most (UCX's keepalive
 * and the serving thread's stop flag are looked at this often). */
#define UCX_HEAL_POLL_MS 100

/* The process-wide context (made by the first fti_ucx_context). */
static ucp_context_h context(void)
{
    ucp_context_h ctx = NULL;
    (void)fti_ucx_context(0, &ctx);
    return ctx;
}

struct region {
    void *base;
    size_t len;
    ucp_mem_h mh;  /* NULL for len 0 */
    void *rkey;    /* packed; NULL for len 0 */
    size_t rklen;
};

/* The source's side: one serving worker per process, progressed by its
 * own thread (the transports that emulate a get need the target to
 * progress, and every endpoint's wireup does), under mu. */
static struct {
    pthread_mutex_t mu;
    ucp_worker_h worker;
    int efd;
    ucp_address_t *addr;
    size_t alen;
    pthread_t tid;
    bool running, stop; /* stop under mu */
    struct region *reg;
    size_t n;
} srv = {.mu = PTHREAD_MUTEX_INITIALIZER};

/* Progresses w until nothing moves, then arms it and sleeps on efd (at
 * most ms). */
static void progress_or_sleep(ucp_worker_h w, int efd, int ms)
{
    while (fti_ucx.worker_progress(w) != 0)
        ;
    if (fti_ucx.worker_arm(w) != UCS_OK)
        return; /* UCS_ERR_BUSY: events came meanwhile */
    struct pollfd pf = {efd, POLLIN, 0};
    (void)poll(&pf, 1, ms);
}

/* How long the serving thread keeps polling after the last event before
 * it sleeps on the event fd: UCX's event fd does not wake it for every
 * request of an emulated get, which then waited out the sleep. */
#define UCX_HEAL_SPIN_US 20000

static void *serve_main(void *arg)
{
    (void)arg;
    int64_t last = fti_now_us();
    pthread_mutex_lock(&srv.mu);
    while (!srv.stop) {
        unsigned moved = 0;
        while (fti_ucx.worker_progress(srv.worker) != 0)
            moved++;
        int64_t now = fti_now_us();
        if (moved)
            last = now;
        if (now - last < UCX_HEAL_SPIN_US) {
            pthread_mutex_unlock(&srv.mu);
            sched_yield();
            pthread_mutex_lock(&srv.mu);
            continue;
        }
        bool armed = fti_ucx.worker_arm(srv.worker) == UCS_OK;
        pthread_mutex_unlock(&srv.mu);
        if (armed) {
            struct pollfd pf = {srv.efd, POLLIN, 0};
            (void)poll(&pf, 1, UCX_HEAL_POLL_MS);
        }
        pthread_mutex_lock(&srv.mu);
    }
    pthread_mutex_unlock(&srv.mu);
    return NULL;
}

/* A worker (SERIALIZED: callers serialise) and its event fd. */
static int worker_make(ucp_worker_h *w_p, int *efd_p)
{
    ucp_context_h ctx;
    int rc = fti_ucx_context(0, &ctx);
    if (rc != FT_SUCCESS)
        return rc;
    ucp_worker_params_t wp = {.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE,
                              .thread_mode = UCS_THREAD_MODE_SERIALIZED};
    ucp_worker_h w = NULL;
    ucs_status_t st = fti_ucx.worker_create(ctx, &wp, &w);
    if (st == UCS_OK && (st = fti_ucx.worker_get_efd(w, efd_p)) != UCS_OK)
        fti_ucx.worker_destroy(w);
    if (st != UCS_OK) {
        FTI_WARN("heal over ucx: cannot make a worker: %s", fti_ucx.status_string(st));
        return FT_ERR_SYSTEM;
    }
    *w_p = w;
    return FT_SUCCESS;
}

/* The serving worker, its address and its thread (mu held). */
static int serve_start_locked(void)
{
    if (srv.running)
        return FT_SUCCESS;
    int rc = worker_make(&srv.worker, &srv.efd);
    if (rc != FT_SUCCESS)
        return rc;
    ucp_worker_attr_t wa = {.field_mask = UCP_WORKER_ATTR_FIELD_ADDRESS};
    ucs_status_t st = fti_ucx.worker_query(srv.worker, &wa);
    if (st != UCS_OK) {
        FTI_WARN("heal over ucx: no worker address: %s", fti_ucx.status_string(st));
        fti_ucx.worker_destroy(srv.worker);
        return FT_ERR_SYSTEM;
    }
    srv.addr = wa.address;
    srv.alen = wa.address_length;
    srv.stop = false;
    if (pthread_create(&srv.tid, NULL, serve_main, NULL) != 0) {
        FTI_WARN("heal over ucx: no progress thread");
        fti_ucx.worker_release_address(srv.worker, srv.addr);
        fti_ucx.worker_destroy(srv.worker);
        return FT_ERR_NO_MEMORY;
    }
    srv.running = true;
    return FT_SUCCESS;
}

static void regions_free_locked(void)
{
    for (size_t i = 0; i < srv.n; i++) {
        if (srv.reg[i].rkey != NULL)
            fti_ucx.rkey_buffer_release(srv.reg[i].rkey);
        if (srv.reg[i].mh != NULL)
            fti_ucx.mem_unmap(context(), srv.reg[i].mh);
    }
    free(srv.reg);
    srv.reg = NULL;
    srv.n = 0;
}

static bool regions_same_locked(void *const *bases, const size_t *lens, size_t n)
{
    if (srv.reg == NULL || srv.n != n)
        return false;
    for (size_t i = 0; i < n; i++)
        if (srv.reg[i].base != bases[i] || srv.reg[i].len != lens[i])
            return false;
    return true;
}

/* Maps and packs the n regions (mu held). */
static int regions_map_locked(void *const *bases, const size_t *lens, size_t n)
{
    regions_free_locked();
    srv.reg = calloc(n ? n : 1, sizeof(*srv.reg));
    if (srv.reg == NULL)
        return FT_ERR_NO_MEMORY;
    srv.n = n;
    ucp_context_h ctx = context();
    for (size_t i = 0; i < n; i++) {
        struct region *g = &srv.reg[i];
        g->base = bases[i];
        g->len = lens[i];
        if (g->len == 0)
            continue;
        ucp_mem_map_params_t mp = {
            .field_mask = UCP_MEM_MAP_PARAM_FIELD_ADDRESS | UCP_MEM_MAP_PARAM_FIELD_LENGTH,
            .address = g->base,
            .length = g->len,
        };
        ucs_status_t st = fti_ucx.mem_map(ctx, &mp, &g->mh);
        if (st == UCS_OK)
            st = fti_ucx.rkey_pack(ctx, g->mh, &g->rkey, &g->rklen);
        if (st != UCS_OK) {
            FTI_WARN("heal over ucx: mapping %zu bytes for healers failed: %s", g->len,
                     fti_ucx.status_string(st));
            regions_free_locked();
            return FT_ERR_SYSTEM;
        }
    }
    return FT_SUCCESS;
}

int fti_ucx_heal_expose(void *const *bases, const size_t *lens, size_t n, const void **addr_p,
                        size_t *alen_p, const void **rkeys, size_t *rklens)
{
    pthread_mutex_lock(&srv.mu);
    int rc = serve_start_locked();
    if (rc == FT_SUCCESS && !regions_same_locked(bases, lens, n))
        rc = regions_map_locked(bases, lens, n);
    if (rc == FT_SUCCESS) {
        *addr_p = srv.addr;
        *alen_p = srv.alen;
        for (size_t i = 0; i < n; i++) {
            rkeys[i] = srv.reg[i].rkey;
            rklens[i] = srv.reg[i].rklen;
        }
    }
    pthread_mutex_unlock(&srv.mu);
    return rc;
}

void fti_ucx_heal_release(void)
{
    pthread_mutex_lock(&srv.mu);
    bool running = srv.running;
    srv.stop = true;
    pthread_mutex_unlock(&srv.mu);
    if (!running)
        return;
    pthread_join(srv.tid, NULL);
    pthread_mutex_lock(&srv.mu);
    regions_free_locked();
    fti_ucx.worker_release_address(srv.worker, srv.addr);
    fti_ucx.worker_destroy(srv.worker);
    srv.worker = NULL;
    srv.addr = NULL;
    srv.running = false;
    pthread_mutex_unlock(&srv.mu);
}

/* ---- the healer's side --------------------------------------------------- */

struct conn {
    ucp_worker_h worker;
    int efd;
    ucp_ep_h ep;
    int failed; /* the endpoint's error callback ran */
    ucs_status_t why;
};

static void conn_error(void *arg, ucp_ep_h ep, ucs_status_t status)
{
    (void)ep;
    struct conn *c = arg;
    c->failed = 1;
    c->why = status;
}

int fti_ucx_heal_connect(const void *addr, size_t alen, int64_t deadline_ms, void **conn_p)
{
    (void)alen;
    (void)deadline_ms; /* the endpoint is wired up by the first get */
    struct conn *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return FT_ERR_NO_MEMORY;
    int rc = worker_make(&c->worker, &c->efd);
    if (rc != FT_SUCCESS) {
        free(c);
        return rc;
    }
    ucp_ep_params_t ep = {
        .field_mask = UCP_EP_PARAM_FIELD_REMOTE_ADDRESS | UCP_EP_PARAM_FIELD_ERR_HANDLING_MODE |
                      UCP_EP_PARAM_FIELD_ERR_HANDLER,
        .address = (const ucp_address_t *)addr,
        .err_mode = UCP_ERR_HANDLING_MODE_PEER,
        .err_handler = {.cb = conn_error, .arg = c},
    };
    ucs_status_t st = fti_ucx.ep_create(c->worker, &ep, &c->ep);
    if (st != UCS_OK) {
        FTI_WARN("heal over ucx: no endpoint to the source: %s (UCX_TLS needs a transport that "
                 "reports a dead peer)",
                 fti_ucx.status_string(st));
        fti_ucx.worker_destroy(c->worker);
        free(c);
        return FT_ERR_CONFIG;
    }
    *conn_p = c;
    return FT_SUCCESS;
}

/* Closes c's endpoint (forced: a pending get ends with an error). */
static void conn_close_ep(struct conn *c)
{
    if (c->ep == NULL)
        return;
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_FLAGS,
                             .flags = UCP_EP_CLOSE_FLAG_FORCE};
    ucs_status_ptr_t r = fti_ucx.ep_close_nbx(c->ep, &p);
    c->ep = NULL;
    if (r == NULL || UCS_PTR_IS_ERR(r))
        return;
    while (fti_ucx.request_check_status(r) == UCS_INPROGRESS)
        progress_or_sleep(c->worker, c->efd, 10);
    fti_ucx.request_free(r);
}

/* A get of a range is cut into gets of this many bytes, all posted at
 * once (UCX's emulated gets move one fragment per round trip otherwise);
 * a range is at most UCX_HEAL_MAX_GETS of them. */
#define UCX_HEAL_GET_BYTES ((size_t)256 << 10)
#define UCX_HEAL_MAX_GETS 256

struct get_done {
    size_t count, want; /* completed, posted */
    int done;           /* count == want */
    ucs_status_t st;    /* the first error */
};

static void get_cb(void *req, ucs_status_t status, void *user)
{
    (void)req;
    struct get_done *d = user;
    if (d->st == UCS_OK)
        d->st = status;
    d->count++;
    d->done = d->count >= d->want;
}

int fti_ucx_heal_get(void *conn, const void *rkey, size_t rklen, uint64_t raddr, void *dst,
                     size_t len, int64_t deadline_ms)
{
    (void)rklen;
    struct conn *c = conn;
    if (c->ep == NULL || c->failed)
        return FT_ERR_PROC_FAILED;
    ucp_rkey_h rk = NULL;
    ucs_status_t st = fti_ucx.ep_rkey_unpack(c->ep, rkey, &rk);
    if (st != UCS_OK) {
        FTI_WARN("heal over ucx: the source's remote key does not unpack: %s",
                 fti_ucx.status_string(st));
        return FT_ERR_BAD_MESSAGE;
    }
    /* the gets of [raddr, +len), UCX_HEAL_GET_BYTES each, all in flight */
    size_t n = len == 0 ? 0 : (len + UCX_HEAL_GET_BYTES - 1) / UCX_HEAL_GET_BYTES;
    struct get_done d = {0, 0, 0, UCS_OK};
    ucp_request_param_t p = {.op_attr_mask = UCP_OP_ATTR_FIELD_CALLBACK |
                                             UCP_OP_ATTR_FIELD_USER_DATA,
                             .cb.send = get_cb,
                             .user_data = &d};
    void *reqs[UCX_HEAL_MAX_GETS];
    size_t posted = 0;
    if (n > UCX_HEAL_MAX_GETS) {
        fti_ucx.rkey_destroy(rk);
        return FT_ERR_ARG;
    }
    for (size_t i = 0; i < n && d.st == UCS_OK; i++) {
        size_t off = i * UCX_HEAL_GET_BYTES, sz = FTI_MIN(UCX_HEAL_GET_BYTES, len - off);
        ucs_status_ptr_t r = fti_ucx.get_nbx(c->ep, (char *)dst + off, sz, raddr + off, rk, &p);
        if (UCS_PTR_IS_ERR(r))
            d.st = UCS_PTR_STATUS(r);
        else if (r != NULL)
            reqs[posted++] = r;
    }
    d.want = posted;
    d.done = d.count >= d.want;
    int rc = FT_SUCCESS;
    /* polled: the healer has nothing else to do, and UCX's event fd does not
     * wake it for every completion of an emulated get */
    while (!d.done && !c->failed && fti_ms_left(deadline_ms) > 0)
        if (fti_ucx.worker_progress(c->worker) == 0)
            sched_yield();
    if (!d.done) { /* failed peer or deadline: the forced close ends the get */
        rc = c->failed ? FT_ERR_PROC_FAILED : FT_ERR_TIMEOUT;
        conn_close_ep(c);
        while (!d.done)
            progress_or_sleep(c->worker, c->efd, 10);
    }
    for (size_t i = 0; i < posted; i++)
        fti_ucx.request_free(reqs[i]);
    fti_ucx.rkey_destroy(rk);
    if (rc == FT_SUCCESS && d.st != UCS_OK)
        rc = c->failed || d.st == UCS_ERR_ENDPOINT_TIMEOUT || d.st == UCS_ERR_CONNECTION_RESET
                 ? FT_ERR_PROC_FAILED
                 : FT_ERR_SYSTEM;
    if (rc != FT_SUCCESS)
        FTI_WARN("heal over ucx: get of %zu bytes failed: %s (%s)", len, FT_Error_string(rc),
                 fti_ucx.status_string(c->failed ? c->why : d.st));
    return rc;
}

void fti_ucx_heal_disconnect(void *conn)
{
    struct conn *c = conn;
    if (c == NULL)
        return;
    conn_close_ep(c);
    fti_ucx.worker_destroy(c->worker);
    free(c);
}
