/* mode/mode_b.c - mode B: the world split into groups, the lighthouse rank (see
 * mode/mode_b.h). */
#include "mode/mode_b.h"

#include <event2/event.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi.h"
#include "lighthouse/lighthouse.h"
#include "base/log.h"
#include "base/util.h"
#include "comm/ulfm.h"
#include "control/results.h"
#include "comm/launcher.h"

#if defined(OPEN_MPI) && OMPI_MAJOR_VERSION >= 4
/* Open MPI 4.x's and 5.x's switch behind the MCA parameter
 * async_mpi_finalize: MPI_Finalize without its job-wide PMIx fence.  Weak:
 * absent elsewhere. */
extern bool ompi_async_mpi_finalize __attribute__((weak));
#define MODEB_HAVE_ASYNC_FINALIZE 1
#endif

/* Mode B on Open MPI 4.x: MPI_Finalize skips its job-wide fence.  Measured
 * on 4.1.4 with --enable-recovery: after a rank was SIGKILLed, the fence of
 * the survivors' MPI_Finalize never completed in 3 of 16 runs (mpirun's
 * runtime loses track of it), so the job hung although every rank was
 * done; with the fence skipped, 0 of 16.  It also lets the ranks of a lost
 * group exit at once instead of waiting for the whole job.  Nothing in
 * mode B needs the fence: the groups finish their MPI traffic before they
 * finalize, and a group's end is announced to the lighthouse.  Open MPI
 * 5.0.10 under mpirun --with-ft ulfm: the fence never completed once a rank
 * was SIGKILLed (every survivor waited in ompi_mpi_finalize for good); its
 * MPI_Finalize first shrinks the world (an agreement of the live ranks, so
 * a lost group's ranks wait there until the others finalize too). */
static void finalize_without_fence(void)
{
#ifdef MODEB_HAVE_ASYNC_FINALIZE
    if (&ompi_async_mpi_finalize != NULL)
        ompi_async_mpi_finalize = true;
#endif
}

/* A group rank waiting for its manager's quorum broadcast gives it
 * this much longer than the manager's own deadlines add up to, so that
 * only a dead manager makes the group lost. */
#define MODEB_SLACK_MS 1000

/* How often the lighthouse rank looks whether every group is done. */
#define MODEB_CHECK_MS 100
/* A group is gone after this many heartbeat timeouts without one. */
#define MODEB_GONE_FACTOR 2

/* Whether a world of world_size ranks fits groups of group_size plus one
 * lighthouse rank; if not, writes a message naming FTMPI_GROUP_SIZE and the
 * world size into err. */
static int fti_modeb_check_size(int group_size, int world_size, char *err, size_t errlen)
{
    if (group_size >= 1 && world_size >= group_size + 1 && (world_size - 1) % group_size == 0)
        return FT_SUCCESS;
    int k = world_size > 1 && group_size >= 1 ? (world_size - 1) / group_size : 0;
    if (k < 1)
        k = 1;
    snprintf(err, errlen,
             "FTMPI_GROUP_SIZE=%d does not fit a world of %d rank%s: mode B needs k * %d + 1 "
             "ranks (k groups of %d and one lighthouse rank), e.g. mpirun -np %d or -np %d",
             group_size, world_size, world_size == 1 ? "" : "s", group_size, group_size,
             k * group_size + 1,
             (k + 1) * group_size + 1);
    return FT_ERR_CONFIG;
}

void fti_modeb_replica_id(const char *prefix, int k, int n, char *buf, size_t len)
{
    int width = 1;
    for (int m = n - 1; m >= 10; m /= 10)
        width++;
    if (prefix != NULL && prefix[0] != '\0')
        snprintf(buf, len, "%s-g%0*d", prefix, width, k);
    else
        snprintf(buf, len, "g%0*d", width, k);
}

/* ---- the lighthouse rank ---------------------------------------------- */

enum { GROUP_WAIT, GROUP_LIVE, GROUP_DONE };

struct serve {
    struct event_base *base;
    fti_lighthouse_h lh;
    int n, group_size;
    char (*ids)[FTI_REPLICA_ID_SIZE];
    int *state;             /* GROUP_* */
    int64_t start_ms;
    int64_t gone_after_ms;  /* silent this long: gone */
    int64_t never_seen_ms;  /* never heard of this long after the start: gone */
};

