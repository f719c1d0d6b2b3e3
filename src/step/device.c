/* device.c - device buffers of FT_Allreduce (see device.h). */
#include "step/device.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi_config.h"
#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/util.h"

#ifndef FTMPI_HAVE_CUDA

/* Built without CUDA: no pointer is device memory. */
bool fti_device_ptr(const void *p)
{
    (void)p;
    return false;
}

int fti_device_allreduce(const fti_device_step_t *s, const void *sendbuf, void *recvbuf, size_t count,
                         enum fti_dtype dt, enum fti_op op)
{
    (void)s, (void)sendbuf, (void)recvbuf, (void)count, (void)dt, (void)op;
    return FT_ERR_UNSUPPORTED;
}

void fti_device_release(void)
{
}

int fti_device_usable(char *why, size_t len)
{
    snprintf(why, len, "this build has no CUDA");
    return FT_ERR_UNSUPPORTED;
}

int fti_device_heal_copy(const void *buf, size_t len, fti_heal_copy_t *copy_p)
{
    (void)buf, (void)len, (void)copy_p;
    return FT_ERR_UNSUPPORTED;
}

#else

#include <cuda_runtime_api.h>
#include <pthread.h>
#ifdef FTMPI_HAVE_NCCL
#include "comm/nccl_comm.h"
#endif

static struct {
    fti_comm_h slice;  /* the auto nccl slice, or NULL */
    int64_t quorum_id; /* the quorum it was built for */
    void *host;        /* pinned staging */
    size_t host_bytes;
} D = {NULL, -1, NULL, 0};

/* Whether this process sees a CUDA device at all, asked once: on a node
 * without one (or without a driver) no FT_Allreduce pays for a failing
 * cudaPointerGetAttributes. */
static pthread_once_t devices_once = PTHREAD_ONCE_INIT;
static bool have_devices;

static void count_devices(void)
{
    int n = 0;
    have_devices = cudaGetDeviceCount(&n) == cudaSuccess && n > 0;
    if (!have_devices)
        (void)cudaGetLastError();
}

int fti_device_usable(char *why, size_t len)
{
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        snprintf(why, len, "no usable CUDA device: %s", cudaGetErrorString(e));
        (void)cudaGetLastError();
        return FT_ERR_UNSUPPORTED;
    }
    if (n < 1) {
        snprintf(why, len, "no CUDA device on this node");
        return FT_ERR_UNSUPPORTED;
    }
    return FT_SUCCESS;
}

bool fti_device_ptr(const void *p)
{
    struct cudaPointerAttributes a;
    if (p == NULL || p == MPI_IN_PLACE)
        return false;
    pthread_once(&devices_once, count_devices);
    if (!have_devices)
        return false;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        (void)cudaGetLastError(); /* no device, or not CUDA's */
        return false;
    }
    return a.type == cudaMemoryTypeDevice;
}

void fti_device_release(void)
{
    fti_comm_destroy(D.slice);
    D.slice = NULL;
    D.quorum_id = -1;
    if (D.host)
        cudaFreeHost(D.host);
    D.host = NULL;
    D.host_bytes = 0;
#ifdef FTMPI_HAVE_NCCL
    fti_nccl_drop_parked();
#endif
}

static int pinned(size_t bytes, void **p_p)
{
    if (D.host_bytes < bytes) {
        if (D.host)
            cudaFreeHost(D.host);
        D.host = NULL;
        D.host_bytes = 0;
        if (cudaMallocHost(&D.host, bytes) != cudaSuccess) {
            FTI_ERROR("FT_Allreduce: %zu bytes of pinned host memory: %s", bytes,
                      cudaGetErrorString(cudaGetLastError()));
            return FT_ERR_NO_MEMORY;
        }
        D.host_bytes = bytes;
    }
    *p_p = D.host;
    return FT_SUCCESS;
}

