/*
 * mode/dropin.c - the drop-in's mode, libftmpi_pmpi (DESIGN section 10;
 * its table entry fti_mode_dropin, mode/mode.h): every world rank a
 * replica group of one, the `mpi` backend's slices over the world, and the
 * lighthouse on a thread of world rank 0 unless FTMPI_LIGHTHOUSE names one.
 *
 * Threads: the table's entries run on the application's thread (inside
 * MPI_Init / MPI_Finalize); the lighthouse has its own thread and event
 * loop, which only its check timer touches after start.
 */
#include "mode/dropin.h"

#include <event2/event.h>
#include <event2/thread.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi.h"
#include "lighthouse/lighthouse.h"
#include "base/log.h"
#include "base/util.h"
#include "control/results.h"

/* How often the lighthouse thread looks at its stop flag and counts the
 * groups that left. */
#define SHIM_CHECK_MS 20
/* The in-process lighthouse waits for a straggler at least FTMPI_TIMEOUT_MS
 * plus this long (FTMPI_LH_JOIN_TIMEOUT_MS when larger).  After a death the
 * survivors ask for the new quorum when their call missed its deadline,
 * FTMPI_TIMEOUT_MS after they entered it; a survivor that was still
 * computing entered later and asks up to FTMPI_TIMEOUT_MS later still: it
 * must not be left out.  The margin covers the failed step's close
 * (FT_Commit) and a loaded machine.  A dead rank costs nothing here: its
 * closed connections drop it from the table at once (lighthouse/liveness.c). */
#define SHIM_JOIN_MARGIN_MS 2000

/* Rank 0's in-process lighthouse. */
static struct {
    struct event_base *base;
    struct event *check;
    fti_lighthouse_h lh;
    pthread_t thread;
    bool running;
    int n;                 /* groups r0..r<n-1> */
    atomic_int stop;       /* set by the application thread */
    atomic_int left;       /* groups finalized or unknown after having been seen */
    unsigned char *seen;   /* per group: heard of once (lighthouse thread only) */
} lh;

/* The replica id of world rank r of n: "r<r>", zero-padded so ids sort
 * by rank.  Pure. */
static void shim_replica_id(int r, int n, char *buf, size_t len)
{
    int width = 1;
    for (int m = n - 1; m >= 10 && width < 10; m /= 10)
        width++;
    snprintf(buf, len, "r%0*d", width & 15, r);
}

/* The backend: mpi (auto or mpi; any other name, known or not, is an
 * error naming it). */
static int shim_resolve(const fti_config_t *cfg, fti_world_t *w)
{
    const struct fti_comm_backend *b = NULL;
    int rc = fti_mode_backend(cfg, true, &b); /* names an unknown value */
    if (rc != FT_SUCCESS)
        return rc;
    if (b != &fti_backend_mpi) {
        FTI_ERROR("FTMPI_BACKEND=%s: the drop-in (libftmpi_pmpi) runs on the mpi backend "
                  "(unset FTMPI_BACKEND, or set it to auto or mpi)",
                  cfg->backend);
        return FT_ERR_CONFIG;
    }
    if (cfg->group_size > 0)
        FTI_WARN("FTMPI_GROUP_SIZE=%d is ignored by the drop-in: every rank is a group of one",
                 cfg->group_size);
    w->backend = b;
    /* no state is registered: a quorum at step 0 must not heal */
    w->init_sync = false;
    return FT_SUCCESS;
}

/* The lighthouse thread's timer: counts the groups that left, stops the
 * loop once asked to. */
static void check_cb(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    (void)arg;
    int left = 0;
    for (int i = 0; i < lh.n; i++) {
        char id[FTI_REPLICA_ID_SIZE];
        shim_replica_id(i, lh.n, id, sizeof(id));
        fti_lh_group_status_t st = fti_lighthouse_group_status(lh.lh, id, NULL);
        if (st == FTI_LH_GROUP_LIVE || st == FTI_LH_GROUP_SILENT)
            lh.seen[i] = 1;
        left += st == FTI_LH_GROUP_FINALIZED || (st == FTI_LH_GROUP_UNKNOWN && lh.seen[i]);
    }
    atomic_store(&lh.left, left);
    if (atomic_load(&lh.stop))
        event_base_loopbreak(lh.base);
}

static void *lh_main(void *arg)
{
    (void)arg;
    event_base_dispatch(lh.base);
    return NULL;
}

static void lh_free(void)
{
    if (lh.check)
        event_free(lh.check);
    fti_lighthouse_destroy(lh.lh);
    if (lh.base)
        event_base_free(lh.base);
    free(lh.seen);
    lh.check = NULL;
    lh.lh = NULL;
    lh.base = NULL;
    lh.seen = NULL;
}