/* Under ULFM: group i is silent long enough to be gone; its ranks that
 * are still there are stopped or hung, and every rank's MPI_Finalize would
 * wait for them (mode_b.h): they are ended.  A rank MPI knows dead is
 * ended again, which changes nothing. */
static void end_group(const struct serve *s, int i, int64_t age)
{
    char why[96];
    snprintf(why, sizeof(why), "(group %s) sent the lighthouse no heartbeat for %" PRId64 " ms",
             s->ids[i], age);
    for (int g = 0; g < s->group_size; g++)
        fti_ulfm_end_rank(i * s->group_size + g, why);
}

static void check_cb(evutil_socket_t fd, short what, void *arg)
{
    struct serve *s = arg;
    int64_t now = fti_now_ms();
    int open = 0, finalized = 0;
    (void)fd;
    (void)what;
    for (int i = 0; i < s->n; i++) {
        if (s->state[i] == GROUP_DONE) {
            finalized += fti_lighthouse_group_status(s->lh, s->ids[i], NULL) ==
                         FTI_LH_GROUP_FINALIZED;
            continue;
        }
        int64_t age = -1;
        fti_lh_group_status_t st = fti_lighthouse_group_status(s->lh, s->ids[i], &age);
        const char *why = NULL;
        char buf[96];
        switch (st) {
        case FTI_LH_GROUP_FINALIZED:
            why = "finalized";
            finalized++;
            break;
        case FTI_LH_GROUP_LIVE:
            s->state[i] = GROUP_LIVE;
            break;
        case FTI_LH_GROUP_SILENT:
            s->state[i] = GROUP_LIVE;
            if (age >= s->gone_after_ms) {
                snprintf(buf, sizeof(buf), "gone: no heartbeat for %" PRId64 " ms", age);
                why = buf;
            }
            break;
        case FTI_LH_GROUP_UNKNOWN:
            if (s->state[i] == GROUP_LIVE)
                why = "gone: forgotten by the lighthouse";
            else if (now - s->start_ms >= s->never_seen_ms)
                why = "gone: never heard of";
            break;
        }
        if (why != NULL) {
            s->state[i] = GROUP_DONE;
            FTI_INFO("mode B: group %s %s", s->ids[i], why);
            if (st == FTI_LH_GROUP_SILENT && fti_ulfm_active())
                end_group(s, i, age);
        } else {
            open++;
        }
    }
    if (open == 0) {
        FTI_INFO("mode B: every group is done (%d of %d finalized): the lighthouse rank ends",
                 finalized, s->n);
        event_base_loopbreak(s->base);
    }
}

/* Serves until every group is done.  Frees lh and base. */
static void serve(const fti_config_t *cfg, const fti_modeb_t *mb, struct event_base *base,
                  fti_lighthouse_h lh)
{
    struct serve s = {
        .base = base,
        .lh = lh,
        .n = mb->n_groups,
        .group_size = mb->group_size,
        .start_ms = fti_now_ms(),
        .gone_after_ms = (int64_t)MODEB_GONE_FACTOR * cfg->lh_heartbeat_timeout_ms,
    };
    s.never_seen_ms = FTI_MAX(s.gone_after_ms, (int64_t)cfg->lh_join_timeout_ms) +
                      cfg->connect_timeout_ms;
    s.ids = calloc((size_t)s.n, sizeof(*s.ids));
    s.state = calloc((size_t)s.n, sizeof(*s.state));
    struct event *ev = event_new(base, -1, EV_PERSIST, check_cb, &s);
    struct timeval tv = {0, MODEB_CHECK_MS * 1000};
    if (s.ids == NULL || s.state == NULL || ev == NULL || event_add(ev, &tv) != 0) {
        FTI_ERROR("mode B: the lighthouse rank cannot set up its check (out of memory); it "
                  "serves until the job ends");
        if (ev)
            event_free(ev);
        ev = NULL;
    }
    for (int i = 0; ev != NULL && i < s.n; i++) {
        fti_modeb_replica_id(cfg->replica_id, i, s.n, s.ids[i], sizeof(s.ids[i]));
        /* the first quorum waits for every group (up to the join timeout) */
        (void)fti_lighthouse_expect_group(lh, s.ids[i]);
    }
    event_base_dispatch(base);
    if (ev)
        event_free(ev);
    free(s.ids);
    free(s.state);
    fti_lighthouse_destroy(lh);
    event_base_free(base);
}

