/* quorum_members.c - the members and issued quorums (quorum_members.h):
 * copies, releases, look-up by replica id.  No state: the rules are
 * quorum.c. */
#include "lighthouse/quorum_members.h"

#include "ftmpi_errors.h"

#include <stdlib.h>
#include <string.h>

int fti_qmember_copy(fti_qmember_t *dst, const fti_qmember_t *src)
{
    *dst = *src;
    dst->data = NULL;
    dst->data_len = 0;
    if (src->data_len > 0) {
        dst->data = malloc(src->data_len);
        if (!dst->data)
            return FT_ERR_NO_MEMORY;
        memcpy(dst->data, src->data, src->data_len);
        dst->data_len = src->data_len;
    }
    return FT_SUCCESS;
}

void fti_qmember_clear(fti_qmember_t *m)
{
    if (!m)
        return;
    free(m->data);
    m->data = NULL;
    m->data_len = 0;
}

void fti_qmembers_free(fti_qmember_t *members, size_t n)
{
    if (!members)
        return;
    for (size_t i = 0; i < n; i++)
        fti_qmember_clear(&members[i]);
    free(members);
}

void fti_quorum_free(fti_quorum_t *q)
{
    if (!q)
        return;
    fti_qmembers_free(q->members, q->n_members);
    free(q);
}

long fti_quorum_member_index(const fti_quorum_t *q, const char *replica_id)
{
    if (!q || !replica_id)
        return -1;
    size_t lo = 0, hi = q->n_members;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(q->members[mid].replica_id, replica_id);
        if (c == 0)
            return (long)mid;
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return -1;
}

/* Deep copy of n members; NULL on allocation failure. */
fti_qmember_t *fti_qmembers_dup(const fti_qmember_t *src, size_t n)
{
    fti_qmember_t *out = calloc(n ? n : 1, sizeof(*out));
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        if (fti_qmember_copy(&out[i], &src[i]) != FT_SUCCESS) {
            fti_qmembers_free(out, i);
            return NULL;
        }
    }
    return out;
}
