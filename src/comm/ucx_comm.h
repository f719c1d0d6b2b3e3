/*
 * ucx_comm.h - the ucx backend's communicator (private to src/comm/ucx*.c;
 * DESIGN section 5): one UCP worker per slice, an endpoint to every other
 * member the quorum named, tagged sends and receives that complete into
 * ucx_op slots, and the bounded wait that progresses the worker.
 *
 * Tags (64 bits): salt (24: the quorum's, from the job's key) | sender's
 * replica rank (12) | operation sequence (12) | message index (16), matched
 * with a full mask, so that a message of another quorum, sender or
 * operation is never taken for one of this one.
 * Threads: one thread at a time per communicator (comm.h); the worker is
 * UCS_THREAD_MODE_SERIALIZED, so that thread may change between calls.
 */
#ifndef FTI_UCX_COMM_H
#define FTI_UCX_COMM_H

#include <stddef.h>
#include <stdint.h>

#include "comm/comm.h"
#include "comm/ucx_lib.h"
#include "base/sizes.h"

#define FTI_UCX_MAX_SIZE 4096 /* members: the tag's 12 bits of rank */
#define FTI_UCX_MAX_MSGS 65536 /* messages of one operation: the tag's 16 bits */
#define FTI_UCX_WINDOW 4       /* the ring's receives (and sends) in flight */

/* One send or receive in flight. */
struct fti_ucx_op {
    void *req;           /* UCX's request while in flight, NULL once freed */
    int done;
    ucs_status_t status; /* when done */
    int peer;            /* replica rank sent to / received from */
    int is_recv;
    int seen;            /* done and looked at by ops_reap */
    int busy;            /* the slot is in use (fti_ucx_release frees it) */
    size_t want, got;    /* receive: the length posted, the length received */
};

struct fti_ucx_peer {
    struct fti_ucx_comm *c;
    int rank;
    ucp_ep_h ep;                  /* NULL for this rank */
    int failed;                   /* its endpoint or an operation on it failed */
    char label[FTI_ADDRESS_SIZE]; /* what names it in an error ("host pid N") */
};

struct fti_ucx_comm {
    struct fti_comm base;
    ucp_worker_h worker;
    int efd;                     /* the worker's event fd */
    struct fti_ucx_peer *peers;  /* size entries */
    struct fti_ucx_op *ops;      /* ops_cap slots */
    int ops_cap;                 /* max(2 * size, 2 * FTI_UCX_WINDOW) */
    int nops;                    /* slots 0..nops-1 may be busy */
    uint64_t salt;               /* tag bits 63..40 */
    uint32_t seq;                /* operations run so far */
    int dead;
    int failed;                  /* replica rank of the first failed peer, -1 none */
    int grace_ms;                /* how long an abort lets sends to live peers finish */
    size_t small_max;
    size_t chunk_bytes;          /* the ring's pipeline chunk */
    char *scratch;
    size_t scratch_cap;
};

/* The tag of message idx of operation seq sent by replica rank src. */
static inline uint64_t fti_ucx_tag(const struct fti_ucx_comm *c, int src, uint32_t seq,
                                   unsigned idx)
{
    return c->salt | (uint64_t)((unsigned)src & 0xfffu) << 28 | (uint64_t)(seq & 0xfffu) << 16 |
           (uint64_t)(idx & 0xffffu);
}

/* Posts a send of len bytes at buf to peer / a receive of exactly len
 * bytes from peer into buf, in a free slot (the caller keeps at most
 * ops_cap busy), which it returns.  A failure to post completes the slot
 * with its status. */
struct fti_ucx_op *fti_ucx_send(struct fti_ucx_comm *c, int peer, const void *buf, size_t len,
                                uint64_t tag);
struct fti_ucx_op *fti_ucx_recv(struct fti_ucx_comm *c, int peer, void *buf, size_t len,
                                uint64_t tag);

/* Progresses the worker until every busy slot completed, then frees
 * them (nops = 0).  Busy-polls the worker up to UCX_SPIN_POLLS times, then
 * sleeps on its event fd when nothing moves (waking at least every
 * FTI_UCX_POLL_MS for UCX's keepalive), never past
 * deadline_ms.  FT_ERR_PROC_FAILED when a peer's endpoint failed (the
 * error callback) or an operation on it did (c->failed names it),
 * FT_ERR_BAD_MESSAGE for a message of the wrong length, FT_ERR_TIMEOUT at
 * the deadline; on any error the communicator is dead (fti_ucx_abort ran).
 * Logged at debug level only (comm.h). */
#define FTI_UCX_POLL_MS 100
int fti_ucx_wait(struct fti_ucx_comm *c, int64_t deadline_ms);

/* fti_ucx_wait until head (a busy slot, or NULL) is done or any busy send
 * is: the pipelined ring's wait.  The slots stay busy (fti_ucx_release);
 * errors as fti_ucx_wait's. */
int fti_ucx_wait_some(struct fti_ucx_comm *c, const struct fti_ucx_op *head,
                      int64_t deadline_ms);

/* Frees the done slot op (its request freed by the wait that saw it). */
void fti_ucx_release(struct fti_ucx_comm *c, struct fti_ucx_op *op);

/* One round of progress without waiting (between pieces of a reduction,
 * so that the transfers in flight go on meanwhile). */
void fti_ucx_nudge(struct fti_ucx_comm *c);

/* Kills the communicator: cancels the receives, closes the failed peers'
 * endpoints (forced), lets the sends to live peers finish for up to
 * grace_ms, then closes every endpoint (forced, which ends their sends),
 * so that no buffer of the caller is touched after it returns.  The live
 * peers' endpoints stay open when their sends finished in time (closed by
 * fti_ucx_close).  Idempotent. */
void fti_ucx_abort(struct fti_ucx_comm *c, int64_t grace_ms);

/* fti_ucx_abort without grace, then closes every endpoint (destroy). */
void fti_ucx_close(struct fti_ucx_comm *c);

/* The endpoints' error callback (user data: the fti_ucx_peer). */
void fti_ucx_ep_error(void *arg, ucp_ep_h ep, ucs_status_t status);

#endif
