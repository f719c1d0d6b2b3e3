/*
 * watch.h - the drop-in's watchdog: no hang anywhere (DESIGN section 10;
 * issue 28).  See watch.c for the detector and the rules that end a job.
 *
 * The generated wrappers (wrappers.txt: `watch` and `poll` lines) and the
 * hand-written ones mark every blocking MPI call: fti_shim_enter(name,
 * kind) before the PMPI_ call, fti_shim_leave() after it.  Polling calls
 * (MPI_Test*, MPI_Iprobe ...) count as one call for as long as the program
 * only polls: a rank spinning in MPI_Test on a request of a dead rank is
 * blocked like one in MPI_Wait.  The marks are relaxed atomic loads and
 * stores, no clock read, no locked instruction (the watchdog thread times
 * them); only under MPI_THREAD_MULTIPLE, where threads may be inside MPI at
 * once, is the depth an atomic increment.  The sequence number need not
 * count exactly: it only has to move when a new call starts.
 */
#ifndef FTI_SHIM_WATCH_H
#define FTI_SHIM_WATCH_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

/* What a call is to the watchdog. */
enum fti_shim_call_kind {
    FTI_CALL_BLOCKING,  /* ends the job once a rank is lost and it blocks */
    FTI_CALL_POLL,      /* MPI_Test*, MPI_Iprobe: polling counts as blocked */
    FTI_CALL_REDOABLE,  /* a protected call the drop-in redoes (return, continue) */
    FTI_CALL_LOSS_ENDS  /* a protected collective over every rank under abort:
                           ends the job as soon as a rank is known lost */
};

struct fti_shim_calls {
    atomic_int depth;            /* threads inside a marked call */
    atomic_uint_fast64_t seq;    /* moves on every new call (not on a repeated poll) */
    _Atomic(const char *) name;  /* the call entered last */
    atomic_int kind;             /* enum fti_shim_call_kind of that call */
    bool multiple;               /* MPI_THREAD_MULTIPLE (set in MPI_Init_thread) */
};
extern struct fti_shim_calls fti_shim_calls;

static inline void fti_shim_depth_add(int d)
{
    if (fti_shim_calls.multiple)
        atomic_fetch_add_explicit(&fti_shim_calls.depth, d, memory_order_relaxed);
    else
        atomic_store_explicit(&fti_shim_calls.depth,
                              atomic_load_explicit(&fti_shim_calls.depth, memory_order_relaxed) + d,
                              memory_order_relaxed);
}

static inline void fti_shim_enter(const char *name, int kind)
{
    if (kind != FTI_CALL_POLL ||
        atomic_load_explicit(&fti_shim_calls.kind, memory_order_relaxed) != FTI_CALL_POLL) {
        atomic_store_explicit(&fti_shim_calls.name, name, memory_order_relaxed);
        atomic_store_explicit(&fti_shim_calls.kind, kind, memory_order_relaxed);
        atomic_store_explicit(&fti_shim_calls.seq,
                              atomic_load_explicit(&fti_shim_calls.seq, memory_order_relaxed) + 1,
                              memory_order_relaxed);
    }
    fti_shim_depth_add(1);
}

static inline void fti_shim_leave(void)
{
    fti_shim_depth_add(-1);
}

/* A protected call says what it turns out to be (redone, or over every
 * rank under abort). */
static inline void fti_shim_call_kind(int kind)
{
    atomic_store_explicit(&fti_shim_calls.kind, kind, memory_order_relaxed);
}

/* In MPI_Init (collective, every rank, the drop-in busy): the detector's
 * connections and the watchdog thread.  Rank 0's hub listens on bind_host
 * (the host the ranks' servers bind and advertise); key is the job's
 * secret (NULL: none), which every connection to the hub must prove.  FT_
 * code; on an error the job runs unwatched (logged). */
struct fti_auth_key;
int fti_shim_watch_start(int rank, int size, const char *bind_host,
                         const struct fti_auth_key *key, bool own_lh, int timeout_ms,
                         int heartbeat_ms, int connect_timeout_ms);
/* In MPI_Init, before fti_shim_watch_start: ftmpi-run's folder
 * (FTMPI_AGENT_DIR; "" none), where a rank that ends the job leaves a note
 * naming the lost ranks and removes its own mark (base/agent_mark.h). */
void fti_shim_watch_agent_dir(const char *dir);
/* In MPI_Finalize: this rank leaves (its connection closing is no death);
 * stop after PMPI_Finalize returned. */
void fti_shim_watch_bye(void);
void fti_shim_watch_stop(void);
/* The exit status after a loss (issue 36 item 1; USER_GUIDE section 8's
 * table): once a rank is lost (the detector's word, or saw_loss: the
 * drop-in's own), the process's exit runs a handler that flushes C stdio
 * and libgfortran's units, exits with status 70 (a non-zero status of the
 * program's kept) and under --enable-recovery ends mpirun once the ranks
 * of its node finished.  success_ok (FTMPI_SHIM_SUCCESS_AFTER_LOSS, set in
 * MPI_Init): after dead ranks only, the program's status stands. */
void fti_shim_watch_exit_after_loss(bool success_ok);
void fti_shim_watch_saw_loss(void);
/* Ranks known lost so far (any thread); whether world rank r is one. */
int fti_shim_watch_n_lost(void);
bool fti_shim_watch_is_lost(int r);
/* Ends the job: one line naming the lost ranks and call, then a non-zero
 * exit status with either launch line (watch.c).  Never returns. */
void fti_shim_end_job(const char *call, const char *why) __attribute__((noreturn));

#endif
