/*
 * ckpt_format.h - the on-disk format of durable checkpoints (DESIGN section
 * 7) and its metadata file.  No MPI.
 *
 * A checkpoint of step N is a folder ROOT/step-<N>/ holding
 *   rank-<g>.bin   one file per group rank g of the group that wrote it: the
 *                  raw bytes of that rank's registered buffers, one after
 *                  the other in registration order (a replicated buffer
 *                  only in rank 0's file), no header, native byte order;
 *   checkpoint.meta  the metadata, a line-based text file (below).
 * It is written as ROOT/step-<N>.tmp-<id>/ and published by rename once
 * every file and the folder are fsynced: a folder named step-<N> without
 * ".tmp" is complete by construction; anything else is never loaded.
 *
 * checkpoint.meta, one record per line, fields separated by one space:
 *   ftmpi-checkpoint 1
 *   step <N>
 *   group_size <R>
 *   file <g> <bytes>                        R lines, g = 0..R-1
 *   buffer <name> <kind> <type> <elem> <global>
 *       kind: shard (a block of a global array per rank) or replicated;
 *       type: the element type's name (float, double, ..., byte);
 *       elem: element size in bytes; global: length in elements
 *   shard <g> <start> <end> <offset> <checksum>
 *       following its buffer line: elements [start, end) of the global
 *       array are at byte <offset> of rank-<g>.bin; checksum in hex
 *       (fti_ckpt_sum).  A replicated buffer has one shard, rank 0's.
 *   end <checksum>   fti_checksum64 of every byte before this line
 * Names are 1..FTI_CKPT_NAME_SIZE-1 characters of [A-Za-z0-9_.:+-].
 *
 * Why not parallel HDF5: its writes are collective MPI-IO calls, which
 * hang when a rank dies in the middle, in a path that must survive
 * failures; plain files per rank need no cooperation between writers, can
 * be fsynced and published by rename, and are read with pread by any
 * number of new ranks.  The price: no h5dump; ftmpi-ckpt shows and checks
 * them instead.
 */
#ifndef FTI_CKPT_FORMAT_H
#define FTI_CKPT_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define FTI_CKPT_META "checkpoint.meta"
#define FTI_CKPT_MAGIC "ftmpi-checkpoint 1"
#define FTI_CKPT_NAME_SIZE 64
#define FTI_CKPT_TYPE_SIZE 16
/* shard checksums are fti_checksum64 chained over blocks of this size */
#define FTI_CKPT_SUM_BLOCK ((size_t)1 << 20)

enum fti_ckpt_kind { FTI_CKPT_REPLICATED = 0, FTI_CKPT_SHARD = 1 };

typedef struct fti_ckpt_shard {
    int rank;        /* file rank-<rank>.bin */
    int64_t start;   /* elements [start, end) of the global array */
    int64_t end;
    uint64_t offset; /* byte offset in the file */
    uint64_t sum;    /* fti_ckpt_sum of the (end - start) * elem bytes */
} fti_ckpt_shard_t;

typedef struct fti_ckpt_buf {
    char name[FTI_CKPT_NAME_SIZE];
    int kind; /* enum fti_ckpt_kind */
    char type[FTI_CKPT_TYPE_SIZE];
    size_t elem;
    int64_t global;
    size_t n_shards;
    fti_ckpt_shard_t *shards; /* sorted by start, covering [0, global) */
} fti_ckpt_buf_t;

typedef struct fti_ckpt_meta {
    int64_t step;
    int group_size;
    uint64_t *file_bytes; /* group_size entries */
    size_t n_bufs;
    fti_ckpt_buf_t *bufs;
} fti_ckpt_meta_t;

/* The checksum of a shard: fti_checksum64 chained over FTI_CKPT_SUM_BLOCK
 * blocks (seed 0, each block's sum the next one's seed), so it can be
 * computed while streaming.  fti_ckpt_sum_update continues a sum over the
 * next block-aligned piece (len a multiple of the block, or the last). */
uint64_t fti_ckpt_sum(const void *buf, size_t len);
uint64_t fti_ckpt_sum_update(uint64_t sum, const void *buf, size_t len);

/* Whether name may be stored (see above). */
bool fti_ckpt_name_ok(const char *name);

/* Writes meta as text into a malloc'ed string (free with free()).
 * FT_ERR_NO_MEMORY. */
int fti_ckpt_meta_format(const fti_ckpt_meta_t *m, char **text_p, size_t *len_p);

/* Parses and checks the text (magic, end checksum, every buffer covered
 * exactly by its shards, shards inside their files).  On failure a
 * message into err (errlen) and FT_ERR_BAD_MESSAGE / FT_ERR_NO_MEMORY;
 * on success *m is filled (release with fti_ckpt_meta_free). */
int fti_ckpt_meta_parse(const char *text, size_t len, fti_ckpt_meta_t *m, char *err, size_t errlen);

/* Frees what fti_ckpt_meta_parse (or a caller building one with malloc)
 * put into m; m itself is not freed; NULL-safe members. */
void fti_ckpt_meta_free(fti_ckpt_meta_t *m);

/* The buffer named name, or NULL. */
const fti_ckpt_buf_t *fti_ckpt_meta_find(const fti_ckpt_meta_t *m, const char *name);

/* Total bytes of a checkpoint's files. */
uint64_t fti_ckpt_meta_bytes(const fti_ckpt_meta_t *m);

#endif
