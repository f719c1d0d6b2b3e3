/*
 * shim.h - libftmpi_pmpi, the drop-in for MPI_Allreduce (DESIGN section
 * 10): shared state of the hand-written parts and the generated wrappers
 * (wrappers.c, from wrappers.txt and fortran.txt by gen_wrappers.awk).
 *
 * Re-entry: fti_shim_busy is set while the calling thread is inside the
 * shim; every MPI call the library makes meanwhile (its own MPI_Allreduce,
 * MPI_Comm_dup ...) goes straight to PMPI_.  fti_shim_on is set once
 * MPI_Init (by this library) has set up the fault-tolerant layer, and
 * cleared at MPI_Finalize: in a process where MPI_Init never ran (a child
 * that inherited LD_PRELOAD) every wrapper is a plain PMPI_ call.
 *
 * Threads: the protected calls run on whichever thread calls them, one at
 * a time (MPI orders the collectives of a communicator anyway).
 */
#ifndef FTI_SHIM_H
#define FTI_SHIM_H

#include <mpi.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/settings.h"
#include "comm/reduce.h"
#include "mpi_shim/watch.h"

#define FTI_SHIM_EXPORT __attribute__((visibility("default")))

extern int fti_shim_on;
/* initial-exec: one load relative to the thread pointer in every wrapper,
 * not a __tls_get_addr call (about 5 % of a 1-rank MPI_Allreduce under the
 * drop-in; PERFORMANCE.md section 9).  The drop-in is preloaded, so its
 * TLS lies in the static block; a dlopen of it uses glibc's spare room. */
extern __thread int fti_shim_busy __attribute__((tls_model("initial-exec")));

/* Moves each time the program sets an error handler (wrappers.txt's
 * `errh` lines: MPI_Comm_set_errhandler from C and Fortran, and MPI-1's
 * MPI_Errhandler_set: shim.c and `errhf`), so that the
 * failure mode auto, which the world's error handler decides, is looked up
 * once per change, not per call (allreduce.c). */
extern atomic_uint fti_shim_errh_gen;
static inline void fti_shim_errh_changed(void)
{
    atomic_fetch_add_explicit(&fti_shim_errh_gen, 1, memory_order_release);
}

/* FTMPI_SHIM_ON_FAILURE: what a protected call does when a rank is lost
 * (DESIGN section 10); auto: abort under MPI_ERRORS_ARE_FATAL, return
 * otherwise.  Values index fti_shim_on_failure_names. */
enum fti_shim_on_failure { FTI_SHIM_AUTO, FTI_SHIM_ABORT, FTI_SHIM_RETURN, FTI_SHIM_CONTINUE };
/* The names of the failure modes, in enum order, NULL-terminated. */
extern const char *const fti_shim_on_failure_names[];

/* The drop-in's settings (settings.c), from the FTMPI_* table it loaded. */
struct fti_shim_cfg {
    int on_failure;   /* enum fti_shim_on_failure */
    int rescale;      /* FTMPI_SHIM_RESCALE */
    int timeout_ms;   /* FTMPI_TIMEOUT_MS */
    int success_after_loss; /* FTMPI_SHIM_SUCCESS_AFTER_LOSS */
};
extern struct fti_shim_cfg fti_shim_cfg;

/* The failure mode that name (FTMPI_SHIM_ON_FAILURE's value) names into
 * *mode_p.  FT_ERR_CONFIG with a message naming the setting and the known
 * names in err (not logged) when there is none; *mode_p set only on
 * success.  Pure. */
int fti_shim_on_failure_parse(const char *name, int *mode_p, char *err, size_t errlen);

/* The drop-in's settings of cfg into *out_p (only on success);
 * FT_ERR_CONFIG with a message in err as fti_shim_on_failure_parse. */
int fti_shim_settings(const fti_config_t *cfg, struct fti_shim_cfg *out_p, char *err,
                      size_t errlen);

/* The implementations behind the generated wrappers (allreduce.c, comms.c). */
int fti_shim_Allreduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                       MPI_Op op, MPI_Comm comm);
int fti_shim_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm);
int fti_shim_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm);
int fti_shim_Comm_free(MPI_Comm *comm);

