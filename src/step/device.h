/*
 * device.h - device (CUDA) buffers in the step (DESIGN section 5): whether
 * a buffer of FT_Allreduce is device memory (cudaPointerGetAttributes;
 * without CUDA built in, never), and the allreduce of one.
 *
 * The slice for a device buffer: the step's own when its backend reduces
 * device buffers (nccl, baby-nccl: FTI_COMM_NEEDS_DEVICE); with
 * FTMPI_BACKEND=auto in mode A and NCCL built in, an nccl slice built at
 * the quorum's first device allreduce (every group makes the same calls,
 * so they build it together) and rebuilt when the quorum changes;
 * otherwise the buffer is staged through pinned host memory and reduced
 * by the step's slice.
 *
 * Healing a device buffer (FT_State_register): fti_device_heal_copy gives
 * heal/serve.c a pinned host mirror of it and the copies through it.
 */
#ifndef FTI_DEVICE_H
#define FTI_DEVICE_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/settings.h"
#include "comm/comm.h"
#include "comm/reduce.h"
#include "control/results.h"
#include "heal/heal.h"

/* What a device allreduce reads of the step (ft.c fills it per call). */
typedef struct fti_device_step {
    const fti_config_t *cfg;
    const char *bind_host;                  /* resolved (the world's) */
    const struct fti_comm_backend *backend; /* the step's */
    bool auto_device;                       /* the mode's (mode/mode.h) */
    fti_comm_h slice;                       /* the step's slice */
    int64_t slice_quorum_id;
    const fti_quorum_result_t *res;         /* the quorum's results */
    int group_rank;
} fti_device_step_t;

/* Is p device memory (not host, not managed). */
bool fti_device_ptr(const void *p);

/* FT_Allreduce of a device buffer (recvbuf or a device sendbuf): the copy
 * of sendbuf (MPI_IN_PLACE: none), the spare's identity, the reduction,
 * FT_AVG's division by the participants.  Errors are logged where seen;
 * the caller latches them. */
int fti_device_allreduce(const fti_device_step_t *s, const void *sendbuf, void *recvbuf, size_t count,
                         enum fti_dtype dt, enum fti_op op);

/* The mirror (len bytes of pinned host memory, cudaMallocHost) and the
 * copies (cudaMemcpy on buf's device, synchronous) that serve and install
 * the device buffer buf in a heal: pass *copy_p to
 * fti_heal_register_copy, whose fti_heal_destroy releases them
 * (copy_p->release; the caller calls it itself when the registration
 * fails).  FT_ERR_UNSUPPORTED without CUDA built in, FT_ERR_NO_MEMORY
 * (logged). */
int fti_device_heal_copy(const void *buf, size_t len, fti_heal_copy_t *copy_p);

/* Whether this process can use a CUDA device (a device backend needs
 * one): FT_SUCCESS, or FT_ERR_UNSUPPORTED with why (len bytes) saying what
 * is missing (no CUDA in this build, the driver's or runtime's error, no
 * device). */
int fti_device_usable(char *why, size_t len);

/* Frees the device slice and staging (FT_Finalize, and after an error). */
void fti_device_release(void);

#endif
