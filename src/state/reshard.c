/* reshard.c - the reshard planner (see reshard.h). */
#include "state/reshard.h"

#include <stdlib.h>

#include "ftmpi_errors.h"

int fti_reshard_plan(const fti_ckpt_buf_t *buf, int64_t start, int64_t count,
                     fti_reshard_piece_t **pieces_p, size_t *n_p)
{
    if (buf == NULL || pieces_p == NULL || n_p == NULL || start < 0 || count < 0 ||
        count > buf->global || start > buf->global - count)
        return FT_ERR_ARG;
    int64_t end = start + count;
    size_t n = 0;
    if (count == 0) {
        *pieces_p = NULL;
        *n_p = 0;
        return FT_SUCCESS;
    }
    for (size_t i = 0; i < buf->n_shards; i++)
        if (buf->shards[i].start < end && buf->shards[i].end > start &&
            buf->shards[i].end > buf->shards[i].start)
            n++;
    fti_reshard_piece_t *p = NULL;
    if (n > 0 && (p = malloc(n * sizeof(*p))) == NULL)
        return FT_ERR_NO_MEMORY;
    size_t k = 0;
    for (size_t i = 0; i < buf->n_shards && k < n; i++) {
        const fti_ckpt_shard_t *s = &buf->shards[i];
        if (!(s->start < end && s->end > start && s->end > s->start))
            continue;
        int64_t lo = s->start > start ? s->start : start;
        int64_t hi = s->end < end ? s->end : end;
        p[k].shard = i;
        p[k].rank = s->rank;
        p[k].file_offset = s->offset + (uint64_t)(lo - s->start) * buf->elem;
        p[k].length = (uint64_t)(hi - lo) * buf->elem;
        p[k].dst_offset = (uint64_t)(lo - start) * buf->elem;
        k++;
    }
    *pieces_p = p;
    *n_p = n;
    return FT_SUCCESS;
}
