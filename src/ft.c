/*
 * ft.c - the public FT_* calls (ftmpi.h): the API facade of the step
 * protocol (DESIGN section 4).  It checks arguments and the step's state,
 * latches a step's first error until FT_Commit (FT_Allreduce /
 * FT_Iallreduce argument checks included), and calls the step's parts
 * (step/step.h): set-up and teardown (step_init.c), the quorum round
 * (step_round.c: the exchange, slice and heal of step_quorum.c), the
 * backends through their table (comm/comm.h), the group's operations
 * (group.h), the progress thread (step/progress.h).
 * Errors are logged once, where first seen; the calls here pass codes up.
 * Threads: every FT_ call runs on the application's thread; step.h says
 * which part of `st` the progress thread owns when, so `st` needs no lock.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi.h"
#include "comm/baby.h"
#include "comm/mpi_backend.h"
#include "step/device.h"
#include "dtype.h"
#include "ft_init.h"
#include "base/log.h"
#include "step/step.h"
#include "base/util.h"

FTMPI_EXPORT MPI_Op ftmpi_op_avg = MPI_OP_NULL;

static struct fti_step st;

/* Outlives FT_Finalize (ftmpi.h: information about this process). */
static int failures_survived;

static void quorum_sync(void);

static void latch(int rc)
{
    if (rc != FT_SUCCESS && st.latched == FT_SUCCESS)
        st.latched = rc;
}

/* A call of op starts (obs_step.h) in this quorum and step. */
static uint64_t obs_begin(int op, uint64_t bytes)
{
    int64_t qid = st.have_quorum ? st.res.quorum_id : -1;
    return fti_obs_call_begin(&st.obs, op, bytes, qid, st.step);
}

static void log_ctx_update(void)
{
    fti_step_log_ctx(&st);
}

/* ---- FT_Init / FT_Finalize --------------------------------------------- */

/* Where the step's jobs run (progress.h).  A backend whose rendezvous needs
 * the world's ranks (the mpi backend) makes MPI calls, and so does the
 * group's quorum exchange with more than one rank: MPI allows them on the
 * progress thread only when it granted MPI_THREAD_MULTIPLE.  Otherwise
 * the reductions run synchronously (inside FT_Iallreduce) and
 * FT_QUORUM_ASYNC is a plain FT_Quorum. */
static int progress_start(void)
{
    int provided = MPI_THREAD_SINGLE;
    if (MPI_Query_thread(&provided) != MPI_SUCCESS)
        provided = MPI_THREAD_SINGLE;
    bool multiple = provided >= MPI_THREAD_MULTIPLE;
    bool backend_mpi = (st.world.backend->needs & FTI_COMM_NEEDS_WORLD) != 0;
    st.async_allreduce = !backend_mpi || multiple;
    st.async_quorum = st.async_allreduce && (st.group_size == 1 || multiple);
    FTI_DEBUG("FT_Init: asynchronous reductions %s, asynchronous quorum %s",
              st.async_allreduce ? "on" : "off (MPI calls, no MPI_THREAD_MULTIPLE)",
              st.async_quorum ? "on" : "off (MPI calls, no MPI_THREAD_MULTIPLE)");
    return fti_progress_create(st.async_allreduce, &st.progress);
}

static void log_init(void)
{
    if (st.mode->log_start != NULL)
        st.mode->log_start(&st.world, st.group_rank, st.group_size, st.my_addr);
    else
        FTI_INFO("FT_Init: replica %s, group rank %d of %d, server %s, lighthouse %s, backend %s",
                 st.world.replica_id, st.group_rank, st.group_size, st.my_addr, st.world.lighthouse,
                 st.world.backend->name);
}

FTMPI_EXPORT int FT_Init(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    return fti_init(NULL, NULL);
}

