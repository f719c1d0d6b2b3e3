/*
 * ft.c - the public FT_* calls of the step protocol (mode A) and the
 * process-global state behind them (DESIGN sections 4-8).
 *
 * One replica group = the ranks of the group communicator (mode A:
 * MPI_COMM_WORLD, duplicated; see group_parent).  Group rank 0 is the
 * manager: it asks the lighthouse for each step's quorum and broadcasts it
 * to the group; every rank then computes its own results (results.h),
 * rebuilds its slice when the quorum id changed and heals when behind.
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
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftmpi.h"
#include "comm/comm.h"
#include "dtype.h"
#include "event_log.h"
#include "group.h"
#include "heal.h"
#include "log.h"
#include "manager.h"
#include "rank_server.h"
#include "results.h"
#include "settings.h"
#include "slice.h"
#include "util.h"

#define ADDR_LEN 128

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
} st;

/* Outlives FT_Finalize (ftmpi.h: information about this process). */
static int failures_survived;

/* The communicator the group is made of.  Mode A: the whole job.  Mode B
 * (later) will split MPI_COMM_WORLD here instead. */
static MPI_Comm group_parent(void)
{
    return MPI_COMM_WORLD;
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

/* Frees whatever FT_Init created (also after a failed FT_Init). */
static void teardown(void)
{
    fti_manager_destroy(st.manager);
    st.manager = NULL;
    fti_rank_server_stop(st.server); /* no handler runs after this */
    st.server = NULL;
    fti_comm_destroy(st.slice);
    st.slice = NULL;
    fti_heal_destroy(st.heal);
    st.heal = NULL;
    fti_event_log_close(st.elog);
    st.elog = NULL;
    free_prev_members();
    fti_group_destroy(st.group);
    st.group = NULL;
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (ftmpi_op_avg != MPI_OP_NULL && !finalized)
        MPI_Op_free(&ftmpi_op_avg);
    ftmpi_op_avg = MPI_OP_NULL;
    st.initialized = false;
    fti_log_ctx.step = -1;
    fti_log_ctx.quorum_id = -1;
}

/* ---- FT_Init / FT_Finalize --------------------------------------------- */

/* Checks that are the same on every rank (same environment). */
static int init_config(void)
{
    char err[512] = "";
    int rc = fti_config_load(&st.cfg, err, sizeof(err));
    if (rc != FT_SUCCESS) {
        FTI_ERROR("%s", err);
        return FT_ERR_CONFIG;
    }
    fti_log_init("ftmpi", st.cfg.log_level);
    if (st.cfg.lighthouse[0] == '\0') {
        if (st.cfg.group_size > 0) {
            FTI_ERROR("FTMPI_GROUP_SIZE=%d without FTMPI_LIGHTHOUSE selects mode B, which this "
                      "build does not implement yet",
                      st.cfg.group_size);
            return FT_ERR_UNSUPPORTED;
        }
        FTI_ERROR("FTMPI_LIGHTHOUSE is not set: mode A needs the lighthouse address host:port");
        return FT_ERR_CONFIG;
    }
    if (st.cfg.backend == FTI_BACKEND_MPI) {
        FTI_ERROR("FTMPI_BACKEND=mpi needs mode B (one job); mode A uses tcp");
        return FT_ERR_CONFIG;
    }
    return FT_SUCCESS;
}

/* The smallest (worst) code over the group; every rank learns it. */
static int agree(int rc)
{
    int all = rc;
    if (MPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MIN, fti_group_comm(st.group)) != MPI_SUCCESS)
        return FT_ERR_MPI;
    return rc != FT_SUCCESS ? rc : all;
}

static int init_replica_id(void)
{
    char id[64] = "";
    if (st.cfg.replica_id[0] != '\0') {
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
    fti_strlcpy(fti_log_ctx.replica_id, id, sizeof(fti_log_ctx.replica_id));
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

    /* every rank takes part in the group's creation, whatever its config */
    int cfg_rc = init_config();
    rc = fti_group_create(group_parent(), &st.group);
    if (rc != FT_SUCCESS)
        return rc;
    st.group_rank = fti_group_rank(st.group);
    st.group_size = fti_group_size(st.group);
    fti_log_ctx.group_rank = st.group_rank;
    rc = agree(cfg_rc);
    if (rc == FT_SUCCESS)
        rc = init_replica_id();

    if (rc == FT_SUCCESS)
        rc = fti_heal_create(&st.heal);
    if (rc == FT_SUCCESS && st.cfg.event_log[0] != '\0')
        rc = fti_event_log_open(st.cfg.event_log, st.replica_id, st.group_rank, &st.elog);
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
    st.initialized = true;
    fti_heal_set_step(st.heal, 0, false);
    log_ctx_update();
    FTI_INFO("FT_Init: replica %s, group rank %d of %d, server %s, lighthouse %s", st.replica_id,
             st.group_rank, st.group_size, st.my_addr, st.cfg.lighthouse);
    return FT_SUCCESS;
}

FTMPI_EXPORT int FT_Finalize(void)
{
    if (!st.initialized)
        return FT_ERR_NOT_INITIALIZED;
    FTI_DEBUG("FT_Finalize at step %" PRId64, st.step);
    teardown();
    return FT_SUCCESS;
}

/* ---- FT_Quorum --------------------------------------------------------- */

/* What each rank tells the manager. */
struct quorum_ask {
    int64_t step;
    int64_t flags;
};

/* Group rank 0: gathers the group's asks, asks the lighthouse, packs the
 * quorum.  Returns the status to broadcast; *buf_p and *len_p hold the packed
 * quorum on success. */
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
        return rc;
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
    Ftmpi__Quorum *q = NULL;
    me.replica_id = st.replica_id;
    me.address = st.my_addr;
    me.store_address = st.my_addr;
    me.step = step;
    me.world_size = (uint64_t)st.group_size;
    me.shrink_only = shrink;
    me.commit_failures = st.commit_failures;
    rc = fti_manager_quorum(st.manager, &me, st.cfg.quorum_timeout_ms, &q);
    if (rc != FT_SUCCESS)
        return rc;
    if (fti_rank_server_killed(st.server, msg, sizeof(msg))) {
        ftmpi__quorum__free_unpacked(q, NULL);
        return FT_ERR_KILLED;
    }
    size_t len = ftmpi__quorum__get_packed_size(q);
    void *buf = malloc(len ? len : 1);
    if (buf == NULL) {
        ftmpi__quorum__free_unpacked(q, NULL);
        return FT_ERR_NO_MEMORY;
    }
    ftmpi__quorum__pack(q, buf);
    ftmpi__quorum__free_unpacked(q, NULL);
    *buf_p = buf;
    *len_p = len;
    return FT_SUCCESS;
}

