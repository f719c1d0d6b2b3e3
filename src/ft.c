/*
 * ft.c - the public FT_* calls of the step protocol and the process-global
 * state behind them (DESIGN sections 2 and 4-8).
 *
 * One replica group = the ranks of the group communicator (mode A:
 * MPI_COMM_WORLD; mode B: its split into groups of FTMPI_GROUP_SIZE ranks,
 * modeb.h; duplicated either way).  Group rank 0 is the manager: it asks
 * the lighthouse for each step's quorum and broadcasts the reply to the
 * group; every rank then takes its own results (results.h: mode A asks for
 * compact replies, where the lighthouse computed them for each group rank;
 * mode B gets the member list and computes them), rebuilds its slice when
 * the quorum id changed and heals when behind.
 *
 * Mode B: nothing ends a group whose rank died, so an intra-group
 * operation that fails (its deadline passed: a rank is dead or hopelessly
 * late) means the group is lost: this rank tells the lighthouse that the
 * group leaves, and every later FT_ call returns FT_ERR_GROUP_LOST;
 * FT_Finalize makes no MPI call on the group's communicators.
 *
 * Spare groups (FTMPI_WORLD_SIZE_MODE=fixed_with_spares): the quorum's
 * first FTMPI_MIN_REPLICAS members participate (results.h); a spare takes
 * part in every allreduce with the op's identity element instead of its
 * data, and FT_AVG divides by the participants.
 *
 * Errors of a step are latched: the first failure of FT_Quorum,
 * FT_Allreduce or the commit vote is kept in st.latched until FT_Commit,
 * later collectives return FT_ERR_ABORTED at once and the step does not
 * commit.
 *
 * Threads: every FT_ call runs on the application's thread (ftmpi.h), so
 * `st` needs no lock; the background threads (rank server, heartbeats)
 * keep their own state.
 */
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftmpi.h"
#include "comm/comm.h"
#include "comm/mpi_backend.h"
#include "ckpt.h"
#include "dtype.h"
#include "event_log.h"
#include "group.h"
#include "heal.h"
#include "log.h"
#include "lighthouse_client.h"
#include "manager.h"
#include "modeb.h"
#include "rank_server.h"
#include "results.h"
#include "settings.h"
#include "slice.h"
#include "util.h"

#define ADDR_LEN 128

/* Mode B: a group rank waiting for its manager's quorum broadcast gives it
 * this much longer than the manager's own deadlines add up to, so that
 * only a dead manager makes the group lost. */
#define MODEB_SLACK_MS 1000

FTMPI_EXPORT MPI_Op ftmpi_op_avg = MPI_OP_NULL;

struct ftmpi_request {
    const void *sendbuf;
    void *recvbuf;
    int count;
    MPI_Datatype datatype;
    MPI_Op op;
    FT_Comm comm;
};

static struct ft_state {
    bool initialized;
    fti_config_t cfg;
    fti_group_h group;
    int group_rank, group_size;
    char replica_id[64];
    char my_addr[ADDR_LEN];  /* this rank's RPC server */
    fti_heal_h heal;
    fti_rank_server_h server;
    fti_manager_h manager; /* group rank 0 only */
    fti_event_log_h elog;  /* NULL when FTMPI_EVENT_LOG is empty */
    fti_ckpt_h ckpt;       /* durable checkpoints (ckpt.h) */

    int64_t step;            /* committed steps */
    bool in_step;            /* between FT_Quorum and FT_Commit */
    int latched;             /* first error of the step */
    bool have_quorum;        /* res holds a quorum (the last one received) */
    bool quorum_ok;          /* this step's FT_Quorum got one */
    fti_quorum_result_t res;
    int64_t slice_quorum_id; /* quorum the slice was built for, -1 none */
    fti_comm_h slice;
    int64_t commit_failures; /* failed commits since the last quorum */
    bool killed;             /* a MANAGER_KILL reached the group */
    char **prev_members;     /* "id\naddress" of the previous quorum's members */
    size_t n_prev;

    bool mode_b;
    fti_modeb_t mb;          /* mode B only */
    int backend;             /* FTI_BACKEND_TCP or FTI_BACKEND_MPI (resolved) */
    MPI_Comm app_comm;       /* ftmpi_group_comm: mode A a dup of the world, mode B mb.split */
    bool lost;               /* mode B: this group lost a rank */
    char member_data[16];    /* mode B: QuorumMember.data (first world rank) */
    size_t member_data_len;
} st;

/* Outlives FT_Finalize (ftmpi.h: information about this process). */
static int failures_survived;

/* The communicator the group is made of.  Mode A: the whole job.  Mode B:
 * this rank's part of the split. */
static MPI_Comm group_parent(void)
{
    return st.mode_b ? st.mb.split : MPI_COMM_WORLD;
}

static void latch(int rc)
{
    if (rc != FT_SUCCESS && st.latched == FT_SUCCESS)
        st.latched = rc;
}

