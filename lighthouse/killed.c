/* killed.c - group incarnations killed by an operator (see killed.h). */
#include "lighthouse/killed.h"

#include <string.h>

#include "base/util.h"

static long find(const fti_lh_killed_t *k, const char *id)
{
    for (size_t i = 0; i < k->n; i++)
        if (strcmp(k->e[i].id, id) == 0)
            return (long)i;
    return -1;
}

static void del_at(fti_lh_killed_t *k, size_t i)
{
    memmove(&k->e[i], &k->e[i + 1], (k->n - i - 1) * sizeof(k->e[0]));
    k->n--;
}

void fti_lh_killed_add(fti_lh_killed_t *k, const char *id, uint64_t incarnation)
{
    long at = find(k, id);
    if (at >= 0)
        del_at(k, (size_t)at);
    if (k->n == FTI_LH_KILLED_MAX)
        del_at(k, 0);
    fti_strlcpy(k->e[k->n].id, id, sizeof(k->e[k->n].id));
    k->e[k->n].incarnation = incarnation;
    k->n++;
}

fti_lh_killed_check_t fti_lh_killed_check(fti_lh_killed_t *k, const char *id,
                                          uint64_t incarnation)
{
    long at = id ? find(k, id) : -1;
    if (at < 0)
        return FTI_LH_KILLED_NO;
    if (incarnation == k->e[at].incarnation || incarnation == 0)
        return FTI_LH_KILLED_YES;
    del_at(k, (size_t)at);
    return FTI_LH_KILLED_REJOINED;
}

bool fti_lh_killed_has(const fti_lh_killed_t *k, const char *id)
{
    return find(k, id) >= 0;
}
