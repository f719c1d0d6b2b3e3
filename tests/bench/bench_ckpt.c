/*
 * bench_ckpt - durable checkpoints through libfti_state (no MPI).  Every
 * figure is a median over repetitions that alternate with their baseline,
 * so a burst of load from other processes hits both sides alike.
 *
 *  write:  after one warm-up of each, REPS repetitions of (a) a checkpoint of a group of R ranks'
 *          files (MBYTES in all) written by the writer thread as state/ckpt_step.c
 *          has it written (rank files written and fsynced one after the
 *          other, checksums, metadata, publish by rename; the prune to
 *          KEEP 2 that follows is timed apart)
 *          and (b) plain write + fsync of the same bytes into R files of
 *          the same folder; a and b alternate (ab, ba, ab, ...).  Medians
 *          and the ratio of the medians (checkpoint MB/s / plain MB/s).
 *          The page cache cannot be dropped here (not ours to drop on a
 *          shared machine): both sides start from the same state, and
 *          both fsync every byte before their clock stops.
 *  step:   SAMPLES samples, each taken with the writer idle: one step
 *          without a checkpoint (a fixed compute: a pass over a work
 *          buffer as large as the state), one memcpy of the registered
 *          bytes alone, one step that takes an async checkpoint as state/ckpt_step.c
 *          does (copy into the snapshot, hand it to the writer); then
 *          steps without one until the writer is done.  Medians of the
 *          step cost (with - without) and of the memcpy, their ratio;
 *          and the slowdown of the steps that ran while the writer wrote
 *          (they share the CPUs with it), per checkpoint.
 *  load:   every rank of a group loads its block of the checkpoint written
 *          by R = 4 ranks: 4 ranks (no resharding) against 3 (resharding:
 *          each old shard a new rank overlaps is read whole, for its
 *          checksum); all ranks' loads one after the other (warm page
 *          cache), alternating; medians and their ratio.
 *
 * Each part prints the load average (/proc/loadavg) when it starts.
 *
 * Usage: bench_ckpt DIR [MBYTES [SAMPLES]]   (defaults 256 MB, 12 samples)
 */
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench_util.h"
#include "ftmpi_errors.h"
#include "state/ckpt_io.h"
#include "state/ckpt_writer.h"
#include "base/util.h"

#define R 4
#define REPS 7
#define LOAD_REPS 7
#define MAX_SAMPLES 64
#define MAX_BUSY_STEPS 1000

static size_t total;
static char *state;

static void part(int g, int r, int64_t n, int64_t *lo, int64_t *hi)
{
    *lo = n * g / r;
    *hi = n * (g + 1) / r;
}

static void print_load(const char *what)
{
    char buf[128] = "?";
    FILE *f = fopen("/proc/loadavg", "r");
    if (f != NULL) {
        if (fgets(buf, sizeof(buf), f) == NULL)
            snprintf(buf, sizeof(buf), "?\n");
        fclose(f);
    }
    printf("# %s: load average %s", what, buf);
    fflush(stdout);
}

static double ms(int64_t us)
{
    return (double)us / 1000.0;
}

/* Saves `state` as step `step` written by R ranks, one file after the
 * other (as plain() writes them); microseconds until it is published;
 * *files_us_p the writer's time in the rank files (write, checksums,
 * fsyncs; the rest is hand-offs), *pub_us_p the publish (metadata,
 * rename, fsyncs), *prune_us_p removing the checkpoint older than the
 * previous one (KEEP 2), which the writer does next in the same job: it
 * deletes, it writes nothing, and plain() deletes its files off the clock
 * too, so it is reported apart. */
static int64_t save(const char *root, int64_t step, int64_t *pub_us_p, int64_t *files_us_p,
                    int64_t *prune_us_p)
{
    fti_ckpt_writer_h w;
    fti_ckpt_writer_stats_t ws;
    char dir[1024];
    int64_t n = (int64_t)(total / 8), t0 = fti_now_us(), write_us = 0;
    snprintf(dir, sizeof(dir), "%s/step-%" PRId64 ".tmp-bench", root, step);
    fti_ckpt_meta_t m = {step, R, calloc(R, sizeof(uint64_t)), 1, calloc(1, sizeof(fti_ckpt_buf_t))};
    m.bufs[0] = (fti_ckpt_buf_t){"w", FTI_CKPT_SHARD, "double", 8, n, R,
                                 calloc(R, sizeof(fti_ckpt_shard_t))};
    fti_ckpt_writer_create(NULL, &w);
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
        fti_ckpt_writer_stats(w, &ws);
        write_us += ws.last_write_us;
        if (rc != FT_SUCCESS)
            fprintf(stderr, "bench_ckpt: write failed\n");
    }
    int64_t t1 = fti_now_us();
    fti_ckpt_writer_publish(w, root, dir, &m, 1 << 20); /* the prune below, timed apart */
    fti_ckpt_writer_wait_idle(w);
    int64_t t2 = fti_now_us();
    fti_ckpt_writer_destroy(w);
    fti_ckpt_prune(root, 2);
    *prune_us_p = fti_now_us() - t2;
    *pub_us_p = t2 - t1;
    *files_us_p = write_us;
    return t2 - t0;
}

