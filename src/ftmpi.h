/*
 * ftmpi.h - public API of libftmpi, the fault-tolerance layer for
 * data-parallel MPI programs.  This is the only installed header.
 *
 * The step protocol (see doc/USER_GUIDE.md):
 *
 *     FT_Init(&argc, &argv);            // after MPI_Init
 *     FT_State_register("w", w, bytes);  // what healing copies
 *     while (FT_Step() < N) {
 *         FT_Quorum(0);                  // quorum, reconfigure, heal
 *         compute(grad);
 *         FT_Allreduce(MPI_IN_PLACE, grad, n, MPI_FLOAT, FT_AVG,
 *                      FT_COMM_REPLICAS);
 *         FT_Commit(&committed);         // did the whole step succeed?
 *         if (committed) apply(grad);
 *     }
 *     FT_Finalize();                     // before MPI_Finalize
 *
 * Two ways to run (doc/USER_GUIDE.md, README.md):
 *   mode A: one mpirun per replica group, FTMPI_LIGHTHOUSE=host:port of an
 *           ftmpi-lighthouse; a dead group's mpirun ends, ftmpi-run restarts it;
 *   mode B: one `mpirun --enable-recovery -np k*R+1 -x FTMPI_GROUP_SIZE=R`:
 *           k groups of R consecutive world ranks, the last world rank runs
 *           the lighthouse inside FT_Init and never returns from it (it calls
 *           MPI_Finalize and exit(0) once every group finalized or is gone).
 *           A group that loses a rank is gone: its other ranks get
 *           FT_ERR_GROUP_LOST and leave (FT_Finalize, MPI_Finalize).
 *
 * Thread safety: every FT_ call of a process must be made from one thread
 * at a time (the thread that called FT_Init, or calls serialised by the
 * application, as with MPI_THREAD_SERIALIZED).  The library runs its own
 * background threads (RPC servers, heartbeats, the progress thread); they
 * never call back into application code.  Any thread level MPI grants is
 * enough when that is the thread that initialised MPI (MPI_THREAD_FUNNELED
 * states it exactly); from another thread FT_Init needs
 * MPI_THREAD_SERIALIZED and fails with FT_ERR_CONFIG otherwise.
 * FT_Error_string is safe from any thread.
 *
 * Asynchronous progress: FT_Iallreduce's reduction and an FT_QUORUM_ASYNC
 * quorum run on the library's progress thread while the application
 * computes.  That thread calls MPI only when MPI granted
 * MPI_THREAD_MULTIPLE; otherwise, with the `mpi` backend (mode B, the
 * drop-in) FT_Iallreduce runs its reduction before it returns, and with
 * the `mpi` backend or a group of more than one rank FT_QUORUM_ASYNC is a
 * plain (blocking) FT_Quorum.  The tcp and baby-* backends make no MPI
 * call: their reductions are always asynchronous, and so is the quorum of
 * a group of one rank.
 */
#ifndef FTMPI_H
#define FTMPI_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

#include "ftmpi_errors.h" /* FTMPI_EXPORT, the version, FT_Error, FT_Error_string */

