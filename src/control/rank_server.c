/* rank_server.c - the rank's RPC server thread (see rank_server.h). */
#include "control/rank_server.h"
#include "control/message.h"

#include <event2/event.h>
#include <event2/thread.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/net.h"
#include "control/proto/ftmpi.pb-c.h"
#include "base/rpc.h"
#include "control/store.h"
#include "base/util.h"

struct fti_rank_server {
    struct event_base *base;
    struct event *stop_ev;
    fti_rpc_server_h rpc;
    fti_store_server_h store; /* NULL unless manager */
    fti_rank_server_heal_fn heal_fn;
    void *heal_arg;
    pthread_t thread;
    int thread_started;
    char addr[128];

    pthread_mutex_t mu; /* guards peers and kill_msg */
    char **peers;
    int n_peers;
    atomic_int killed;
    char kill_msg[256];
};

static pthread_once_t evthread_once = PTHREAD_ONCE_INIT;
static int evthread_rc;

static void evthread_init(void)
{
    evthread_rc = evthread_use_pthreads();
}

/* ---- handlers (loop thread) --------------------------------------------- */

static void on_store(fti_rpc_call_h call, const uint8_t *payload, size_t len, void *arg)
{
    struct fti_rank_server *s = arg;
    fti_store_handle(s->store, call, fti_rpc_call_method(call), payload, len);
}

static void on_heal(fti_rpc_call_h call, const uint8_t *payload, size_t len, void *arg)
{
    struct fti_rank_server *s = arg;
    s->heal_fn(s->heal_arg, call, fti_rpc_call_method(call), payload, len);
}

static void on_kill(fti_rpc_call_h call, const uint8_t *payload, size_t len, void *arg)
{
    struct fti_rank_server *s = arg;
    Ftmpi__KillRequest *req = (Ftmpi__KillRequest *)fti_rpc_unpack(
        &ftmpi__kill_request__descriptor, payload, len);
    if (req == NULL) {
        fti_rpc_reply_error(call, FT_ERR_BAD_MESSAGE, "KillRequest does not decode");
        return;
    }
    FTI_WARN("manager: kill requested by %s: %s", fti_rpc_call_peer(call),
             req->msg ? req->msg : "");
    pthread_mutex_lock(&s->mu);
    fti_strlcpy(s->kill_msg, req->msg ? req->msg : "", sizeof(s->kill_msg));
    pthread_mutex_unlock(&s->mu);
    atomic_store(&s->killed, 1);
    ftmpi__kill_request__free_unpacked(req, NULL);
    Ftmpi__KillResponse resp = FTMPI__KILL_RESPONSE__INIT;
    fti_rpc_reply_msg(call, &resp.base);
}

static void on_checkpoint_metadata(fti_rpc_call_h call, const uint8_t *payload, size_t len,
                                   void *arg)
{
    struct fti_rank_server *s = arg;
    Ftmpi__CheckpointMetadataRequest *req =
        (Ftmpi__CheckpointMetadataRequest *)fti_rpc_unpack(
            &ftmpi__checkpoint_metadata_request__descriptor, payload, len);
    if (req == NULL) {
        fti_rpc_reply_error(call, FT_ERR_BAD_MESSAGE, "CheckpointMetadataRequest does not decode");
        return;
    }
    int64_t gr = req->group_rank;
    ftmpi__checkpoint_metadata_request__free_unpacked(req, NULL);

    char addr[128] = "";
    pthread_mutex_lock(&s->mu);
    if (gr >= 0 && gr < s->n_peers)
        fti_strlcpy(addr, s->peers[gr], sizeof(addr));
    pthread_mutex_unlock(&s->mu);
    if (addr[0] == '\0') {
        char msg[96];
        snprintf(msg, sizeof(msg), "no group rank %lld in this group", (long long)gr);
        fti_rpc_reply_error(call, FT_ERR_NOT_FOUND, msg);
        return;
    }
    Ftmpi__CheckpointMetadataResponse resp = FTMPI__CHECKPOINT_METADATA_RESPONSE__INIT;
    resp.heal_address = addr;
    fti_rpc_reply_msg(call, &resp.base);
}

/* Runs on the loop thread when fti_rank_server_stop activates stop_ev:
 * frees what lives on the loop, then leaves the loop. */
static void on_stop(evutil_socket_t fd, short what, void *arg)
{
    struct fti_rank_server *s = arg;
    (void)fd;
    (void)what;
    fti_rpc_server_destroy(s->rpc);
    s->rpc = NULL;
    fti_store_server_destroy(s->store);
    s->store = NULL;
    event_base_loopbreak(s->base);
}

static void *server_thread(void *arg)
{
    struct fti_rank_server *s = arg;
    event_base_loop(s->base, EVLOOP_NO_EXIT_ON_EMPTY);
    return NULL;
}

/* ---- lifecycle (application thread) ------------------------------------ */

