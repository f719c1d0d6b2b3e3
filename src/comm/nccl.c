/* nccl.c - the core of the nccl backend: one non-blocking NCCL
 * communicator, every wait polled against a deadline (see nccl_comm.h). */
#include "comm/nccl_comm.h"

#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <nccl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/util.h"

_Static_assert(sizeof(ncclUniqueId) == FTI_NCCL_ID_BYTES, "ncclUniqueId size");

#define POLL_US 200       /* between polls of an NCCL or CUDA operation */
#define FINALIZE_MS 2000  /* a polite finalize before destroy, else abort */

/* The calls NCCL added after the configure minimum (2.18) are looked up in
 * the loaded libnccl at run time (issue 29 item 4): a program linked here
 * against a newer header must load and run with an older libnccl.so.2 (a
 * PyTorch wheel's) found first, under immediate binding too.  Nothing of
 * this file names them directly: `nm -D --undefined-only` of the library
 * shows no NCCL symbol newer than 2.18 (tests/unit/test_nccl_symbols.sh). */
#define SHRINK_MIN NCCL_VERSION(2, 27, 0)
typedef ncclResult_t (*shrink_fn)(ncclComm_t, int *, int, ncclComm_t *, ncclConfig_t *, int);
typedef ncclResult_t (*revoke_fn)(ncclComm_t, int);
#define FTI_SHRINK_ABORT 0x01 /* NCCL_SHRINK_ABORT of 2.27 */

static struct {
    pthread_once_t once;
    int version; /* ncclGetVersion of the loaded library */
    shrink_fn shrink;
    revoke_fn revoke;
} late = {PTHREAD_ONCE_INIT, 0, NULL, NULL};

/* the symbol in the libnccl.so.2 this process loaded (not RTLD_DEFAULT: a
 * library dlopen'ed with RTLD_LOCAL, as Python does, is not in it) */
static void *nccl_sym(const char *name)
{
    void *h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
    void *f = h ? dlsym(h, name) : NULL;
    if (h)
        dlclose(h);
    return f ? f : dlsym(RTLD_DEFAULT, name);
}

static void late_resolve(void)
{
    if (ncclGetVersion(&late.version) != ncclSuccess)
        late.version = 0;
    if (late.version >= SHRINK_MIN) {
        void *f = nccl_sym("ncclCommShrink");
        memcpy(&late.shrink, &f, sizeof(f));
    }
    void *g = nccl_sym("ncclCommRevoke");
    memcpy(&late.revoke, &g, sizeof(g));
}

int fti_nccl_runtime_version(void)
{
    pthread_once(&late.once, late_resolve);
    return late.version;
}

static void abort_bounded(ncclComm_t comm);

struct fti_nccl {
    ncclComm_t comm;
    cudaStream_t stream;
    cudaEvent_t ready;  /* recorded on the legacy stream before a collective */
    int has_ready;      /* 0: cudaDeviceSynchronize instead (creation failed) */
    int device;
    int rank, size;
    int aborted;
    void *stage;        /* device buffer for host buffers */
    size_t stage_bytes;
};

static fti_nccl_stats_t stats;

void fti_nccl_stats(fti_nccl_stats_t *s)
{
    *s = stats;
}

int fti_nccl_can_shrink(void)
{
    pthread_once(&late.once, late_resolve);
    return late.shrink != NULL;
}

int fti_nccl_can_revoke(void)
{
    pthread_once(&late.once, late_resolve);
    return late.revoke != NULL;
}

static void nap(void)
{
    struct timespec ts = {0, POLL_US * 1000L};
    nanosleep(&ts, NULL);
}

/* Waits for the communicator's pending operation (init, shrink, enqueue,
 * finalize) before deadline_ms: ncclCommGetAsyncError until it is not
 * ncclInProgress. */
static int wait_comm(ncclComm_t comm, int64_t deadline_ms, const char *what)
{
    for (;;) {
        ncclResult_t st = ncclSuccess;
        ncclResult_t r = ncclCommGetAsyncError(comm, &st);
        if (r == ncclSuccess && st == ncclSuccess)
            return FT_SUCCESS;
        if (r != ncclSuccess || st != ncclInProgress) {
            FTI_WARN("nccl: %s failed: %s (%s)", what,
                     ncclGetErrorString(r != ncclSuccess ? r : st), ncclGetLastError(comm));
            return FT_ERR_PROC_FAILED;
        }
        if (fti_now_ms() >= deadline_ms) {
            FTI_WARN("nccl: %s not done before the deadline", what);
            return FT_ERR_TIMEOUT;
        }
        nap();
    }
}

