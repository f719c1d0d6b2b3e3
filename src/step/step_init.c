/*
 * step_init.c - setting the step's state up at FT_Init and tearing it down
 * at FT_Finalize (see step.h).  The blocking MPI collectives here run only
 * while every rank of the job is alive.
 */
#include "step/step.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/agent_mark.h"
#include "base/auth.h"
#include "step/device.h"
#include "ftmpi.h"
#include "control/lighthouse_client.h"
#include "comm/launcher.h"
#include "base/log.h"
#include "base/net.h"
#include "base/util.h"
#include "ftmpi_config.h" /* FTMPI_HAVE_UCX */
#ifdef FTMPI_HAVE_UCX
#include "comm/ucx.h"
#include "comm/ucx_heal.h"

static const fti_heal_rma_t ucx_heal_rma = {"ucx",
                                            fti_ucx_heal_expose,
                                            fti_ucx_heal_release,
                                            fti_ucx_heal_connect,
                                            fti_ucx_heal_get,
                                            fti_ucx_heal_disconnect};
#endif

/* FTMPI_HEAL_TRANSPORT: the one-sided transport this rank heals and serves
 * over (DESIGN section 7.1), NULL: tcp.  auto takes ucx when this rank's
 * backend is ucx (named, or auto with FTMPI_UCX=1), so that a rank on
 * another backend never loads UCX for a heal. */
static const fti_heal_rma_t *heal_rma(const fti_config_t *cfg)
{
    bool ucx = cfg->heal_transport == FTI_HEAL_TRANSPORT_UCX ||
               (cfg->heal_transport == FTI_HEAL_TRANSPORT_AUTO &&
                (strcmp(cfg->backend, "ucx") == 0 || (strcmp(cfg->backend, "auto") == 0 && cfg->ucx)));
    if (!ucx)
        return NULL;
#ifdef FTMPI_HAVE_UCX
    char why[256];
    if (fti_ucx_available(cfg->timeout_ms, why, sizeof(why)) == FT_SUCCESS)
        return &ucx_heal_rma;
    FTI_WARN("heal over ucx: UCX is not usable (%s); heals go over tcp", why);
#else
    if (cfg->heal_transport == FTI_HEAL_TRANSPORT_UCX)
        FTI_WARN("FTMPI_HEAL_TRANSPORT=ucx: this build has no UCX; heals go over tcp");
#endif
    return NULL;
}

/* How long telling the lighthouse that the group leaves may take: it must
 * not hold FT_Finalize up for long when the lighthouse is gone. */
#define LEAVE_TIMEOUT_MAX_MS 2000

/* Whether host (FTMPI_BIND_HOST) is a loopback address. */
static bool host_is_loopback(const char *host)
{
    return strncmp(host, "127.", 4) == 0 || strcmp(host, "localhost") == 0 ||
           strcmp(host, "::1") == 0 || strcmp(host, "[::1]") == 0;
}

/* Without a job secret, servers on a non-loopback address serve every
 * rank's state, store and kill to the network: allowed (multi-node jobs
 * on a private network), but said loudly, once per process. */
static void warn_exposed(const fti_config_t *cfg, const char *bind_host)
{
    if (fti_config_key(cfg) != NULL || host_is_loopback(bind_host))
        return;
    FTI_WARN("FTMPI_BIND_HOST=%s without FTMPI_TOKEN_FILE: this rank's servers (state, "
             "store, kill) listen on a network address WITHOUT authentication; anyone who "
             "reaches it can read or replace the training state. Give the job a secret "
             "(FTMPI_TOKEN_FILE, the lighthouse's --token-file) or run on a private network",
             bind_host);
}

/* The FTMPI_* table of a process whose FT_Init loads it (the drop-in
 * passes the one it loaded); read-only once loaded. */
static fti_config_t loaded;

/* The configuration (loaded now unless given), the world's defaults, the
 * mode (picked unless given) and the backend.  Every rank runs it; the
 * caller agrees on the outcome. */
