/*
 * baby_nccl.c - the baby-nccl backend (DESIGN section 5): the NCCL
 * communicator of nccl_comm.h runs in an ftmpi-baby child (baby.h), so that a
 * hang inside NCCL ends with SIGKILL.  The unique id is made by replica
 * rank 0's child (NCCL's bootstrap root lives there) and travels through
 * the quorum's store (nccl_slice.h, always a full init: every quorum change
 * kills the child).  A device buffer crosses as a CUDA IPC memory handle of
 * its allocation plus the buffer's offset; the parent synchronizes its
 * device before the command (the work that produced the buffer is done),
 * the child synchronizes its stream before the reply.  Host buffers are
 * staged through a device buffer of the parent.
 *
 * Missing: CUDA IPC event handles (the parent waits on the device instead
 * of handing the child an event to wait on; correct, it only blocks the
 * parent's GPU work while the child reduces).
 */
#include "baby.h"
#include "baby_chan.h"
#include "nccl_slice.h"

#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "log.h"
#include "slice.h"
#include "util.h"

_Static_assert(sizeof(cudaIpcMemHandle_t) == FTI_BABY_IPC_BYTES, "cudaIpcMemHandle_t size");

struct baby_nccl_comm {
    struct fti_comm base;
    fti_baby_h runner;
    int dead;
    void *stage; /* device staging for host buffers */
    size_t stage_bytes;
};

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

/* The command for device buffer dev (bytes long). */
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
        FTI_WARN("baby-nccl: no CUDA IPC handle for %p (%s)", (void *)base,
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
    /* the work that wrote the buffer is done before the child reads it */
    if (cudaDeviceSynchronize() != cudaSuccess)
        return FT_ERR_SYSTEM;
    return fti_baby_command(c->runner, FTI_BABY_NCCL_ALLREDUCE, &a, sizeof(a), deadline_ms, NULL,
                            0, NULL);
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
    void *dev = buf;
    if (!is_device(buf)) {
        if (c->stage_bytes < bytes) {
            cudaFree(c->stage);
            c->stage = NULL;
            c->stage_bytes = 0;
            if (cudaMalloc(&c->stage, bytes) != cudaSuccess)
                return FT_ERR_NO_MEMORY;
            c->stage_bytes = bytes;
        }
        if (cudaMemcpy(c->stage, buf, bytes, cudaMemcpyHostToDevice) != cudaSuccess)
            return FT_ERR_SYSTEM;
        dev = c->stage;
    }
    int rc = ipc_allreduce(c, dev, count, dt, op, deadline_ms);
    if (rc == FT_SUCCESS && dev != buf &&
        cudaMemcpy(buf, dev, bytes, cudaMemcpyDeviceToHost) != cudaSuccess)
        rc = FT_ERR_SYSTEM;
    if (rc != FT_SUCCESS && rc != FT_ERR_UNSUPPORTED && rc != FT_ERR_ARG) {
        c->dead = 1;
        fti_baby_kill(c->runner); /* NCCL in the child ends with it */
    }
    return rc;
}

static void baby_nccl_destroy(fti_comm_h comm)
{
    struct baby_nccl_comm *c = (struct baby_nccl_comm *)comm;
    fti_baby_kill(c->runner); /* a quorum change: the next one gets a new child */
    fti_baby_destroy(c->runner);
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
    };
    struct baby_nccl_comm *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return FT_ERR_NO_MEMORY;
    int rc = fti_baby_create(&o, &c->runner);
    if (rc == FT_SUCCESS)
        rc = fti_baby_start(c->runner, deadline_ms);
    fti_nccl_plan_t plan;
    memset(&plan, 0, sizeof(plan));
    fti_nccl_member_t none = {0, -1, 0};
    if (rc == FT_SUCCESS)
        rc = r->size == 1 ? child_id(c->runner, plan.id)
                          : fti_nccl_rendezvous(r, &none, 0, child_id, c->runner, deadline_ms,
                                                &plan);
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
