/* stage.c - a heal's staging memory (heal/stripe.h: struct heal_stage):
 * allocated for every registered buffer before the fetch, installed into
 * the registered memory once the copy is complete and verified. */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "heal/heal_int.h"
#include "heal/stripe.h"

void fti_heal_stage_free(struct heal_stage *stage, size_t n)
{
    for (size_t i = 0; stage != NULL && i < n; i++) {
        if (stage[i].direct)
            ; /* the registered memory */
        else if (stage[i].mapped)
            munmap(stage[i].data, stage[i].b->len);
        else
            free(stage[i].data);
        free(stage[i].chain);
    }
    free(stage);
}

/* Staging memory for s->b (none for an empty buffer; direct: its
 * registered memory, unless it has a mirror) and its piece records. */
static bool stage_one(struct heal_stage *s, bool direct)
{
    size_t len = s->b->len;
    s->n_pieces = (len + FTI_HEAL_SUM_BYTES - 1) / FTI_HEAL_SUM_BYTES;
    if (s->n_pieces > 0) {
        s->chain = calloc(s->n_pieces, sizeof(*s->chain) + sizeof(*s->ok));
        if (s->chain == NULL)
            return false;
        s->ok = (bool *)(s->chain + s->n_pieces);
    }
    if (direct && len > 0 && s->b->copy.copy_out == NULL) {
        s->data = s->b->user;
        s->direct = true;
    } else if (len >= HEAL_STAGE_MAP_BYTES) {
        void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED)
            return false;
        s->data = p;
        s->mapped = true;
    } else if (len > 0) {
        s->data = malloc(len);
    }
    return len == 0 || s->data != NULL;
}

int fti_heal_stage_alloc(struct fti_heal *h, bool direct, struct heal_stage **stage_p, size_t *n_p,
                         bool *was_open_p)
{
    pthread_mutex_lock(&h->mu);
    size_t n = h->n;
    struct heal_stage *stage = calloc(n ? n : 1, sizeof(*stage));
    uint64_t total = 0;
    bool ok = stage != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        stage[i].b = h->bufs[i];
        total += stage[i].b->len;
        ok = stage_one(&stage[i], direct);
    }
    *was_open_p = h->open;
    if (ok && direct) {
        h->open = false; /* the old state is about to change */
        h->gen++;
        h->served = 0;
    }
    pthread_mutex_unlock(&h->mu);
    if (!ok) {
        FTI_ERROR("heal: no memory to stage %zu buffers (%" PRIu64 " bytes so far): %m", n, total);
        fti_heal_stage_free(stage, n);
        return FT_ERR_NO_MEMORY;
    }
    *stage_p = stage;
    *n_p = n;
    return FT_SUCCESS;
}

int fti_heal_stage_install(struct fti_heal *h, const struct heal_stage *stage, size_t n)
{
    pthread_mutex_lock(&h->mu);
    h->open = false;
    h->gen++;
    h->served = 0;
    pthread_mutex_unlock(&h->mu);
    for (size_t i = 0; i < n; i++) {
        const struct heal_buf *b = stage[i].b;
        if (b->len == 0 || stage[i].direct)
            continue;
        if (b->copy.copy_in == NULL) {
            memcpy(b->user, stage[i].data, b->len);
            continue;
        }
        int rc = b->copy.copy_in(b->copy.ctx, b->user, stage[i].data, b->len);
        if (rc != FT_SUCCESS) {
            FTI_ERROR("heal: installing '%s' (%zu bytes) failed: %s; this rank's state is "
                      "partly overwritten",
                      b->name, b->len, FT_Error_string(rc));
            return rc;
        }
    }
    return FT_SUCCESS;
}
