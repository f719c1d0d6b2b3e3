/*
 * nccl_comm.h - the nccl backend (DESIGN section 5): an NCCL communicator
 * created non-blocking (config.blocking = 0) in this process, every wait
 * polled with ncclCommGetAsyncError against the caller's deadline, and
 * ncclCommRevoke (NCCL 2.28.7+) then ncclCommAbort on a deadline or an
 * error.  Built only when configure found CUDA and NCCL (FTMPI_HAVE_NCCL).
 *
 * Two layers: the core below (an NCCL communicator from a unique id, no
 * store: the ftmpi-baby child of baby-nccl runs it too) and the table entry
 * fti_backend_nccl (nccl_slice.c), whose rendezvous passes the unique id
 * through the quorum's store under slice.h's keys and, when the next
 * quorum only drops members, shrinks the previous communicator
 * (ncclCommShrink with NCCL_SHRINK_ABORT, NCCL 2.27+) instead of a full
 * init.
 *
 * Buffers: device memory is reduced in place; host memory is staged
 * through a device buffer of the communicator (correct, not fast).
 * Threads: one thread at a time per communicator.
 */
#ifndef FTI_NCCL_H
#define FTI_NCCL_H

#include <stddef.h>
#include <stdint.h>

#include "comm/comm.h"

#define FTI_NCCL_ID_BYTES 128 /* sizeof(ncclUniqueId) */

typedef struct fti_nccl *fti_nccl_h;

/* A new unique id (ncclGetUniqueId) into id[FTI_NCCL_ID_BYTES].  The
 * process that calls it runs NCCL's bootstrap root for that id. */
int fti_nccl_unique_id(unsigned char *id);

/* The current CUDA device's UUID into uuid (16 bytes); all 0 when unknown. */
void fti_nccl_gpu_uuid(unsigned char *uuid);

/* rank of size joins the communicator of id on CUDA device `device` (-1:
 * the current one) before deadline_ms.  Release with fti_nccl_free. */
int fti_nccl_init(const unsigned char *id, int rank, int size, int device, int64_t deadline_ms,
                  fti_nccl_h *n_p);

/* A new communicator of old's members minus exclude[0..n) (old ranks,
 * ascending, n >= 1, not old's own rank), old ranks keep their order
 * (ncclCommShrink with NCCL_SHRINK_ABORT).  old is left to the caller
 * (free it after).  FT_ERR_ARG for an empty list (n < 1): nothing to
 * exclude is no shrink, NCCL refuses it, and no NCCL call is made.
 * FT_ERR_UNSUPPORTED when this NCCL has no ncclCommShrink. */
int fti_nccl_shrink(fti_nccl_h old, const int *exclude, int n, int64_t deadline_ms,
                    fti_nccl_h *n_p);

/* Allreduce in place on buf (device or host memory) before deadline_ms.
 * Any failure revokes and aborts the communicator (only free after). */
int fti_nccl_allreduce(fti_nccl_h n, void *buf, size_t count, enum fti_dtype dt, enum fti_op op,
                       int64_t deadline_ms);

/* The communicator's CUDA stream (a cudaStream_t; NULL for NULL), where its
 * collectives run: baby-nccl's child makes it wait on the rank's CUDA IPC
 * event before a collective and records its own event on it after. */
void *fti_nccl_stream(fti_nccl_h n);

/* Revokes (where NCCL has it) and aborts the communicator now; its rank and
 * size stay readable.  No-op on one already aborted. */
void fti_nccl_abort(fti_nccl_h n);
/* Is the communicator still usable (not aborted). */
int fti_nccl_ok(fti_nccl_h n);
int fti_nccl_rank(fti_nccl_h n);
int fti_nccl_size(fti_nccl_h n);
/* Frees it: a live one is destroyed (ncclCommDestroy after a finalize
 * polled for at most a short while, else aborted). */
void fti_nccl_free(fti_nccl_h n);

/* Whether this NCCL has ncclCommShrink / ncclCommRevoke (compile time). */
/* The loaded libnccl's version (ncclGetVersion, e.g. 22809), and whether
 * it has ncclCommShrink (2.27+) / ncclCommRevoke: looked up at run time,
 * never linked (issue 29 item 4). */
int fti_nccl_runtime_version(void);
int fti_nccl_can_shrink(void);
int fti_nccl_can_revoke(void);

/* Counts of the nccl backend's slice builds in this process (tests,
 * ftmpi_stats): full inits and shrinks. */
typedef struct fti_nccl_stats {
    uint64_t inits;
    uint64_t shrinks;
    uint64_t aborts;
} fti_nccl_stats_t;
void fti_nccl_stats(fti_nccl_stats_t *s);

/* Frees the communicator a destroyed nccl slice keeps for a possible
 * shrink at the next quorum (FT_Finalize). */
void fti_nccl_drop_parked(void);

#endif
