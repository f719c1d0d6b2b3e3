/* lighthouse/waiters.c - the deferred quorum calls (see waiters.h). */
#include "lighthouse/waiters.h"

#include <stdlib.h>
#include <string.h>

#include "ftmpi_errors.h"

static uint64_t id_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

int fti_lh_waiters_init(struct waiters *w)
{
    w->mask = 255;
    w->n = 0;
    w->buckets = calloc(w->mask + 1, sizeof(*w->buckets));
    return w->buckets ? FT_SUCCESS : FT_ERR_NO_MEMORY;
}

void fti_lh_waiters_grow(struct waiters *w)
{
    size_t nmask = w->mask * 2 + 1;
    struct waiter **nb = calloc(nmask + 1, sizeof(*nb));
    if (nb == NULL)
        return; /* keep the longer chains */
    for (size_t i = 0; i <= w->mask; i++) {
        struct waiter *x = w->buckets[i], *next;
        for (; x; x = next) {
            next = x->next;
            x->next = nb[x->hash & nmask];
            nb[x->hash & nmask] = x;
        }
    }
    free(w->buckets);
    w->buckets = nb;
    w->mask = nmask;
}

void fti_lh_waiters_add(struct waiters *w, struct waiter *x)
{
    if (w->n >= w->mask + 1)
        fti_lh_waiters_grow(w);
    x->hash = id_hash(x->replica_id);
    x->seq = w->seq++;
    x->next = w->buckets[x->hash & w->mask];
    w->buckets[x->hash & w->mask] = x;
    w->n++;
}

/* Unlinks every waiter of replica_id and returns them as a list. */
struct waiter *fti_lh_waiters_take(struct waiters *w, const char *replica_id)
{
    uint64_t h = id_hash(replica_id);
    struct waiter **pp = &w->buckets[h & w->mask], *out = NULL;
    while (*pp) {
        struct waiter *x = *pp;
        if (x->hash == h && strcmp(x->replica_id, replica_id) == 0) {
            *pp = x->next;
            x->next = out;
            out = x;
            w->n--;
        } else {
            pp = &x->next;
        }
    }
    return out;
}

bool fti_lh_waiters_has(const struct waiters *w, const char *replica_id)
{
    uint64_t h = id_hash(replica_id);
    for (const struct waiter *x = w->buckets[h & w->mask]; x; x = x->next)
        if (x->hash == h && strcmp(x->replica_id, replica_id) == 0)
            return true;
    return false;
}

/* Waiters of replica_id; *oldest_p gets the one added first (NULL if none). */
size_t fti_lh_waiters_count(const struct waiters *w, const char *replica_id,
                            struct waiter **oldest_p)
{
    uint64_t h = id_hash(replica_id);
    size_t n = 0;
    *oldest_p = NULL;
    for (struct waiter *x = w->buckets[h & w->mask]; x; x = x->next)
        if (x->hash == h && strcmp(x->replica_id, replica_id) == 0) {
            n++;
            if (*oldest_p == NULL || x->seq < (*oldest_p)->seq)
                *oldest_p = x;
        }
    return n;
}

/* Unlinks one waiter (in the table). */
void fti_lh_waiters_unlink(struct waiters *w, struct waiter *x)
{
    struct waiter **pp = &w->buckets[x->hash & w->mask];
    while (*pp && *pp != x)
        pp = &(*pp)->next;
    if (*pp) {
        *pp = x->next;
        w->n--;
    }
}