static int init_config(struct fti_step *s, const struct fti_mode *mode, const fti_config_t *cfg)
{
    if (cfg == NULL) {
        char err[512] = "";
        if (fti_config_load(&loaded, err, sizeof(err)) != FT_SUCCESS) {
            FTI_ERROR("%s", err);
            return FT_ERR_CONFIG;
        }
        cfg = &loaded;
    }
    s->cfg = cfg;
    fti_log_init("ftmpi", cfg->log_level);
    (void)fti_config_warn_unknown();
    /* multi-node jobs: "hostname", each rank binds and advertises its node's name */
    char host[sizeof(cfg->bind_host)];
    int rc = fti_bind_host_resolve(cfg->bind_host, host, sizeof(host));
    if (rc != FT_SUCCESS)
        return rc;
    fti_world_defaults(cfg, host, &s->world);
    warn_exposed(cfg, host);
    if (mode == NULL)
        mode = fti_mode_pick(cfg);
    rc = mode->resolve(cfg, &s->world);
    if (rc == FT_SUCCESS)
        s->mode = mode;
    if (rc == FT_SUCCESS && (s->world.backend->needs & FTI_COMM_NEEDS_DEVICE)) {
        char why[256] = "";
        if (fti_device_usable(why, sizeof(why)) != FT_SUCCESS) {
            FTI_ERROR("FTMPI_BACKEND=%s cannot run on this node: %s (it reduces CUDA device "
                      "memory with NCCL; use FTMPI_BACKEND=tcp here, or run where a GPU is)",
                      s->world.backend->name, why);
            return FT_ERR_CONFIG;
        }
    }
    FTI_DEBUG("FT_Init: mode %s; the FTMPI_* table was loaded %d time(s) in this process",
              mode->name, fti_config_load_count());
    return rc;
}

/* The smallest (worst) code over comm; every rank learns it.  A blocking
 * collective: FT_Init only, while every rank is alive. */
static int agree_on(MPI_Comm comm, int rc)
{
    int all = rc;
    if (MPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MIN, comm) != MPI_SUCCESS)
        return FT_ERR_MPI;
    return rc != FT_SUCCESS ? rc : all;
}

/* The settings that shape the job must be the same on every world rank
 * (mpirun -x passes them to all). */
