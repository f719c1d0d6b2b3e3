/*
 * lighthouse/waiters.h - the lighthouse's deferred quorum calls, by replica
 * id: a hash of chains, answered when a quorum is issued (server.c).  Not
 * thread-safe: the server's loop thread only.  A waiter's call is owned by
 * the server (replied to or dropped there); these functions only link them.
 */
#ifndef FTI_LH_WAITERS_H
#define FTI_LH_WAITERS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/rpc.h"
#include "lighthouse/quorum.h"

struct waiter {
    fti_rpc_call_h call;
    bool compact;   /* wants its results, not the member list */
    bool init_sync; /* the results' step-0 rule (compact only) */
    bool want_ids;  /* compact: name the members too */
    uint64_t hash;
    uint64_t seq;        /* order of arrival */
    struct waiter *next; /* bucket chain */
    char replica_id[FTI_QID_MAX];
};

struct waiters {
    struct waiter **buckets;
    size_t mask;       /* buckets - 1, a power of two minus one */
    size_t n;          /* waiters */
    size_t n_ids;      /* distinct replica ids among them (= pending groups) */
    size_t n_prev_ids; /* ... of which members of the current quorum */
    uint64_t seq;      /* waiters added so far */
};

/* FT_ERR_NO_MEMORY when the first buckets cannot be had. */
int fti_lh_waiters_init(struct waiters *w);
void fti_lh_waiters_add(struct waiters *w, struct waiter *x);
/* Unlinks and returns the chain of replica_id's waiters (NULL: none). */
struct waiter *fti_lh_waiters_take(struct waiters *w, const char *replica_id);
bool fti_lh_waiters_has(const struct waiters *w, const char *replica_id);
/* How many waiters replica_id has; *oldest_p its first (NULL: none). */
size_t fti_lh_waiters_count(const struct waiters *w, const char *replica_id,
                            struct waiter **oldest_p);
void fti_lh_waiters_unlink(struct waiters *w, struct waiter *x);

#endif