static int copy(void *dst, const void *src, size_t bytes)
{
    cudaError_t e = cudaMemcpy(dst, src, bytes, cudaMemcpyDefault);
    if (e == cudaSuccess)
        return FT_SUCCESS;
    FTI_ERROR("FT_Allreduce: copying %zu bytes of device memory: %s", bytes, cudaGetErrorString(e));
    return FT_ERR_SYSTEM;
}

/* The auto nccl slice of s's quorum, built at its first device allreduce. */
static int auto_slice(const fti_device_step_t *s, fti_comm_h *c_p)
{
    const struct fti_comm_backend *b = fti_comm_backend_find("nccl");
    if (b == NULL)
        return FT_ERR_UNSUPPORTED;
    if (D.quorum_id == s->slice_quorum_id && D.quorum_id != -1) {
        *c_p = D.slice; /* NULL: this quorum stages through host memory */
        return FT_SUCCESS;
    }
    fti_comm_destroy(D.slice);
    D.slice = NULL;
    fti_comm_rendezvous_t r = {
        .quorum_id = s->res->quorum_id,
        .group_rank = s->group_rank,
        .replica_rank = s->res->replica_rank,
        .size = s->res->replica_world_size,
        .store_address = s->res->store_address,
        .bind_host = s->bind_host,
        .connect_timeout_ms = s->cfg->connect_timeout_ms,
        .key = fti_config_key(s->cfg),
    };
    int rc = fti_comm_create(b, &r, fti_now_ms() + s->cfg->timeout_ms, &D.slice);
    if (rc == FT_ERR_UNSUPPORTED) {
        /* members share a GPU (NCCL refuses it; nccl_slice.c says so once)
         * or no NCCL here: this quorum stages through host memory */
        D.slice = NULL;
        D.quorum_id = s->slice_quorum_id;
        *c_p = NULL;
        return FT_SUCCESS;
    }
    if (rc != FT_SUCCESS) {
        FTI_WARN("quorum %" PRId64 ": nccl slice of %d for device buffers not built: %s",
                 r.quorum_id, r.size, FT_Error_string(rc));
        D.slice = NULL;
        return rc;
    }
    D.quorum_id = s->slice_quorum_id;
    *c_p = D.slice;
    return FT_SUCCESS;
}

/* The communicator that reduces device memory for s (NULL: stage through
 * host memory and s->slice). */
static int pick(const fti_device_step_t *s, fti_comm_h *c_p)
{
    *c_p = NULL;
    if (s->backend->needs & FTI_COMM_NEEDS_DEVICE) {
        *c_p = s->slice;
        return s->slice ? FT_SUCCESS : FT_ERR_INTERNAL;
    }
    if (s->slice == NULL)
        return FT_ERR_INTERNAL;
    if (strcmp(s->cfg->backend, "auto") == 0 && s->auto_device &&
        fti_comm_backend_find("nccl") != NULL)
        return auto_slice(s, c_p);
    return FT_SUCCESS;
}

int fti_device_allreduce(const fti_device_step_t *s, const void *sendbuf, void *recvbuf, size_t count,
                         enum fti_dtype dt, enum fti_op op)
{
    size_t bytes = count * fti_dtype_size(dt);
    int rc = FT_SUCCESS;
    if (sendbuf != MPI_IN_PLACE && sendbuf != recvbuf)
        rc = copy(recvbuf, sendbuf, bytes);
    if (rc != FT_SUCCESS || count == 0)
        return rc;
    fti_comm_h c = NULL;
    rc = pick(s, &c);
    bool scale = op == FTI_OP_AVG && s->res->participants != s->res->replica_world_size;
    bool host = c == NULL || s->res->spare || scale; /* the host copy is needed */
    void *h = NULL;
    if (rc == FT_SUCCESS && host)
        rc = pinned(bytes, &h);
    if (rc == FT_SUCCESS && host && !s->res->spare)
        rc = copy(h, recvbuf, bytes);
    if (rc == FT_SUCCESS && s->res->spare)
        fti_reduce_identity(h, count, dt, op);
    if (rc == FT_SUCCESS && c != NULL && s->res->spare)
        rc = copy(recvbuf, h, bytes);
    enum fti_op wop = scale ? FTI_OP_SUM : op;
    int64_t deadline = fti_now_ms() + s->cfg->timeout_ms;
    if (rc == FT_SUCCESS)
        rc = c ? fti_comm_allreduce(c, recvbuf, count, dt, wop, deadline)
               : fti_comm_allreduce(s->slice, h, count, dt, wop, deadline);
    if (rc == FT_SUCCESS && c != NULL && scale)
        rc = copy(h, recvbuf, bytes);
    if (rc == FT_SUCCESS && scale)
        fti_reduce_scale(h, count, dt, s->res->participants);
    if (rc == FT_SUCCESS && (c == NULL || scale))
        rc = copy(recvbuf, h, bytes);
    if (rc != FT_SUCCESS && c != NULL && c == D.slice) {
        fti_comm_destroy(D.slice); /* dead: the next quorum builds a new one */
        D.slice = NULL;
        D.quorum_id = -1;
    }
    return rc;
}

