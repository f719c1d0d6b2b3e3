/*
 * bench_ckpt - durable checkpoints through libfti_state (no MPI):
 *
 *  write:  a group of R ranks' files (MBYTES in all) written by the writer
 *          thread with fsyncs (one file after the other, as plain does),
 *          the checksums, the metadata and the publish by rename,
 *          against plain write + fsync of the same bytes into the same
 *          folder; the ratio is checkpoint MB/s / plain MB/s (best of REPS).
 *  step:   STEPS steps of a fixed compute (a pass over a work buffer) with
 *          (a) nothing, (b) one memcpy of the registered bytes, (c) an async
 *          checkpoint every step as ckpt.c makes it (copy into the
 *          snapshot, hand it to the writer; skipped while the writer is
 *          busy): the extra time of a step that takes a checkpoint, its
 *          ratio to (b), and the mean extra time over all steps.
 *  load:   every rank of a group loads its block of the checkpoint written
 *          by R = 4 ranks: 4 ranks (no resharding) against 3 (resharding:
 *          each old shard a new rank overlaps is read whole, for its
 *          checksum); the total time of all ranks' loads, one after the
 *          other (warm page cache).
 *
 * Usage: bench_ckpt DIR [MBYTES [STEPS]]   (defaults 256 MB, 50 steps)
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftmpi_errors.h"
#include "state/ckpt_io.h"
#include "state/ckpt_writer.h"
#include "util.h"

#define R 4
#define REPS 3

static size_t total;
static char *state;

static void part(int g, int r, int64_t n, int64_t *lo, int64_t *hi)
{
    *lo = n * g / r;
    *hi = n * (g + 1) / r;
}

/* Saves `state` as step `step` written by R ranks, one file after the
 * other (as plain() writes them); microseconds. */
static int64_t save(const char *root, int64_t step)
{
    fti_ckpt_writer_h w;
    char dir[1024];
    int64_t n = (int64_t)(total / 8), t0 = fti_now_us();
    snprintf(dir, sizeof(dir), "%s/step-%" PRId64 ".tmp-bench", root, step);
    fti_ckpt_meta_t m = {step, R, calloc(R, sizeof(uint64_t)), 1, calloc(1, sizeof(fti_ckpt_buf_t))};
    m.bufs[0] = (fti_ckpt_buf_t){"w", FTI_CKPT_SHARD, "double", 8, n, R,
                                 calloc(R, sizeof(fti_ckpt_shard_t))};
    fti_ckpt_writer_create(&w);
    for (int g = 0; g < R; g++) {
        int64_t lo, hi;
        int rc = -1;
        part(g, R, n, &lo, &hi);
        size_t off = 0, len = (size_t)(hi - lo) * 8;
        fti_ckpt_writer_write(w, dir, g, state + lo * 8, len, &off, &len, 1);
        fti_ckpt_writer_wait_idle(w);
        m.bufs[0].shards[g] = (fti_ckpt_shard_t){g, lo, hi, 0, 0};
        m.file_bytes[g] = len;
        fti_ckpt_writer_write_state(w, &rc, &m.bufs[0].shards[g].sum, 1);
        fti_ckpt_writer_collect(w);
        if (rc != FT_SUCCESS)
            fprintf(stderr, "bench_ckpt: write failed\n");
    }
    fti_ckpt_writer_publish(w, root, dir, &m, 2);
    fti_ckpt_writer_wait_idle(w);
    fti_ckpt_writer_destroy(w);
    return fti_now_us() - t0;
}

/* The same bytes with plain write + fsync, R files at once (one each). */
static int64_t plain(const char *root)
{
    char dir[1024], path[1100], err[256];
    int64_t n = (int64_t)(total / 8), t0 = fti_now_us();
    snprintf(dir, sizeof(dir), "%s/plain", root);
    fti_ckpt_mkdir(dir, err, sizeof(err));
    /* R threads would be fairer; one file per rank, one after the other,
     * is what a single writer does too */
    for (int g = 0; g < R; g++) {
        int64_t lo, hi;
        part(g, R, n, &lo, &hi);
        snprintf(path, sizeof(path), "%s/f%d", dir, g);
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        size_t len = (size_t)(hi - lo) * 8, at = 0;
        while (fd >= 0 && at < len) {
            ssize_t k = write(fd, state + lo * 8 + at, len - at);
            if (k <= 0)
                break;
            at += (size_t)k;
        }
        if (fd >= 0) {
            fsync(fd);
            close(fd);
        }
    }
    int64_t us = fti_now_us() - t0;
    fti_ckpt_remove_dir(dir);
    return us;
}

static double mbps(int64_t us)
{
    return (double)total / 1e6 / ((double)us / 1e6);
}