/* Waits for the stream's work (the allreduce) while watching the
 * communicator's async error, before deadline_ms. */
static int wait_stream(struct fti_nccl *n, int64_t deadline_ms)
{
    for (;;) {
        cudaError_t e = cudaStreamQuery(n->stream);
        if (e == cudaSuccess)
            return wait_comm(n->comm, deadline_ms, "allreduce");
        if (e != cudaErrorNotReady) {
            FTI_WARN("nccl: the stream failed: %s", cudaGetErrorString(e));
            return FT_ERR_PROC_FAILED;
        }
        ncclResult_t st = ncclSuccess;
        if (ncclCommGetAsyncError(n->comm, &st) != ncclSuccess ||
            (st != ncclSuccess && st != ncclInProgress)) {
            FTI_WARN("nccl: allreduce failed: %s (%s)", ncclGetErrorString(st),
                     ncclGetLastError(n->comm));
            return FT_ERR_PROC_FAILED;
        }
        if (fti_now_ms() >= deadline_ms) {
            FTI_WARN("nccl: allreduce not done before the deadline");
            return FT_ERR_TIMEOUT;
        }
        nap();
    }
}

void fti_nccl_gpu_uuid(unsigned char *uuid)
{
    int dev = -1;
    struct cudaDeviceProp p;
    memset(uuid, 0, 16);
    if (cudaGetDevice(&dev) == cudaSuccess && cudaGetDeviceProperties(&p, dev) == cudaSuccess)
        memcpy(uuid, p.uuid.bytes, 16);
    else
        (void)cudaGetLastError();
}

int fti_nccl_unique_id(unsigned char *id)
{
    ncclUniqueId u;
    ncclResult_t r = ncclGetUniqueId(&u);
    if (r != ncclSuccess) {
        FTI_WARN("nccl: ncclGetUniqueId: %s", ncclGetErrorString(r));
        return FT_ERR_SYSTEM;
    }
    memcpy(id, u.internal, FTI_NCCL_ID_BYTES);
    return FT_SUCCESS;
}

/* A handle with its stream on the device (the current one if device < 0). */
static int handle_new(int device, int rank, int size, struct fti_nccl **n_p)
{
    if (device < 0 && cudaGetDevice(&device) != cudaSuccess)
        return FT_ERR_UNSUPPORTED;
    cudaError_t e = cudaSetDevice(device);
    struct fti_nccl *n = e == cudaSuccess ? calloc(1, sizeof(*n)) : NULL;
    if (e != cudaSuccess) {
        FTI_WARN("nccl: CUDA device %d: %s", device, cudaGetErrorString(e));
        return FT_ERR_UNSUPPORTED;
    }
    if (n == NULL)
        return FT_ERR_NO_MEMORY;
    e = cudaStreamCreateWithFlags(&n->stream, cudaStreamNonBlocking);
    if (e != cudaSuccess) {
        FTI_WARN("nccl: cudaStreamCreate: %s", cudaGetErrorString(e));
        free(n);
        return FT_ERR_SYSTEM;
    }
    /* the caller's buffer is written in the legacy default stream's order
     * (the stream above is non-blocking and does not wait for it) */
    e = cudaEventCreateWithFlags(&n->ready, cudaEventDisableTiming);
    if (e == cudaSuccess)
        n->has_ready = 1;
    else
        FTI_WARN("nccl: cudaEventCreate: %s; every collective on a device buffer waits for "
                 "the whole device instead", cudaGetErrorString(e));
    n->device = device;
    n->rank = rank;
    n->size = size;
    *n_p = n;
    return FT_SUCCESS;
}

static ncclConfig_t nonblocking(void)
{
    ncclConfig_t c = NCCL_CONFIG_INITIALIZER;
    c.blocking = 0;
    return c;
}

