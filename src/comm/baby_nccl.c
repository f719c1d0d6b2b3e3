/*
 * baby_nccl.c - the baby-nccl backend (DESIGN section 5): the NCCL
 * communicator of nccl_comm.h runs in an ftmpi-baby child (baby.h), so that a
 * hang inside NCCL ends with SIGKILL.  The unique id is made by replica
 * rank 0's child (NCCL's bootstrap root lives there) and travels through
 * the quorum's store (nccl_slice.h, always a full init: every quorum change
 * kills the child).  A device buffer crosses as a CUDA IPC memory handle of
 * its allocation plus the buffer's offset.  Host buffers are staged
 * through a device buffer of the parent.
 *
 * Ordering by CUDA IPC events (baby_chan.h, FTI_BABY_NCCL_WAIT): FT_Allreduce
 * has no stream argument, so the buffer is taken as produced in the order of
 * the legacy default stream (cudaStreamLegacy, whatever the caller's
 * --default-stream): work the caller queued before the call on it, or on any
 * blocking stream (cudaStreamCreate, the per-thread default streams), comes
 * first; work on a cudaStreamNonBlocking stream must be synchronized by the
 * caller.  The parent records its interprocess event there (one per comm,
 * its IPC handle taken once), the child's NCCL stream waits on it, and the
 * child's own event, recorded after the collective and opened here once per
 * child, is polled against the deadline before the call returns.  If the
 * events cannot be made or opened, the parent falls back (logged once per
 * process) to cudaDeviceSynchronize before each command, as before.
 * Device work runs on the device of the child's communicator (the calling
 * thread's device is given back after).
 */
#include "comm/baby.h"
#include "comm/baby_chan.h"
#include "comm/nccl_slice.h"

#include <cuda_runtime_api.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "comm/slice.h"
#include "base/util.h"

_Static_assert(sizeof(cudaIpcMemHandle_t) == FTI_BABY_IPC_BYTES, "cudaIpcMemHandle_t size");
_Static_assert(sizeof(cudaIpcEventHandle_t) == FTI_BABY_IPC_BYTES, "cudaIpcEventHandle_t size");

#define EVENT_POLL_US 20 /* between cudaEventQuery polls of the child's event */

struct baby_nccl_comm {
    struct fti_comm base;
    fti_baby_h runner;
    int dead;
    int device;  /* the CUDA device of the child's communicator */
    void *stage; /* device staging for host buffers */
    size_t stage_bytes;
    /* ours: ev_state 0 not made yet, 1 made (ev_handle valid), -1 fall back
     * to cudaDeviceSynchronize */
    cudaEvent_t ev;
    cudaIpcEventHandle_t ev_handle;
    int ev_state;
    /* the child's, opened here (NULL: none); of child number child_spawn */
    cudaEvent_t child_ev;
    unsigned char child_handle[FTI_BABY_IPC_BYTES];
    int child_spawn;
};

/* From now on this comm orders by cudaDeviceSynchronize (logged once per
 * process). */
static void events_off(struct baby_nccl_comm *c, const char *what, cudaError_t e)
{
    static atomic_int logged;
    (void)cudaGetLastError();
    if (c->ev_state > 0)
        (void)cudaEventDestroy(c->ev);
    c->ev = NULL;
    c->ev_state = -1;
    if (atomic_exchange(&logged, 1) == 0)
        FTI_WARN("baby-nccl: %s (%s): device buffers are ordered by cudaDeviceSynchronize "
                 "instead of CUDA IPC events",
                 what, e == cudaSuccess ? "the child refused it" : cudaGetErrorString(e));
}

/* Orders the work that wrote the buffer before the child's collective: our
 * event recorded on the legacy default stream, its handle into *a (made
 * the first time); else a device synchronize. */
static int order_input(struct baby_nccl_comm *c, fti_baby_nccl_allreduce_t *a)
{
    cudaError_t e = cudaSuccess;
    if (c->ev_state == 0) {
        e = cudaEventCreateWithFlags(&c->ev, cudaEventDisableTiming | cudaEventInterprocess);
        if (e == cudaSuccess) {
            c->ev_state = 1;
            e = cudaIpcGetEventHandle(&c->ev_handle, c->ev);
        }
        if (e != cudaSuccess)
            events_off(c, "no interprocess event", e);
    }
    if (c->ev_state > 0 && (e = cudaEventRecord(c->ev, cudaStreamLegacy)) != cudaSuccess)
        events_off(c, "cudaEventRecord", e);
    if (c->ev_state > 0) {
        memcpy(a->event, &c->ev_handle, sizeof(a->event));
        a->flags |= FTI_BABY_NCCL_WAIT;
        return FT_SUCCESS;
    }
    a->flags &= ~FTI_BABY_NCCL_WAIT;
    memset(a->event, 0, sizeof(a->event));
    e = cudaDeviceSynchronize();
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        FTI_WARN("baby-nccl: cudaDeviceSynchronize: %s", cudaGetErrorString(e));
        return FT_ERR_SYSTEM;
    }
    return FT_SUCCESS;
}