static void log_ctx_update(void)
{
    fti_log_ctx.step = st.step;
    fti_log_ctx.quorum_id = st.have_quorum ? st.res.quorum_id : -1;
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

static void free_prev_members(void)
{
    for (size_t i = 0; i < st.n_prev; i++)
        free(st.prev_members[i]);
    free(st.prev_members);
    st.prev_members = NULL;
    st.n_prev = 0;
}

/* How long telling the lighthouse that the group leaves may take: it must
 * not hold FT_Finalize up for long when the lighthouse is gone. */
static int leave_timeout_ms(void)
{
    return FTI_MIN(st.cfg.connect_timeout_ms, 2000);
}

/* Tells the lighthouse that this group leaves (LIGHTHOUSE_FINALIZE): the
 * manager through its client (after stopping its heartbeats), any other
 * rank through a client of its own (mode B: its manager may be the rank
 * that died). */
static void tell_lighthouse_leaving(void)
{
    if (st.manager != NULL) {
        (void)fti_manager_leave(st.manager, leave_timeout_ms());
        return;
    }
    if (!st.mode_b || st.cfg.lighthouse[0] == '\0')
        return;
    fti_lighthouse_client_h c = NULL;
    int rc = fti_lighthouse_client_create(st.cfg.lighthouse, leave_timeout_ms(), &c);
    if (rc == FT_SUCCESS)
        rc = fti_lighthouse_finalize(c, st.replica_id, leave_timeout_ms());
    fti_lighthouse_client_destroy(c);
    if (rc != FT_SUCCESS)
        FTI_INFO("telling the lighthouse that %s leaves failed: %s", st.replica_id,
                 FT_Error_string(rc));
}

/* Mode B: an intra-group operation failed, so a rank of this group is dead
 * (or hopelessly late): the group is gone as a whole. */
static int group_lost(int why)
{
    if (!st.lost) {
        st.lost = true;
        FTI_WARN("this group lost a rank (%s): it leaves; FT calls return FT_ERR_GROUP_LOST "
                 "from now on (call FT_Finalize)",
                 FT_Error_string(why));
        fti_group_mark_lost(st.group);
        tell_lighthouse_leaving();
    }
    return FT_ERR_GROUP_LOST;
}

/* Frees whatever FT_Init created (also after a failed FT_Init). */
static void teardown(void)
{
    fti_manager_destroy(st.manager);
    st.manager = NULL;
    fti_rank_server_stop(st.server); /* no handler runs after this */
    st.server = NULL;
    fti_comm_destroy(st.slice);
    st.slice = NULL;
    fti_ckpt_destroy(st.ckpt); /* after the writer's queued jobs */
    st.ckpt = NULL;
    fti_heal_destroy(st.heal);
    st.heal = NULL;
    fti_event_log_close(st.elog);
    st.elog = NULL;
    free_prev_members();
    if (st.lost)
        fti_group_mark_lost(st.group);
    fti_group_destroy(st.group);
    st.group = NULL;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (st.mode_b)
        fti_modeb_release(&st.mb, st.lost);
    else if (st.app_comm != MPI_COMM_NULL && !finalized)
        MPI_Comm_free(&st.app_comm);
    st.app_comm = MPI_COMM_NULL;
    if (ftmpi_op_avg != MPI_OP_NULL && !finalized)
        MPI_Op_free(&ftmpi_op_avg);
    ftmpi_op_avg = MPI_OP_NULL;
    st.initialized = false;
    fti_log_ctx.step = -1;
    fti_log_ctx.quorum_id = -1;
}

/* ---- FT_Init / FT_Finalize --------------------------------------------- */

/* Loads the configuration and picks the mode and the backend.  Every rank
 * runs it; the caller agrees on the outcome. */
static int init_config(void)
{
    char err[512] = "";
    int rc = fti_config_load(&st.cfg, err, sizeof(err));
    if (rc != FT_SUCCESS) {
        FTI_ERROR("%s", err);
        return FT_ERR_CONFIG;
    }
    fti_log_init("ftmpi", st.cfg.log_level);
    if (strcmp(st.cfg.bind_host, "hostname") == 0) {
        /* multi-node jobs: each rank binds and advertises its node's name */
        char host[sizeof(st.cfg.bind_host)];
        if (gethostname(host, sizeof(host)) != 0) {
            FTI_ERROR("FTMPI_BIND_HOST=hostname: gethostname: %m");
            return FT_ERR_SYSTEM;
        }
        host[sizeof(host) - 1] = '\0';
        memcpy(st.cfg.bind_host, host, sizeof(host));
    }
    st.mode_b = st.cfg.lighthouse[0] == '\0' && st.cfg.group_size > 0;
    if (st.cfg.lighthouse[0] == '\0' && !st.mode_b) {
        FTI_ERROR("FTMPI_LIGHTHOUSE is not set: mode A needs the lighthouse address host:port "
                  "(mode B, one mpirun with a lighthouse rank, needs FTMPI_GROUP_SIZE instead)");
        return FT_ERR_CONFIG;
    }
    if (!st.mode_b && st.cfg.backend == FTI_BACKEND_MPI) {
        FTI_ERROR("FTMPI_BACKEND=mpi needs mode B (one job: FTMPI_GROUP_SIZE set, "
                  "FTMPI_LIGHTHOUSE empty); mode A uses tcp");
        return FT_ERR_CONFIG;
    }
    st.backend = st.cfg.backend != FTI_BACKEND_AUTO ? st.cfg.backend
                 : st.mode_b                        ? FTI_BACKEND_MPI
                                                    : FTI_BACKEND_TCP;
    return FT_SUCCESS;
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

/* The smallest (worst) code over the group. */
static int agree(int rc)
{
    return agree_on(fti_group_comm(st.group), rc);
}

/* The settings that shape the job must be the same on every world rank
 * (mpirun -x passes them to all). */
static int check_uniform(void)
{
    int v[5] = {st.cfg.group_size, st.cfg.lighthouse[0] == '\0', st.backend, st.cfg.world_mode,
                st.cfg.min_replicas};
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

static int init_replica_id(void)
{
    char id[64] = "";
    if (st.mode_b) {
        fti_modeb_replica_id(st.cfg.replica_id, st.mb.group_index, st.mb.n_groups, id,
                             sizeof(id));
    } else if (st.cfg.replica_id[0] != '\0') {
        fti_strlcpy(id, st.cfg.replica_id, sizeof(id));
    } else if (st.group_rank == 0) {
        char host[48] = "host";
        gethostname(host, sizeof(host));
        host[sizeof(host) - 1] = '\0';
        snprintf(id, sizeof(id), "%s-%ld", host, (long)getpid());
    }
    /* blocking MPI is fine at init: the group is whole */
    if (MPI_Bcast(id, (int)sizeof(id), MPI_CHAR, 0, fti_group_comm(st.group)) != MPI_SUCCESS)
        return FT_ERR_MPI;
    id[sizeof(id) - 1] = '\0';
    fti_strlcpy(st.replica_id, id, sizeof(st.replica_id));
    fti_log_set_replica_id(id);
    return FT_SUCCESS;
}

/* Every rank's server address, so the manager can name the heal server
 * of each group rank. */
static int init_peers(void)
{
    char *all = calloc((size_t)st.group_size, ADDR_LEN);
    const char **ptrs = calloc((size_t)st.group_size, sizeof(*ptrs));
    int rc = FT_SUCCESS;
    if (all == NULL || ptrs == NULL)
        rc = FT_ERR_NO_MEMORY;
    rc = agree(rc);
    if (rc == FT_SUCCESS &&
        MPI_Allgather(st.my_addr, ADDR_LEN, MPI_CHAR, all, ADDR_LEN, MPI_CHAR,
                      fti_group_comm(st.group)) != MPI_SUCCESS)
        rc = FT_ERR_MPI;
    if (rc == FT_SUCCESS && st.group_rank == 0) {
        for (int i = 0; i < st.group_size; i++) {
            all[(size_t)i * ADDR_LEN + ADDR_LEN - 1] = '\0';
            ptrs[i] = all + (size_t)i * ADDR_LEN;
        }
        rc = fti_rank_server_set_peers(st.server, ptrs, st.group_size);
    }
    free(ptrs);
    free(all);
    return rc;
}

/* The thread level FT_Init needs.  The library's own threads (RPC server,
 * heartbeats, heal checksums, the lighthouse's) never call MPI; every MPI
 * call is made by the thread that makes the FT_ calls.  So: from the
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

/* The job-wide part of FT_Init: configuration agreed on by every world
 * rank, then mode B's split (on the lighthouse rank it does not return) or
 * mode A's duplicate of the world for the application. */
static int init_world(void)
{
    int cfg_rc = init_config();
    if (cfg_rc == FT_SUCCESS)
        cfg_rc = check_thread_level();
    int rc = agree_on(MPI_COMM_WORLD, cfg_rc);
    if (rc == FT_SUCCESS)
        rc = check_uniform();
    if (rc != FT_SUCCESS)
        return rc;
    if (st.mode_b) {
        rc = fti_modeb_init(&st.cfg, &st.mb);
        if (rc != FT_SUCCESS)
            return rc;
        fti_strlcpy(st.cfg.lighthouse, st.mb.lighthouse, sizeof(st.cfg.lighthouse));
        st.app_comm = st.mb.split;
        return FT_SUCCESS;
    }
    if (MPI_Comm_dup(MPI_COMM_WORLD, &st.app_comm) != MPI_SUCCESS) {
        FTI_ERROR("FT_Init: MPI_Comm_dup of the world failed");
        st.app_comm = MPI_COMM_NULL;
        return FT_ERR_MPI;
    }
    return FT_SUCCESS;
}

FTMPI_EXPORT int FT_Init(int *argc, char ***argv)
{
    int mpi_init = 0, mpi_fin = 0, rc;
    (void)argc;
    (void)argv;

    MPI_Initialized(&mpi_init);
    MPI_Finalized(&mpi_fin);
    if (!mpi_init || mpi_fin) {
        FTI_ERROR("FT_Init: MPI is %s", mpi_fin ? "finalized" : "not initialised (call MPI_Init first)");
        return FT_ERR_STATE;
    }
    if (st.initialized) {
        FTI_ERROR("FT_Init: called twice");
        return FT_ERR_STATE;
    }
    memset(&st, 0, sizeof(st));
    st.slice_quorum_id = -1;
    st.app_comm = MPI_COMM_NULL;
    st.mb.split = MPI_COMM_NULL;

    /* every world rank takes part, whatever its config */
    rc = init_world();
    if (rc != FT_SUCCESS) {
        teardown();
        return rc;
    }
    rc = fti_group_create(group_parent(), &st.group);
    if (rc != FT_SUCCESS) {
        teardown();
        return rc;
    }
    st.group_rank = fti_group_rank(st.group);
    st.group_size = fti_group_size(st.group);
    fti_log_ctx.group_rank = st.group_rank;
    rc = init_replica_id();

    if (rc == FT_SUCCESS)
        rc = fti_heal_create(&st.heal);
    if (rc == FT_SUCCESS && st.cfg.event_log[0] != '\0')
        rc = fti_event_log_open(st.cfg.event_log, st.replica_id, st.group_rank, &st.elog);
    if (rc == FT_SUCCESS)
        rc = fti_ckpt_create(&st.cfg, st.group, st.replica_id, st.elog, &st.ckpt);
    if (rc == FT_SUCCESS)
        rc = fti_rank_server_start(st.cfg.bind_host, (size_t)st.cfg.max_frame_bytes,
                                   st.group_rank == 0, st.heal, &st.server);
    if (rc == FT_SUCCESS)
        fti_strlcpy(st.my_addr, fti_rank_server_address(st.server), sizeof(st.my_addr));
    rc = agree(rc);
    if (rc == FT_SUCCESS)
        rc = init_peers();
    /* every rank learns whether rank 0 made its manager */
    int mrc = rc;
    if (rc == FT_SUCCESS && st.group_rank == 0)
        mrc = fti_manager_create(st.cfg.lighthouse, st.replica_id, st.cfg.connect_timeout_ms,
                                 st.cfg.heartbeat_ms, &st.manager);
    if (MPI_Bcast(&mrc, 1, MPI_INT, 0, fti_group_comm(st.group)) != MPI_SUCCESS)
        mrc = FT_ERR_MPI;
    rc = rc != FT_SUCCESS ? rc : mrc;
    if (rc == FT_SUCCESS && MPI_Op_create(avg_kernel, 1, &ftmpi_op_avg) != MPI_SUCCESS) {
        FTI_ERROR("FT_Init: MPI_Op_create failed");
        rc = FT_ERR_MPI;
    }
    rc = agree(rc);
    if (rc != FT_SUCCESS) {
        teardown();
        return rc;
    }
    if (st.mode_b)
        st.member_data_len = fti_results_world_rank_data(st.mb.first_world_rank, st.member_data,
                                                         sizeof(st.member_data));
    st.initialized = true;
    fti_heal_set_step(st.heal, 0, false);
    log_ctx_update();
    if (st.mode_b)
        FTI_INFO("FT_Init: mode B, replica %s (world ranks %d-%d of %d), group rank %d of %d, "
                 "server %s, lighthouse %s (world rank %d), backend %s",
                 st.replica_id, st.mb.first_world_rank, st.mb.first_world_rank + st.group_size - 1,
                 st.mb.world_size, st.group_rank, st.group_size, st.my_addr, st.cfg.lighthouse,
                 st.mb.world_size - 1, st.backend == FTI_BACKEND_MPI ? "mpi" : "tcp");
    else
        FTI_INFO("FT_Init: replica %s, group rank %d of %d, server %s, lighthouse %s",
                 st.replica_id, st.group_rank, st.group_size, st.my_addr, st.cfg.lighthouse);
    return FT_SUCCESS;
}

FTMPI_EXPORT int FT_Finalize(void)
{
    if (!st.initialized)
        return FT_ERR_NOT_INITIALIZED;
    FTI_DEBUG("FT_Finalize at step %" PRId64 "%s", st.step, st.lost ? " (group lost)" : "");
    /* the other groups need not wait for this one (LIGHTHOUSE_FINALIZE);
     * in mode B every rank says so, as the manager may be the rank that
     * died (the application may have noticed before the library did) */
    if (!st.lost) {
        if (st.mode_b)
            FTI_INFO("FT_Finalize: %s leaves at step %" PRId64, st.replica_id, st.step);
        fti_ckpt_finish(st.ckpt); /* publishes the last checkpoint */
        tell_lighthouse_leaving();
    }
    uint64_t n = 0, bytes = 0;
    fti_mpi_abandoned(&n, &bytes);
    if (n > 0)
        FTI_INFO("FT_Finalize: %" PRIu64 " MPI requests were abandoned at deadlines (%" PRIu64
                 " bytes kept alive)",
                 n, bytes);
    teardown();
    return FT_SUCCESS;
}

/* ---- FT_Quorum --------------------------------------------------------- */

/* What each rank tells the manager. */
struct quorum_ask {
    int64_t step;
    int64_t flags;
};

/* Mode A with the tcp backend asks the lighthouse for compact replies: the
 * group's own results (one per group rank) instead of every member, so a
 * reply does not grow with the number of groups.  The mpi backend (mode B)
 * needs every member's world rank to build its slice: the full list. */
static bool want_compact(void)
{
    return !st.mode_b && st.backend == FTI_BACKEND_TCP;
}

/* Group rank 0: gathers the group's asks, asks the lighthouse, packs its
 * LighthouseQuorumResponse.  Returns the status to broadcast; *buf_p and
 * *len_p hold the packed response on success. */
static int manager_round(int flags, void **buf_p, size_t *len_p)
{
    struct quorum_ask mine = {st.step, flags};
    struct quorum_ask *all = calloc((size_t)st.group_size, sizeof(*all));
    if (all == NULL)
        return FT_ERR_NO_MEMORY;
    int rc = fti_group_gather(st.group, &mine, sizeof(mine), all,
                              fti_now_ms() + st.cfg.timeout_ms);
    if (rc != FT_SUCCESS) {
        free(all);
        /* mode B: a rank that does not show up is dead; the broadcast
         * tells the others to leave too */
        return st.mode_b ? FT_ERR_GROUP_LOST : rc;
    }
    int64_t step = all[0].step;
    bool shrink = false, mixed = false;
    for (int i = 0; i < st.group_size; i++) {
        mixed |= all[i].step != all[0].step;
        step = FTI_MIN(step, all[i].step);
        shrink |= (all[i].flags & FT_QUORUM_SHRINK_ONLY) != 0;
    }
    free(all);
    if (mixed)
        FTI_WARN("quorum: the group's ranks are at different steps; asking with the lowest, %" PRId64,
                 step);

    char msg[256] = "";
    if (fti_rank_server_killed(st.server, msg, sizeof(msg)))
        return FT_ERR_KILLED;

    Ftmpi__QuorumMember me = FTMPI__QUORUM_MEMBER__INIT;
    Ftmpi__LighthouseQuorumResponse *q = NULL;
    me.replica_id = st.replica_id;
    me.address = st.my_addr;
    me.store_address = st.my_addr;
    me.step = step;
    me.world_size = (uint64_t)st.group_size;
    me.shrink_only = shrink;
    me.commit_failures = st.commit_failures;
    me.data.data = (uint8_t *)st.member_data; /* mode B: the group's first world rank */
    me.data.len = st.member_data_len;
    rc = fti_manager_quorum(st.manager, &me, want_compact(), st.cfg.init_sync != 0,
                            st.cfg.quorum_timeout_ms, &q);
    if (rc != FT_SUCCESS)
        return rc;
    if (fti_rank_server_killed(st.server, msg, sizeof(msg))) {
        ftmpi__lighthouse_quorum_response__free_unpacked(q, NULL);
        return FT_ERR_KILLED;
    }
    size_t len = ftmpi__lighthouse_quorum_response__get_packed_size(q);
    void *buf = malloc(len ? len : 1);
    if (buf == NULL) {
        ftmpi__lighthouse_quorum_response__free_unpacked(q, NULL);
        return FT_ERR_NO_MEMORY;
    }
    ftmpi__lighthouse_quorum_response__pack(q, buf);
    ftmpi__lighthouse_quorum_response__free_unpacked(q, NULL);
    *buf_p = buf;
    *len_p = len;
    return FT_SUCCESS;
}

/* The group's quorum exchange: every rank gets the lighthouse's response
 * (it has a quorum) or the status rank 0 ended with. */
static int quorum_exchange(int flags, Ftmpi__LighthouseQuorumResponse **q_p)
{
    void *buf = NULL, *got = NULL;
    size_t len = 0, got_len = 0;
    int status, rc;

    if (st.group_rank == 0) {
        status = manager_round(flags, &buf, &len);
        rc = fti_group_bcast(st.group, status, buf, status == FT_SUCCESS ? len : 0, &status, &got,
                             &got_len, fti_now_ms() + st.cfg.timeout_ms);
        free(buf);
    } else {
        struct quorum_ask mine = {st.step, flags};
        int grc = fti_group_gather(st.group, &mine, sizeof(mine), NULL, 0);
        /* the broadcast also after a failed send: the group's sequence of
         * operations must not depend on local outcomes */
        rc = fti_group_bcast(st.group, 0, NULL, 0, &status, &got, &got_len,
                             fti_now_ms() + st.cfg.quorum_timeout_ms + st.cfg.timeout_ms +
                                 (st.mode_b ? MODEB_SLACK_MS : 0));
        if (grc != FT_SUCCESS) {
            if (rc == FT_SUCCESS)
                free(got);
            rc = grc;
        }
    }
    if (rc != FT_SUCCESS)
        return st.mode_b ? group_lost(rc) : rc;
    if (status != FT_SUCCESS) {
        free(got);
        return st.mode_b && status == FT_ERR_GROUP_LOST ? group_lost(status) : status;
    }
    Ftmpi__LighthouseQuorumResponse *q =
        ftmpi__lighthouse_quorum_response__unpack(NULL, got_len, got);
    free(got);
    if (q == NULL || q->quorum == NULL) {
        FTI_ERROR("quorum: the group's broadcast does not decode");
        if (q)
            ftmpi__lighthouse_quorum_response__free_unpacked(q, NULL);
        return FT_ERR_BAD_MESSAGE;
    }
    *q_p = q;
    return FT_SUCCESS;
}

/* Counts a quorum that lost a member of the previous one, or in which one
 * came back restarted (same replica id, new manager address: a group
 * restarted before the lighthouse dropped it), and remembers this one's
 * members as "id\naddress" strings. */
static void track_members(const Ftmpi__Quorum *q)
{
    bool failed = false;
    for (size_t i = 0; i < st.n_prev && !failed; i++) {
        bool same = st.prev_members[i] == NULL; /* lost to an allocation failure */
        for (size_t j = 0; j < q->n_participants && !same; j++) {
            const Ftmpi__QuorumMember *m = q->participants[j];
            size_t idlen = strlen(m->replica_id);
            same = strncmp(st.prev_members[i], m->replica_id, idlen) == 0 &&
                   st.prev_members[i][idlen] == '\n' &&
                   strcmp(st.prev_members[i] + idlen + 1, m->address) == 0;
        }
        failed = !same;
    }
    if (failed)
        failures_survived++;
    char **list = calloc(q->n_participants ? q->n_participants : 1, sizeof(*list));
    if (list == NULL)
        return; /* keeps the old list */
    for (size_t j = 0; j < q->n_participants; j++) {
        const Ftmpi__QuorumMember *m = q->participants[j];
        size_t n = strlen(m->replica_id) + strlen(m->address) + 2;
        if ((list[j] = malloc(n)) != NULL)
            snprintf(list[j], n, "%s\n%s", m->replica_id, m->address);
    }
    free_prev_members();
    st.prev_members = list;
    st.n_prev = q->n_participants;
}

/* Compact replies: the lighthouse counted the members of its previous
 * quorum missing from this one (or back restarted).  Counted once per new
 * quorum this process sees after its first; no member list is kept. */
static void track_dropped(int64_t dropped, bool changed)
{
    if (st.have_quorum && changed && dropped > 0)
        failures_survived++;
    free_prev_members();
}

/* The `mpi` backend's slice: the members' world ranks from the quorum. */
static int rebuild_mpi_slice(const Ftmpi__Quorum *q, int64_t deadline_ms)
{
    int n = st.res.replica_world_size;
    int *ranks = malloc((size_t)n * sizeof(*ranks));
    if (ranks == NULL)
        return FT_ERR_NO_MEMORY;
    int rc = fti_results_world_ranks(q, st.group_rank, ranks);
    if (rc == FT_SUCCESS)
        rc = fti_mpi_slice_create(st.mb.mpi, ranks, n, st.res.replica_rank, st.res.quorum_id,
                                  deadline_ms, &st.slice);
    free(ranks);
    return rc;
}

static int rebuild_slice(const Ftmpi__Quorum *q)
{
    fti_comm_destroy(st.slice);
    st.slice = NULL;
    if (st.backend == FTI_BACKEND_MPI) {
        st.slice_quorum_id = st.res.quorum_id;
        int rc = rebuild_mpi_slice(q, fti_now_ms() + st.cfg.timeout_ms);
        if (rc != FT_SUCCESS) {
            st.slice = NULL;
            FTI_WARN("quorum %" PRId64 ": mpi slice of %d not built: %s", st.res.quorum_id,
                     st.res.replica_world_size, FT_Error_string(rc));
        }
        return rc;
    }
    fti_slice_params_t p = {
        .quorum_id = st.res.quorum_id,
        .group_rank = st.group_rank,
        .replica_rank = st.res.replica_rank,
        .size = st.res.replica_world_size,
        .store_address = st.res.store_address,
        .bind_host = st.cfg.bind_host,
        .chunk_bytes = (size_t)st.cfg.chunk_bytes,
        .connect_timeout_ms = st.cfg.connect_timeout_ms,
    };
    st.slice_quorum_id = st.res.quorum_id;
    int rc = fti_slice_create(&p, fti_now_ms() + st.cfg.timeout_ms, &st.slice);
    if (rc != FT_SUCCESS) {
        st.slice = NULL;
        FTI_WARN("quorum %" PRId64 ": slice of %d not built: %s", st.res.quorum_id, p.size,
                 FT_Error_string(rc));
    }
    /* the manager drops the rendezvous keys of every older quorum from its
     * own store, whether their builds (or this one) failed or not */
    if (st.group_rank == 0)
        (void)fti_slice_forget_older(st.my_addr, st.res.quorum_id, st.cfg.connect_timeout_ms,
                                     st.cfg.timeout_ms);
    return rc;
}

/* Heals this rank from its source.  Each rank installs the step it healed
 * on its own, without asking the group: when a rank of the group failed,
 * the commit vote fails the step and the next quorum request carries the
 * group's lowest step, so the whole group heals again. */
static int heal_rank(void)
{
    fti_heal_opts_t o = {
        .connect_timeout_ms = st.cfg.connect_timeout_ms,
        .max_reply = (size_t)st.cfg.max_frame_bytes,
        .chunk_bytes = 0,
    };
    fti_heal_stats_t hs;
    int rc = fti_heal_fetch(st.heal, st.res.recover_src_manager_address, st.group_rank,
                            st.res.max_step, &o, fti_now_ms() + st.cfg.heal_timeout_ms, &hs);
    fti_event_heal(st.elog, st.step, st.res.max_step, hs.bytes, hs.ms, hs.source, rc);
    if (rc != FT_SUCCESS) {
        /* the registered memory may be half overwritten: serve nothing */
        fti_heal_set_step(st.heal, st.step, false);
        FTI_WARN("heal from %s (%s) failed: %s; the step stays %" PRId64,
                 st.res.recover_src_replica_id, hs.source, FT_Error_string(rc), st.step);
        return rc;
    }
    FTI_INFO("healed step %" PRId64 " from %s (%s): %" PRIu64 " bytes in %" PRId64 " ms",
             st.res.max_step, st.res.recover_src_replica_id, hs.source, hs.bytes, hs.ms);
    st.step = st.res.max_step;
    fti_heal_set_step(st.heal, st.step, true);
    return FT_SUCCESS;
}

FTMPI_EXPORT int FT_Quorum(int flags)
{
    if (!st.initialized)
        return FT_ERR_NOT_INITIALIZED;
    if (flags & ~FT_QUORUM_SHRINK_ONLY)
        return FT_ERR_ARG;
    if (st.lost)
        return FT_ERR_GROUP_LOST;
    if (st.in_step) {
        FTI_ERROR("FT_Quorum: the step started by the last FT_Quorum has not been committed");
        return FT_ERR_STATE;
    }
    st.in_step = true;
    st.latched = FT_SUCCESS;
    st.quorum_ok = false;
    /* the state of st.step is what the application holds now: serve it */
    fti_heal_set_step(st.heal, st.step, true);

    int64_t t0 = fti_now_ms();
    Ftmpi__LighthouseQuorumResponse *resp = NULL;
    /* every rank runs the same group operations in every FT_Quorum (their
     * messages are matched by sequence), also once killed: rank 0 keeps
     * broadcasting FT_ERR_KILLED */
    int rc = quorum_exchange(flags, &resp);
    int64_t qms = fti_now_ms() - t0;
    if (rc != FT_SUCCESS) {
        if (rc == FT_ERR_KILLED && !st.killed) {
            st.killed = true;
            FTI_WARN("FT_Quorum: this group was asked to stop");
        }
        latch(rc);
        if (st.group_rank == 0)
            fti_event_quorum(st.elog, st.step, -1, NULL, 0, -1, 0, qms, false, false, rc);
        return rc;
    }

    const Ftmpi__Quorum *q = resp->quorum;
    /* compact: the lighthouse computed the results of each group rank; a
     * lighthouse that does not know compact replies sent the members */
    bool compact = resp->n_results > 0;
    fti_quorum_result_t res;
    if (compact && (size_t)st.group_rank >= resp->n_results)
        rc = FT_ERR_BAD_MESSAGE;
    else if (compact)
        rc = fti_results_from_msg(resp->results[st.group_rank], &res);
    else
        rc = fti_results_compute(q, st.replica_id, st.group_rank, st.cfg.init_sync != 0, &res);
    if (rc == FT_SUCCESS && compact && res.quorum_id != q->quorum_id)
        rc = FT_ERR_BAD_MESSAGE;
    if (rc != FT_SUCCESS) {
        FTI_WARN("FT_Quorum: quorum %" PRId64 " has no place for this group: %s", q->quorum_id,
                 FT_Error_string(rc));
        ftmpi__lighthouse_quorum_response__free_unpacked(resp, NULL);
        latch(FT_ERR_QUORUM);
        return FT_ERR_QUORUM;
    }
    fti_results_apply_spares(&res, st.cfg.world_mode == FTI_WORLD_FIXED_WITH_SPARES
                                       ? st.cfg.min_replicas
                                       : 0);
    bool changed = !st.have_quorum || res.quorum_id != st.res.quorum_id;
    if (compact)
        track_dropped(resp->dropped, changed);
    else
        track_members(q);
    st.res = res;
    st.have_quorum = true;
    st.quorum_ok = true;
    st.commit_failures = 0;
    /* a fresh start (no group past step 0): the newest durable checkpoint */
    if (fti_ckpt_load_at_start(st.ckpt, res.max_step, st.step, &st.step) == FT_SUCCESS) {
        res.heal = st.res.heal = false;
        st.res.n_recover_dst = 0;
        fti_heal_set_step(st.heal, st.step, true);
    }
    log_ctx_update();
    if (changed)
        FTI_INFO("quorum %" PRId64 ": %d groups (%d participate), replica rank %d%s, max step "
                 "%" PRId64 "%s",
                 res.quorum_id, res.replica_world_size, res.participants, res.replica_rank,
                 res.spare ? " (spare)" : "", res.max_step, res.heal ? ", healing" : "");

    if (st.slice == NULL || st.slice_quorum_id != res.quorum_id)
        rc = rebuild_slice(q);
    if (res.heal) {
        /* also when the slice failed: the group's other ranks heal anyway */
        int hrc = heal_rank();
        rc = rc != FT_SUCCESS ? rc : hrc;
    }
    latch(rc);
    log_ctx_update();

    if (st.group_rank == 0) {
        /* compact: no member list (the size says how many) */
        const char **ids = calloc(q->n_participants ? q->n_participants : 1, sizeof(*ids));
        for (size_t i = 0; ids != NULL && i < q->n_participants; i++)
            ids[i] = q->participants[i]->replica_id;
        fti_event_quorum(st.elog, st.step, res.quorum_id, ids, ids ? q->n_participants : 0,
                         res.replica_rank, res.replica_world_size, qms, changed, res.heal, rc);
        free(ids);
    }
    ftmpi__lighthouse_quorum_response__free_unpacked(resp, NULL);
    return rc;
}

/* ---- collectives -------------------------------------------------------- */

/* Fills buf with op's identity element (what a spare group contributes):
 * -0.0 for floating-point sums (x + -0.0 == x for every x, -0.0 and +0.0
 * included), 0 for integer sums, 1 for products, the lowest value for MAX
 * and the highest for MIN. */
static void fill_identity(void *buf, size_t count, enum fti_dtype dt, enum fti_op op)
{
#define FILL(T, v)                                                                                 \
    do {                                                                                           \
        T *p_ = buf;                                                                               \
        for (size_t i_ = 0; i_ < count; i_++)                                                      \
            p_[i_] = (v);                                                                          \
    } while (0)
    bool sum = op == FTI_OP_SUM || op == FTI_OP_AVG;
    switch (dt) {
    case FTI_DT_FLOAT:
        FILL(float, sum ? -0.0f : op == FTI_OP_PROD ? 1.0f : op == FTI_OP_MAX ? -INFINITY : INFINITY);
        break;
    case FTI_DT_DOUBLE:
        FILL(double, sum ? -0.0 : op == FTI_OP_PROD ? 1.0 : op == FTI_OP_MAX ? -INFINITY : INFINITY);
        break;
    case FTI_DT_INT:
        FILL(int, sum ? 0 : op == FTI_OP_PROD ? 1 : op == FTI_OP_MAX ? INT_MIN : INT_MAX);
        break;
    case FTI_DT_LONG:
        FILL(long, sum ? 0 : op == FTI_OP_PROD ? 1 : op == FTI_OP_MAX ? LONG_MIN : LONG_MAX);
        break;
    case FTI_DT_INT32:
        FILL(int32_t, sum ? 0 : op == FTI_OP_PROD ? 1 : op == FTI_OP_MAX ? INT32_MIN : INT32_MAX);
        break;
    case FTI_DT_INT64:
        FILL(int64_t, sum ? 0 : op == FTI_OP_PROD ? 1 : op == FTI_OP_MAX ? INT64_MIN : INT64_MAX);
        break;
    case FTI_DT_UINT64:
        FILL(uint64_t, sum ? 0 : op == FTI_OP_PROD ? 1 : op == FTI_OP_MAX ? 0 : UINT64_MAX);
        break;
    default:
        break;
    }
#undef FILL
}

static int check_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                           MPI_Op op, FT_Comm comm, enum fti_dtype *dt_p, enum fti_op *op_p)
{
    if (!st.initialized)
        return FT_ERR_NOT_INITIALIZED;
    if (comm != FT_COMM_REPLICAS || count < 0 ||
        (count > 0 && (recvbuf == NULL || sendbuf == NULL)))
        return FT_ERR_ARG;
    return fti_reduction_from_mpi(datatype, op, ftmpi_op_avg, dt_p, op_p);
}

FTMPI_EXPORT int FT_Allreduce(const void *sendbuf, void *recvbuf, int count,
                              MPI_Datatype datatype, MPI_Op op, FT_Comm comm)
{
    enum fti_dtype dt;
    enum fti_op fop;
    int rc = check_allreduce(sendbuf, recvbuf, count, datatype, op, comm, &dt, &fop);
    if (rc != FT_SUCCESS)
        return rc;
    if (st.lost)
        return FT_ERR_GROUP_LOST;
    if (!st.in_step) {
        FTI_ERROR("FT_Allreduce: outside a step (call FT_Quorum first)");
        return FT_ERR_STATE;
    }
    if (st.latched != FT_SUCCESS) {
        /* this rank will not take part: close the ring so that its peers
         * fail now instead of at their deadline */
        fti_comm_destroy(st.slice);
        st.slice = NULL;
        return FT_ERR_ABORTED;
    }
    size_t bytes = (size_t)count * fti_dtype_size(dt);
    if (sendbuf != MPI_IN_PLACE && sendbuf != recvbuf)
        memmove(recvbuf, sendbuf, bytes);
    if (count == 0)
        return FT_SUCCESS;
    if (st.slice == NULL) {
        latch(FT_ERR_INTERNAL);
        return FT_ERR_INTERNAL;
    }
    /* spares: they take part with the identity, and an average divides by
     * the participants, not by the members */
    if (st.res.spare)
        fill_identity(recvbuf, (size_t)count, dt, fop);
    bool scale = fop == FTI_OP_AVG && st.res.participants != st.res.replica_world_size;
    rc = fti_comm_allreduce(st.slice, recvbuf, (size_t)count, dt, scale ? FTI_OP_SUM : fop,
                            fti_now_ms() + st.cfg.timeout_ms);
    if (rc == FT_SUCCESS && scale)
        fti_reduce_scale(recvbuf, (size_t)count, dt, st.res.participants);
    if (rc != FT_SUCCESS) {
        FTI_WARN("FT_Allreduce of %d %s failed: %s", count, fti_dtype_name(dt),
                 FT_Error_string(rc));
        latch(rc);
        /* the communicator is dead; closing it now tells the ring at once */
        fti_comm_destroy(st.slice);
        st.slice = NULL;
    }
    return rc;
}

FTMPI_EXPORT int FT_Iallreduce(const void *sendbuf, void *recvbuf, int count,
                               MPI_Datatype datatype, MPI_Op op, FT_Comm comm,
                               FT_Request *request)
{
    enum fti_dtype dt;
    enum fti_op fop;
    if (request == NULL)
        return FT_ERR_ARG;
    int rc = check_allreduce(sendbuf, recvbuf, count, datatype, op, comm, &dt, &fop);
    if (rc != FT_SUCCESS)
        return rc;
    struct ftmpi_request *r = malloc(sizeof(*r));
    if (r == NULL)
        return FT_ERR_NO_MEMORY;
    *r = (struct ftmpi_request){sendbuf, recvbuf, count, datatype, op, comm};
    *request = r;
    return FT_SUCCESS;
}

FTMPI_EXPORT int FT_Wait(FT_Request *request)
{
    if (request == NULL)
        return FT_ERR_ARG;
    struct ftmpi_request *r = *request;
    if (r == NULL)
        return FT_SUCCESS;
    int rc = FT_Allreduce(r->sendbuf, r->recvbuf, r->count, r->datatype, r->op, r->comm);
    free(r);
    *request = FT_REQUEST_NULL;
    return rc;
}

/* ---- FT_Commit ---------------------------------------------------------- */

FTMPI_EXPORT int FT_Commit(int *committed)
{
    if (committed == NULL)
        return FT_ERR_ARG;
    *committed = 0;
    if (!st.initialized)
        return FT_ERR_NOT_INITIALIZED;
    if (st.lost) {
        st.in_step = false;
        return FT_ERR_GROUP_LOST;
    }
    if (!st.in_step) {
        FTI_ERROR("FT_Commit: no step to commit (call FT_Quorum first)");
        return FT_ERR_STATE;
    }
    int participants = st.quorum_ok ? st.res.participants : 0;
    if (st.latched == FT_SUCCESS && st.quorum_ok && !st.res.heal && st.res.n_recover_dst > 0) {
        /* groups heal from this rank in this step: a step without a
         * collective would otherwise close the state under them.  Half the
         * deadline, so that the group's vote below keeps its time. */
        int w = fti_heal_wait_served(st.heal, st.res.n_recover_dst,
                                     fti_now_ms() + st.cfg.timeout_ms / 2);
        if (w != FT_SUCCESS)
            FTI_INFO("FT_Commit: %d healer(s) of this step did not finish copying in time",
                     st.res.n_recover_dst);
    }
    int vote = fti_commit_vote(st.latched, participants, st.cfg.min_replicas);
    /* the group's decision is group rank 0's (group.h, fti_group_decide):
     * rank 0 waits for the votes one window; the others wait for its
     * decision two windows, so rank 0 may come up to a window later.  Mode
     * B: a rank's heal of this step may take the heal timeout too. */
    int64_t win = st.cfg.timeout_ms, now = fti_now_ms();
    if (st.mode_b && st.quorum_ok && st.res.heal)
        win += st.cfg.heal_timeout_ms;
    int decision = FT_ERR_ABORTED;
    int rc = fti_group_decide(st.group, vote, now + win, now + 2 * win, &decision);
    /* no decision here: rank 0 may have committed, so this rank cannot go
     * on (both modes).  Mode B: a vote that missed rank 0's deadline means
     * a dead rank: every rank that learns it leaves with the group. */
    if (rc != FT_SUCCESS || (st.mode_b && decision == FT_ERR_TIMEOUT)) {
        st.commit_failures++;
        st.in_step = false;
        st.latched = FT_SUCCESS;
        if (st.group_rank == 0)
            fti_event_commit(st.elog, st.step, false, participants, FT_ERR_GROUP_LOST);
        return group_lost(rc != FT_SUCCESS ? rc : decision);
    }
    int all = decision == FT_SUCCESS;
    if (!all && decision != FT_ERR_ABORTED)
        latch(decision); /* a late vote, or rank 0's own error */
    int64_t step = st.step;
    if (all) {
        st.step++;
        /* the application changes its state now: serve nothing until the
         * next FT_Quorum */
        fti_heal_set_step(st.heal, st.step, false);
        (void)fti_ckpt_after_commit(st.ckpt, st.step, st.res.replica_rank == 0, false);
        rc = FT_SUCCESS;
    } else {
        st.commit_failures++;
        if (st.latched != FT_SUCCESS)
            rc = st.latched;
        else if (participants < st.cfg.min_replicas)
            rc = FT_ERR_QUORUM;
        else
            rc = FT_ERR_ABORTED; /* another rank of the group voted no */
        FTI_INFO("FT_Commit: step %" PRId64 " not committed: %s", step, FT_Error_string(rc));
    }
    if (st.group_rank == 0)
        fti_event_commit(st.elog, step, all != 0, participants, rc);
    *committed = all;
    st.in_step = false;
    st.latched = FT_SUCCESS;
    log_ctx_update();
    return rc;
}

/* ---- queries ------------------------------------------------------------ */

FTMPI_EXPORT int FT_Comm_size(FT_Comm comm, int *size)
{
    if (!st.initialized)
        return FT_ERR_NOT_INITIALIZED;
    if (comm != FT_COMM_REPLICAS || size == NULL)
        return FT_ERR_ARG;
    if (!st.have_quorum)
        return FT_ERR_STATE;
    *size = st.res.participants;
    return FT_SUCCESS;
}

FTMPI_EXPORT int FT_Comm_rank(FT_Comm comm, int *rank)
{
    if (!st.initialized)
        return FT_ERR_NOT_INITIALIZED;
    if (comm != FT_COMM_REPLICAS || rank == NULL)
        return FT_ERR_ARG;
    if (!st.have_quorum)
        return FT_ERR_STATE;
    *rank = st.res.replica_rank;
    return FT_SUCCESS;
}

FTMPI_EXPORT int64_t FT_Step(void)
{
    return st.step;
}

FTMPI_EXPORT int FT_State_register(const char *name, void *buf, size_t bytes)
{
    if (!st.initialized)
        return FT_ERR_NOT_INITIALIZED;
    int rc = fti_heal_register(st.heal, name, buf, bytes);
    if (rc == FT_ERR_EXISTS)
        FTI_ERROR("FT_State_register: '%s' is already registered", name);
    if (rc == FT_SUCCESS)
        rc = fti_ckpt_register_replicated(st.ckpt, name, buf, bytes);
    return rc;
}

FTMPI_EXPORT int FT_State_register_shard(const char *name, void *buf, MPI_Datatype datatype,
                                         int64_t global_count, int64_t offset, int64_t count)
{
    if (!st.initialized)
        return FT_ERR_NOT_INITIALIZED;
    return fti_ckpt_register_shard(st.ckpt, st.heal, name, buf, datatype, global_count, offset,
                                   count);
}

FTMPI_EXPORT int FT_Checkpoint(int flags)
{
    if (!st.initialized)
        return FT_ERR_NOT_INITIALIZED;
    if (flags != 0)
        return FT_ERR_ARG;
    if (st.lost)
        return FT_ERR_GROUP_LOST;
    if (st.in_step || !st.have_quorum)
        return FT_ERR_STATE;
    return fti_ckpt_after_commit(st.ckpt, st.step, st.res.replica_rank == 0, true);
}

FTMPI_EXPORT int ftmpi_checkpoint_stats(ftmpi_checkpoint_stats_t *stats)
{
    if (!st.initialized)
        return FT_ERR_NOT_INITIALIZED;
    if (stats == NULL)
        return FT_ERR_ARG;
    fti_ckpt_stats(st.ckpt, stats);
    return FT_SUCCESS;
}

FTMPI_EXPORT int ftmpi_replica_id(char *buf, size_t len)
{
    if (!st.initialized)
        return FT_ERR_NOT_INITIALIZED;
    if (buf == NULL || len <= strlen(st.replica_id))
        return FT_ERR_ARG;
    fti_strlcpy(buf, st.replica_id, len);
    return FT_SUCCESS;
}

FTMPI_EXPORT int ftmpi_failures_survived(void)
{
    return failures_survived;
}

FTMPI_EXPORT int ftmpi_group_comm(MPI_Comm *comm_p)
{
    if (!st.initialized)
        return FT_ERR_NOT_INITIALIZED;
    if (comm_p == NULL)
        return FT_ERR_ARG;
    *comm_p = st.app_comm;
    return FT_SUCCESS;
}

FTMPI_EXPORT int64_t ftmpi_quorum_id(void)
{
    return st.initialized && st.have_quorum ? st.res.quorum_id : -1;
}

FTMPI_EXPORT int ftmpi_abandoned_requests(uint64_t *requests, uint64_t *bytes)
{
    uint64_t n, b;
    if (requests == NULL && bytes == NULL)
        return FT_ERR_ARG;
    fti_mpi_abandoned(&n, &b);
    if (requests)
        *requests = n;
    if (bytes)
        *bytes = b;
    return FT_SUCCESS;
}