/* Starts the lighthouse on the last rank; *lh_p and *base_p on success. */
static int lighthouse_start(const fti_config_t *cfg, const char *bind_host, int n_groups, struct event_base **base_p,
                            fti_lighthouse_h *lh_p, char *addr, size_t addr_len)
{
    fti_lighthouse_opts_t o;
    fti_mode_lighthouse_opts(cfg, bind_host, &o);
    struct event_base *base = event_base_new();
    if (base == NULL) {
        FTI_ERROR("mode B: event_base_new failed");
        return FT_ERR_SYSTEM;
    }
    fti_lighthouse_h lh = NULL;
    int rc = fti_lighthouse_create(base, &o, &lh);
    if (rc != FT_SUCCESS) {
        event_base_free(base);
        return rc;
    }
    if (fti_strlcpy(addr, fti_lighthouse_address(lh), addr_len) != 0) {
        FTI_ERROR("mode B: the lighthouse's address %s is too long", fti_lighthouse_address(lh));
        fti_lighthouse_destroy(lh);
        event_base_free(base);
        return FT_ERR_CONFIG;
    }
    FTI_INFO("mode B: lighthouse on %s for %d groups (min replicas %d, join timeout %d ms, "
             "heartbeat timeout %d ms)",
             addr, n_groups, cfg->min_replicas, cfg->lh_join_timeout_ms,
             cfg->lh_heartbeat_timeout_ms);
    *base_p = base;
    *lh_p = lh;
    return FT_SUCCESS;
}

/* What the lighthouse rank broadcasts. */
struct lh_hello {
    int32_t status;
    char addr[FTI_ADDRESS_SIZE];
};

/* The communicator of this rank's initial slice (the same group rank in
 * every group), made now while every rank is alive and registered with the
 * mpi backend's ctx for its native path (mpi_backend.h).  A collective over
 * the world: every rank calls it, the lighthouse rank with MPI_UNDEFINED.
 * Never made later: a dead member would hang the creation. */
static int modeb_initial_slice(fti_modeb_t *mb, bool is_lh)
{
    int g = is_lh ? 0 : mb->world_rank - mb->first_world_rank;
    MPI_Comm comm = MPI_COMM_NULL;
    if (MPI_Comm_split(MPI_COMM_WORLD, is_lh ? MPI_UNDEFINED : g, mb->world_rank, &comm) !=
        MPI_SUCCESS) {
        FTI_ERROR("mode B: MPI_Comm_split of the world into the initial slices failed");
        return FT_ERR_MPI;
    }
    if (is_lh || mb->mpi == NULL) {
        if (comm != MPI_COMM_NULL)
            MPI_Comm_free(&comm);
        return FT_SUCCESS;
    }
    int *ranks = malloc((size_t)mb->n_groups * sizeof(*ranks));
    if (ranks == NULL) {
        MPI_Comm_free(&comm);
        return FT_ERR_NO_MEMORY;
    }
    for (int k = 0; k < mb->n_groups; k++)
        ranks[k] = k * mb->group_size + g;
    int rc = fti_mpi_ctx_add_fast(mb->mpi, comm, ranks, mb->n_groups);
    if (rc != FT_SUCCESS)
        MPI_Comm_free(&comm);
    free(ranks);
    return rc;
}

/* The group's communicator (the application's too: ftmpi_group_comm)
 * returns errors: under ULFM a dead partner is MPIX_ERR_PROC_FAILED there,
 * which MPI_ERRORS_ARE_FATAL would turn into this rank's end; and its
 * goodbye's duplicate (mode_b.h).  Collective over the group. */
static int group_comms(fti_modeb_t *mb)
{
    if (mb->split != MPI_COMM_NULL)
        MPI_Comm_set_errhandler(mb->split, MPI_ERRORS_RETURN);
    return fti_modeb_bye_create(mb);
}