/* Closes the child's event opened here (before its child goes, or when a new
 * child or a new handle replaces it). */
static void child_event_close(struct baby_nccl_comm *c)
{
    if (c->child_ev)
        (void)cudaEventDestroy(c->child_ev);
    c->child_ev = NULL;
}

/* The child's event of reply d (dlen bytes; 0: it has none), opened once per
 * child and handle; one that does not open is left out (the reply came after
 * the child's stream was done: it is enough). */
static void child_event_take(struct baby_nccl_comm *c, const fti_baby_nccl_done_t *d, size_t dlen)
{
    int spawn = fti_baby_spawns(c->runner);
    if (c->child_ev && (c->child_spawn != spawn || dlen != sizeof(*d) ||
                        memcmp(c->child_handle, d->event, sizeof(d->event)) != 0))
        child_event_close(c);
    if (c->child_ev || dlen != sizeof(*d))
        return;
    cudaIpcEventHandle_t h;
    memcpy(&h, d->event, sizeof(h));
    cudaError_t e = cudaIpcOpenEventHandle(&c->child_ev, h);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        c->child_ev = NULL;
        FTI_DEBUG("baby-nccl: the child's event does not open: %s", cudaGetErrorString(e));
        return;
    }
    memcpy(c->child_handle, d->event, sizeof(c->child_handle));
    c->child_spawn = spawn;
}

/* Polls the child's event (cudaEventQuery) until it completes, before
 * deadline_ms (past it, one look). */
static int child_event_wait(struct baby_nccl_comm *c, int64_t deadline_ms)
{
    if (c->child_ev == NULL)
        return FT_SUCCESS;
    for (;;) {
        int past = fti_now_ms() >= deadline_ms;
        cudaError_t e = cudaEventQuery(c->child_ev);
        if (e == cudaSuccess)
            return FT_SUCCESS;
        if (e != cudaErrorNotReady) {
            (void)cudaGetLastError();
            FTI_WARN("baby-nccl: the child's event: %s", cudaGetErrorString(e));
            return FT_ERR_PROC_FAILED;
        }
        if (past) {
            FTI_WARN("baby-nccl: the child's event not done before the deadline");
            return FT_ERR_TIMEOUT;
        }
        struct timespec ts = {0, EVENT_POLL_US * 1000L};
        nanosleep(&ts, NULL);
    }
}

static int child_id(void *ctx, unsigned char *id)
{
    fti_baby_nccl_id_t r;
    size_t len = 0;
    int rc = fti_baby_command(ctx, FTI_BABY_NCCL_ID, NULL, 0, fti_now_ms() + 30000, &r, sizeof(r),
                              &len);
    if (rc == FT_SUCCESS && len != sizeof(r))
        rc = FT_ERR_BAD_MESSAGE;
    if (rc == FT_SUCCESS)
        memcpy(id, r.id, sizeof(r.id));
    return rc;
}

/* The allocation holding p (cuMemGetAddressRange through the runtime's
 * driver entry point: no link against libcuda). */
typedef int (*addr_range_fn)(unsigned long long *base, size_t *size, unsigned long long p);
static int alloc_of(void *p, char **base_p, size_t *bytes_p)
{
    static addr_range_fn fn;
    if (fn == NULL) {
        enum cudaDriverEntryPointQueryResult q;
        void *f = NULL;
        if (cudaGetDriverEntryPointByVersion("cuMemGetAddressRange", &f, 12000, cudaEnableDefault,
                                             &q) != cudaSuccess ||
            q != cudaDriverEntryPointSuccess || f == NULL)
            return FT_ERR_UNSUPPORTED;
        fn = (addr_range_fn)f;
    }
    unsigned long long base = 0;
    size_t bytes = 0;
    if (fn(&base, &bytes, (unsigned long long)(uintptr_t)p) != 0)
        return FT_ERR_ARG;
    *base_p = (char *)(uintptr_t)base;
    *bytes_p = bytes;
    return FT_SUCCESS;
}

static int is_device(const void *p)
{
    struct cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) == cudaSuccess && a.type == cudaMemoryTypeDevice)
        return 1;
    (void)cudaGetLastError();
    return 0;
}

static int send_allreduce(struct baby_nccl_comm *c, const fti_baby_nccl_allreduce_t *a,
                          int64_t deadline_ms)
{
    fti_baby_nccl_done_t d;
    size_t dlen = 0;
    int rc = fti_baby_command(c->runner, FTI_BABY_NCCL_ALLREDUCE, a, sizeof(*a), deadline_ms, &d,
                              sizeof(d), &dlen);
    if (rc == FT_SUCCESS) {
        child_event_take(c, &d, dlen);
        rc = child_event_wait(c, deadline_ms);
    }
    return rc;
}

