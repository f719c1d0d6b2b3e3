/*
 * baby_nccl_child.c - the baby-nccl commands in the ftmpi-baby child
 * (baby_chan.h): NCCL_ID makes a unique id (this child is NCCL's bootstrap
 * root for it), NCCL_INIT joins the communicator (nccl_comm.h, polled against
 * the parent's deadline), NCCL_ALLREDUCE opens the parent's CUDA IPC
 * memory handle (kept open for the next commands on the same allocation)
 * and reduces in place.  Ordering (baby_chan.h, FTI_BABY_NCCL_WAIT): the
 * rank's CUDA IPC event is opened once per handle and the NCCL stream waits
 * on it (cudaStreamWaitEvent) before the collective; our own interprocess
 * event is recorded on that stream after it and its handle goes back in
 * the reply.  Everything the child opened dies with it.
 */
#include "comm/baby_nccl_child.h"

#include <cuda_runtime_api.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "comm/nccl_comm.h"

static struct {
    fti_nccl_h comm;
    /* the rank's event, opened from rank_handle (NULL: none yet) */
    cudaEvent_t rank_ev;
    unsigned char rank_handle[FTI_BABY_IPC_BYTES];
    /* ours, recorded after each collective; done_state: 0 not made yet, 1
     * made (done_handle valid), -1 cannot (the rank relies on the reply) */
    cudaEvent_t done_ev;
    cudaIpcEventHandle_t done_handle;
    int done_state;
} C;

void fti_baby_nccl_drop(void)
{
    fti_nccl_free(C.comm);
    C.comm = NULL;
    if (C.rank_ev)
        (void)cudaEventDestroy(C.rank_ev);
    C.rank_ev = NULL;
    if (C.done_state > 0)
        (void)cudaEventDestroy(C.done_ev);
    C.done_ev = NULL;
    C.done_state = 0;
}

/* Makes the communicator's stream wait on the rank's event of handle (opened
 * here the first time it is seen).  FT_ERR_NOT_FOUND if it cannot: nothing
 * is enqueued, the rank falls back to a device synchronize. */
static int wait_rank_event(const unsigned char *handle)
{
    if (C.rank_ev == NULL || memcmp(C.rank_handle, handle, FTI_BABY_IPC_BYTES) != 0) {
        if (C.rank_ev)
            (void)cudaEventDestroy(C.rank_ev);
        C.rank_ev = NULL;
        cudaIpcEventHandle_t h;
        memcpy(&h, handle, sizeof(h));
        cudaEvent_t ev = NULL;
        cudaError_t e = cudaIpcOpenEventHandle(&ev, h);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            FTI_WARN("ftmpi-baby: cudaIpcOpenEventHandle: %s", cudaGetErrorString(e));
            return FT_ERR_NOT_FOUND;
        }
        C.rank_ev = ev;
        memcpy(C.rank_handle, handle, FTI_BABY_IPC_BYTES);
    }
    cudaError_t e = cudaStreamWaitEvent((cudaStream_t)fti_nccl_stream(C.comm), C.rank_ev, 0);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        FTI_WARN("ftmpi-baby: cudaStreamWaitEvent on the rank's event: %s", cudaGetErrorString(e));
        /* closed now: the rank destroys its event once we refuse it */
        (void)cudaEventDestroy(C.rank_ev);
        C.rank_ev = NULL;
        return FT_ERR_NOT_FOUND;
    }
    return FT_SUCCESS;
}

/* Records our event on the communicator's stream (made the first time) and
 * puts its handle into *d; 0 if there is none (the rank then relies on the
 * reply: fti_nccl_allreduce waited for the stream). */
static size_t record_done(fti_baby_nccl_done_t *d)
{
    if (C.done_state == 0) {
        cudaError_t e = cudaEventCreateWithFlags(&C.done_ev,
                                                 cudaEventDisableTiming | cudaEventInterprocess);
        if (e == cudaSuccess) {
            e = cudaIpcGetEventHandle(&C.done_handle, C.done_ev);
            if (e != cudaSuccess)
                (void)cudaEventDestroy(C.done_ev);
        }
        C.done_state = e == cudaSuccess ? 1 : -1;
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            FTI_WARN("ftmpi-baby: no interprocess event (%s); the reply alone orders",
                     cudaGetErrorString(e));
        }
    }
    if (C.done_state < 0 ||
        cudaEventRecord(C.done_ev, (cudaStream_t)fti_nccl_stream(C.comm)) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    _Static_assert(sizeof(C.done_handle) == sizeof(d->event), "cudaIpcEventHandle_t size");
    memcpy(d->event, &C.done_handle, sizeof(d->event));
    return sizeof(*d);
}