int fti_nccl_init(const unsigned char *id, int rank, int size, int device, int64_t deadline_ms,
                  fti_nccl_h *n_p)
{
    if (id == NULL || size < 1 || rank < 0 || rank >= size)
        return FT_ERR_ARG;
    struct fti_nccl *n = NULL;
    int rc = handle_new(device, rank, size, &n);
    if (rc != FT_SUCCESS)
        return rc;
    ncclUniqueId u;
    memcpy(u.internal, id, FTI_NCCL_ID_BYTES);
    ncclConfig_t cfg = nonblocking();
    ncclResult_t r = ncclCommInitRankConfig(&n->comm, size, u, rank, &cfg);
    if (r != ncclSuccess && r != ncclInProgress) {
        FTI_WARN("nccl: ncclCommInitRankConfig (rank %d of %d): %s", rank, size,
                 ncclGetErrorString(r));
        rc = FT_ERR_PROC_FAILED;
    } else {
        rc = wait_comm(n->comm, deadline_ms, "init");
    }
    if (rc != FT_SUCCESS) {
        fti_nccl_abort(n); /* an init that did not complete: no finalize */
        fti_nccl_free(n);
        return rc;
    }
    stats.inits++;
    *n_p = n;
    return FT_SUCCESS;
}

/* Issue 29 item 1: a non-blocking ncclCommShrink returns with the child
 * not yet stored and reports its progress on the PARENT; NCCL's thread
 * stores the child into the slot later.  So the parent is polled, then the
 * child; the slot lives on its own and is left allocated when the shrink
 * fails before the child was stored (NCCL may still write it). */
int fti_nccl_shrink(fti_nccl_h old, const int *exclude, int n_ex, int64_t deadline_ms,
                    fti_nccl_h *n_p)
{
    if (!fti_nccl_can_shrink())
        return FT_ERR_UNSUPPORTED;
    /* nothing to exclude is no shrink: NCCL (2.28.3) answers an empty
     * list with ncclInvalidArgument, and the one caller (nccl_slice.c's
     * plan) shrinks only a quorum that lost members; the same members
     * keep their communicator without asking for a new one */
    if (old == NULL || old->aborted || n_ex < 1 || n_ex >= old->size || exclude == NULL)
        return FT_ERR_ARG;
    int below = 0;
    for (int i = 0; i < n_ex; i++) {
        if (exclude[i] == old->rank || exclude[i] < 0 || exclude[i] >= old->size ||
            (i > 0 && exclude[i] <= exclude[i - 1]))
            return FT_ERR_ARG;
        below += exclude[i] < old->rank;
    }
    struct fti_nccl *n = NULL;
    int rc = handle_new(old->device, old->rank - below, old->size - n_ex, &n);
    if (rc != FT_SUCCESS)
        return rc;
    ncclComm_t *slot = calloc(1, sizeof(*slot));
    if (slot == NULL) {
        fti_nccl_free(n);
        return FT_ERR_NO_MEMORY;
    }
    ncclConfig_t cfg = nonblocking();
    ncclResult_t r = late.shrink(old->comm, (int *)exclude, n_ex, slot, &cfg, FTI_SHRINK_ABORT);
    if (r != ncclSuccess && r != ncclInProgress) {
        FTI_WARN("nccl: ncclCommShrink: %s", ncclGetErrorString(r));
        free(slot); /* refused at once: NCCL keeps no pointer to it */
        fti_nccl_free(n);
        return FT_ERR_PROC_FAILED;
    }
    rc = wait_comm(old->comm, deadline_ms, "shrink");
    ncclComm_t child = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (rc == FT_SUCCESS && child == NULL) {
        FTI_WARN("nccl: ncclCommShrink completed without a communicator");
        rc = FT_ERR_PROC_FAILED;
    }
    if (rc == FT_SUCCESS)
        rc = wait_comm(child, deadline_ms, "shrink (the new communicator)");
    if (rc != FT_SUCCESS) {
        /* the caller aborts old, which ends NCCL's shrink job; a child
         * already stored is aborted here, a slot still empty is left */
        if (child != NULL) {
            abort_bounded(child);
            free(slot);
        }
        fti_nccl_free(n);
        return rc;
    }
    free(slot);
    n->comm = child;
    stats.shrinks++;
    *n_p = n;
    return FT_SUCCESS;
}

static int nccl_type(enum fti_dtype dt, ncclDataType_t *t_p)
{
    switch (dt) {
    case FTI_DT_FLOAT: *t_p = ncclFloat32; return FT_SUCCESS;
    case FTI_DT_DOUBLE: *t_p = ncclFloat64; return FT_SUCCESS;
    case FTI_DT_INT:
    case FTI_DT_INT32: *t_p = ncclInt32; return FT_SUCCESS;
    case FTI_DT_LONG:
        *t_p = sizeof(long) == 8 ? ncclInt64 : ncclInt32;
        return FT_SUCCESS;
    case FTI_DT_INT64: *t_p = ncclInt64; return FT_SUCCESS;
    case FTI_DT_UINT64: *t_p = ncclUint64; return FT_SUCCESS;
    default: return FT_ERR_UNSUPPORTED;
    }
}

