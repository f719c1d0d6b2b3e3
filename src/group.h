/*
 * group.h - operations inside one replica group, on the group's own MPI
 * communicator (DESIGN section 4): gather and broadcast of bytes to and
 * from group rank 0, and the AND of the ranks' commit votes.
 *
 * After creation nothing here blocks in MPI: every operation is made of
 * non-blocking calls polled against a deadline.  Gather and broadcast are
 * point-to-point messages whose tag carries a sequence number, so a message
 * that arrives after its receiver gave up can never be taken for a later
 * operation's.  The AND is an MPI_Iallreduce; every rank issues exactly one
 * per fti_group_and, so the collectives of the ranks stay matched even when
 * one rank gave up on an earlier one.  Requests given up at a deadline are
 * abandoned, not freed: their buffers stay alive until MPI completes them
 * (reaped at every later operation, leaked at destroy if still pending).
 *
 * Every rank of the group must make the same sequence of fti_group_*
 * calls, whatever their outcome on other ranks (the sequence numbers and
 * the collectives' order depend on it).
 *
 * Which communicator is the group lives in one place (fti_group_create's
 * argument): mode A passes MPI_COMM_WORLD, mode B its split of it.
 *
 * Threads: only the thread that makes the FT_ calls uses a group.
 */
#ifndef FTI_GROUP_H
#define FTI_GROUP_H

#include <mpi.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fti_group *fti_group_h;

/* Duplicates `parent` as the group communicator (a blocking collective
 * over parent: call it at init, when the group is whole).  Release with
 * fti_group_destroy. */
int fti_group_create(MPI_Comm parent, fti_group_h *g_p);
/* Frees the communicator (MPI must still be initialised) and the group;
 * buffers of requests MPI still holds are leaked on purpose.  After
 * fti_group_mark_lost the communicator is left to MPI instead. */
void fti_group_destroy(fti_group_h g);

/* The group lost a rank (mode B): no MPI call on its communicator from now
 * on, not even MPI_Comm_free at destroy. */
void fti_group_mark_lost(fti_group_h g);

int fti_group_rank(fti_group_h g);
int fti_group_size(fti_group_h g);
MPI_Comm fti_group_comm(fti_group_h g);

/* Every rank contributes len bytes at in; group rank 0 receives them in
 * rank order into out (size * len bytes; ignored elsewhere).  Non-root
 * ranks only post their send and return.  FT_ERR_TIMEOUT when the root
 * did not hear from every rank before deadline_ms. */
int fti_group_gather(fti_group_h g, const void *in, size_t len, void *out, int64_t deadline_ms);

/* Group rank 0 sends (status, len bytes at buf) to every rank; the others
 * receive them before deadline_ms.  On success every rank gets *status_p
 * and, when len > 0, a malloc'ed copy in *buf_p (free with free(); NULL
 * when len == 0) of *len_p bytes.  The root does not wait for delivery. */
int fti_group_bcast(fti_group_h g, int status, const void *buf, size_t len, int *status_p,
                    void **buf_p, size_t *len_p, int64_t deadline_ms);

/* *all_p = AND of every rank's vote (0 or 1), before deadline_ms. */
int fti_group_and(fti_group_h g, int vote, int *all_p, int64_t deadline_ms);

#endif