int fti_init(const struct fti_mode *mode, const fti_config_t *cfg)
{
    int mpi_init = 0, mpi_fin = 0;

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
    st.world.app_comm = MPI_COMM_NULL;
    st.world.mb.split = MPI_COMM_NULL;

    int rc = fti_step_setup(&st, mode, cfg);
    if (rc == FT_SUCCESS)
        rc = progress_start();
    if (rc == FT_SUCCESS)
        rc = fti_obs_start(&st.obs, st.cfg, st.group_rank, st.manager, st.elog);
    if (rc != FT_SUCCESS) {
        fti_step_teardown(&st);
        return rc;
    }
    st.initialized = true;
    fti_step_agent_mark(&st);
    fti_heal_set_step(st.heal, 0, false);
    log_ctx_update();
    log_init();
    return FT_SUCCESS;
}

FTMPI_EXPORT int FT_Finalize(void)
{
    if (!st.initialized)
        return FT_ERR_NOT_INITIALIZED;
    fti_step_agent_unmark(&st); /* from now on this rank's end is no death */
    quorum_sync();
    /* every job run; requests not waited for keep their results */
    fti_progress_destroy(st.progress);
    st.progress = NULL;
    FTI_DEBUG("FT_Finalize at step %" PRId64 "%s", st.step, st.world.lost ? " (group lost)" : "");
    /* the other groups need not wait for this one (LIGHTHOUSE_FINALIZE);
     * in mode B every rank says so, as the manager may be the rank that
     * died (the application may have noticed before the library did) */
    if (!st.world.lost) {
        if (st.mode->every_rank_leaves)
            FTI_INFO("FT_Finalize: %s leaves at step %" PRId64, st.world.replica_id, st.step);
        fti_ckpt_finish(st.ckpt); /* publishes the last checkpoint */
        fti_step_leave(&st);
    }
    uint64_t n = 0, bytes = 0;
    fti_mpi_abandoned(&n, &bytes);
    if (n > 0)
        FTI_INFO("FT_Finalize: %" PRIu64 " MPI requests were abandoned at deadlines (%" PRIu64
                 " bytes kept alive)",
                 n, bytes);
    fti_device_release();
    fti_obs_stop(&st.obs);
    fti_step_teardown(&st);
    return FT_SUCCESS;
}

/* ---- FT_Quorum --------------------------------------------------------- */

/* quorum_round in the flight recorder and the counters. */
static int quorum_run(int flags)
{
    uint64_t seq = obs_begin(FTI_FLIGHT_QUORUM, 0);
    int64_t t0 = fti_now_us();
    bool survived = false;
    int rc = fti_step_quorum_round(&st, flags, &survived);
    failures_survived += survived;
    fti_obs_call_end(&st.obs, FTI_FLIGHT_QUORUM, seq, rc, fti_now_us() - t0, 0, st.epoch);
    return rc;
}

/* An FT_QUORUM_ASYNC quorum in flight (async_quorum only). */
static struct {
    struct fti_job job;
    int flags;
    bool pending;
} aq;

static int quorum_job(void *arg)
{
    (void)arg;
    return quorum_run(aq.flags);
}

/* Waits for the step's FT_QUORUM_ASYNC quorum, if one is in flight: every
 * FT_ call that reads the step's state calls it first (its error is
 * latched by the job and returned by the step's collectives and commit). */
static void quorum_sync(void)
{
    if (!aq.pending)
        return;
    (void)fti_progress_wait(st.progress, &aq.job);
    aq.pending = false;
}