/* ---- healing a device buffer: a pinned mirror -------------------------- */

struct heal_ctx {
    int dev; /* the buffer's device */
};

/* cudaMemcpy on device dev, then a wait for the legacy default stream (a
 * copy from pageable memory may return before its DMA is done).  foreign:
 * the loop thread, which stays on dev; the application thread gets its
 * device back. */
static int heal_copy(int dev, void *dst, const void *src, size_t len, bool foreign,
                     const char *what)
{
    int cur = -1;
    bool moved = false;
    cudaError_t e = cudaGetDevice(&cur);
    if (e == cudaSuccess && cur != dev) {
        e = cudaSetDevice(dev);
        moved = e == cudaSuccess;
    }
    if (e == cudaSuccess)
        e = cudaMemcpy(dst, src, len, cudaMemcpyDefault);
    if (e == cudaSuccess)
        e = cudaStreamSynchronize(cudaStreamLegacy);
    if (moved && !foreign)
        (void)cudaSetDevice(cur);
    if (e == cudaSuccess)
        return FT_SUCCESS;
    (void)cudaGetLastError();
    FTI_ERROR("heal: copying %zu bytes %s device %d: %s", len, what, dev, cudaGetErrorString(e));
    return FT_ERR_SYSTEM;
}

static int heal_copy_out(void *ctx, void *mirror, const void *buf, size_t len, bool foreign)
{
    return heal_copy(((struct heal_ctx *)ctx)->dev, mirror, buf, len, foreign, "out of");
}

static int heal_copy_in(void *ctx, void *buf, const void *src, size_t len)
{
    return heal_copy(((struct heal_ctx *)ctx)->dev, buf, src, len, false, "into");
}

static void heal_release(void *ctx, void *mirror)
{
    if (mirror != NULL)
        (void)cudaFreeHost(mirror);
    free(ctx);
}

int fti_device_heal_copy(const void *buf, size_t len, fti_heal_copy_t *copy_p)
{
    struct cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, buf) != cudaSuccess || a.type != cudaMemoryTypeDevice) {
        (void)cudaGetLastError();
        return FT_ERR_ARG;
    }
    struct heal_ctx *ctx = malloc(sizeof(*ctx));
    void *mirror = NULL;
    cudaError_t e = cudaSuccess;
    if (ctx != NULL && len > 0)
        e = cudaMallocHost(&mirror, len);
    if (ctx == NULL || e != cudaSuccess) {
        (void)cudaGetLastError();
        FTI_ERROR("heal: a mirror of %zu bytes of device memory: %s", len,
                  ctx == NULL ? "out of memory" : cudaGetErrorString(e));
        free(ctx);
        return FT_ERR_NO_MEMORY;
    }
    ctx->dev = a.device;
    *copy_p = (fti_heal_copy_t){
        .copy_out = heal_copy_out,
        .copy_in = heal_copy_in,
        .release = heal_release,
        .ctx = ctx,
        .mirror = mirror,
    };
    return FT_SUCCESS;
}

#endif
