/* liveness.c - failure detection by connection close (see liveness.h). */
#include "lighthouse/liveness.h"

#include <stdlib.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "base/sizes.h"
#include "base/util.h"

/* What the lighthouse knows of one group's connections. */
struct record {
    char id[FTI_REPLICA_ID_SIZE];
    uint64_t incarnation; /* the newest seen */
    size_t open;          /* open connections bound to that incarnation */
    bool declared;        /* a heartbeat named it */
    char peer[FTI_ADDRESS_SIZE]; /* the address of its first connection */
    uint64_t refused;     /* the last incarnation refused while it held the group */
};

struct fti_live_bind {
    char id[FTI_REPLICA_ID_SIZE];
    uint64_t incarnation;
};

struct fti_liveness {
    struct record *recs; /* sorted by id */
    size_t n, cap;
};

static const char *rec_key(const void *recs, size_t i)
{
    return ((const struct record *)recs)[i].id;
}

int fti_liveness_create(fti_liveness_h *lv_p)
{
    struct fti_liveness *lv = calloc(1, sizeof(*lv));
    if (lv == NULL)
        return FT_ERR_NO_MEMORY;
    *lv_p = lv;
    return FT_SUCCESS;
}

void fti_liveness_destroy(fti_liveness_h lv)
{
    if (lv == NULL)
        return;
    free(lv->recs);
    free(lv);
}

size_t fti_liveness_n_groups(fti_liveness_h lv)
{
    return lv->n;
}

/* The record of id, added (empty) if new; NULL on no memory. */
static struct record *rec_get(struct fti_liveness *lv, const char *id)
{
    bool found;
    size_t at = fti_bsearch_str(lv->recs, lv->n, rec_key, id, &found);
    if (found)
        return &lv->recs[at];
    if (lv->n == lv->cap) {
        size_t cap = lv->cap ? 2 * lv->cap : 16;
        struct record *r = realloc(lv->recs, cap * sizeof(*r));
        if (r == NULL)
            return NULL;
        lv->recs = r;
        lv->cap = cap;
    }
    memmove(&lv->recs[at + 1], &lv->recs[at], (lv->n - at) * sizeof(*lv->recs));
    lv->n++;
    memset(&lv->recs[at], 0, sizeof(lv->recs[at]));
    fti_strlcpy(lv->recs[at].id, id, sizeof(lv->recs[at].id));
    return &lv->recs[at];
}

bool fti_liveness_held(fti_liveness_h lv, const fti_live_bind_t *cur, const char *replica_id,
                       uint64_t incarnation, char *holder, size_t len, bool *first_p)
{
    if (cur != NULL || incarnation == 0 || replica_id == NULL)
        return false;
    bool found;
    size_t at = fti_bsearch_str(lv->recs, lv->n, rec_key, replica_id, &found);
    if (!found || lv->recs[at].open == 0 || lv->recs[at].incarnation == incarnation)
        return false;
    fti_strlcpy(holder, lv->recs[at].peer, len);
    *first_p = lv->recs[at].refused != incarnation;
    lv->recs[at].refused = incarnation;
    return true;
}

fti_live_bind_t *fti_liveness_bind(fti_liveness_h lv, fti_live_bind_t *cur,
                                   const char *replica_id, uint64_t incarnation, bool declare,
                                   const char *peer)
{
    if (cur) {
        if (declare && strcmp(cur->id, replica_id) == 0) {
            bool found;
            size_t at = fti_bsearch_str(lv->recs, lv->n, rec_key, cur->id, &found);
            if (found && lv->recs[at].incarnation == cur->incarnation)
                lv->recs[at].declared = true;
        }
        return cur;
    }
    if (incarnation == 0 || replica_id == NULL || strlen(replica_id) >= FTI_REPLICA_ID_SIZE)
        return NULL;
    fti_live_bind_t *b = calloc(1, sizeof(*b));
    struct record *r = b ? rec_get(lv, replica_id) : NULL;
    if (r == NULL) {
        free(b);
        return NULL;
    }
    if (r->incarnation != incarnation) { /* a new incarnation replaces the old */
        r->incarnation = incarnation;
        r->open = 0;
        r->declared = false;
        fti_strlcpy(r->peer, peer ? peer : "?", sizeof(r->peer));
    }
    r->open++;
    r->declared |= declare;
    fti_strlcpy(b->id, replica_id, sizeof(b->id));
    b->incarnation = incarnation;
    return b;
}

bool fti_liveness_unbind(fti_liveness_h lv, fti_live_bind_t *b, char *id, size_t len)
{
    bool found, dead = false;
    if (b == NULL)
        return false;
    size_t at = fti_bsearch_str(lv->recs, lv->n, rec_key, b->id, &found);
    if (found && lv->recs[at].incarnation == b->incarnation) {
        struct record *r = &lv->recs[at];
        if (r->open > 0)
            r->open--;
        if (r->open == 0) {
            dead = r->declared;
            memmove(r, r + 1, (lv->n - at - 1) * sizeof(*r));
            lv->n--;
        }
    }
    if (dead)
        fti_strlcpy(id, b->id, len);
    free(b);
    return dead;
}