FTMPI_EXPORT int FT_Quorum(int flags)
{
    if (!st.initialized)
        return FT_ERR_NOT_INITIALIZED;
    if (flags & ~(FT_QUORUM_SHRINK_ONLY | FT_QUORUM_ASYNC))
        return FT_ERR_ARG;
    quorum_sync();
    if (st.world.lost)
        return FT_ERR_GROUP_LOST;
    if (st.sdc.stopped)
        return FT_ERR_SDC;
    if (st.in_step) {
        FTI_ERROR("FT_Quorum: the step started by the last FT_Quorum has not been committed");
        return FT_ERR_STATE;
    }
    /* requests of the last step that were never waited for */
    fti_progress_drain(st.progress);
    fti_progress_reset(st.progress);
    st.epoch++;
    st.in_step = true;
    st.latched = FT_SUCCESS;
    st.quorum_ok = false;
    /* the state of st.step is what the application holds now: serve it */
    fti_heal_set_step(st.heal, st.step, true);
    if ((flags & FT_QUORUM_ASYNC) && st.async_quorum) {
        aq.flags = flags;
        aq.job = (struct fti_job){.fn = quorum_job};
        aq.pending = true;
        fti_progress_submit(st.progress, &aq.job);
        return FT_SUCCESS;
    }
    return quorum_run(flags);
}

/* ---- collectives -------------------------------------------------------- */

/* A reduction: the job the progress thread runs (progress.h) and what it
 * needs, all taken at the start so that the job reads nothing of `st` but
 * the slice (step.h, Threads). */
struct ftmpi_request {
    struct fti_job job;
    const void *sendbuf;
    void *recvbuf;
    size_t count, bytes;
    enum fti_dtype dt;
    enum fti_op op;     /* FTI_OP_SUM for an average over fewer participants than members */
    bool spare, scale;
    bool device;        /* recvbuf is CUDA memory (device.h) */
    int participants;
    int64_t timeout_ms; /* from the moment the job starts */
    int64_t epoch;      /* the step (FT_Quorum call) it belongs to */
};

/* The slice failed under a reduction: one error line naming the failed peer
 * (the backend logged at debug level); the communicator is dead, closing it
 * now tells the ring at once. */
static void allreduce_failed(int rc)
{
    fti_step_collective_failed(&st, rc); /* the one error line, the failed peer */
    fti_comm_destroy(st.slice);
    st.slice = NULL;
}

/* The job: on the progress thread while requests are in flight, else on
 * the application's (fti_progress_run). */
static int allreduce_run(struct ftmpi_request *r);

static int allreduce_job(void *arg)
{
    struct ftmpi_request *r = arg;
    uint64_t seq = obs_begin(FTI_FLIGHT_ALLREDUCE, r->bytes);
    int64_t t0 = fti_now_us();
    int rc = allreduce_run(r);
    fti_obs_call_end(&st.obs, FTI_FLIGHT_ALLREDUCE, seq, rc, fti_now_us() - t0, r->bytes,
                     st.epoch);
    return rc;
}

static int allreduce_run(struct ftmpi_request *r)
{
    if (r->device) { /* a CUDA buffer (device.h): its own slice or staging */
        fti_device_step_t d = {
            .cfg = st.cfg,
            .bind_host = st.world.bind_host,
            .backend = st.world.backend,
            .auto_device = st.mode->auto_device,
            .slice = st.slice,
            .slice_quorum_id = st.slice_quorum_id,
            .res = &st.res,
            .group_rank = st.group_rank,
        };
        int rc = fti_device_allreduce(&d, r->sendbuf, r->recvbuf, r->count, r->dt, r->op);
        if (rc != FT_SUCCESS)
            allreduce_failed(rc);
        return rc;
    }
    /* the backend reads sendbuf itself (no copy into recvbuf first) */
    const void *src = r->sendbuf == MPI_IN_PLACE ? r->recvbuf : r->sendbuf;
    if (r->count == 0)
        return FT_SUCCESS;
    if (st.slice == NULL)
        return FT_ERR_INTERNAL;
    /* spares: they take part with the identity, and an average divides by
     * the participants, not by the members */
    if (r->spare) {
        fti_reduce_identity(r->recvbuf, r->count, r->dt, r->op);
        src = r->recvbuf;
    }
    int rc = fti_comm_allreduce_from(st.slice, src, r->recvbuf, r->count, r->dt,
                                     r->scale ? FTI_OP_SUM : r->op, fti_now_ms() + r->timeout_ms);
    if (rc == FT_SUCCESS && r->scale)
        fti_reduce_scale(r->recvbuf, r->count, r->dt, r->participants);
    if (rc != FT_SUCCESS)
        allreduce_failed(rc);
    return rc;
}

