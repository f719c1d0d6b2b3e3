/*
 * group.h - operations inside one replica group, on the group's own MPI
 * communicator (DESIGN section 4): gather and broadcast of bytes to and
 * from group rank 0, and the group's decision on the ranks' commit votes.
 *
 * After creation nothing here blocks in MPI: every operation is made of
 * non-blocking calls polled against a deadline.  Gather and broadcast are
 * point-to-point messages whose tag carries a sequence number, so a message
 * that arrives after its receiver gave up can never be taken for a later
 * operation's.  The commit decision is a gather of the votes and a
 * broadcast of what group rank 0 decided (never an all-reduce, whose
 * outcome differs between a rank that gave up on it at its deadline and
 * one that completed it later).  Requests given up at a deadline are
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

/* Where the MPI's fault tolerance is on (comm/ulfm.h: fti_ulfm_active),
 * revokes the group's communicator: the other members' pending and later
 * operations on it fail at once instead of at their deadlines.  Else
 * nothing. */
void fti_group_revoke(fti_group_h g);

int fti_group_rank(fti_group_h g);
int fti_group_size(fti_group_h g);
MPI_Comm fti_group_comm(fti_group_h g);

/* Every rank contributes len bytes at in; group rank 0 receives them in
 * rank order into out (size * len bytes; ignored elsewhere).  Non-root
 * ranks only post their send and return.  out may be NULL at the root
 * (the contributions are then only waited for).  FT_ERR_TIMEOUT when the root
 * did not hear from every rank before deadline_ms. */
int fti_group_gather(fti_group_h g, const void *in, size_t len, void *out, int64_t deadline_ms);

/* Group rank 0 sends (status, len bytes at buf) to every rank; the others
 * receive them before deadline_ms.  On success every rank gets *status_p
 * and, when len > 0, a malloc'ed copy in *buf_p (free with free(); NULL
 * when len == 0) of *len_p bytes.  The root does not wait for delivery. */
int fti_group_bcast(fti_group_h g, int status, const void *buf, size_t len, int *status_p,
                    void **buf_p, size_t *len_p, int64_t deadline_ms);

/* The group's decision on the ranks' votes (FT_Commit), made by group
 * rank 0 alone and sent to every rank, so that no two ranks that learn it
 * can differ.  The rule:
 *  - every rank sends its vote (0 or 1) to rank 0 and never waits for that;
 *  - rank 0 waits for the votes until vote_deadline_ms.  Its decision is
 *    FT_SUCCESS (commit) when every vote arrived in time and all are 1;
 *    otherwise FT_ERR_TIMEOUT (a vote missed the deadline: the step is not
 *    committed, also by the late rank whenever it arrives), FT_ERR_ABORTED
 *    (a rank voted 0) or rank 0's local error.  Rank 0 sends it to every
 *    rank (without waiting for delivery) and returns FT_SUCCESS;
 *  - every other rank waits for the decision until decision_deadline_ms
 *    (FT_Commit: twice the vote window after its own entry, so rank 0 may
 *    enter up to one window later than this rank).  FT_SUCCESS with
 *    *decision_p = rank 0's decision; FT_ERR_TIMEOUT when it did not come:
 *    this rank cannot know what rank 0 decided (it may have committed with
 *    this rank's vote), so the caller must not commit and must treat the
 *    group as lost.
 * decision_deadline_ms bounds nothing on rank 0.  Out of memory on rank 0
 * is its decision (FT_ERR_NO_MEMORY: no commit).
 * Where the MPI's fault tolerance is on (fti_ulfm_active) and the group has
 * more than one rank, the decision is one MPIX_Comm_iagree of the votes
 * instead, polled until decision_deadline_ms on every rank: FT_SUCCESS with
 * FT_SUCCESS or FT_ERR_ABORTED, the same on every live member;
 * FT_ERR_PROC_FAILED when a member died; FT_ERR_TIMEOUT when one neither
 * voted nor is known dead (both: the group is lost). */
int fti_group_decide(fti_group_h g, int vote, int64_t vote_deadline_ms,
                     int64_t decision_deadline_ms, int *decision_p);

#endif