/* Whether comm's group is the whole world (comms.c): in the world's rank
 * order (MPI_COMM_WORLD, a duplicate, a split with key = world rank), in
 * another order (a split with another key), or not. */
enum { FTI_WORLD_NOT, FTI_WORLD_REORDERED, FTI_WORLD_SAME_ORDER };
int fti_shim_world_order(MPI_Comm comm);
bool fti_shim_world_like(MPI_Comm comm);

/* Calls that went to MPI unprotected, per kind, for MPI_Finalize's lines
 * (wrappers.c counts the generated ones; allreduce.c its own). */
void fti_shim_note_passed(const char *name, MPI_Comm comm);
void fti_shim_report_passed(void);

/* MPI_Barrier, MPI_Bcast, MPI_Reduce and MPI_Allgather on a communicator
 * spanning the world (collectives.c; see allreduce.c for the rules). */
int fti_shim_Barrier(MPI_Comm comm);
int fti_shim_Bcast(void *buffer, int count, MPI_Datatype datatype, int root, MPI_Comm comm);
int fti_shim_Reduce(const void *sendbuf, void *recvbuf, int count, MPI_Datatype datatype,
                    MPI_Op op, int root, MPI_Comm comm);
int fti_shim_Allgather(const void *sendbuf, int sendcount, MPI_Datatype sendtype, void *recvbuf,
                       int recvcount, MPI_Datatype recvtype, MPI_Comm comm);

/* allreduce.c: after FT_Init, opens the first step (a collective over
 * the world: the first quorum); returns an FT_ code. */
int fti_shim_start(void);
/* allreduce.c: what the calls did, for MPI_Finalize's log lines. */
struct fti_shim_stats {
    uint64_t protected_calls;   /* completed protected calls (both paths) */
    uint64_t passed;            /* calls that went straight to MPI */
    uint64_t other;             /* protected MPI_Barrier, MPI_Bcast, MPI_Reduce, MPI_Allgather */
    uint64_t fortran;           /* calls made from Fortran */
    uint64_t fast;              /* protected calls completed on the fast path */
    uint64_t slow;              /* ... on the fault-tolerant path (after a failure) */
    uint64_t abandoned;         /* fast requests left to MPI */
    uint64_t abandoned_bytes;   /* library buffers left with them */
};
void fti_shim_stats(struct fti_shim_stats *stats_p);
/* allreduce.c: before FT_Finalize, in MPI_Finalize. */
void fti_shim_stop(void);

/* The collectives the failure-free path runs (fast.c), and their
 * arguments (unused fields ignored; root: a world rank; out_bytes: what
 * MPI may still write into recvbuf after an abandoned MPI_Allreduce,
 * counted). */
enum fti_shim_coll {
    FTI_COLL_ALLREDUCE,
    FTI_COLL_BARRIER,
    FTI_COLL_BCAST, /* recvbuf is the buffer */
    FTI_COLL_REDUCE,
    FTI_COLL_ALLGATHER
};
struct fti_shim_args {
    const void *sendbuf;
    void *recvbuf;
    int count, sendcount, recvcount;
    MPI_Datatype datatype, sendtype, recvtype;
    MPI_Op op;
    int root;
    size_t out_bytes;
    bool p2p_ok; /* an allreduce of the data plane's (commutative op, basic
                  * datatype): may run as fast.c's point-to-point one */
    bool p2p_barrier; /* ... which is MPI_Barrier's MAX of a 1 on every rank:
                       * its messages carry nothing, the result is the input */
    enum fti_dtype dt; /* with p2p_ok: the data plane's type and op */
    enum fti_op fop;
};

/* fast.c: the failure-free path, on a duplicate of the world (errors
 * returned) made in MPI_Init.  start: in MPI_Init, collective, FT_ code;
 * open: whether calls may still take it (no request was abandoned, no
 * error).  run: one collective; blocking (abort): the blocking MPI call
 * itself, MPI's own algorithm and bits, a loss left to the watchdog;
 * otherwise (return, continue) its non-blocking form polled until it
 * completes or a rank is known lost.  Returns FT_SUCCESS, FT_ERR_PROC_FAILED
 * (an error, or a request given up to MPI, which may still write recvbuf)
 * or FT_ERR_MPI (did not start: MPI holds nothing); on an error the path
 * is closed for good.  counts: completed calls, abandoned requests and
 * their bytes; stop: frees the communicator (in MPI_Finalize; kept when
 * MPI still holds a request on it). */