/* The same bytes with plain write + fsync, one file per rank, one after
 * the other (as the writer writes them); microseconds. */
static int64_t plain(const char *root)
{
    char dir[1024], path[1100], err[256];
    int64_t n = (int64_t)(total / 8), t0 = fti_now_us();
    snprintf(dir, sizeof(dir), "%s/plain", root);
    fti_ckpt_mkdir(dir, err, sizeof(err));
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
        if (fd < 0 || at < len)
            fprintf(stderr, "bench_ckpt: plain write of %s failed\n", path);
        if (fd >= 0) {
            fsync(fd);
            close(fd);
        }
    }
    int64_t us = fti_now_us() - t0;
    fti_ckpt_remove_dir(dir);
    return us;
}

static double mbps(double us)
{
    return (double)total / 1e6 / (us / 1e6);
}

static void bench_write(const char *root)
{
    double c[REPS], p[REPS], pub[REPS], files[REPS], prune[REPS], pair[REPS];
    double best_c = 1e30, best_p = 1e30;
    print_load("write");
    int64_t su0, fu0, ru0;
    plain(root); /* warm-up: the first of each ran slower than the rest here */
    save(root, 999, &su0, &fu0, &ru0);
    for (int i = 0; i < REPS; i++) {
        int64_t pu, cu, su, fu, ru;
        if (i % 2 == 0) {
            pu = plain(root);
            cu = save(root, 1000 + i, &su, &fu, &ru);
        } else {
            cu = save(root, 1000 + i, &su, &fu, &ru);
            pu = plain(root);
        }
        c[i] = (double)cu;
        p[i] = (double)pu;
        pub[i] = (double)su;
        files[i] = (double)fu;
        prune[i] = (double)ru;
        pair[i] = p[i] / c[i];
        best_c = FTI_MIN(best_c, c[i]);
        best_p = FTI_MIN(best_p, p[i]);
        printf("#   rep %d: checkpoint %.0f ms (files %.0f, publish %.1f; then prune %.1f), "
               "plain %.0f ms\n", i, c[i] / 1000, files[i] / 1000, pub[i] / 1000, prune[i] / 1000,
               p[i] / 1000);
    }
    double mc = bench_median(c, REPS), mp = bench_median(p, REPS);
    double mprune = bench_median(prune, REPS);
    printf("write  %zu MB by %d ranks, %d alternating reps: checkpoint median %.0f MB/s "
           "(%.0f ms: files %.0f, publish %.1f), plain write+fsync median %.0f MB/s (%.0f ms); "
           "ratio of medians %.2f (target >= 0.80; median of pairs %.2f, best %.0f vs %.0f ms "
           "%.2f; with the prune of the oldest checkpoint, +%.0f ms, %.2f)\n",
           total >> 20, R, REPS, mbps(mc), mc / 1000, bench_median(files, REPS) / 1000,
           bench_median(pub, REPS) / 1000, mbps(mp), mp / 1000, mp / mc,
           bench_median(pair, REPS), best_c / 1000, best_p / 1000, best_p / best_c, mprune / 1000,
           mp / (mc + mprune));
}

static volatile double sink;

static void compute(const double *work, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++)
        s += work[i] * 1.0000001;
    sink = s;
}

struct step_ctx {
    double *work;
    size_t wn;
    char *snap;
    fti_ckpt_writer_h w;
};

/* One sample (the writer idle): *plain_p a step without a checkpoint,
 * *copy_p one memcpy alone, *with_p a step that takes one, *busy_p the
 * summed time of the steps that ran while the writer wrote (*n_busy_p of
 * them), *write_p the writer's time. */
static void step_sample(struct step_ctx *x, const char *root, int s, int64_t *plain_p,
                        int64_t *copy_p, int64_t *with_p, int64_t *busy_p, int *n_busy_p,
                        int64_t *write_p)
{
    char dir[1024];
    int64_t t0 = fti_now_us();
    compute(x->work, x->wn);
    int64_t t1 = fti_now_us();
    memcpy(x->snap, state, total);
    int64_t t2 = fti_now_us();
    compute(x->work, x->wn);
    memcpy(x->snap, state, total);
    snprintf(dir, sizeof(dir), "%s/stepbench.tmp-%d", root, s);
    size_t off = 0;
    fti_ckpt_writer_write(x->w, dir, 0, x->snap, total, &off, &total, 1);
    int64_t t3 = fti_now_us();
    *plain_p = t1 - t0;
    *copy_p = t2 - t1;
    *with_p = t3 - t2;
    int rc, n = 0;
    int64_t busy = 0;
    while (fti_ckpt_writer_write_state(x->w, &rc, NULL, 0) == FTI_WRITE_BUSY &&
           n < MAX_BUSY_STEPS) {
        int64_t ts = fti_now_us();
        compute(x->work, x->wn);
        busy += fti_now_us() - ts;
        n++;
    }
    fti_ckpt_writer_wait_idle(x->w);
    *write_p = fti_now_us() - t2;
    fti_ckpt_writer_collect(x->w);
    fti_ckpt_writer_abandon(x->w, dir);
    fti_ckpt_writer_wait_idle(x->w);
    *busy_p = busy;
    *n_busy_p = n;
}

