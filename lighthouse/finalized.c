/* finalized.c - the lighthouse's list of groups that finalized (server_int.h,
 * under lh->mu): sorted for binary search, the oldest evicted first. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/util.h"
#include "lighthouse/server_int.h"

struct fin_entry {
    char id[FTI_QID_MAX];
    uint64_t seq; /* order of the finalize: the lowest is evicted first */
};

static const char *fin_key(const void *finalized, size_t i)
{
    return ((const struct fin_entry *)finalized)[i].id;
}

static size_t fin_search(const struct fti_lighthouse *lh, const char *id, bool *found)
{
    return fti_bsearch_str(lh->finalized, lh->n_finalized, fin_key, id, found);
}

bool fti_lh_fin_has(const struct fti_lighthouse *lh, const char *id)
{
    bool found;
    (void)fin_search(lh, id, &found);
    return found;
}

static void fin_del_at(struct fti_lighthouse *lh, size_t at)
{
    memmove(&lh->finalized[at], &lh->finalized[at + 1],
            (lh->n_finalized - at - 1) * sizeof(*lh->finalized));
    lh->n_finalized--;
}

/* Forgets the oldest finalize (O(n), only when the list is full). */
static void fin_evict_oldest(struct fti_lighthouse *lh)
{
    size_t old = 0;
    for (size_t i = 1; i < lh->n_finalized; i++)
        if (lh->finalized[i].seq < lh->finalized[old].seq)
            old = i;
    FTI_DEBUG("finalized ids: %zu kept at most, forgetting %s", lh->opts.max_finalized,
              lh->finalized[old].id);
    fin_del_at(lh, old);
}

int fti_lh_fin_add(struct fti_lighthouse *lh, const char *id)
{
    bool found;
    size_t at = fin_search(lh, id, &found);
    if (found)
        return FT_SUCCESS;
    if (lh->n_finalized >= lh->opts.max_finalized) {
        fin_evict_oldest(lh);
        at = fin_search(lh, id, &found);
    }
    if (lh->n_finalized == lh->cap_finalized) {
        size_t cap = lh->cap_finalized ? 2 * lh->cap_finalized : 16;
        struct fin_entry *f = realloc(lh->finalized, cap * sizeof(*f));
        if (f == NULL)
            return FT_ERR_NO_MEMORY;
        lh->finalized = f;
        lh->cap_finalized = cap;
    }
    memmove(&lh->finalized[at + 1], &lh->finalized[at],
            (lh->n_finalized - at) * sizeof(*lh->finalized));
    fti_strlcpy(lh->finalized[at].id, id, FTI_QID_MAX);
    lh->finalized[at].seq = lh->fin_seq++;
    lh->n_finalized++;
    return FT_SUCCESS;
}

bool fti_lh_fin_job_done(struct fti_lighthouse *lh)
{
    if (lh->opts.exit_when_finalized == 0)
        return false;
    pthread_mutex_lock(&lh->mu);
    size_t fin = lh->n_finalized, left = fti_quorum_n_groups(lh->st);
    pthread_mutex_unlock(&lh->mu);
    if (fin < lh->opts.exit_when_finalized || left > 0)
        return false;
    FTI_INFO("%zu groups finalized and none is left: the job is over (--exit-when-finalized %zu)",
             fin, lh->opts.exit_when_finalized);
    return true;
}

void fti_lh_fin_del(struct fti_lighthouse *lh, const char *id)
{
    bool found;
    size_t at = fin_search(lh, id, &found);
    if (found)
        fin_del_at(lh, at);
}
