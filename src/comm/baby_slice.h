/*
 * baby_slice.h - builds a rank's baby-tcp slice communicator for a quorum:
 * the rendezvous of slice.h through the quorum's store, with the tcp ring
 * in a new ftmpi-baby child (baby.h).  Keys, notes and cleanup are those of
 * slice.h (fti_slice_forget_older covers them).
 */
#ifndef FTI_BABY_SLICE_H
#define FTI_BABY_SLICE_H

#include "comm/baby.h"
#include "comm/slice.h"

/* Builds the slice before deadline_ms, the child started with opts (NULL:
 * defaults).  Release with fti_comm_destroy (it kills the child). */
int fti_baby_slice_create(const fti_slice_params_t *p, const fti_baby_opts_t *opts,
                          int64_t deadline_ms, fti_comm_h *comm_p);

#endif