static void bench_step(const char *root, int samples)
{
    struct step_ctx x = {NULL, total / 8, malloc(total), NULL};
    x.work = calloc(x.wn, 8); /* compute touches as many bytes as the state */
    double pl[MAX_SAMPLES], cp[MAX_SAMPLES], cost[MAX_SAMPLES], wr[MAX_SAMPLES];
    int64_t busy[MAX_SAMPLES];
    int nb[MAX_SAMPLES], busy_steps = 0;
    print_load("step");
    fti_ckpt_writer_create(NULL, &x.w);
    memcpy(x.snap, state, total); /* warm-up: the snapshot's pages exist */
    compute(x.work, x.wn);
    for (int s = 0; s < samples; s++) {
        int64_t p, c, wi, wt;
        step_sample(&x, root, s, &p, &c, &wi, &busy[s], &nb[s], &wt);
        pl[s] = (double)p;
        cp[s] = (double)c;
        cost[s] = (double)(wi - p);
        wr[s] = (double)wt;
        busy_steps += nb[s];
    }
    fti_ckpt_writer_destroy(x.w);
    double step = bench_median(pl, (size_t)samples); /* sorts pl: use it last */
    double slow[MAX_SAMPLES];
    for (int s = 0; s < samples; s++)
        slow[s] = (double)busy[s] - nb[s] * step;
    double mcost = bench_median(cost, (size_t)samples), mcopy = bench_median(cp, (size_t)samples);
    double mslow = bench_median(slow, (size_t)samples);
    printf("step   %zu MB state, %d checkpoints each taken with the writer idle: step %.2f ms; "
           "one memcpy of the registered bytes %.2f ms (median); a step that takes an async "
           "checkpoint costs +%.2f ms (median of with - without); ratio %.2f (target <= 1.50)\n",
           total >> 20, samples, step / 1000, mcopy / 1000, mcost / 1000, mcost / mcopy);
    printf("step   while the writer wrote (median %.0f ms per checkpoint, %.1f steps): those "
           "steps ran +%.2f ms per checkpoint in all (median), %.2f memcpys; sharing the CPUs "
           "with the writer, not part of the target\n",
           bench_median(wr, (size_t)samples) / 1000, (double)busy_steps / samples, mslow / 1000,
           mslow / mcopy);
    free(x.work);
    free(x.snap);
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
        if (fti_ckpt_stage(root, NULL, &t, 1, &s, err, sizeof(err)) != FT_SUCCESS)
            fprintf(stderr, "bench_ckpt: %s\n", err);
        else
            fti_ckpt_staged_free(&s);
    }
    return fti_now_us() - t0;
}

static void bench_load(const char *root)
{
    double same[LOAD_REPS], resh[LOAD_REPS];
    print_load("load");
    load_all(root, R); /* warm-up */
    for (int i = 0; i < LOAD_REPS; i++) {
        if (i % 2 == 0) {
            same[i] = (double)load_all(root, R);
            resh[i] = (double)load_all(root, R - 1);
        } else {
            resh[i] = (double)load_all(root, R - 1);
            same[i] = (double)load_all(root, R);
        }
    }
    double ms_ = bench_median(same, LOAD_REPS), mr = bench_median(resh, LOAD_REPS);
    printf("load   %zu MB written by %d ranks, %d alternating reps: by %d ranks %.0f ms, by %d "
           "ranks (resharding) %.0f ms (medians), ratio %.2f\n", total >> 20, R, LOAD_REPS, R,
           ms_ / 1000, R - 1, mr / 1000, mr / ms_);
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_ckpt DIR [MBYTES [SAMPLES]]\n");
        return 2;
    }
    const char *root = argv[1];
    total = (size_t)(argc > 2 ? atol(argv[2]) : 256) << 20;
    int samples = argc > 3 ? atoi(argv[3]) : 12;
    samples = samples < 1 ? 1 : samples > MAX_SAMPLES ? MAX_SAMPLES : samples;
    char err[1024];
    if (total == 0) {
        fprintf(stderr, "bench_ckpt: MBYTES must be >= 1\n");
        return 2;
    }
    if (fti_ckpt_mkdir(root, err, sizeof(err)) != FT_SUCCESS) {
        fprintf(stderr, "bench_ckpt: %s\n", err);
        return 1;
    }
    state = malloc(total);
    for (size_t i = 0; i < total; i++)
        state[i] = (char)(i * 131 + 7);
    int64_t t0 = fti_now_us();
    bench_write(root);
    bench_step(root, samples);
    bench_load(root);
    printf("# bench_ckpt took %.1f s\n", ms(fti_now_us() - t0) / 1000);
    free(state);
    return 0;
}
