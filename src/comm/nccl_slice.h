/*
 * nccl_slice.h - the rendezvous of the nccl backends through the quorum's
 * store (slice.h's keys, so the manager's fti_slice_forget_older drops
 * them): every member publishes what communicator it still holds under
 * "/ftmpi/<q>/<group_rank>/<replica_rank>/nccl"; replica rank 0 decides,
 * from all of them, between a shrink of that communicator (the new quorum
 * only drops members, in the same order) and a full init, and publishes
 * the decision (the exclude list, or the bytes of a new unique id) under
 * "/ftmpi/<q>/<group_rank>/0/nccl-id"; the others wait for it.
 */
#ifndef FTI_NCCL_SLICE_H
#define FTI_NCCL_SLICE_H

#include <stdint.h>

#include "comm/comm.h"
#include "comm/nccl_comm.h"

/* What a member holds from the last quorum: token 0 = nothing. */
typedef struct fti_nccl_member {
    uint64_t token;
    int32_t rank, size;
    unsigned char gpu[16]; /* the member's GPU's UUID; all 0 = unknown */
} fti_nccl_member_t;

/* The decision: shrink (n_exclude > 0, exclude ascending) or init (id). */
typedef struct fti_nccl_plan {
    int shared_gpu; /* two members on one GPU: no NCCL communicator (NCCL
                     * refuses it); device buffers go through host memory */
    int shrink;
    int n_exclude;
    int exclude[FTI_NCCL_ID_BYTES / sizeof(int)];
    unsigned char id[FTI_NCCL_ID_BYTES];
} fti_nccl_plan_t;

/* Runs the rendezvous of r (size > 1) for a member holding *mine; replica
 * rank 0 makes a new id with make_id(ctx, id) when a shrink is not
 * possible (or allow_shrink is 0).  Notes r->quorum_id (fti_slice_note). */
int fti_nccl_rendezvous(const fti_comm_rendezvous_t *r, const fti_nccl_member_t *mine,
                        int allow_shrink, int (*make_id)(void *ctx, unsigned char *id), void *ctx,
                        int64_t deadline_ms, fti_nccl_plan_t *plan_p);

/* The pure decision of replica rank 0 from the members' records m[0..size)
 * (tests): a shrink when every member holds the same communicator (token,
 * size), the new quorum is smaller, and the old ranks ascend with the
 * replica ranks; otherwise plan->shrink = 0. */
void fti_nccl_decide(const fti_nccl_member_t *m, int size, fti_nccl_plan_t *plan);

/* 1 when two of the size members name the same GPU (a known UUID): NCCL
 * refuses such a communicator ("Duplicate GPU detected"), issue 29 item 5.
 * Pure; the rendezvous' leader decides it for everyone (plan.shared_gpu). */
int fti_nccl_shared_gpu(const fti_nccl_member_t *m, int size);

/* A communicator's token after a full init from id in quorum q, or after a
 * shrink of token in quorum q. */
uint64_t fti_nccl_token(const unsigned char *id, uint64_t token, int64_t q);

/* The child's runner under a baby-nccl comm (tests: kill, pid); NULL if
 * comm is not baby-nccl. */
struct fti_baby;
struct fti_baby *fti_baby_nccl_runner(fti_comm_h comm);

#endif
