/*
 * reshard.h - which bytes of an old checkpoint a new shard reads: a pure
 * function of the old shards' ranges and the new shard's range.  No I/O.
 */
#ifndef FTI_RESHARD_H
#define FTI_RESHARD_H

#include <stddef.h>
#include <stdint.h>

#include "state/ckpt_format.h"

typedef struct fti_reshard_piece {
    size_t shard;         /* index of the old shard in buf->shards */
    int rank;             /* its file: rank-<rank>.bin */
    uint64_t file_offset; /* bytes to read there ... */
    uint64_t length;      /* ... this many ... */
    uint64_t dst_offset;  /* ... into the new shard at this byte */
} fti_reshard_piece_t;

/* The pieces that fill elements [start, start + count) of buf's global
 * array, in increasing order: every old shard that overlaps the range
 * gives one piece (its overlap).  Old shards must be sorted, contiguous
 * and cover [0, global) (fti_ckpt_meta_parse checks it).  *pieces_p is
 * malloc'ed (free with free(); NULL when *n_p is 0).  FT_ERR_ARG when the
 * range is not inside [0, global), FT_ERR_NO_MEMORY. */
int fti_reshard_plan(const fti_ckpt_buf_t *buf, int64_t start, int64_t count,
                     fti_reshard_piece_t **pieces_p, size_t *n_p);

#endif