int fti_modeb_init(const fti_config_t *cfg, const char *bind_host, fti_modeb_t *mb)
{
    char err[256];
    memset(mb, 0, sizeof(*mb));
    mb->split = MPI_COMM_NULL;
    mb->bye = MPI_COMM_NULL;
    MPI_Comm_rank(MPI_COMM_WORLD, &mb->world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &mb->world_size);
    mb->group_size = cfg->group_size;
    if (fti_modeb_check_size(cfg->group_size, mb->world_size, err, sizeof(err)) != FT_SUCCESS) {
        if (mb->world_rank == 0)
            FTI_ERROR("%s", err);
        return FT_ERR_CONFIG;
    }
    /* whether the survivors of a dead rank can go on here: the same answer
     * on every rank, before any collective */
    int frc = fti_launcher_modeb_check(mb->world_rank, cfg->modeb_allow_no_recovery != 0);
    if (frc != FT_SUCCESS)
        return frc;
    fti_launcher_modeb_sigpipe(mb->world_rank);
    mb->n_groups = (mb->world_size - 1) / mb->group_size;
    int lh_rank = mb->world_size - 1;
    bool is_lh = mb->world_rank == lh_rank;
    mb->group_index = is_lh ? -1 : mb->world_rank / mb->group_size;
    mb->first_world_rank = is_lh ? lh_rank : mb->group_index * mb->group_size;

    /* every rank, whatever happens, makes the same collectives */
    int rc = FT_SUCCESS;
    if (MPI_Comm_split(MPI_COMM_WORLD, is_lh ? MPI_UNDEFINED : mb->group_index, mb->world_rank,
                       &mb->split) != MPI_SUCCESS) {
        FTI_ERROR("mode B: MPI_Comm_split of the world failed");
        rc = FT_ERR_MPI;
    }
    if (rc == FT_SUCCESS)
        rc = group_comms(mb);
    int crc = fti_mpi_ctx_create(MPI_COMM_WORLD, &mb->mpi);
    if (crc == FT_SUCCESS)
        fti_mpi_ctx_set_zero_copy(mb->mpi, cfg->modeb_zero_copy);
    if (rc == FT_SUCCESS)
        rc = crc;
    crc = modeb_initial_slice(mb, is_lh);
    if (rc == FT_SUCCESS)
        rc = crc;

    struct lh_hello hello;
    memset(&hello, 0, sizeof(hello));
    struct event_base *base = NULL;
    fti_lighthouse_h lh = NULL;
    if (is_lh) {
        fti_log_set_replica_id("lighthouse");
        hello.status = rc;
        if (rc == FT_SUCCESS)
            hello.status = lighthouse_start(cfg, bind_host, mb->n_groups, &base, &lh, hello.addr,
                                            sizeof(hello.addr));
    }
    if (MPI_Bcast(&hello, (int)sizeof(hello), MPI_BYTE, lh_rank, MPI_COMM_WORLD) != MPI_SUCCESS) {
        FTI_ERROR("mode B: MPI_Bcast of the lighthouse's address failed");
        hello.status = FT_ERR_MPI;
    }
    hello.addr[sizeof(hello.addr) - 1] = '\0';
    if (rc == FT_SUCCESS)
        rc = hello.status;
    if (rc != FT_SUCCESS) {
        if (lh != NULL) {
            fti_lighthouse_destroy(lh);
            event_base_free(base);
        }
        fti_modeb_release(mb, 0);
        return rc;
    }
    finalize_without_fence();
    if (is_lh) {
        serve(cfg, mb, base, lh);
        fti_modeb_release(mb, 0);
        PMPI_Finalize(); /* the library's own, not the application's: no interposer's */
        exit(0);
    }
    fti_strlcpy(mb->lighthouse, hello.addr, sizeof(mb->lighthouse));
    return FT_SUCCESS;
}

