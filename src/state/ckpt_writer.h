/*
 * ckpt_writer.h - the background thread that writes checkpoints, so that
 * the step only pays for copying the state into memory.  No MPI.
 *
 * Jobs run one at a time in the order given: write this rank's file (at
 * most one in flight: its caller polls it), publish a folder (group rank
 * 0, after every rank's write succeeded), abandon (remove) a folder.  A
 * failure is logged once, here, with the file and the system error, and
 * counted; the published checkpoints are never touched by a failed job.
 *
 * Threads: every call is made by one application thread at a time; the
 * writer's own thread only runs the jobs.  The data given to
 * fti_ckpt_writer_write must stay untouched until its state is DONE.
 */
#ifndef FTI_CKPT_WRITER_H
#define FTI_CKPT_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "base/auth.h"
#include "state/ckpt_format.h"

typedef struct fti_ckpt_writer *fti_ckpt_writer_h;

enum fti_write_state { FTI_WRITE_NONE, FTI_WRITE_BUSY, FTI_WRITE_DONE };

typedef struct fti_ckpt_writer_stats {
    uint64_t files_written; /* rank files written and fsynced */
    uint64_t published;     /* checkpoints published (group rank 0) */
    uint64_t failed;        /* failed jobs (writes and publishes) */
    uint64_t bytes;         /* bytes of the rank files written */
    int64_t last_published; /* step, -1 none */
    int64_t last_write_us;  /* time of the last rank file (write, sums, fsyncs) */
    int last_error;         /* FT_ERR_* of the last failure, 0 none */
} fti_ckpt_writer_stats_t;

/* Starts the thread; published metadata carries a MAC under key (the
 * job's, copied; NULL: none).  Release with fti_ckpt_writer_destroy. */
int fti_ckpt_writer_create(const fti_auth_key_t *key, fti_ckpt_writer_h *w_p);
/* Runs the queued jobs to their end, stops the thread, frees.  NULL-safe. */
void fti_ckpt_writer_destroy(fti_ckpt_writer_h w);

/* Queues the write of DIR/rank-<rank>.bin from data (len bytes), and the
 * checksums (fti_ckpt_sum) of its n regions [off[i], off[i] + len[i]).
 * FT_ERR_STATE while a write is in flight or not yet collected. */
int fti_ckpt_writer_write(fti_ckpt_writer_h w, const char *dir, int rank, const void *data,
                          size_t len, const size_t *reg_off, const size_t *reg_len, size_t n);

/* The state of the write; at DONE *rc_p gets its outcome and sums (n
 * entries, when not NULL) the regions' checksums.  fti_ckpt_writer_collect
 * then returns the writer to NONE. */
int fti_ckpt_writer_write_state(fti_ckpt_writer_h w, int *rc_p, uint64_t *sums, size_t n);
void fti_ckpt_writer_collect(fti_ckpt_writer_h w);

/* Queues publishing DIR as ROOT/step-<m->step> (fti_ckpt_publish) and then
 * pruning to `keep`.  Takes m over (freed by the writer, also on error). */
int fti_ckpt_writer_publish(fti_ckpt_writer_h w, const char *root, const char *dir,
                            fti_ckpt_meta_t *m, int keep);

/* Queues removing DIR (a checkpoint that will not be published). */
int fti_ckpt_writer_abandon(fti_ckpt_writer_h w, const char *dir);

/* Blocks until every queued job has run. */
void fti_ckpt_writer_wait_idle(fti_ckpt_writer_h w);

void fti_ckpt_writer_stats(fti_ckpt_writer_h w, fti_ckpt_writer_stats_t *s);

#endif
