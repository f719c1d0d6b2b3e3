/*
 * state/ckpt_step.h - the step's side of durable checkpoints (DESIGN section 7): which
 * group writes, when, the group's agreement that every rank wrote before
 * group rank 0 publishes, and loading at a fresh start.  The files, the
 * format and the writer thread are src/state/ (no MPI).
 *
 * Writing (fti_ckpt_after_commit, after every commit and in FT_Checkpoint):
 * when a checkpoint is due and this group is the quorum's replica rank 0,
 * every rank copies its registered buffers into memory and hands them to
 * its writer thread (step-<N>.tmp-<replica id>-<nonce>/rank-<g>.bin).  In
 * each later call, while that checkpoint is pending, the group runs one
 * round (a gather of each rank's write state to group rank 0 and a
 * broadcast of rank 0's decision, both with deadlines): once every rank
 * wrote, rank 0's writer publishes the folder (metadata, fsync, rename)
 * and prunes; when a rank's write failed the folder is removed.  A new
 * checkpoint that falls due while one is pending is skipped (counted).
 * Every rank of the group makes the same sequence of rounds: whether a
 * round runs depends only on the step, the quorum and rank 0's decisions.
 *
 * Loading (fti_ckpt_load_at_start, in FT_Quorum when the quorum's max step
 * is 0 and this rank is at step 0, once per process): every rank stages
 * its part of the newest complete checkpoint (resharding when the group
 * size differs), the group agrees that every rank staged the same step,
 * and only then does every rank copy it into its buffers.
 *
 * Threads: the application thread makes every call (as the FT_ calls).
 */
#ifndef FTI_CKPT_H
#define FTI_CKPT_H

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>

#include "obs/event_log.h"
#include "ftmpi.h"
#include "group.h"
#include "heal/heal.h"
#include "base/settings.h"

typedef struct fti_ckpt *fti_ckpt_h;

/* Release with fti_ckpt_destroy (waits for the writer's queued jobs). */
int fti_ckpt_create(const fti_config_t *cfg, fti_group_h g, const char *replica_id,
                    fti_event_log_h elog, fti_ckpt_h *c_p);
void fti_ckpt_destroy(fti_ckpt_h c);

/* FT_State_register's part: a replicated buffer (healing registers it). */
int fti_ckpt_register_replicated(fti_ckpt_h c, const char *name, void *buf, size_t bytes);

/* FT_State_register_shard: checks the range, registers the block with
 * healing (heal) and with checkpoints. */
int fti_ckpt_register_shard(fti_ckpt_h c, fti_heal_h heal, const char *name, void *buf,
                            MPI_Datatype dt, int64_t global_count, int64_t offset, int64_t count);

/* After a committed step (the step count is now `step`): the pending
 * checkpoint's round and, when due (every FTMPI_CKPT_EVERY steps, or
 * forced by FT_Checkpoint) and writer (replica rank 0), a new one. */
int fti_ckpt_after_commit(fti_ckpt_h c, int64_t step, bool writer, bool forced);

/* FT_Finalize: waits for this rank's write and runs the last round, so
 * the last checkpoint is published. */
void fti_ckpt_finish(fti_ckpt_h c);

/* FT_Quorum: loads when max_step and step are 0 (see above).  FT_SUCCESS
 * with *step_p = the loaded step; FT_ERR_NOT_FOUND when nothing was
 * loaded (the buffers are untouched). */
int fti_ckpt_load_at_start(fti_ckpt_h c, int64_t max_step, int64_t step, int64_t *step_p);

void fti_ckpt_stats(fti_ckpt_h c, ftmpi_checkpoint_stats_t *s);

#endif