void fti_modeb_release(fti_modeb_t *mb, int lost)
{
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!lost && !finalized && mb->split != MPI_COMM_NULL)
        MPI_Comm_free(&mb->split);
    if (!lost && !finalized && mb->bye != MPI_COMM_NULL)
        MPI_Comm_free(&mb->bye);
    mb->split = MPI_COMM_NULL;
    mb->bye = MPI_COMM_NULL;
    fti_mpi_ctx_destroy(mb->mpi);
    mb->mpi = NULL;
}

/* ---- the mode table's entry ---------------------------------------------- */

static int b_resolve(const fti_config_t *cfg, fti_world_t *w)
{
    return fti_mode_backend(cfg, true, &w->backend);
}

static int b_world(const fti_config_t *cfg, fti_world_t *w)
{
    int rc = fti_modeb_init(cfg, w->bind_host, &w->mb);
    if (rc != FT_SUCCESS)
        return rc;
    fti_strlcpy(w->lighthouse, w->mb.lighthouse, sizeof(w->lighthouse));
    w->app_comm = w->mb.split;
    w->member_data_len = fti_results_world_rank_data(w->mb.first_world_rank, w->member_data,
                                                     sizeof(w->member_data));
    return FT_SUCCESS;
}

static MPI_Comm b_group_comm(const fti_world_t *w)
{
    return w->mb.split;
}

static void b_replica_id(const fti_config_t *cfg, const fti_world_t *w, char *buf, size_t len)
{
    fti_modeb_replica_id(cfg->replica_id, w->mb.group_index, w->mb.n_groups, buf, len);
}

/* Nothing ends the group when one of its ranks dies: a rank of it is dead
 * or hopelessly late, so the group is lost. */
static int b_group_failure(int rc)
{
    (void)rc;
    return FT_ERR_GROUP_LOST;
}

/* Under ULFM: the group's communicator is revoked, so that a partner
 * waiting on it (the application's own group operations included) fails
 * now; the failed members MPI knows of are logged.  No shrink: Open MPI
 * 5.0 has only the blocking MPIX_Comm_shrink, which waits for every member
 * not known dead, a stopped one for good (its failure detector is off by
 * default), and the lost group makes no new communicator anyway. */
static void b_group_lost(fti_world_t *w)
{
    if (!fti_ulfm_active() || w->mb.split == MPI_COMM_NULL)
        return;
    (void)fti_ulfm_revoke(w->mb.split);
    int n = 0;
    if (fti_ulfm_failed(w->mb.split, &n) == FT_SUCCESS)
        FTI_INFO("mode B: the group's communicators are revoked (MPIX_Comm_revoke); MPI knows "
                 "%d of its %d ranks failed",
                 n, w->mb.group_size);
}

static void b_log_start(const fti_world_t *w, int group_rank, int group_size, const char *server)
{
    FTI_INFO("FT_Init: mode B, replica %s (world ranks %d-%d of %d), group rank %d of %d, "
             "server %s, lighthouse %s (world rank %d), backend %s",
             w->replica_id, w->mb.first_world_rank, w->mb.first_world_rank + group_size - 1,
             w->mb.world_size, group_rank, group_size, server, w->lighthouse,
             w->mb.world_size - 1, w->backend->name);
}

/* The group's goodbye (mode_b.h, under ULFM): a partner gets the longest a
 * live one may still need to reach FT_Finalize after this rank (a quorum
 * round's deadline and a commit's, which also make a group lost) before it
 * is judged stopped or hung and ended. */
static void b_release(const fti_config_t *cfg, fti_world_t *w, bool finalized)
{
    if (!finalized)
        fti_modeb_bye(&w->mb, cfg->quorum_timeout_ms + 4 * cfg->timeout_ms);
    fti_modeb_release(&w->mb, w->lost);
}

const struct fti_mode fti_mode_b = {
    .name = "B",
    .resolve = b_resolve,
    .world = b_world,
    .group_comm = b_group_comm,
    .replica_id = b_replica_id,
    .group_failure = b_group_failure,
    .group_lost = b_group_lost,
    .log_start = b_log_start,
    .release = b_release,
    .every_rank_leaves = true,
    .full_members = true,
    .auto_device = false,
    .vote_waits_for_heal = true,
    .quorum_bcast_slack_ms = MODEB_SLACK_MS,
    .direct_heal_when_fresh = false,
};