static int check_allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                           MPI_Op op, FT_Comm comm, enum fti_dtype *dt_p, enum fti_op *op_p)
{
    if (!st.initialized)
        return FT_ERR_NOT_INITIALIZED;
    if (comm != FT_COMM_REPLICAS || count < 0 ||
        (count > 0 && (recvbuf == NULL || sendbuf == NULL)))
        return FT_ERR_ARG;
    if (st.cfg->modeb_zero_copy && count > 0 && fti_mem_given_up(recvbuf)) {
        FTI_ERROR("FT_Allreduce: the buffer at %p was given to MPI by a zero-copy allreduce that "
                  "failed (FTMPI_MODEB_ZERO_COPY): MPI may still write it; free it with "
                  "ftmpi_mem_free and allocate another",
                  recvbuf);
        return FT_ERR_STATE;
    }
    return fti_reduction_from_mpi(datatype, op, ftmpi_op_avg, dt_p, op_p);
}

/* Checks the call and the step (waiting for an FT_QUORUM_ASYNC quorum) and
 * fills *r; the job is not started.  A step that already failed returns
 * FT_ERR_ABORTED: this rank will not take part, so its ring is closed
 * (after the reductions in flight) and its peers fail now instead of at
 * their deadline. */
static int prepare_allreduce(const char *what, const void *sendbuf, void *recvbuf, int count,
                             MPI_Datatype datatype, MPI_Op op, FT_Comm comm,
                             struct ftmpi_request *r)
{
    enum fti_dtype dt;
    enum fti_op fop;
    int rc = check_allreduce(sendbuf, recvbuf, count, datatype, op, comm, &dt, &fop);
    if (rc != FT_SUCCESS)
        return rc;
    quorum_sync();
    if (st.world.lost)
        return FT_ERR_GROUP_LOST;
    if (!st.in_step) {
        FTI_ERROR("%s: outside a step (call FT_Quorum first)", what);
        return FT_ERR_STATE;
    }
    latch(fti_progress_failed(st.progress));
    if (st.latched != FT_SUCCESS) {
        fti_progress_drain(st.progress);
        fti_comm_destroy(st.slice);
        st.slice = NULL;
        return FT_ERR_ABORTED;
    }
    *r = (struct ftmpi_request){
        .job = {.fn = allreduce_job, .abortable = true},
        .sendbuf = sendbuf,
        .recvbuf = recvbuf,
        .count = (size_t)count,
        .bytes = (size_t)count * fti_dtype_size(dt),
        .dt = dt,
        .op = fop,
        .spare = st.res.spare,
        .scale = fop == FTI_OP_AVG && st.res.participants != st.res.replica_world_size,
        .participants = st.res.participants,
        .timeout_ms = st.cfg->timeout_ms,
        .epoch = st.epoch,
        .device = fti_device_ptr(recvbuf),
    };
    r->job.arg = r;
    return FT_SUCCESS;
}

/* An error of a call made inside a step (bad arguments, a given-up
 * buffer, no memory, ...) fails the step as a failed reduction does: the
 * application may ignore the return code, and FT_Commit must not commit a
 * step whose reduction never ran (issue 23). */
static int latch_in_step(int rc)
{
    if (rc != FT_SUCCESS && st.initialized && st.in_step)
        latch(rc);
    return rc;
}

FTMPI_EXPORT int FT_Allreduce(const void *sendbuf, void *recvbuf, int count,
                              MPI_Datatype datatype, MPI_Op op, FT_Comm comm)
{
    struct ftmpi_request r;
    int rc = prepare_allreduce("FT_Allreduce", sendbuf, recvbuf, count, datatype, op, comm, &r);
    if (rc != FT_SUCCESS)
        return latch_in_step(rc);
    /* on this thread when nothing is in flight: no hand-off */
    rc = fti_progress_run(st.progress, &r.job);
    latch(rc);
    return rc;
}