#ifdef __cplusplus
extern "C" {
#endif


/* Communicators of the fault-tolerant layer. */
typedef int FT_Comm;
#define FT_COMM_REPLICAS ((FT_Comm)1) /* this rank's slice: same group rank in every group of the quorum */

/* Averaging reduction: SUM / number of participants (FT_Comm_size).
 * Valid between FT_Init and FT_Finalize, for floating-point types only. */
FTMPI_EXPORT extern MPI_Op ftmpi_op_avg;
#define FT_AVG ftmpi_op_avg

/* Initialise after MPI_Init.  Reads the FTMPI_* environment (see ftmpi-info),
 * connects to the lighthouse, starts the background threads.  Returns
 * FT_ERR_CONFIG with a message naming the variable on a bad value.
 * Collective over MPI_COMM_WORLD.  Mode B: on the last world rank it does
 * not return (see above); a world size that is not k * FTMPI_GROUP_SIZE + 1
 * is refused with FT_ERR_CONFIG on every rank. */
FTMPI_EXPORT int FT_Init(int *argc, char ***argv);

/* Stops the background threads and frees everything FT_Init made.  Call it
 * before MPI_Finalize, also after an error. */
FTMPI_EXPORT int FT_Finalize(void);

/* Starts a step: asks for a quorum, rebuilds the slice when the quorum
 * changed and heals this rank's registered state when it is behind.  A
 * heal written straight into the registered buffers (FTMPI_HEAL_INSTALL;
 * by default a process's first heal, mode A) that fails returns
 * FT_ERR_GROUP_LOST: the buffers are partly overwritten, the group must
 * exit and be restarted (ftmpi-run does).  With the SDC check
 * (FTMPI_SDC_EVERY) a group whose state disagrees with a strict majority
 * of the groups heals from them here; when the groups differ with no
 * majority and FTMPI_SDC_ON_TIE=stop, it returns FT_ERR_SDC, and so does
 * every later FT_Quorum: call FT_Finalize and exit.  FT_Heal_count says
 * whether a call replaced the registered state (such a heal keeps the
 * step), also one that then returned an error.
 * flags: 0, or either or both of FT_QUORUM_SHRINK_ONLY and
 * FT_QUORUM_ASYNC.
 *
 * FT_QUORUM_ASYNC: FT_Quorum returns FT_SUCCESS at once and the quorum,
 * the slice and any heal complete on the progress thread (see Thread
 * safety above for when it is a plain FT_Quorum).  The next FT_ call that
 * reads the step's state waits for it: FT_Allreduce, FT_Iallreduce,
 * FT_Commit, FT_Step, FT_Comm_size, FT_Comm_rank, FT_State_register*,
 * FT_Checkpoint, ftmpi_quorum_id, ftmpi_failures_survived, FT_Finalize;
 * the quorum's error is then latched and returned by the step's
 * collectives and FT_Commit.  Until that first wait the application must
 * neither write nor read its registered buffers (FT_State_register): a
 * heal may be installing the group's new state into them.  Anything else
 * (loading the next batch, work on other memory) overlaps the quorum. */
#define FT_QUORUM_SHRINK_ONLY 0x1
#define FT_QUORUM_ASYNC 0x2
FTMPI_EXPORT int FT_Quorum(int flags);

/* Allreduce across the replica groups of the current quorum (MPI's
 * signature).  A failure returns an FT_ERR_* code and is latched: later
 * collectives of the step return FT_ERR_ABORTED at once and the step does
 * not commit.  Supported types: MPI_FLOAT, MPI_DOUBLE, MPI_INT, MPI_LONG,
 * MPI_INT32_T, MPI_INT64_T, MPI_UINT64_T; ops MPI_SUM, MPI_PROD, MPI_MAX,
 * MPI_MIN, FT_AVG (floating point).  MPI_CHAR and MPI_BYTE are refused for
 * every arithmetic op, as MPI refuses them.  Anything else returns
 * FT_ERR_UNSUPPORTED.
 * Device buffers (CUDA builds, backends nccl and baby-nccl): the buffer is
 * taken as written in the order of the legacy default stream: work queued
 * before the call on it, on a blocking stream (cudaStreamCreate) or on a
 * per-thread default stream comes first; work on a cudaStreamNonBlocking
 * stream must be synchronized by the caller.  On return the result is in
 * the buffer for every stream. */
FTMPI_EXPORT int FT_Allreduce(const void *sendbuf, void *recvbuf, int count,
                              MPI_Datatype datatype, MPI_Op op, FT_Comm comm);

/* Non-blocking form; the buffers must stay untouched until FT_Wait.
 * FT_Iallreduce checks its arguments and the step (returning
 * FT_ERR_UNSUPPORTED, FT_ERR_STATE etc. at once, and FT_ERR_ABORTED when
 * the step already failed; *request is then not set), starts the
 * reduction on the progress thread and returns.  Several requests may be
 * in flight (e.g. gradient buckets): they run one after the other in the
 * order they were started, each with its own FTMPI_TIMEOUT_MS from when
 * it starts.  When one fails, every later one of the step fails at once
 * with FT_ERR_ABORTED; FT_Wait returns what FT_Allreduce would, in any
 * order, and latches it like FT_Allreduce.  FT_Commit first waits for
 * every request of the step (a failed one not yet waited for fails the
 * step too); each must still be freed with FT_Wait. */
typedef struct ftmpi_request *FT_Request;
#define FT_REQUEST_NULL ((FT_Request)0)
FTMPI_EXPORT int FT_Iallreduce(const void *sendbuf, void *recvbuf, int count,
                               MPI_Datatype datatype, MPI_Op op, FT_Comm comm,
                               FT_Request *request);
/* Completes and frees *request, then sets it to FT_REQUEST_NULL
 * (FT_REQUEST_NULL: FT_SUCCESS at once). */
FTMPI_EXPORT int FT_Wait(FT_Request *request);

/* Ends the step: *committed is 1 when every collective of the step
 * succeeded in every rank of this group and enough groups took part
 * (FTMPI_MIN_REPLICAS); the step count then advances.  *committed is
 * always written and is the decision, the same on every rank of the group.
 * The decision is group rank 0's: every rank sends it its vote; rank 0
 * waits for the votes until FTMPI_TIMEOUT_MS after it entered FT_Commit
 * (mode B: plus FTMPI_HEAL_TIMEOUT_MS in a step that heals) and commits
 * only when every vote came in time and all say yes; a vote that came
 * later does not count (the step is not committed, FT_ERR_TIMEOUT, on
 * every rank; mode B: the late rank is taken for dead and the group is
 * lost, FT_ERR_GROUP_LOST on every rank).  Every other rank waits for the
 * decision twice that long after its own entry.  A rank that does not get
 * it in time cannot know what rank 0 decided: it does not commit and
 * returns FT_ERR_GROUP_LOST, as every later FT_ call does (both modes:
 * call FT_Finalize and leave; in mode A the group is restarted and heals).
 * So no wait is longer than twice the window, and no two ranks of a group
 * that go on hold different steps.
 * Returns FT_SUCCESS when committed; otherwise the step's first error
 * (e.g. FT_ERR_TIMEOUT after a quorum that timed out), FT_ERR_QUORUM when
 * too few groups took part, or FT_ERR_ABORTED when another rank of the
 * group voted no.  FT_ERR_STATE without a preceding FT_Quorum. */
FTMPI_EXPORT int FT_Commit(int *committed);

/* Participants of the current quorum and this group's index among them.
 * With spare groups (FTMPI_WORLD_SIZE_MODE=fixed_with_spares) the size is
 * at most FTMPI_MIN_REPLICAS and a spare's rank is >= the size: a spare
 * takes part in every FT_Allreduce (it stays in sync) but its data counts
 * for nothing (it contributes the op's identity element) until it replaces
 * a lost participant. */
FTMPI_EXPORT int FT_Comm_size(FT_Comm comm, int *size);
FTMPI_EXPORT int FT_Comm_rank(FT_Comm comm, int *rank);

/* Number of committed steps (the step the next FT_Quorum starts). */
FTMPI_EXPORT int64_t FT_Step(void);

/* *count_p = how many FT_Quorum calls of this process replaced its
 * registered state (FT_State_register*): a heal from another group
 * installed (a group behind, a restart, and the SDC check's heal of a
 * minority, which keeps the step: FT_Step() does not show it), a
 * checkpoint loaded at the start, a direct heal cut part-way
 * (FT_ERR_GROUP_LOST).  It counts also when FT_Quorum then returned an
 * error.  Anything the application derived from its registered buffers
 * (an optimizer's copy, an outer loop's local parameters) is stale when
 * the count changed since it last looked: read it after each FT_Quorum,
 * whatever that returned, and compare it with the value kept from the
 * last look (the FT_Outer_* calls do).  FT_ERR_ARG when count_p is NULL,
 * FT_ERR_NOT_INITIALIZED outside FT_Init..FT_Finalize; *count_p is
 * written only on FT_SUCCESS. */
FTMPI_EXPORT int FT_Heal_count(int64_t *count_p);

/* Registers a buffer healing copies (the caller keeps ownership; the buffer
 * must stay valid until FT_Finalize).  Names are unique per rank.
 * buf may be CUDA device memory (cudaMalloc): a source copies it into a
 * pinned host mirror (allocated here, freed by FT_Finalize) once per step
 * in which a group heals from it, a healer copies the healed bytes back
 * into it before FT_Quorum returns; finish the kernels that write it
 * before FT_Quorum.  Device memory is not checkpointed: FT_ERR_UNSUPPORTED
 * when FTMPI_CKPT_DIR is set (and from FT_State_register_shard). */
FTMPI_EXPORT int FT_State_register(const char *name, void *buf, size_t bytes);

/* Registers this rank's block of a global array for durable checkpoints
 * (and for healing, like FT_State_register): elements [offset, offset +
 * count) of a global array of global_count elements of datatype, held at
 * buf.  The ranks of a group together must hold every element once.  A
 * checkpoint stores each rank's block; a group of another size loads it
 * back resharded (each rank reads the overlapping ranges of the old
 * blocks).  Names: [A-Za-z0-9_.:+-], at most 63 characters (buffers
 * registered with FT_State_register under such names are checkpointed
 * too, as replicated inside the group: stored once, loaded by every
 * rank).  FT_ERR_ARG for a bad range or name, FT_ERR_EXISTS. */
FTMPI_EXPORT int FT_State_register_shard(const char *name, void *buf, MPI_Datatype datatype,
                                         int64_t global_count, int64_t offset, int64_t count);

/* Durable checkpoints (doc/USER_GUIDE.md, "Checkpoints"): call after a
 * committed FT_Commit, on every rank of the group (or set
 * FTMPI_CKPT_EVERY).  In the quorum's replica rank 0 every rank copies its
 * registered buffers into memory and returns; a background thread writes
 * FTMPI_CKPT_DIR/step-<N>/, and a later FT_Commit (or FT_Finalize)
 * publishes it once every rank of the group wrote.  Other groups do
 * nothing.  A checkpoint due while the previous one is still being
 * written is skipped.  A failed write is logged and counted
 * (ftmpi_checkpoint_stats) and training goes on; the previous checkpoint
 * stays.  flags: 0.  FT_ERR_CONFIG without FTMPI_CKPT_DIR, FT_ERR_STATE
 * inside a step. */
FTMPI_EXPORT int FT_Checkpoint(int flags);

typedef struct ftmpi_checkpoint_stats {
    int64_t started;        /* checkpoints this rank copied and handed to its writer */
    int64_t published;      /* published by this rank (group rank 0 of the writing group) */
    int64_t write_failures; /* this rank's failed writes or publishes */
    int64_t failed;         /* checkpoints this group dropped (group rank 0) */
    int64_t skipped;        /* due while the previous one was still being written */
    int64_t last_step;      /* newest checkpoint this rank published, -1 none */
    int64_t loaded_step;    /* checkpoint loaded at the start, -1 none */
    uint64_t bytes_written; /* by this rank */
    double last_copy_ms;    /* the copy into memory, on the step */
    double last_write_ms;   /* the background write and fsyncs of this rank's file */
} ftmpi_checkpoint_stats_t;

/* This rank's checkpoint counters.  FT_ERR_ARG when stats is NULL. */
FTMPI_EXPORT int ftmpi_checkpoint_stats(ftmpi_checkpoint_stats_t *stats);

/* Information about this process, for logs and tooling. */
FTMPI_EXPORT int ftmpi_replica_id(char *buf, size_t len);
FTMPI_EXPORT int ftmpi_failures_survived(void);
FTMPI_EXPORT const char *ftmpi_version(void);

/* The id of the last quorum this rank received; -1 before the first (and
 * outside FT_Init..FT_Finalize).  Ids start near the lighthouse's wall
 * clock in ms. */
FTMPI_EXPORT int64_t ftmpi_quorum_id(void);

/* Memory for buffers of FT_Allreduce that the baby-<backend> child
 * (FTMPI_BACKEND=baby-tcp, ...) reduces in place: *ptr gets bytes (> 0)
 * of zeroed, page-aligned memory in a shared memory region of its own.
 * Any other buffer is copied through a staging region.  Mode B with
 * FTMPI_MODEB_ZERO_COPY=1: MPI reduces into such a buffer directly; after
 * an FT_Allreduce on it failed, MPI may still write it, so FT_Allreduce
 * refuses it (FT_ERR_STATE) and the application must ftmpi_mem_free it
 * (which then leaves the memory mapped) and allocate another.  Usable with
 * every backend and before FT_Init.  Release with ftmpi_mem_free (NULL:
 * no-op; a pointer not from ftmpi_mem_alloc: FT_ERR_ARG).  Thread-safe. */
FTMPI_EXPORT int ftmpi_mem_alloc(size_t bytes, void **ptr);
FTMPI_EXPORT int ftmpi_mem_free(void *ptr);

/* The group's own MPI communicator, for the application's intra-group work
 * (e.g. sharding inside a group): mode A a duplicate of MPI_COMM_WORLD,
 * mode B the group's part of the split of MPI_COMM_WORLD.  Valid from
 * FT_Init to FT_Finalize.  Mode B: a rank of the group may die, and MPI
 * then never completes a collective on this communicator: use non-blocking
 * calls polled against a deadline (examples/ft_sgd.c does), and leave
 * when it passes. */
FTMPI_EXPORT int ftmpi_group_comm(MPI_Comm *comm_p);

/* Mode B, `mpi` backend: cross-group MPI requests abandoned at a deadline
 * since the process started (a peer died or stalled), and the bytes of
 * their buffers kept alive because MPI may still write them.  Each
 * abandoned request also retires its slice communicator (never used, never
 * freed again).  Either pointer may be NULL. */
FTMPI_EXPORT int ftmpi_abandoned_requests(uint64_t *requests, uint64_t *bytes);


/* ---- LocalSGD and DiLoCo: an outer synchronisation every H inner steps
 * (doc/USER_GUIDE.md, "LocalSGD and DiLoCo").
 *
 *     FT_Outer outer;
 *     FT_Outer_create(FT_OUTER_DILOCO, 20, 0.7, 0.9, &outer);
 *     FT_Outer_register(outer, "w", w, n);     // the inner (local) parameters
 *     for (;;) {
 *         FT_Outer_step(outer, &result);       // a sync when one is due
 *         if (result & FT_OUTER_RESET) reset_inner_optimizer();
 *         if (FT_Step() > N / 20) break;       // committed syncs (+1: the join)
 *         inner_step(w);                       // no FT_ call: groups train alone
 *     }
 *     FT_Finalize(); FT_Outer_free(&outer);
 *
 * A sync is one step of the protocol above (FT_Quorum, FT_Allreduce,
 * FT_Commit).  What it keeps as registered state (healed, checkpointed,
 * bitwise the same in every group after each committed sync): per
 * registered array a global copy of the parameters ("outer.NAME.g") and,
 * for DiLoCo, the outer momentum ("outer.NAME.m"); the sync counter is
 * FT_Step().  The caller's parameters are the group's local inner state.
 * LocalSGD: the new global parameters are the average of the groups'
 * parameters.  DiLoCo: the groups average their pseudo-gradients
 * (global - local) and apply Nesterov momentum to the global copy:
 *     m = momentum * m + delta;  global -= outer_lr * (delta + momentum * m).
 * After a committed sync the caller's parameters are set to the new global
 * ones (FT_OUTER_RESET).  A sync that does not commit changes no registered
 * state and leaves the caller's parameters alone: the group keeps training
 * and the next sync, H inner steps later, retries (the pseudo-gradient
 * then spans all the inner steps since the last committed sync).  A group
 * whose state FT_Quorum replaced in a sync (FT_Heal_count: restarted, left
 * out of earlier syncs, or healed by the SDC check at the same step) gets
 * the global state, contributes nothing to that sync (its weight is 0) and
 * its parameters are reset to the healed global ones (FT_OUTER_RESET),
 * also when the sync then does not commit.
 * Threads: as the other FT_ calls; an FT_Outer is used by one thread. */
typedef struct ftmpi_outer *FT_Outer;
#define FT_OUTER_LOCALSGD 1 /* average the parameters */
#define FT_OUTER_DILOCO 2   /* average pseudo-gradients, outer Nesterov momentum */

/* *outer_p gets a new outer optimizer that syncs every sync_every (H >= 1)
 * inner steps.  DiLoCo: outer_lr > 0, 0 <= momentum < 1 (momentum 0: plain
 * outer SGD); LocalSGD: pass 0 for both.  FT_ERR_ARG for a bad value (the
 * log names it).  Usable before FT_Init. */
FTMPI_EXPORT int FT_Outer_create(int algorithm, int sync_every, double outer_lr, double momentum,
                                 FT_Outer *outer_p);

/* Adds count floats of the caller's parameters at params (the caller keeps
 * them; valid until FT_Outer_free).  Copies them into the global copy and
 * registers it (and the momentum) with FT_State_register: call after
 * FT_Init and before the first FT_Outer_step, with the same names in the
 * same order on every rank of every group.  name: [A-Za-z0-9_.:+-], at
 * most 48 characters.  FT_ERR_ARG, FT_ERR_EXISTS, FT_ERR_STATE after the
 * first FT_Outer_step. */
FTMPI_EXPORT int FT_Outer_register(FT_Outer outer, const char *name, float *params, int64_t count);

/* Call once per inner step, before it, on every rank of the group.  Runs a
 * sync when one is due: on the first call (the join: a fresh start agrees
 * on the starting point, a restarted group heals; nothing is averaged, and
 * at a fresh start, when no group has committed a sync, nothing is reduced)
 * and after every sync_every inner steps since the last sync.  *result_p
 * (may be NULL) is 0 when no sync ran, else FT_OUTER_SYNC_RAN with
 * FT_OUTER_COMMITTED when the sync committed and FT_OUTER_RESET when the
 * parameters were replaced by the global ones (reset any inner optimizer
 * state, e.g. momentum).  Returns FT_SUCCESS, or the failed sync's error
 * (not fatal: training goes on, the next sync retries), except
 * FT_ERR_GROUP_LOST, FT_ERR_KILLED and FT_ERR_SDC, which end the group as
 * for FT_Commit and FT_Quorum. */
#define FT_OUTER_SYNC_RAN 0x1
#define FT_OUTER_COMMITTED 0x2
#define FT_OUTER_RESET 0x4
FTMPI_EXPORT int FT_Outer_step(FT_Outer outer, int *result_p);

/* Runs a sync now, whether one is due or not (e.g. after the last inner
 * step); *result_p as for FT_Outer_step. */
FTMPI_EXPORT int FT_Outer_sync(FT_Outer outer, int *result_p);

/* Instrumentation and fault injection: fn(arg, phase, step) runs on the
 * caller's thread inside each sync, after FT_Quorum returned
 * (FT_OUTER_PHASE_QUORUM) and after the reduction, before FT_Commit
 * (FT_OUTER_PHASE_REDUCED); step is FT_Step() of the sync.  NULL: none. */
#define FT_OUTER_PHASE_QUORUM 1
#define FT_OUTER_PHASE_REDUCED 2
typedef void (*FT_Outer_hook)(void *arg, int phase, int64_t step);
FTMPI_EXPORT int FT_Outer_set_hook(FT_Outer outer, FT_Outer_hook fn, void *arg);

typedef struct ftmpi_outer_stats {
    int64_t inner_steps;     /* FT_Outer_step calls */
    int64_t syncs;           /* syncs run (the join included) */
    int64_t committed;       /* of them committed */
    int64_t healed;          /* syncs in which FT_Quorum replaced the state (FT_Heal_count;
                              * not the fresh start's agreement at step 0) */
    uint64_t reduced_bytes;  /* bytes this rank handed to FT_Allreduce */
    int64_t since_commit;    /* inner steps since the last committed sync */
    int64_t contributors;    /* groups whose work the last committed sync averaged */
} ftmpi_outer_stats_t;
FTMPI_EXPORT int ftmpi_outer_stats(FT_Outer outer, ftmpi_outer_stats_t *stats);

/* Frees the object and its global copy and momentum: after FT_Finalize
 * (the library reads registered buffers until then).  *outer_p = NULL;
 * NULL: no-op. */
FTMPI_EXPORT int FT_Outer_free(FT_Outer *outer_p);

#ifdef __cplusplus
}
#endif
#endif /* FTMPI_H */