int fti_shim_fast_start(void);
bool fti_shim_fast_open(void);
int fti_shim_fast_run(enum fti_shim_coll c, const struct fti_shim_args *a, bool blocking);
/* fast.c: run's blocking MPI_Allreduce and MPI_Barrier, for the default
 * mode's hot path (allreduce.c): the path must be open (the caller checked
 * fti_shim_fast_open since the last error); the same returns. */
int fti_shim_fast_allreduce_blocking(const void *sendbuf, void *recvbuf, int count,
                                     MPI_Datatype datatype, MPI_Op op);
int fti_shim_fast_barrier_blocking(void);
/* allreduce.c: a protected collective that is not redone (see there);
 * returns an MPI code, or ends the job. */
int fti_shim_fast_only(const char *what, MPI_Comm comm, enum fti_shim_coll c,
                       const struct fti_shim_args *a);
void fti_shim_fast_counts(uint64_t *calls_p, uint64_t *abandoned_p, uint64_t *bytes_p);
/* fast.c: how many of the fast calls ran as its point-to-point allreduce,
 * which takes the calls of at most this many bytes (see fast.c's top):
 * below Open MPI's vader eager limit (4 KiB with its header), above which
 * a 4 KiB call on 2 ranks took 3.1x native this way (5.5x as
 * MPI_Iallreduce), against 1.04x at 2 KiB. */
#define FTI_SHIM_P2P_MAX_BYTES 2048u
uint64_t fti_shim_fast_p2p_calls(void);
/* fast.c: the held allreduce (return, continue; DESIGN section 10): an
 * allreduce of the data plane's after which no member returns before
 * every member holds the result.  The ring of src/comm/mpi_ring.c from
 * a->sendbuf (never a->recvbuf: the caller copies an in-place input)
 * straight into a->recvbuf, receives only into the library's memory, then
 * a round of zero-byte messages (the point-to-point barrier).  fits:
 * whether a data-plane allreduce of that many bytes takes it, the same
 * answer on every rank; taken above FTI_SHIM_P2P_MAX_BYTES at 2 and 3
 * ranks, from segments of 256 KiB at 4 and more, never on one rank.  held: FT_SUCCESS (every member holds the result in recvbuf),
 * FT_ERR_PROC_FAILED with *held_p whether this member holds it (the ring
 * ended, the zero-byte round did not) or FT_ERR_MPI / FT_ERR_NO_MEMORY
 * (did not start: MPI holds nothing); on an error the path is closed for
 * good and MPI may still read a->sendbuf and recvbuf (a->out_bytes of a
 * library input copy counted with the abandoned bytes). */
bool fti_shim_fast_held_fits(size_t bytes);
int fti_shim_fast_held(const struct fti_shim_args *a, bool *held_p);
uint64_t fti_shim_fast_held_calls(void);
void fti_shim_fast_stop(void);
/* errh.c: the error code a protected call returns when a rank was lost:
 * MPIX_ERR_PROC_FAILED where the MPI has it, else a code of a class made
 * with MPI_Add_error_class at the first call (in MPI_Init; DESIGN section
 * 10.5).  raise: when rc is that code, calls comm's error handler if the
 * program set one (not MPI_ERRORS_ARE_FATAL nor MPI_ERRORS_RETURN) with
 * comm and rc, outside the drop-in (the handler may call MPI); returns
 * rc. */
int fti_shim_err_code(void);
int fti_shim_raise(MPI_Comm comm, int rc);
/* allreduce.c: whether a rank was lost (MPI_Finalize skips its fence). */
bool fti_shim_saw_failure(void);
/* fortran.c counts here. */
extern uint64_t fti_shim_fortran_calls;

#endif