static int nccl_op(enum fti_op op, ncclRedOp_t *o_p)
{
    switch (op) {
    case FTI_OP_SUM: *o_p = ncclSum; return FT_SUCCESS;
    case FTI_OP_PROD: *o_p = ncclProd; return FT_SUCCESS;
    case FTI_OP_MAX: *o_p = ncclMax; return FT_SUCCESS;
    case FTI_OP_MIN: *o_p = ncclMin; return FT_SUCCESS;
    case FTI_OP_AVG: *o_p = ncclAvg; return FT_SUCCESS; /* NCCL 2.10+ */
    default: return FT_ERR_UNSUPPORTED;
    }
}

/* The device buffer for buf: buf itself, or the staging buffer with buf's
 * bytes copied in (*staged set). */
static int device_view(struct fti_nccl *n, void *buf, size_t bytes, void **dev_p, int *staged)
{
    struct cudaPointerAttributes a;
    *staged = 0;
    if (cudaPointerGetAttributes(&a, buf) == cudaSuccess &&
        (a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged)) {
        *dev_p = buf;
        return FT_SUCCESS;
    }
    (void)cudaGetLastError(); /* a host pointer may leave an error behind */
    if (n->stage_bytes < bytes) {
        cudaFree(n->stage);
        n->stage = NULL;
        n->stage_bytes = 0;
        if (cudaMalloc(&n->stage, bytes) != cudaSuccess)
            return FT_ERR_NO_MEMORY;
        n->stage_bytes = bytes;
    }
    if (cudaMemcpyAsync(n->stage, buf, bytes, cudaMemcpyHostToDevice, n->stream) != cudaSuccess)
        return FT_ERR_SYSTEM;
    *dev_p = n->stage;
    *staged = 1;
    return FT_SUCCESS;
}

/* Orders n's stream after the work queued so far on the legacy default
 * stream (and so on every blocking stream), which may still be writing the
 * caller's device buffer: an event recorded there that the stream waits
 * for, without blocking the host.  Falls back to cudaDeviceSynchronize. */
static int after_callers_work(struct fti_nccl *n)
{
    if (n->has_ready && cudaEventRecord(n->ready, cudaStreamLegacy) == cudaSuccess &&
        cudaStreamWaitEvent(n->stream, n->ready, 0) == cudaSuccess)
        return FT_SUCCESS;
    cudaError_t e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        FTI_WARN("nccl: cudaDeviceSynchronize: %s", cudaGetErrorString(e));
        return FT_ERR_SYSTEM;
    }
    return FT_SUCCESS;
}

int fti_nccl_allreduce(fti_nccl_h n, void *buf, size_t count, enum fti_dtype dt, enum fti_op op,
                       int64_t deadline_ms)
{
    ncclDataType_t t;
    ncclRedOp_t o;
    if (n == NULL || n->aborted)
        return FT_ERR_ABORTED;
    if (nccl_type(dt, &t) != FT_SUCCESS || nccl_op(op, &o) != FT_SUCCESS)
        return FT_ERR_UNSUPPORTED;
    if (count == 0)
        return FT_SUCCESS;
    size_t bytes = count * fti_dtype_size(dt);
    void *dev = NULL;
    int staged = 0;
    if (cudaSetDevice(n->device) != cudaSuccess)
        return FT_ERR_SYSTEM;
    int rc = device_view(n, buf, bytes, &dev, &staged);
    if (rc != FT_SUCCESS) {
        FTI_WARN("nccl: staging %zu bytes on device %d failed", bytes, n->device);
        return rc; /* the communicator is untouched */
    }
    if (!staged && after_callers_work(n) != FT_SUCCESS)
        return FT_ERR_SYSTEM; /* the communicator is untouched */
    ncclResult_t r = ncclAllReduce(dev, dev, count, t, o, n->comm, n->stream);
    if (r != ncclSuccess && r != ncclInProgress) {
        FTI_WARN("nccl: ncclAllReduce: %s (%s)", ncclGetErrorString(r), ncclGetLastError(n->comm));
        rc = FT_ERR_PROC_FAILED;
    } else {
        /* issue 29 item 2: on a non-blocking communicator of 2 or more
         * ranks ncclInProgress means NCCL's thread launches the kernel
         * later: the copy back must wait until it is on the stream */
        rc = r == ncclInProgress ? wait_comm(n->comm, deadline_ms, "allreduce enqueue")
                                 : FT_SUCCESS;
        if (rc == FT_SUCCESS && staged &&
            cudaMemcpyAsync(buf, dev, bytes, cudaMemcpyDeviceToHost, n->stream) != cudaSuccess) {
            FTI_WARN("nccl: the copy back of %zu staged bytes failed", bytes);
            rc = FT_ERR_SYSTEM;
        }
        if (rc == FT_SUCCESS)
            rc = wait_stream(n, deadline_ms);
    }
    if (rc != FT_SUCCESS)
        fti_nccl_abort(n);
    return rc;
}