FTMPI_EXPORT int FT_Iallreduce(const void *sendbuf, void *recvbuf, int count,
                               MPI_Datatype datatype, MPI_Op op, FT_Comm comm,
                               FT_Request *request)
{
    if (request == NULL)
        return latch_in_step(FT_ERR_ARG);
    struct ftmpi_request *r = malloc(sizeof(*r));
    if (r == NULL)
        return latch_in_step(FT_ERR_NO_MEMORY);
    int rc = prepare_allreduce("FT_Iallreduce", sendbuf, recvbuf, count, datatype, op, comm, r);
    if (rc != FT_SUCCESS) {
        free(r);
        return latch_in_step(rc);
    }
    fti_progress_submit(st.progress, &r->job);
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
    /* FT_Finalize drained every job */
    int rc = st.progress != NULL ? fti_progress_wait(st.progress, &r->job) : r->job.rc;
    if (st.initialized && r->epoch == st.epoch)
        latch(rc); /* a request of an older step fails nothing now */
    free(r);
    *request = FT_REQUEST_NULL;
    return rc;
}

#define FTI_VOTE_SLACK_MS 500 /* group_decide */

/* ---- FT_Commit ---------------------------------------------------------- */

/* The group's decision on the step is group rank 0's (group.h,
 * fti_group_decide): rank 0 waits for the votes one window; the others wait
 * for its decision two windows, so rank 0 may come up to a window later.
 * Mode B: a rank's heal of this step may take the heal timeout too.  Sets
 * *decision_p to FT_SUCCESS (commit), FT_ERR_ABORTED (a rank voted no), or
 * the reason (a late vote: FT_ERR_TIMEOUT; rank 0's own error). */
static int group_decide(int vote, int *decision_p)
{
    int64_t win = st.cfg->timeout_ms, now = fti_now_ms();
    if (st.mode->vote_waits_for_heal && st.quorum_ok && st.res.heal)
        win += st.cfg->heal_timeout_ms;
    /* a partner still in a cross-group operation that began with rank 0's
     * reaches its deadline about when rank 0's window ends, and votes after
     * its clean-up: the slack keeps that vote from reading as a dead rank */
    int64_t slack = FTI_MIN(FTI_VOTE_SLACK_MS, win / 2);
    return fti_group_decide(st.group, vote, now + win + slack, now + 2 * win + slack, decision_p);
}

/* Groups heal from this rank in this step: a step without a collective
 * would otherwise close the state under them.  Half the deadline, so that
 * the group's vote keeps its time. */
static void wait_healers(void)
{
    if (st.latched != FT_SUCCESS || !st.quorum_ok || st.res.heal || st.res.n_stripe_dst <= 0)
        return;
    int w = fti_heal_wait_served(st.heal, st.res.n_stripe_dst,
                                 fti_now_ms() + st.cfg->timeout_ms / 2);
    if (w != FT_SUCCESS)
        FTI_INFO("FT_Commit: %d healer(s) of this step did not finish copying in time",
                 st.res.n_stripe_dst);
}

/* The durable checkpoint's part of a committed step (state/ckpt_step.h).  Its round is
 * an intra-group operation with a deadline: mode B decides what its failure
 * means (a dead member: the group is lost); in mode A the checkpoint is
 * only abandoned (state/ckpt_step.c logged and counted it) and the step stands. */
static int checkpoint_round(void)
{
    int rc = fti_ckpt_after_commit(st.ckpt, st.step, st.res.replica_rank == 0, false);
    if ((rc == FT_ERR_TIMEOUT || rc == FT_ERR_PROC_FAILED || rc == FT_ERR_MPI) &&
        st.mode->group_failure(rc) == FT_ERR_GROUP_LOST)
        return fti_step_group_lost(&st, rc);
    return FT_SUCCESS;
}