static int check_uniform(const struct fti_step *s)
{
    /* the backend's name by its checksum, 31 bits (a difference shows in MIN vs MAX) */
    int backend = (int)(fti_checksum64(s->cfg->backend, strlen(s->cfg->backend), 0) & 0x7fffffff);
    int v[5] = {s->cfg->group_size, s->cfg->lighthouse[0] == '\0', backend, s->cfg->world_mode,
                s->cfg->min_replicas};
    int lo[5], hi[5];
    if (MPI_Allreduce(v, lo, 5, MPI_INT, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS ||
        MPI_Allreduce(v, hi, 5, MPI_INT, MPI_MAX, MPI_COMM_WORLD) != MPI_SUCCESS)
        return FT_ERR_MPI;
    if (memcmp(lo, hi, sizeof(lo)) != 0) {
        int wr = 0;
        MPI_Comm_rank(MPI_COMM_WORLD, &wr);
        if (wr == 0)
            FTI_ERROR("FTMPI_GROUP_SIZE, FTMPI_LIGHTHOUSE, FTMPI_BACKEND, FTMPI_WORLD_SIZE_MODE "
                      "and FTMPI_MIN_REPLICAS must be the same on every rank (pass them with "
                      "mpirun -x)");
        return FT_ERR_CONFIG;
    }
    return FT_SUCCESS;
}

/* The thread level FT_Init needs.  The library's own threads (RPC server,
 * heartbeats, heal checksums, the lighthouse's) never call MPI; the
 * progress thread (progress.c) calls MPI only when MPI granted
 * MPI_THREAD_MULTIPLE, otherwise every MPI call is made by the thread that
 * makes the FT_ calls.  So: from the
 * thread that initialised MPI, any level (MPI_THREAD_SINGLE included:
 * Open MPI and MPICH treat it as FUNNELED, which states it exactly); from
 * another thread, MPI_THREAD_SERIALIZED at least. */
static int check_thread_level(void)
{
    int provided = MPI_THREAD_SINGLE, is_main = 1;
    if (MPI_Query_thread(&provided) != MPI_SUCCESS || MPI_Is_thread_main(&is_main) != MPI_SUCCESS)
        return FT_ERR_MPI;
    if (!is_main && provided < MPI_THREAD_SERIALIZED) {
        FTI_ERROR("FT_Init: called from a thread other than the one that initialised MPI, "
                  "which granted %s: the FT_ calls make MPI calls, so make them from that "
                  "thread, or initialise MPI with MPI_Init_thread(MPI_THREAD_SERIALIZED)",
                  provided == MPI_THREAD_SINGLE ? "MPI_THREAD_SINGLE" : "MPI_THREAD_FUNNELED");
        return FT_ERR_CONFIG;
    }
    if (provided == MPI_THREAD_SINGLE)
        FTI_DEBUG("FT_Init: MPI granted MPI_THREAD_SINGLE; the library's threads never call "
                  "MPI (MPI_THREAD_FUNNELED says so exactly)");
    return FT_SUCCESS;
}

/* The job-wide part: configuration agreed on by every world rank, then
 * mode B's split (on the lighthouse rank it does not return) or mode A's
 * duplicate of the world for the application. */
static int init_world(struct fti_step *s, const struct fti_mode *mode, const fti_config_t *cfg)
{
    int cfg_rc = init_config(s, mode, cfg);
    if (cfg_rc == FT_SUCCESS) {
        int ws = 0;
        MPI_Comm_size(MPI_COMM_WORLD, &ws);
        cfg_rc = fti_launcher_check(ws);
    }
    if (cfg_rc == FT_SUCCESS)
        cfg_rc = check_thread_level();
    int rc = agree_on(MPI_COMM_WORLD, cfg_rc);
    if (rc == FT_SUCCESS)
        rc = check_uniform(s);
    if (rc != FT_SUCCESS)
        return rc;
    return s->mode->world(s->cfg, &s->world);
}

static int init_replica_id(struct fti_step *s)
{
    char id[FTI_REPLICA_ID_SIZE] = "";
    if (s->mode->replica_id != NULL) {
        s->mode->replica_id(s->cfg, &s->world, id, sizeof(id));
    } else if (s->cfg->replica_id[0] != '\0') {
        fti_strlcpy(id, s->cfg->replica_id, sizeof(id));
    } else if (s->group_rank == 0) {
        char host[FTI_HOST_SIZE] = "host";
        gethostname(host, sizeof(host));
        host[sizeof(host) - 1] = '\0';
        /* the host name is cut so that '-' and any pid still fit */
        snprintf(id, sizeof(id), "%.*s-%ld", (int)sizeof(id) - 17, host, (long)getpid());
    }
    /* blocking MPI is fine at init: the group is whole */
    if (MPI_Bcast(id, (int)sizeof(id), MPI_CHAR, 0, fti_group_comm(s->group)) != MPI_SUCCESS)
        return FT_ERR_MPI;
    id[sizeof(id) - 1] = '\0';
    fti_strlcpy(s->world.replica_id, id, sizeof(s->world.replica_id));
    fti_log_set_replica_id(id);
    return FT_SUCCESS;
}

/* Every rank's server address, so the manager can name the heal server
 * of each group rank. */
static int init_peers(struct fti_step *s)
{
    char *all = calloc((size_t)s->group_size, FTI_ADDRESS_SIZE);
    const char **ptrs = calloc((size_t)s->group_size, sizeof(*ptrs));
    int rc = FT_SUCCESS;
    if (all == NULL || ptrs == NULL)
        rc = FT_ERR_NO_MEMORY;
    rc = agree_on(fti_group_comm(s->group), rc);
    if (rc == FT_SUCCESS &&
        MPI_Allgather(s->my_addr, FTI_ADDRESS_SIZE, MPI_CHAR, all, FTI_ADDRESS_SIZE, MPI_CHAR,
                      fti_group_comm(s->group)) != MPI_SUCCESS)
        rc = FT_ERR_MPI;
    if (rc == FT_SUCCESS && s->group_rank == 0) {
        for (int i = 0; i < s->group_size; i++) {
            all[(size_t)i * FTI_ADDRESS_SIZE + FTI_ADDRESS_SIZE - 1] = '\0';
            ptrs[i] = all + (size_t)i * FTI_ADDRESS_SIZE;
        }
        rc = fti_rank_server_set_peers(s->server, ptrs, s->group_size);
    }
    free(ptrs);
    free(all);
    return rc;
}

/* FT_AVG as an MPI handle: sums, so that MPI accepts it; FT_Allreduce
 * divides by the participants itself. */
static void avg_kernel(void *in, void *inout, int *len, MPI_Datatype *dt)
{
    if (*dt == MPI_FLOAT) {
        for (int i = 0; i < *len; i++)
            ((float *)inout)[i] += ((const float *)in)[i];
    } else if (*dt == MPI_DOUBLE) {
        for (int i = 0; i < *len; i++)
            ((double *)inout)[i] += ((const double *)in)[i];
    }
}

/* The rank's own services: healing, the event log, the rank server. */
static int init_services(struct fti_step *s)
{
    int rc = fti_heal_create(&s->heal);
    if (rc == FT_SUCCESS) {
        s->heal_rma = heal_rma(s->cfg);
        fti_heal_set_rma(s->heal, s->heal_rma);
    }
    if (rc == FT_SUCCESS && s->cfg->event_log[0] != '\0')
        rc = fti_event_log_open(s->cfg->event_log, s->world.replica_id, s->group_rank, &s->elog);
    if (rc == FT_SUCCESS)
        rc = fti_ckpt_create(s->cfg, s->group, s->world.replica_id, s->elog, &s->ckpt);
    if (rc == FT_SUCCESS)
        rc = fti_rank_server_start(s->world.bind_host, (size_t)s->cfg->max_frame_bytes,
                                   fti_config_key(s->cfg), s->group_rank == 0, fti_heal_rpc,
                                   s->heal, &s->server);
    if (rc == FT_SUCCESS)
        fti_strlcpy(s->my_addr, fti_rank_server_address(s->server), sizeof(s->my_addr));
    return rc;
}

int fti_step_setup(struct fti_step *s, const struct fti_mode *mode, const fti_config_t *cfg)
{
    /* every world rank takes part, whatever its config */
    s->fresh = true;
    s->world.app_comm = MPI_COMM_NULL;
    s->world.mb.split = MPI_COMM_NULL;
    int rc = init_world(s, mode, cfg);
    if (rc == FT_SUCCESS)
        rc = fti_group_create(s->mode->group_comm(&s->world), &s->group);
    if (rc != FT_SUCCESS)
        return rc;
    s->group_rank = fti_group_rank(s->group);
    s->group_size = fti_group_size(s->group);
    fti_log_ctx.group_rank = s->group_rank;
    rc = init_replica_id(s);
    if (rc == FT_SUCCESS)
        rc = init_services(s);
    rc = agree_on(fti_group_comm(s->group), rc);
    if (rc == FT_SUCCESS)
        rc = init_peers(s);
    /* every rank learns whether rank 0 made its manager */
    int mrc = rc;
    if (rc == FT_SUCCESS && s->group_rank == 0)
        mrc = fti_manager_create(s->world.lighthouse, fti_config_key(s->cfg), s->world.replica_id,
                                 s->cfg->connect_timeout_ms, s->cfg->heartbeat_ms, &s->manager);
    if (mrc == FT_SUCCESS && s->group_rank == 0)
        fti_manager_report(s->manager, s->cfg->restart_count, 0, 0);
    /* the event log's members, and the replica id of a failed peer in
     * FT_Allreduce's error line (up to 64 members) */
    if (mrc == FT_SUCCESS && s->group_rank == 0)
        fti_manager_want_member_ids(s->manager);
    if (MPI_Bcast(&mrc, 1, MPI_INT, 0, fti_group_comm(s->group)) != MPI_SUCCESS)
        mrc = FT_ERR_MPI;
    rc = rc != FT_SUCCESS ? rc : mrc;
    if (rc == FT_SUCCESS && MPI_Op_create(avg_kernel, 1, &ftmpi_op_avg) != MPI_SUCCESS) {
        FTI_ERROR("FT_Init: MPI_Op_create failed");
        rc = FT_ERR_MPI;
    }
    return agree_on(fti_group_comm(s->group), rc);
}

void fti_step_teardown(struct fti_step *s)
{
    fti_manager_destroy(s->manager);
    s->manager = NULL;
    fti_rank_server_stop(s->server); /* no handler runs after this */
    s->server = NULL;
    fti_comm_destroy(s->slice);
    s->slice = NULL;
    fti_ckpt_destroy(s->ckpt); /* after the writer's queued jobs */
    s->ckpt = NULL;
    fti_heal_destroy(s->heal);
    s->heal = NULL;
    fti_event_log_close(s->elog);
    s->elog = NULL;
    fti_members_free(&s->prev_members);
    fti_members_free(&s->members);
    if (s->world.lost)
        fti_group_mark_lost(s->group);
    fti_group_destroy(s->group);
    s->group = NULL;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (s->mode != NULL)
        s->mode->release(s->cfg, &s->world, finalized != 0);
    s->world.app_comm = MPI_COMM_NULL;
    if (ftmpi_op_avg != MPI_OP_NULL && !finalized)
        MPI_Op_free(&ftmpi_op_avg);
    ftmpi_op_avg = MPI_OP_NULL;
    s->initialized = false;
    fti_log_ctx.step = -1;
    fti_log_ctx.quorum_id = -1;
}

void fti_step_leave(struct fti_step *s)
{
    int timeout_ms = FTI_MIN(s->cfg->connect_timeout_ms, LEAVE_TIMEOUT_MAX_MS);
    if (s->manager != NULL) {
        (void)fti_manager_leave(s->manager, timeout_ms); /* logs its failure */
        return;
    }
    if (!s->mode->every_rank_leaves || s->world.lighthouse[0] == '\0')
        return;
    fti_lighthouse_client_h c = NULL;
    int rc = fti_lighthouse_client_create(s->world.lighthouse, fti_config_key(s->cfg), timeout_ms,
                                          &c);
    if (rc == FT_SUCCESS)
        rc = fti_lighthouse_finalize(c, s->world.replica_id, timeout_ms);
    fti_lighthouse_client_destroy(c);
    if (rc != FT_SUCCESS)
        FTI_INFO("telling the lighthouse that %s leaves failed: %s", s->world.replica_id,
                 FT_Error_string(rc));
}

int fti_step_group_lost(struct fti_step *s, int why)
{
    if (!s->world.lost) {
        s->world.lost = true;
        FTI_WARN("this group lost a rank (%s): it leaves; FT calls return FT_ERR_GROUP_LOST "
                 "from now on (call FT_Finalize)",
                 FT_Error_string(why));
        /* under ULFM the partners learn it now, not at their deadlines */
        fti_group_revoke(s->group);
        if (s->mode->group_lost != NULL)
            s->mode->group_lost(&s->world);
        fti_group_mark_lost(s->group);
        fti_step_leave(s);
    }
    return FT_ERR_GROUP_LOST;
}

/* ---- ftmpi-run's rank marks (base/agent_mark.h) ------------------------- */

void fti_step_agent_mark(const struct fti_step *s)
{
    int wr = -1;
    if (s->cfg->agent_dir[0] != '\0' && MPI_Comm_rank(MPI_COMM_WORLD, &wr) != MPI_SUCCESS)
        wr = -1;
    fti_agent_mark(s->cfg->agent_dir, wr);
}

void fti_step_agent_unmark(const struct fti_step *s)
{
    fti_agent_unmark(s->cfg->agent_dir);
}