/* ncclCommAbort on a thread of its own, waited for ABORT_MS at most (issue
 * 29 item 7: in process, an abort stuck on a dead peer's kernels must not
 * hold the caller without a deadline).  Whoever of the two finishes last
 * frees the record; an abort still running is left in the background and
 * its communicator leaks (said once). */
#define ABORT_MS 5000
struct abort_job {
    ncclComm_t comm;
    int state; /* 0 running, 1 done, 2 the caller left */
};

static void *abort_main(void *arg)
{
    struct abort_job *j = arg;
    (void)ncclCommAbort(j->comm);
    if (__atomic_exchange_n(&j->state, 1, __ATOMIC_ACQ_REL) == 2)
        free(j);
    return NULL;
}

static void abort_bounded(ncclComm_t comm)
{
    static int warned;
    struct abort_job *j = calloc(1, sizeof(*j));
    pthread_t t;
    pthread_attr_t a;
    if (j == NULL || pthread_attr_init(&a) != 0) {
        free(j);
        (void)ncclCommAbort(comm); /* no thread to spare: abort here */
        return;
    }
    j->comm = comm;
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    int started = pthread_create(&t, &a, abort_main, j) == 0;
    pthread_attr_destroy(&a);
    if (!started) {
        free(j);
        (void)ncclCommAbort(comm);
        return;
    }
    int64_t end = fti_now_ms() + ABORT_MS;
    while (__atomic_load_n(&j->state, __ATOMIC_ACQUIRE) == 0 && fti_now_ms() < end)
        nap();
    if (__atomic_exchange_n(&j->state, 2, __ATOMIC_ACQ_REL) == 1) {
        free(j);
        return;
    }
    if (!warned) {
        warned = 1;
        FTI_WARN("nccl: ncclCommAbort did not return in %d ms; it goes on in the background "
                 "and its communicator's resources stay held (baby-nccl, whose child is "
                 "killed instead, never blocks like this)", ABORT_MS);
    }
}

void fti_nccl_abort(fti_nccl_h n)
{
    if (n == NULL || n->aborted || n->comm == NULL)
        return;
    /* issue 29 item 3: abort alone stops the kernels; ncclCommRevoke
     * before it is outside the header's contract (after revoke the state
     * must reach success first) and in 2.28.9 both release the group job */
    abort_bounded(n->comm);
    n->comm = NULL;
    n->aborted = 1;
    stats.aborts++;
}

void *fti_nccl_stream(fti_nccl_h n)
{
    return n ? (void *)n->stream : NULL;
}

int fti_nccl_ok(fti_nccl_h n)
{
    return n != NULL && !n->aborted;
}

int fti_nccl_rank(fti_nccl_h n)
{
    return n ? n->rank : -1;
}

int fti_nccl_size(fti_nccl_h n)
{
    return n ? n->size : 0;
}

void fti_nccl_free(fti_nccl_h n)
{
    if (n == NULL)
        return;
    if (n->comm && !n->aborted) {
        int rc = FT_ERR_PROC_FAILED;
        ncclResult_t r = ncclCommFinalize(n->comm);
        if (r == ncclSuccess || r == ncclInProgress)
            rc = wait_comm(n->comm, fti_now_ms() + FINALIZE_MS, "finalize");
        if (rc == FT_SUCCESS)
            (void)ncclCommDestroy(n->comm);
        else
            fti_nccl_abort(n);
    }
    if (n->stage)
        cudaFree(n->stage);
    if (n->has_ready)
        cudaEventDestroy(n->ready);
    if (n->stream)
        cudaStreamDestroy(n->stream);
    free(n);
}