/* Starts the lighthouse for n groups on a thread; its address into addr. */
static int lh_start(const fti_config_t *cfg, const char *bind_host, int n, char *addr,
                    size_t addr_len)
{
    fti_lighthouse_opts_t o;
    fti_mode_lighthouse_opts(cfg, bind_host, &o);
    if (o.join_timeout_ms < (int64_t)cfg->timeout_ms + SHIM_JOIN_MARGIN_MS) {
        o.join_timeout_ms = (int64_t)cfg->timeout_ms + SHIM_JOIN_MARGIN_MS;
        FTI_INFO("drop-in: the lighthouse's join timeout is FTMPI_TIMEOUT_MS + %d ms = %lld ms "
                 "(FTMPI_LH_JOIN_TIMEOUT_MS=%d is lower): a survivor still computing when a "
                 "rank dies is not left out",
                 SHIM_JOIN_MARGIN_MS, (long long)o.join_timeout_ms, cfg->lh_join_timeout_ms);
    }
    if (evthread_use_pthreads() != 0) {
        FTI_ERROR("drop-in: evthread_use_pthreads failed");
        return FT_ERR_SYSTEM;
    }
    lh.n = n;
    lh.seen = calloc((size_t)n, 1);
    lh.base = event_base_new();
    int rc = lh.seen == NULL || lh.base == NULL ? FT_ERR_NO_MEMORY
                                                : fti_lighthouse_create(lh.base, &o, &lh.lh);
    struct timeval tv = {0, SHIM_CHECK_MS * 1000};
    if (rc == FT_SUCCESS && ((lh.check = event_new(lh.base, -1, EV_PERSIST, check_cb, NULL)) ==
                                 NULL ||
                             event_add(lh.check, &tv) != 0))
        rc = FT_ERR_NO_MEMORY;
    for (int i = 0; rc == FT_SUCCESS && i < n; i++) {
        char id[FTI_REPLICA_ID_SIZE];
        shim_replica_id(i, n, id, sizeof(id));
        (void)fti_lighthouse_expect_group(lh.lh, id); /* the first quorum waits for all */
    }
    if (rc == FT_SUCCESS && fti_strlcpy(addr, fti_lighthouse_address(lh.lh), addr_len) != 0)
        rc = FT_ERR_CONFIG;
    if (rc == FT_SUCCESS && pthread_create(&lh.thread, NULL, lh_main, NULL) != 0) {
        FTI_ERROR("drop-in: cannot start the lighthouse thread: %m");
        rc = FT_ERR_SYSTEM;
    }
    if (rc != FT_SUCCESS) {
        FTI_ERROR("drop-in: the lighthouse on world rank 0 did not start: %s", FT_Error_string(rc));
        lh_free();
        return rc;
    }
    lh.running = true;
    FTI_INFO("drop-in: lighthouse on %s (a thread of world rank 0) for %d ranks", addr, n);
    return FT_SUCCESS;
}

/* What world rank 0 broadcasts. */
struct lh_hello {
    int32_t status;
    char addr[FTI_ADDRESS_SIZE];
};

/* Collective over MPI_COMM_WORLD: the slices' context, rank 0's
 * lighthouse and its address. */
static int shim_world(const fti_config_t *cfg, fti_world_t *w)
{
    fti_modeb_t *mb = &w->mb;
    MPI_Comm_rank(MPI_COMM_WORLD, &mb->world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mb->world_size);
    mb->first_world_rank = mb->world_rank;
    mb->split = MPI_COMM_NULL;
    w->app_comm = MPI_COMM_NULL;
    /* every rank makes the same collectives, whatever happens */
    int rc = fti_mpi_ctx_create(MPI_COMM_WORLD, &mb->mpi);
    struct lh_hello hello;
    memset(&hello, 0, sizeof(hello));
    bool own_lh = cfg->lighthouse[0] == '\0';
    if (own_lh && mb->world_rank == 0)
        hello.status = rc != FT_SUCCESS ? rc
                                        : lh_start(cfg, w->bind_host, mb->world_size, hello.addr,
                                                   sizeof(hello.addr));
    if (own_lh && MPI_Bcast(&hello, (int)sizeof(hello), MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS)
        hello.status = FT_ERR_MPI;
    hello.addr[sizeof(hello.addr) - 1] = '\0';
    if (rc == FT_SUCCESS)
        rc = hello.status;
    if (rc == FT_SUCCESS && own_lh)
        fti_strlcpy(w->lighthouse, hello.addr, sizeof(w->lighthouse));
    w->member_data_len = fti_results_world_rank_data(mb->world_rank, w->member_data,
                                                     sizeof(w->member_data));
    return rc;
}

/* Frees what shim_world made; rank 0 stops its lighthouse once every
 * group left (or after FTMPI_CONNECT_TIMEOUT_MS). */
static void shim_release(const fti_config_t *cfg, fti_world_t *w, bool finalized)
{
    (void)finalized;
    fti_mpi_ctx_destroy(w->mb.mpi);
    w->mb.mpi = NULL;
    if (!lh.running)
        return;
    /* the other ranks may still be leaving: serve them a while */
    int64_t until = fti_now_ms() + cfg->connect_timeout_ms;
    while (atomic_load(&lh.left) < lh.n && fti_now_ms() < until)
        fti_sleep_ms(SHIM_CHECK_MS);
    atomic_store(&lh.stop, 1);
    pthread_join(lh.thread, NULL);
    lh.running = false;
    lh_free();
}

static MPI_Comm shim_group_comm(const fti_world_t *w)
{
    (void)w;
    return MPI_COMM_SELF;
}

static void shim_replica_id_of(const fti_config_t *cfg, const fti_world_t *w, char *buf,
                               size_t len)
{
    (void)cfg;
    shim_replica_id(w->mb.world_rank, w->mb.world_size, buf, len);
}

/* A lost rank is the call's failure, as in mode A: the drop-in's wrappers
 * decide what it means (FTMPI_SHIM_ON_FAILURE). */
static int shim_group_failure(int rc)
{
    return rc;
}

const struct fti_mode fti_mode_dropin = {
    .name = "drop-in",
    .resolve = shim_resolve,
    .world = shim_world,
    .group_comm = shim_group_comm,
    .replica_id = shim_replica_id_of,
    .group_failure = shim_group_failure,
    .log_start = NULL,
    .release = shim_release,
    .every_rank_leaves = false,
    .full_members = false,
    .auto_device = true,
    .vote_waits_for_heal = false,
    .quorum_bcast_slack_ms = 0,
    .direct_heal_when_fresh = false,
};