static void bench_write(const char *root)
{
    int64_t best_c = INT64_MAX, best_p = INT64_MAX;
    for (int i = 0; i < REPS; i++) {
        int64_t p = plain(root), c = save(root, 1000 + i);
        best_p = FTI_MIN(best_p, p);
        best_c = FTI_MIN(best_c, c);
    }
    printf("write  %zu MB by %d ranks: checkpoint %.0f MB/s, plain write+fsync %.0f MB/s, "
           "ratio %.2f\n", total >> 20, R, mbps(best_c), mbps(best_p),
           (double)best_p / (double)best_c);
}

static volatile double sink;

static void compute(const double *work, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += work[i] * 1.0000001;
    sink = s;
}

static void bench_step(const char *root, int steps)
{
    size_t wn = total / 8; /* compute touches as many bytes as the state holds */
    double *work = calloc(wn, 8);
    char *snap = malloc(total), dir[1024];
    fti_ckpt_writer_h w;
    fti_ckpt_writer_create(&w);
    double mean[3];
    int64_t started = 0, skipped = 0, ckpt_steps_us = 0;
    for (int mode = 0; mode < 3; mode++) {
        int64_t t0 = fti_now_us();
        for (int s = 0; s < steps; s++) {
            int64_t ts = fti_now_us();
            compute(work, wn);
            if (mode == 1)
                memcpy(snap, state, total);
            if (mode == 2) {
                int rc;
                int ws = fti_ckpt_writer_write_state(w, &rc, NULL, 0);
                if (ws == FTI_WRITE_BUSY) {
                    skipped++;
                    continue;
                }
                fti_ckpt_writer_collect(w);
                memcpy(snap, state, total);
                snprintf(dir, sizeof(dir), "%s/stepbench.tmp-%d", root, s);
                size_t off = 0;
                fti_ckpt_writer_write(w, dir, 0, snap, total, &off, &total, 1);
                fti_ckpt_writer_abandon(w, dir); /* runs after the write */
                started++;
                ckpt_steps_us += fti_now_us() - ts;
            }
        }
        mean[mode] = (double)(fti_now_us() - t0) / steps / 1000.0;
    }
    fti_ckpt_writer_wait_idle(w);
    fti_ckpt_writer_destroy(w);
    double per_ckpt = started ? (double)ckpt_steps_us / (double)started / 1000.0 - mean[0] : 0;
    printf("step   %zu MB state, %d steps: compute %.2f ms/step; +memcpy %.2f ms; async "
           "checkpoint due every step: +%.2f ms on a step that takes one (%" PRId64 " taken, "
           "%" PRId64 " skipped while the writer was busy), +%.2f ms on average; "
           "ratio to memcpy %.2f\n", total >> 20, steps, mean[0], mean[1] - mean[0], per_ckpt,
           started, skipped, mean[2] - mean[0], per_ckpt / (mean[1] - mean[0]));
    free(work);
    free(snap);
}

static int64_t load_all(const char *root, int r)
{
    int64_t n = (int64_t)(total / 8), t0 = fti_now_us();
    for (int g = 0; g < r; g++) {
        int64_t lo, hi;
        part(g, r, n, &lo, &hi);
        fti_ckpt_target_t t = {"w", FTI_CKPT_SHARD, 8, n, lo, hi - lo};
        fti_ckpt_staged_t s;
        char err[1024];
        if (fti_ckpt_stage(root, &t, 1, &s, err, sizeof(err)) != FT_SUCCESS)
            fprintf(stderr, "bench_ckpt: %s\n", err);
        else
            fti_ckpt_staged_free(&s);
    }
    return fti_now_us() - t0;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_ckpt DIR [MBYTES [STEPS]]\n");
        return 2;
    }
    const char *root = argv[1];
    total = (size_t)(argc > 2 ? atol(argv[2]) : 256) << 20;
    int steps = argc > 3 ? atoi(argv[3]) : 50;
    char err[1024];
    if (fti_ckpt_mkdir(root, err, sizeof(err)) != FT_SUCCESS) {
        fprintf(stderr, "bench_ckpt: %s\n", err);
        return 1;
    }
    state = malloc(total);
    for (size_t i = 0; i < total; i++)
        state[i] = (char)(i * 131 + 7);
    bench_write(root);
    bench_step(root, steps);
    int64_t same = INT64_MAX, resh = INT64_MAX;
    for (int i = 0; i < REPS; i++) {
        same = FTI_MIN(same, load_all(root, R));
        resh = FTI_MIN(resh, load_all(root, R - 1));
    }
    printf("load   %zu MB written by %d ranks: by %d ranks %.0f ms, by %d ranks (resharding) "
           "%.0f ms, ratio %.2f\n", total >> 20, R, R, (double)same / 1000, R - 1,
           (double)resh / 1000, (double)resh / (double)same);
    free(state);
    return 0;
}