/* The command for device buffer dev: its allocation's IPC handle, ordered
 * after the work that wrote it (order_input), the child's event waited for
 * after. */
static int ipc_allreduce(struct baby_nccl_comm *c, void *dev, size_t count, enum fti_dtype dt,
                         enum fti_op op, int64_t deadline_ms)
{
    fti_baby_nccl_allreduce_t a;
    memset(&a, 0, sizeof(a));
    char *base = NULL;
    size_t alloc = 0;
    int rc = alloc_of(dev, &base, &alloc);
    cudaIpcMemHandle_t h;
    if (rc == FT_SUCCESS && cudaIpcGetMemHandle(&h, base) != cudaSuccess) {
        /* cudaMallocAsync pools, cuMemCreate (PyTorch's expandable
         * segments): the caller stages it through a cudaMalloc buffer */
        FTI_DEBUG("baby-nccl: no CUDA IPC handle for %p (%s)", (void *)base,
                  cudaGetErrorString(cudaGetLastError()));
        rc = FT_ERR_UNSUPPORTED;
    }
    if (rc != FT_SUCCESS)
        return rc;
    memcpy(a.handle, &h, sizeof(h));
    a.offset = (uint64_t)((char *)dev - base);
    a.alloc_bytes = alloc;
    a.count = count;
    a.dtype = dt;
    a.op = op;
    rc = order_input(c, &a);
    if (rc == FT_SUCCESS)
        rc = send_allreduce(c, &a, deadline_ms);
    if (rc == FT_ERR_NOT_FOUND && (a.flags & FTI_BABY_NCCL_WAIT)) {
        /* the child could not wait on our event; nothing ran there */
        events_off(c, "the child cannot wait on the rank's event", cudaSuccess);
        rc = order_input(c, &a);
        if (rc == FT_SUCCESS)
            rc = send_allreduce(c, &a, deadline_ms);
    }
    return rc;
}

/* buf (bytes; host memory, or device memory IPC cannot export) into the
 * staging buffer (cudaMalloc'ed: exportable), *dev_p set to it. */
static int stage_in(struct baby_nccl_comm *c, const void *buf, size_t bytes, void **dev_p)
{
    if (c->stage_bytes < bytes) {
        /* no child maps it now: the child unmaps after every collective */
        cudaFree(c->stage);
        c->stage = NULL;
        c->stage_bytes = 0;
        if (cudaMalloc(&c->stage, bytes) != cudaSuccess)
            return FT_ERR_NO_MEMORY;
        c->stage_bytes = bytes;
    }
    /* from pageable memory the DMA may still run when this returns, and a
     * device-to-device copy is asynchronous: both are on the legacy default
     * stream, which order_input waits for */
    if (cudaMemcpy(c->stage, buf, bytes, cudaMemcpyDefault) != cudaSuccess)
        return FT_ERR_SYSTEM;
    *dev_p = c->stage;
    return FT_SUCCESS;
}

/* The reduced staging buffer back into buf; done when this returns. */
static int stage_out(struct baby_nccl_comm *c, void *buf, size_t bytes)
{
    if (cudaMemcpy(buf, c->stage, bytes, cudaMemcpyDefault) != cudaSuccess ||
        cudaStreamSynchronize(cudaStreamLegacy) != cudaSuccess) {
        (void)cudaGetLastError();
        return FT_ERR_SYSTEM;
    }
    return FT_SUCCESS;
}

static int baby_nccl_allreduce(fti_comm_h comm, void *buf, size_t count, enum fti_dtype dt,
                               enum fti_op op, int64_t deadline_ms)
{
    struct baby_nccl_comm *c = (struct baby_nccl_comm *)comm;
    if (c->dead || fti_baby_pid(c->runner) <= 0)
        return FT_ERR_ABORTED;
    if (count == 0)
        return FT_SUCCESS;
    size_t bytes = count * fti_dtype_size(dt);
    int cur = -1, moved = 0; /* the child's device, the caller's given back */
    if (cudaGetDevice(&cur) == cudaSuccess && cur != c->device)
        moved = cudaSetDevice(c->device) == cudaSuccess;
    void *dev = buf;
    int rc = is_device(buf) ? FT_SUCCESS : stage_in(c, buf, bytes, &dev);
    if (rc == FT_SUCCESS)
        rc = ipc_allreduce(c, dev, count, dt, op, deadline_ms);
    if (rc == FT_ERR_UNSUPPORTED && dev == buf) {
        /* issue 29 item 6: device memory CUDA IPC cannot export is staged
         * through the exportable stage buffer instead of failing */
        static atomic_int said;
        if (atomic_exchange(&said, 1) == 0)
            FTI_WARN("baby-nccl: device memory CUDA IPC cannot export (cudaMallocAsync pools, "
                     "cuMemCreate): copied through a cudaMalloc buffer (said once)");
        rc = stage_in(c, buf, bytes, &dev);
        if (rc == FT_SUCCESS)
            rc = ipc_allreduce(c, dev, count, dt, op, deadline_ms);
    }
    if (rc == FT_SUCCESS && dev != buf)
        rc = stage_out(c, buf, bytes);
    if (rc != FT_SUCCESS && rc != FT_ERR_UNSUPPORTED && rc != FT_ERR_ARG) {
        c->dead = 1;
        child_event_close(c);     /* before its child goes, where we still can */
        fti_baby_kill(c->runner); /* NCCL in the child ends with it */
    }
    if (moved)
        (void)cudaSetDevice(cur);
    return rc;
}

