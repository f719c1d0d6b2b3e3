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
 */
#ifndef FTI_DEVICE_H
#define FTI_DEVICE_H

#include <stdbool.h>
#include <stddef.h>

#include "step.h"

/* Is p device memory (not host, not managed). */
bool fti_device_ptr(const void *p);

/* FT_Allreduce of a device buffer (recvbuf or a device sendbuf): the copy
 * of sendbuf (MPI_IN_PLACE: none), the spare's identity, the reduction,
 * FT_AVG's division by the participants.  Errors are logged where seen;
 * the caller latches them. */
int fti_device_allreduce(struct fti_step *s, const void *sendbuf, void *recvbuf, size_t count,
                         enum fti_dtype dt, enum fti_op op);

/* Frees the device slice and staging (FT_Finalize, and after an error). */
void fti_device_release(void);

#endif
