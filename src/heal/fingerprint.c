/* heal/fingerprint.c - the registered state's fingerprints for the SDC
 * check (see heal.h, fti_heal_fingerprint). */
#include "heal/heal.h"

#include <pthread.h>

#include "ftmpi_errors.h"
#include "heal/heal_int.h"
#include "base/util.h"

/* The heal checksum of b (HealBuffer.checksum): fti_heal_sum chained over
 * FTI_HEAL_SUM_BYTES pieces; an empty buffer's is the sum of nothing. */
static uint64_t buffer_sum(const struct heal_buf *b)
{
    uint64_t sum = 0;
    if (b->len == 0)
        return fti_heal_sum(b->data, 0, 0);
    for (size_t lo = 0; lo < b->len; lo += FTI_HEAL_SUM_BYTES)
        sum = fti_heal_sum(b->data + lo, FTI_MIN(FTI_HEAL_SUM_BYTES, b->len - lo), sum);
    return sum;
}

int fti_heal_fingerprint(fti_heal_h h, size_t max, uint64_t *sums, const char **names,
                         size_t *n_p)
{
    if (h == NULL || sums == NULL || n_p == NULL)
        return FT_ERR_ARG;
    /* device buffers: their mirrors hold the served step's bytes */
    int rc = fti_heal_refresh(h);
    if (rc != FT_SUCCESS)
        return rc;
    pthread_mutex_lock(&h->mu);
    size_t n = FTI_MIN(h->n, max);
    pthread_mutex_unlock(&h->mu);
    /* entries never move once registered, and the application does not
     * change them while the step is open */
    for (size_t i = 0; i < n; i++) {
        sums[i] = buffer_sum(h->bufs[i]);
        if (names)
            names[i] = h->bufs[i]->name;
    }
    *n_p = n;
    return FT_SUCCESS;
}