static void baby_nccl_destroy(fti_comm_h comm)
{
    struct baby_nccl_comm *c = (struct baby_nccl_comm *)comm;
    child_event_close(c);     /* before the child that exported it goes */
    fti_baby_kill(c->runner); /* a quorum change: the next one gets a new child */
    fti_baby_destroy(c->runner);
    if (c->ev_state > 0) /* no child can use it any more */
        (void)cudaEventDestroy(c->ev);
    if (c->stage)
        cudaFree(c->stage);
    free(c);
}

/* The child joins the communicator of plan's id. */
static int child_init(struct baby_nccl_comm *c, const fti_comm_rendezvous_t *r,
                      const unsigned char *id, int64_t deadline_ms)
{
    fti_baby_nccl_init_t in;
    memset(&in, 0, sizeof(in));
    memcpy(in.id, id, sizeof(in.id));
    in.rank = r->replica_rank;
    in.size = r->size;
    int dev = 0;
    if (cudaGetDevice(&dev) != cudaSuccess)
        return FT_ERR_UNSUPPORTED;
    in.device = dev;
    c->device = dev;
    return fti_baby_command(c->runner, FTI_BABY_NCCL_INIT, &in, sizeof(in), deadline_ms, NULL, 0,
                            NULL);
}

static int baby_nccl_create(const fti_comm_rendezvous_t *r, int64_t deadline_ms,
                            fti_comm_h *comm_p)
{
    if (r->size < 1 || r->replica_rank < 0 || r->replica_rank >= r->size)
        return FT_ERR_ARG;
    fti_baby_opts_t o = {
        .path = r->child_path,
        .env = r->child_env,
        .cpus = r->child_cpus != NULL && r->child_cpus[0] != '\0' ? r->child_cpus : NULL,
        .key = r->key,
    };
    struct baby_nccl_comm *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return FT_ERR_NO_MEMORY;
    int rc = fti_baby_create(&o, &c->runner);
    if (rc == FT_SUCCESS)
        rc = fti_baby_start(c->runner, deadline_ms);
    fti_nccl_plan_t plan;
    memset(&plan, 0, sizeof(plan));
    fti_nccl_member_t none = {0, -1, 0, {0}};
    fti_nccl_gpu_uuid(none.gpu);
    if (rc == FT_SUCCESS)
        rc = r->size == 1 ? child_id(c->runner, plan.id)
                          : fti_nccl_rendezvous(r, &none, 0, child_id, c->runner, deadline_ms,
                                                &plan);
    if (rc == FT_SUCCESS && plan.shared_gpu)
        rc = FT_ERR_UNSUPPORTED; /* NCCL refuses two members on one GPU */
    if (rc == FT_SUCCESS)
        rc = child_init(c, r, plan.id, deadline_ms);
    if (rc != FT_SUCCESS) {
        if (c->runner)
            baby_nccl_destroy(&c->base);
        else
            free(c);
        return rc == FT_ERR_UNSUPPORTED ? rc : fti_slice_error(rc);
    }
    c->base.ops = &fti_backend_baby_nccl;
    c->base.rank = r->replica_rank;
    c->base.size = r->size;
    *comm_p = &c->base;
    return FT_SUCCESS;
}

fti_baby_h fti_baby_nccl_runner(fti_comm_h comm)
{
    if (comm == NULL || comm->ops != &fti_backend_baby_nccl)
        return NULL;
    return ((struct baby_nccl_comm *)comm)->runner;
}

/* The table entry (comm.h): NCCL in an ftmpi-baby child. */
const struct fti_comm_backend fti_backend_baby_nccl = {
    .name = "baby-nccl",
    .needs = FTI_COMM_NEEDS_STORE | FTI_COMM_NEEDS_CHILD | FTI_COMM_NEEDS_DEVICE,
    .create = baby_nccl_create,
    .allreduce = baby_nccl_allreduce,
    .destroy = baby_nccl_destroy,
};