/* The rank's allocation of handle, mapped for one collective (issue 29
 * item 6): no mapping is kept across commands, so none is open while the
 * rank frees the memory (its stage buffer when it grows, a user buffer) --
 * undefined behaviour by the CUDA header.  Closed by do_allreduce once the
 * collective is complete (fti_nccl_allreduce waits for its stream). */
static int mapped(const unsigned char *handle, char **base_p)
{
    cudaIpcMemHandle_t h;
    memcpy(&h, handle, sizeof(h));
    void *p = NULL;
    cudaError_t e = cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess);
    if (e != cudaSuccess) {
        FTI_WARN("ftmpi-baby: cudaIpcOpenMemHandle: %s", cudaGetErrorString(e));
        (void)cudaGetLastError();
        return FT_ERR_ARG;
    }
    *base_p = p;
    return FT_SUCCESS;
}

static int do_init(const fti_baby_nccl_init_t *in, int64_t deadline_ms)
{
    fti_baby_nccl_drop();
    return fti_nccl_init(in->id, in->rank, in->size, in->device, deadline_ms, &C.comm);
}

static int do_allreduce(const fti_baby_nccl_allreduce_t *a, int64_t deadline_ms,
                        fti_baby_nccl_done_t *done, size_t *rlen)
{
    if (C.comm == NULL)
        return FT_ERR_STATE;
    if (a->dtype < 0 || a->dtype >= FTI_DT_COUNT || a->op < 0 || a->op >= FTI_OP_COUNT ||
        (a->flags & ~FTI_BABY_NCCL_WAIT) != 0 || a->reserved != 0)
        return FT_ERR_ARG;
    size_t es = fti_dtype_size((enum fti_dtype)a->dtype);
    if (a->offset > a->alloc_bytes || a->count > (a->alloc_bytes - a->offset) / es)
        return FT_ERR_ARG;
    char *base = NULL;
    int rc = mapped(a->handle, &base);
    if (rc == FT_SUCCESS && (a->flags & FTI_BABY_NCCL_WAIT))
        rc = wait_rank_event(a->event);
    if (rc == FT_SUCCESS)
        rc = fti_nccl_allreduce(C.comm, base + a->offset, (size_t)a->count,
                                (enum fti_dtype)a->dtype, (enum fti_op)a->op, deadline_ms);
    if (rc == FT_SUCCESS)
        *rlen = record_done(done);
    /* the collective is complete (or its communicator aborted): unmap
     * before the reply lets the rank free the memory */
    if (base != NULL && cudaIpcCloseMemHandle(base) != cudaSuccess) {
        FTI_WARN("ftmpi-baby: cudaIpcCloseMemHandle: %s", cudaGetErrorString(cudaGetLastError()));
        if (rc == FT_SUCCESS)
            rc = FT_ERR_SYSTEM;
    }
    return rc;
}

int fti_baby_nccl_dispatch(const fti_baby_hdr_t *h, const void *pl, void *reply, size_t *rlen)
{
    *rlen = 0;
    switch (h->type) {
    case FTI_BABY_NCCL_ID: {
        if (h->len != 0)
            return FT_ERR_BAD_MESSAGE;
        fti_baby_nccl_id_t *r = reply;
        int rc = fti_nccl_unique_id(r->id);
        if (rc == FT_SUCCESS)
            *rlen = sizeof(*r);
        return rc;
    }
    case FTI_BABY_NCCL_INIT:
        if (h->len != sizeof(fti_baby_nccl_init_t))
            return FT_ERR_BAD_MESSAGE;
        return do_init(pl, h->deadline_ms);
    case FTI_BABY_NCCL_ALLREDUCE:
        if (h->len != sizeof(fti_baby_nccl_allreduce_t))
            return FT_ERR_BAD_MESSAGE;
        return do_allreduce(pl, h->deadline_ms, reply, rlen);
    default:
        return FT_ERR_BAD_MESSAGE;
    }
}
