/* heal/rma.c - healing over a one-sided transport (fti_heal_rma_t,
 * heal.h; DESIGN section 7.1): what a source hands out with its metadata
 * (its address, each buffer's remote key) and a healer's fetching of a
 * range with it.  The metadata, the checksums and every piece's check go
 * as over HEAL_FETCH (serve.c, source.c, verify.c). */
#include "heal/stripe.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi_config.h" /* FTMPI_TEST_HOOKS */
#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/util.h"

void fti_heal_set_rma(fti_heal_h h, const fti_heal_rma_t *rma)
{
    pthread_mutex_lock(&h->mu);
    h->rma = rma;
    pthread_mutex_unlock(&h->mu);
}

int fti_heal_rma_serve(struct fti_heal *h, Ftmpi__HealBuffer *hb, size_t n,
                       ProtobufCBinaryData *addr_p)
{
    void **bases = calloc(n ? n : 1, sizeof(*bases));
    size_t *lens = calloc(n ? n : 1, sizeof(*lens)), *rklens = calloc(n ? n : 1, sizeof(*rklens));
    const void **rkeys = calloc(n ? n : 1, sizeof(*rkeys));
    int rc = bases && lens && rklens && rkeys ? FT_SUCCESS : FT_ERR_NO_MEMORY;
    pthread_mutex_lock(&h->mu); /* entries never move: the first n are hb's */
    for (size_t i = 0; rc == FT_SUCCESS && i < n; i++) {
        bases[i] = h->bufs[i]->data;
        lens[i] = h->bufs[i]->len;
    }
    const fti_heal_rma_t *t = h->rma;
    pthread_mutex_unlock(&h->mu);
    const void *addr = NULL;
    size_t alen = 0;
    if (rc == FT_SUCCESS)
        rc = t->expose(bases, lens, n, &addr, &alen, rkeys, rklens);
    for (size_t i = 0; rc == FT_SUCCESS && i < n; i++) {
        hb[i].ucx_rkey.data = (uint8_t *)rkeys[i];
        hb[i].ucx_rkey.len = rkeys[i] != NULL ? rklens[i] : 0;
        hb[i].ucx_base = (uint64_t)(uintptr_t)bases[i];
    }
    if (rc == FT_SUCCESS) {
        addr_p->data = (uint8_t *)addr;
        addr_p->len = alen;
    }
    free(bases);
    free(lens);
    free(rklens);
    free(rkeys);
    return rc;
}

void fti_heal_rma_open(struct stripe *sp, struct stripe_src *w)
{
    const fti_heal_rma_t *t = sp->opts->rma;
    if (t == NULL)
        return;
    if (w->m->ucx_address.len == 0) {
        FTI_INFO("heal: %s serves no %s heal; fetching over tcp", w->addr, t->name);
        return;
    }
    for (size_t i = 0; i < w->m->n_buffers; i++) {
        const Ftmpi__HealBuffer *b = w->m->buffers[i];
        if (b->length > 0 && b->ucx_rkey.len == 0) {
            FTI_WARN("heal: %s sent no %s key for '%s'; fetching over tcp", w->addr, t->name,
                     b->name);
            return;
        }
    }
    if (t->connect(w->m->ucx_address.data, w->m->ucx_address.len, sp->deadline_ms, &w->rma) !=
        FT_SUCCESS) {
        w->rma = NULL;
        FTI_WARN("heal: no %s connection to %s; fetching over tcp", t->name, w->addr);
        return;
    }
    FTI_INFO("heal: fetching step %" PRId64 " from %s over %s (one-sided reads)", sp->step,
             w->addr, t->name);
}

/* Bytes per get: the frontier sums each while it is still in the cache. */
#define HEAL_RMA_STEP ((size_t)8 << 20)

int fti_heal_rma_fetch(struct stripe *sp, struct stripe_src *w, struct stripe_range *r,
                       void (*landed)(void *, size_t), void *arg)
{
    const struct heal_stage *s = &sp->stage[r->buf];
    const Ftmpi__HealBuffer *b = NULL;
    for (size_t i = 0; b == NULL && i < w->m->n_buffers; i++)
        if (strcmp(w->m->buffers[i]->name, s->b->name) == 0)
            b = w->m->buffers[i];
    if (b == NULL) /* fti_heal_check saw every buffer */
        return FT_ERR_INTERNAL;
    int rc = FT_SUCCESS;
    for (size_t done = 0; rc == FT_SUCCESS && done < r->len;) {
        size_t n = FTI_MIN(HEAL_RMA_STEP, r->len - done);
#ifdef FTMPI_TEST_HOOKS /* heal_int.h */
        if (sp->h->get_delay_ms > 0)
            fti_sleep_ms(sp->h->get_delay_ms);
#endif
        rc = sp->opts->rma->get(w->rma, b->ucx_rkey.data, b->ucx_rkey.len,
                                b->ucx_base + r->off + done, s->data + r->off + done, n,
                                sp->deadline_ms);
        if (rc == FT_SUCCESS) {
            done += n;
            landed(arg, done);
        }
    }
    if (rc != FT_SUCCESS)
        FTI_WARN("heal: fetching '%s' [%zu, +%zu) over %s from %s failed: %s; dropped as a "
                 "source",
                 s->b->name, r->off, r->len, sp->opts->rma->name, w->addr, FT_Error_string(rc));
    return rc;
}
