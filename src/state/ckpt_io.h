/*
 * ckpt_io.h - checkpoint files on disk (format in ckpt_format.h): writing a
 * rank's file, publishing a folder by rename, pruning, listing, verifying
 * and loading with resharding.  No MPI, no threads of its own (the writer
 * thread is ckpt_writer.h).
 *
 * Errors: each call returns an FT_ERR_* code and, on failure, one line in
 * err (errlen bytes) that names the file and the system error; the caller
 * logs it once.  FT_ERR_SYSTEM for a failed system call (ENOSPC, EIO...),
 * FT_ERR_CHECKSUM for a shard whose bytes do not match, FT_ERR_BAD_MESSAGE
 * for a bad metadata file, FT_ERR_NOT_FOUND when nothing can be loaded.
 */
#ifndef FTI_CKPT_IO_H
#define FTI_CKPT_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/auth.h"
#include "state/ckpt_format.h"

/* Creates the checkpoint root (mode 0700, no parent) when missing, and
 * refuses it (FT_ERR_ARG, err says why and how to fix it) unless it is a
 * folder of this user that neither its group nor others can write: who can
 * add entries there can plant links where checkpoint folders go, or forged
 * checkpoints. */
int fti_ckpt_root_prepare(const char *root, char *err, size_t errlen);

/* Creates dir (mode 0700, no parent); an existing one is fine when it is a
 * folder of this user, not a link (FT_ERR_ARG, with err, otherwise). */
int fti_ckpt_mkdir(const char *dir, char *err, size_t errlen);

/* Writes len bytes as DIR/rank-<rank>.bin (created or truncated), fsyncs
 * the file and then DIR. */
int fti_ckpt_write_rank(const char *dir, int rank, const void *data, size_t len, char *err,
                        size_t errlen);

/* The same, and sums[i] = fti_ckpt_sum of region i, [reg_off[i],
 * reg_off[i] + reg_len[i]) of data (n regions), each piece summed just
 * before it is written (one pass over memory instead of two when the
 * regions are in file order and disjoint, as state/ckpt_step.c lays them out).  The
 * writeback is started every 32 MB (sync_file_range), so the disk works
 * while the rest is copied.  sums are set only on success. */
int fti_ckpt_write_rank_sums(const char *dir, int rank, const void *data, size_t len,
                             const size_t *reg_off, const size_t *reg_len, size_t n,
                             uint64_t *sums, char *err, size_t errlen);

/* Writes m as DIR/checkpoint.meta (with a MAC line under key, the job's
 * key; none when key is NULL), fsyncs it and DIR, renames DIR to
 * ROOT/step-<m->step> and fsyncs ROOT.  FT_ERR_EXISTS (DIR removed) when
 * that step is already published. */
int fti_ckpt_publish(const char *root, const char *dir, const fti_ckpt_meta_t *m,
                     const fti_auth_key_t *key, char *err, size_t errlen);

/* Removes the files of dir and dir itself (one level; best effort),
 * through descriptors without following links (openat O_NOFOLLOW,
 * unlinkat): a link where the folder should be is reported and left. */
void fti_ckpt_remove_dir(const char *dir);

/* Keeps the newest `keep` published checkpoints of root (keep >= 1) and
 * removes older ones, and unfinished step-<N>.tmp-* folders with N at or
 * below the newest published step, never through a link (reported and
 * left alone), and nothing when root fails fti_ckpt_root_prepare's checks
 * (logged).  Returns how many were removed. */
int fti_ckpt_prune(const char *root, int keep);

/* The published steps of root, newest first (*steps_p malloc'ed, free with
 * free(); NULL when none).  FT_ERR_SYSTEM when root cannot be read. */
int fti_ckpt_list(const char *root, int64_t **steps_p, size_t *n_p, char *err, size_t errlen);

/* ROOT/step-<step> into path (size len). */
void fti_ckpt_step_dir(const char *root, int64_t step, char *path, size_t len);

/* Reads and parses DIR/checkpoint.meta (release with fti_ckpt_meta_free).
 * With key (the job's; NULL: none) the metadata must carry a MAC line that
 * checks under it (FT_ERR_AUTH otherwise); without, a MAC line is ignored. */
int fti_ckpt_meta_read(const char *dir, const fti_auth_key_t *key, fti_ckpt_meta_t *m, char *err,
                       size_t errlen);

/* Checks every file's size and every shard's checksum.  bytes_p (may be
 * NULL) gets the bytes read. */
int fti_ckpt_verify(const char *dir, const fti_ckpt_meta_t *m, uint64_t *bytes_p, char *err,
                    size_t errlen);

/* What a rank wants back: elements [start, start + count) of the buffer
 * `name` (for a replicated buffer: start 0, count = global = its bytes,
 * elem 1). */
typedef struct fti_ckpt_target {
    const char *name;
    int kind; /* enum fti_ckpt_kind; must match the checkpoint's */
    size_t elem;
    int64_t global;
    int64_t start, count;
} fti_ckpt_target_t;

/* A loaded checkpoint held in memory until it is installed. */
typedef struct fti_ckpt_staged {
    int64_t step;
    char dir[FTI_CKPT_NAME_SIZE * 4 + 256];
    size_t n;
    void **bufs;       /* n buffers of count * elem bytes, in target order */
    uint64_t bytes;    /* bytes read from files (resharding reads whole old shards) */
    int old_group_size;
} fti_ckpt_staged_t;

/* Reads the targets from the checkpoint in dir (a step-<N> folder; its
 * metadata read with key, as fti_ckpt_meta_read does), verifying the
 * checksum of every old shard it reads.  Release with
 * fti_ckpt_staged_free. */
int fti_ckpt_stage_dir(const char *dir, const fti_auth_key_t *key, const fti_ckpt_target_t *t,
                       size_t n, fti_ckpt_staged_t *s_p, char *err, size_t errlen);

/* A load (fti_ckpt_stage, fti_ckpt_stage_dir) that takes longer than this
 * many ms logs a progress line (step, folder, bytes, rate, time left) every
 * this many ms, at the default level; 5000 (a test sets it lower). */
extern int64_t fti_ckpt_progress_ms;

/* `where` is a root (its newest complete checkpoint that loads is taken;
 * one that fails is logged as a warning, with the file it names, and the
 * next older one tried) or a step folder (only that one).  FT_ERR_NOT_FOUND
 * when there is none; the last failure otherwise. */
int fti_ckpt_stage(const char *where, const fti_auth_key_t *key, const fti_ckpt_target_t *t,
                   size_t n, fti_ckpt_staged_t *s_p, char *err, size_t errlen);

/* Copies staged buffer i into dst (count * elem bytes of target i). */
void fti_ckpt_staged_copy(const fti_ckpt_staged_t *s, size_t i, void *dst, size_t len);
void fti_ckpt_staged_free(fti_ckpt_staged_t *s);

#endif