/* The group's quorum exchange: every rank gets the quorum or the status
 * rank 0 ended with. */
static int quorum_exchange(int flags, Ftmpi__Quorum **q_p)
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
                             fti_now_ms() + st.cfg.quorum_timeout_ms + st.cfg.timeout_ms);
        if (grc != FT_SUCCESS) {
            if (rc == FT_SUCCESS)
                free(got);
            rc = grc;
        }
    }
    if (rc != FT_SUCCESS)
        return rc;
    if (status != FT_SUCCESS) {
        free(got);
        return status;
    }
    Ftmpi__Quorum *q = ftmpi__quorum__unpack(NULL, got_len, got);
    free(got);
    if (q == NULL) {
        FTI_ERROR("quorum: the group's broadcast does not decode");
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

static int rebuild_slice(void)
{
    int64_t old = st.slice_quorum_id;
    fti_comm_destroy(st.slice);
    st.slice = NULL;
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
        return rc;
    }
    /* the manager drops the rendezvous keys of the quorum before */
    if (st.group_rank == 0 && old >= 0 && old != st.res.quorum_id)
        (void)fti_slice_forget(st.my_addr, old, st.cfg.connect_timeout_ms, st.cfg.timeout_ms);
    return FT_SUCCESS;
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
    Ftmpi__Quorum *q = NULL;
    /* every rank runs the same group operations in every FT_Quorum (their
     * messages are matched by sequence), also once killed: rank 0 keeps
     * broadcasting FT_ERR_KILLED */
    int rc = quorum_exchange(flags, &q);
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

    fti_quorum_result_t res;
    rc = fti_results_compute(q, st.replica_id, st.group_rank, st.cfg.init_sync != 0, &res);
    if (rc != FT_SUCCESS) {
        FTI_WARN("FT_Quorum: quorum %" PRId64 " has no place for this group: %s", q->quorum_id,
                 FT_Error_string(rc));
        ftmpi__quorum__free_unpacked(q, NULL);
        latch(FT_ERR_QUORUM);
        return FT_ERR_QUORUM;
    }
    track_members(q);
    bool changed = !st.have_quorum || res.quorum_id != st.res.quorum_id;
    st.res = res;
    st.have_quorum = true;
    st.quorum_ok = true;
    st.commit_failures = 0;
    log_ctx_update();
    if (changed)
        FTI_INFO("quorum %" PRId64 ": %d groups, replica rank %d, max step %" PRId64 "%s",
                 res.quorum_id, res.replica_world_size, res.replica_rank, res.max_step,
                 res.heal ? ", healing" : "");

    if (st.slice == NULL || st.slice_quorum_id != res.quorum_id)
        rc = rebuild_slice();
    if (res.heal) {
        /* also when the slice failed: the group's other ranks heal anyway */
        int hrc = heal_rank();
        rc = rc != FT_SUCCESS ? rc : hrc;
    }
    latch(rc);
    log_ctx_update();

    if (st.group_rank == 0) {
        const char **ids = calloc(q->n_participants ? q->n_participants : 1, sizeof(*ids));
        for (size_t i = 0; ids != NULL && i < q->n_participants; i++)
            ids[i] = q->participants[i]->replica_id;
        fti_event_quorum(st.elog, st.step, res.quorum_id, ids, ids ? q->n_participants : 0,
                         res.replica_rank, res.replica_world_size, qms, changed, res.heal, rc);
        free(ids);
    }
    ftmpi__quorum__free_unpacked(q, NULL);
    return rc;
}

/* ---- collectives -------------------------------------------------------- */

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
    rc = fti_comm_allreduce(st.slice, recvbuf, (size_t)count, dt, fop,
                            fti_now_ms() + st.cfg.timeout_ms);
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
    if (!st.in_step) {
        FTI_ERROR("FT_Commit: no step to commit (call FT_Quorum first)");
        return FT_ERR_STATE;
    }
    int participants = st.quorum_ok ? st.res.replica_world_size : 0;
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
    int all = 0;
    int rc = fti_group_and(st.group, vote, &all, fti_now_ms() + st.cfg.timeout_ms);
    if (rc != FT_SUCCESS) {
        latch(rc);
        all = 0;
    }
    int64_t step = st.step;
    if (all) {
        st.step++;
        /* the application changes its state now: serve nothing until the
         * next FT_Quorum */
        fti_heal_set_step(st.heal, st.step, false);
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
    *size = st.res.replica_world_size;
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
    return rc;
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
