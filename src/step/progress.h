/*
 * progress.h - asynchronous progress (DESIGN section 5): one library
 * thread per process runs the step's jobs (FT_Iallreduce's reductions, an
 * FT_QUORUM_ASYNC quorum) in the order they were submitted, while the
 * application computes.
 *
 * A job is a function and its argument in a struct the submitter owns
 * (struct fti_job, e.g. embedded in an FT_Request); it stays owned by the
 * submitter and must live until fti_progress_wait returned for it (or
 * fti_progress_drain did).  Jobs marked `abortable` (the collectives) share
 * the step's fate: once one of them failed, every later abortable job
 * completes at once with FT_ERR_ABORTED without running, until
 * fti_progress_reset (the next step).
 *
 * An engine made without a thread (threaded = false: the backend or the
 * quorum makes MPI calls and MPI did not grant MPI_THREAD_MULTIPLE, see
 * ft.c) runs each job inside fti_progress_submit, on the caller's thread:
 * the same results and order, no overlap.
 *
 * Threads: the submitting calls (submit, run_inline, wait, drain, reset,
 * failed, destroy) are made by one thread at a time, the one making the FT_
 * calls; the job functions run on the engine's thread, one at a time.
 */
#ifndef FTI_PROGRESS_H
#define FTI_PROGRESS_H

#include <stdbool.h>

typedef struct fti_progress *fti_progress_h;

struct fti_job {
    int (*fn)(void *arg); /* returns FT_SUCCESS or an FT_ERR_* code */
    void *arg;
    bool abortable;       /* a collective: skipped once the step failed */
    /* engine-owned from submit until wait/drain returns */
    int rc;
    bool done;
    struct fti_job *next;
};

/* Starts the engine (and its thread when threaded).  Release with
 * fti_progress_destroy. */
int fti_progress_create(bool threaded, fti_progress_h *p_p);

/* Runs every submitted job to its end, stops the thread, frees. NULL: no-op. */
void fti_progress_destroy(fti_progress_h p);

/* Whether the engine has a thread. */
bool fti_progress_threaded(fti_progress_h p);

/* Queues j (fn, arg, abortable set) behind every job submitted before;
 * without a thread runs it now.  Never fails. */
void fti_progress_submit(fti_progress_h p, struct fti_job *j);

/* Runs j on the calling thread when nothing is queued or running (the
 * caller is then the only user of what the jobs touch) and returns its
 * rc; otherwise submits it and waits.  The blocking FT_ calls use it: no
 * thread hand-off on their path. */
int fti_progress_run(fti_progress_h p, struct fti_job *j);

/* Waits until j (submitted to p) completed and returns its rc. */
int fti_progress_wait(fti_progress_h p, struct fti_job *j);

/* Waits until every submitted job completed. */
void fti_progress_drain(fti_progress_h p);

/* Whether a job is queued or running. */
bool fti_progress_busy(fti_progress_h p);

/* The first failure of an abortable job since the last reset, or FT_SUCCESS. */
int fti_progress_failed(fti_progress_h p);

/* A new step: abortable jobs run again.  Call with nothing in flight. */
void fti_progress_reset(fti_progress_h p);

#endif