static int commit_run(int *committed);

FTMPI_EXPORT int FT_Commit(int *committed)
{
    uint64_t seq = obs_begin(FTI_FLIGHT_COMMIT, 0);
    int64_t t0 = fti_now_us();
    int rc = commit_run(committed);
    fti_obs_call_end(&st.obs, FTI_FLIGHT_COMMIT, seq, rc, fti_now_us() - t0, 0, st.epoch);
    return rc;
}

static int commit_run(int *committed)
{
    if (committed == NULL)
        return FT_ERR_ARG;
    *committed = 0;
    if (!st.initialized)
        return FT_ERR_NOT_INITIALIZED;
    quorum_sync();
    /* every reduction of the step ends first; one that failed, waited for
     * or not, fails the step */
    fti_progress_drain(st.progress);
    latch(fti_progress_failed(st.progress));
    if (st.world.lost) {
        st.in_step = false;
        return FT_ERR_GROUP_LOST;
    }
    if (!st.in_step) {
        FTI_ERROR("FT_Commit: no step to commit (call FT_Quorum first)");
        return FT_ERR_STATE;
    }
    int participants = st.quorum_ok ? st.res.participants : 0;
    wait_healers();
    int vote = fti_commit_vote(st.latched, participants, st.cfg->min_replicas);
    int decision = FT_ERR_ABORTED;
    int rc = group_decide(vote, &decision);
    /* no decision here: rank 0 may have committed, so this rank cannot go
     * on (both modes).  Mode B: a vote that missed rank 0's deadline means
     * a dead rank: every rank that learns it leaves with the group. */
    bool late_vote_lost = decision == FT_ERR_TIMEOUT &&
                          st.mode->group_failure(decision) == FT_ERR_GROUP_LOST;
    if (rc != FT_SUCCESS || late_vote_lost) {
        st.commit_failures++;
        st.in_step = false;
        st.latched = FT_SUCCESS;
        if (st.group_rank == 0)
            fti_event_commit(st.elog, st.step, false, participants, FT_ERR_GROUP_LOST);
        fti_obs_commit(&st.obs, st.step, st.step, false, FT_ERR_GROUP_LOST);
        return fti_step_group_lost(&st, rc != FT_SUCCESS ? rc : decision);
    }
    int all = decision == FT_SUCCESS;
    if (!all && decision != FT_ERR_ABORTED)
        latch(decision); /* a late vote, or rank 0's own error */
    int64_t step = st.step;
    if (all) {
        st.step++;
        st.fresh = false;
        /* the application changes its state now: serve nothing until the
         * next FT_Quorum */
        fti_heal_set_step(st.heal, st.step, false);
        rc = checkpoint_round();
    } else {
        st.commit_failures++;
        if (st.latched != FT_SUCCESS)
            rc = st.latched;
        else if (participants < st.cfg->min_replicas)
            rc = FT_ERR_QUORUM;
        else
            rc = FT_ERR_ABORTED; /* another rank of the group voted no */
        FTI_INFO("FT_Commit: step %" PRId64 " not committed: %s", step, FT_Error_string(rc));
        char why[160]; /* FTI_LH_FAILURE_SIZE */
        snprintf(why, sizeof(why), "step %" PRId64 ": %s", step, FT_Error_string(rc));
        fti_manager_report_failure(st.manager, why); /* the dashboard says why */
    }
    if (st.group_rank == 0)
        fti_event_commit(st.elog, step, all != 0, participants, rc);
    fti_obs_commit(&st.obs, step, st.step, all != 0, rc);
    *committed = all;
    st.in_step = false;
    st.latched = FT_SUCCESS;
    log_ctx_update();
    return rc;
}

/* ---- queries ------------------------------------------------------------ */