static void server_free(struct fti_rank_server *s)
{
    /* the loop is not running: destroy what it did not */
    fti_rpc_server_destroy(s->rpc);
    fti_store_server_destroy(s->store);
    if (s->stop_ev)
        event_free(s->stop_ev);
    if (s->base)
        event_base_free(s->base);
    for (int i = 0; i < s->n_peers; i++)
        free(s->peers[i]);
    free(s->peers);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

int fti_rank_server_start(const char *bind_host, size_t max_frame, const fti_auth_key_t *key,
                          bool manager, fti_rank_server_heal_fn heal_fn, void *heal_arg,
                          fti_rank_server_h *s_p)
{
    static const fti_rpc_method_t all_methods[] = {
        {FTMPI__METHOD__HEAL_METADATA, on_heal},
        {FTMPI__METHOD__HEAL_FETCH, on_heal},
        {FTMPI__METHOD__STORE_SET, on_store},
        {FTMPI__METHOD__STORE_GET, on_store},
        {FTMPI__METHOD__STORE_ADD, on_store},
        {FTMPI__METHOD__STORE_DELETE_PREFIX, on_store},
        {FTMPI__METHOD__MANAGER_KILL, on_kill},
        {FTMPI__METHOD__MANAGER_CHECKPOINT_METADATA, on_checkpoint_metadata},
    };
    char bind_addr[160];
    int rc;

    pthread_once(&evthread_once, evthread_init);
    if (evthread_rc != 0) {
        FTI_ERROR("rank server: evthread_use_pthreads failed");
        return FT_ERR_SYSTEM;
    }
    struct fti_rank_server *s = calloc(1, sizeof(*s));
    if (s == NULL)
        return FT_ERR_NO_MEMORY;
    pthread_mutex_init(&s->mu, NULL);
    atomic_init(&s->killed, 0);
    s->heal_fn = heal_fn;
    s->heal_arg = heal_arg;
    (void)fti_addr_any_port(bind_addr, sizeof(bind_addr), bind_host); /* a host always fits */

    if ((s->base = event_base_new()) == NULL ||
        (s->stop_ev = event_new(s->base, -1, 0, on_stop, s)) == NULL) {
        FTI_ERROR("rank server: cannot create the event loop");
        server_free(s);
        return FT_ERR_SYSTEM;
    }
    if (manager && (rc = fti_store_server_create(s->base, &s->store)) != FT_SUCCESS) {
        FTI_ERROR("rank server: cannot create the store: %s", FT_Error_string(rc));
        server_free(s);
        return rc;
    }
    if (manager && max_frame < FTI_STORE_MAX_FRAME)
        max_frame = FTI_STORE_MAX_FRAME;
    rc = fti_rpc_server_create(s->base, bind_addr, max_frame, key, all_methods,
                               manager ? FTI_ARRAY_SIZE(all_methods) : 2, s, &s->rpc);
    if (rc != FT_SUCCESS) {
        FTI_ERROR("rank server: cannot listen on %s: %s", bind_addr, FT_Error_string(rc));
        server_free(s);
        return rc;
    }
    fti_strlcpy(s->addr, fti_rpc_server_address(s->rpc), sizeof(s->addr));
    if (pthread_create(&s->thread, NULL, server_thread, s) != 0) {
        FTI_ERROR("rank server: pthread_create failed: %m");
        server_free(s);
        return FT_ERR_SYSTEM;
    }
    s->thread_started = 1;
    FTI_DEBUG("rank server on %s%s", s->addr, manager ? " (manager, store)" : "");
    *s_p = s;
    return FT_SUCCESS;
}

void fti_rank_server_stop(fti_rank_server_h s)
{
    if (s == NULL)
        return;
    if (s->thread_started) {
        event_active(s->stop_ev, EV_READ, 0);
        pthread_join(s->thread, NULL);
    }
    server_free(s);
}

const char *fti_rank_server_address(fti_rank_server_h s)
{
    return s->addr;
}

int fti_rank_server_set_peers(fti_rank_server_h s, const char *const *addrs, int n)
{
    char **p = calloc((size_t)(n > 0 ? n : 1), sizeof(*p));
    if (p == NULL)
        return FT_ERR_NO_MEMORY;
    for (int i = 0; i < n; i++) {
        if ((p[i] = strdup(addrs[i])) == NULL) {
            for (int j = 0; j < i; j++)
                free(p[j]);
            free(p);
            return FT_ERR_NO_MEMORY;
        }
    }
    pthread_mutex_lock(&s->mu);
    char **old = s->peers;
    int n_old = s->n_peers;
    s->peers = p;
    s->n_peers = n;
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < n_old; i++)
        free(old[i]);
    free(old);
    return FT_SUCCESS;
}

bool fti_rank_server_killed(fti_rank_server_h s, char *msg, size_t len)
{
    if (!atomic_load(&s->killed))
        return false;
    if (msg != NULL && len > 0) {
        pthread_mutex_lock(&s->mu);
        fti_strlcpy(msg, s->kill_msg, len);
        pthread_mutex_unlock(&s->mu);
    }
    return true;
}
