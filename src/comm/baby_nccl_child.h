/*
 * baby_nccl_child.h - the ftmpi-baby side of baby-nccl (baby_nccl_child.c):
 * the NCCL_* commands of baby_chan.h.  Built only with NCCL
 * (FTMPI_HAVE_NCCL); a child without it answers those commands
 * FT_ERR_UNSUPPORTED.
 */
#ifndef FTI_BABY_NCCL_CHILD_H
#define FTI_BABY_NCCL_CHILD_H

#include <stddef.h>

#include "comm/baby_chan.h"

/* Runs one NCCL_* command (h, payload pl); fills the reply payload (*rlen
 * bytes).  FT_ERR_BAD_MESSAGE for a malformed one. */
int fti_baby_nccl_dispatch(const fti_baby_hdr_t *h, const void *pl, void *reply, size_t *rlen);

/* Frees the communicator and closes the IPC mappings (ABORT, exit). */
void fti_baby_nccl_drop(void);

#endif