FTMPI_EXPORT int FT_Comm_size(FT_Comm comm, int *size)
{
    quorum_sync();
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
    quorum_sync();
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
    quorum_sync();
    return st.step;
}

FTMPI_EXPORT int FT_Heal_count(int64_t *count_p)
{
    quorum_sync();
    if (!st.initialized)
        return FT_ERR_NOT_INITIALIZED;
    if (count_p == NULL)
        return FT_ERR_ARG;
    *count_p = st.replaced;
    return FT_SUCCESS;
}

FTMPI_EXPORT int FT_State_register(const char *name, void *buf, size_t bytes)
{
    quorum_sync();
    if (!st.initialized)
        return FT_ERR_NOT_INITIALIZED;
    /* device memory: healed through a pinned host mirror (device.h) */
    bool dev = fti_device_ptr(buf);
    if (dev && st.cfg->ckpt_dir[0] != '\0') {
        FTI_ERROR("FT_State_register: '%s' is device memory: checkpoints of device state are not "
                  "supported (FTMPI_CKPT_DIR is set); register a host copy instead",
                  name);
        return FT_ERR_UNSUPPORTED;
    }
    fti_heal_copy_t copy;
    int rc = dev ? fti_device_heal_copy(buf, bytes, &copy) : FT_SUCCESS;
    if (rc != FT_SUCCESS)
        return rc;
    rc = fti_heal_register_copy(st.heal, name, buf, bytes, dev ? &copy : NULL);
    if (rc != FT_SUCCESS && dev)
        copy.release(copy.ctx, copy.mirror);
    if (rc == FT_ERR_EXISTS)
        FTI_ERROR("FT_State_register: '%s' is already registered", name);
    if (rc == FT_SUCCESS && !dev)
        rc = fti_ckpt_register_replicated(st.ckpt, name, buf, bytes);
    return rc;
}

FTMPI_EXPORT int FT_State_register_shard(const char *name, void *buf, MPI_Datatype datatype,
                                         int64_t global_count, int64_t offset, int64_t count)
{
    quorum_sync();
    if (!st.initialized)
        return FT_ERR_NOT_INITIALIZED;
    if (fti_device_ptr(buf)) { /* heal/serve.c would read it as host memory */
        FTI_ERROR("FT_State_register_shard: '%s' is device memory: not supported (use "
                  "FT_State_register, healing only)",
                  name);
        return FT_ERR_UNSUPPORTED;
    }
    return fti_ckpt_register_shard(st.ckpt, st.heal, name, buf, datatype, global_count, offset,
                                   count);
}

FTMPI_EXPORT int FT_Checkpoint(int flags)
{
    quorum_sync();
    if (!st.initialized)
        return FT_ERR_NOT_INITIALIZED;
    if (flags != 0)
        return FT_ERR_ARG;
    if (st.world.lost)
        return FT_ERR_GROUP_LOST;
    if (st.in_step || !st.have_quorum)
        return FT_ERR_STATE;
    return fti_ckpt_after_commit(st.ckpt, st.step, st.res.replica_rank == 0, true);
}

FTMPI_EXPORT int ftmpi_checkpoint_stats(ftmpi_checkpoint_stats_t *stats)
{
    quorum_sync();
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
    if (buf == NULL || len <= strlen(st.world.replica_id))
        return FT_ERR_ARG;
    fti_strlcpy(buf, st.world.replica_id, len);
    return FT_SUCCESS;
}

FTMPI_EXPORT int ftmpi_failures_survived(void)
{
    quorum_sync();
    return failures_survived;
}

FTMPI_EXPORT int ftmpi_group_comm(MPI_Comm *comm_p)
{
    if (!st.initialized)
        return FT_ERR_NOT_INITIALIZED;
    if (comm_p == NULL)
        return FT_ERR_ARG;
    *comm_p = st.world.app_comm;
    return FT_SUCCESS;
}

FTMPI_EXPORT int64_t ftmpi_quorum_id(void)
{
    quorum_sync();
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
