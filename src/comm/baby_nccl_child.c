/*
 * baby_nccl_child.c - the baby-nccl commands in the ftmpi-baby child
 * (baby_chan.h): NCCL_ID makes a unique id (this child is NCCL's bootstrap
 * root for it), NCCL_INIT joins the communicator (nccl_comm.h, polled against
 * the parent's deadline), NCCL_ALLREDUCE opens the parent's CUDA IPC
 * memory handle (kept open for the next commands on the same allocation)
 * and reduces in place.  Everything the child opened dies with it.
 */
#include "baby_nccl_child.h"

#include <cuda_runtime_api.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "log.h"
#include "nccl_comm.h"

#define MAX_OPEN 64 /* IPC mappings kept; the oldest is closed beyond */

static struct {
    fti_nccl_h comm;
    struct {
        unsigned char handle[FTI_BABY_IPC_BYTES];
        char *base;
    } open[MAX_OPEN];
    int n_open, next;
} C;

void fti_baby_nccl_drop(void)
{
    fti_nccl_free(C.comm);
    C.comm = NULL;
    for (int i = 0; i < C.n_open; i++)
        (void)cudaIpcCloseMemHandle(C.open[i].base);
    C.n_open = C.next = 0;
}

static int mapped(const unsigned char *handle, char **base_p)
{
    for (int i = 0; i < C.n_open; i++) {
        if (memcmp(C.open[i].handle, handle, FTI_BABY_IPC_BYTES) == 0) {
            *base_p = C.open[i].base;
            return FT_SUCCESS;
        }
    }
    cudaIpcMemHandle_t h;
    memcpy(&h, handle, sizeof(h));
    void *p = NULL;
    cudaError_t e = cudaIpcOpenMemHandle(&p, h, cudaIpcMemLazyEnablePeerAccess);
    if (e != cudaSuccess) {
        FTI_WARN("ftmpi-baby: cudaIpcOpenMemHandle: %s", cudaGetErrorString(e));
        return FT_ERR_ARG;
    }
    int slot;
    if (C.n_open < MAX_OPEN) {
        slot = C.n_open++;
    } else {
        slot = C.next;
        (void)cudaIpcCloseMemHandle(C.open[slot].base);
        C.next = (C.next + 1) % MAX_OPEN;
    }
    memcpy(C.open[slot].handle, handle, FTI_BABY_IPC_BYTES);
    C.open[slot].base = p;
    *base_p = p;
    return FT_SUCCESS;
}

static int do_init(const fti_baby_nccl_init_t *in, int64_t deadline_ms)
{
    fti_baby_nccl_drop();
    return fti_nccl_init(in->id, in->rank, in->size, in->device, deadline_ms, &C.comm);
}

static int do_allreduce(const fti_baby_nccl_allreduce_t *a, int64_t deadline_ms)
{
    if (C.comm == NULL)
        return FT_ERR_STATE;
    if (a->dtype < 0 || a->dtype >= FTI_DT_COUNT || a->op < 0 || a->op >= FTI_OP_COUNT)
        return FT_ERR_ARG;
    size_t es = fti_dtype_size((enum fti_dtype)a->dtype);
    if (a->offset > a->alloc_bytes || a->count > (a->alloc_bytes - a->offset) / es)
        return FT_ERR_ARG;
    char *base = NULL;
    int rc = mapped(a->handle, &base);
    if (rc == FT_SUCCESS)
        rc = fti_nccl_allreduce(C.comm, base + a->offset, (size_t)a->count,
                                (enum fti_dtype)a->dtype, (enum fti_op)a->op, deadline_ms);
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
        return do_allreduce(pl, h->deadline_ms);
    default:
        return FT_ERR_BAD_MESSAGE;
    }
}
