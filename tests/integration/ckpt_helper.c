/*
 * ckpt_helper - saves and loads generated arrays through libfti_state, as
 * the ranks of a group would (no MPI), for the checkpoint tests C1-C3.
 *
 *   ckpt_helper save ROOT STEP R [PAUSE_MS]
 *       a group of R ranks saves step STEP: a sharded array "w" of G
 *       doubles (value step * 1e6 + i / 2) and a replicated 37-byte "rep";
 *       each rank's file through the writer thread, PAUSE_MS between the
 *       ranks' files (so a test can kill it half-way), then the metadata
 *       and the publish (keep 2).  Exit 0, or 1 when a write failed.
 *   ckpt_helper load ROOT R
 *       every rank of a group of R loads its block; prints "loaded step N"
 *       when every element is bitwise what step N saved.  Exit 1 otherwise.
 * CKPT_HELPER_TOKEN=FILE: with that job secret (fti_auth_load_key).
 * CKPT_HELPER_PROGRESS_MS=N: a load logs its progress every N ms
 * (fti_ckpt_progress_ms; the library's is 5000).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/auth.h"
#include "ftmpi_errors.h"
#include "state/ckpt_io.h"
#include "state/ckpt_writer.h"

#define G 300007
#define REP 37

/* The job's key (CKPT_HELPER_TOKEN, read in main); NULL: none. */
static fti_auth_key_t job_key_buf;
static const fti_auth_key_t *job_key;

static double val(int64_t step, int64_t i)
{
    return (double)step * 1e6 + (double)i * 0.5;
}

static void part(int g, int r, int64_t *lo, int64_t *hi)
{
    *lo = (int64_t)G * g / r;
    *hi = (int64_t)G * (g + 1) / r;
}

/* Rank g's file and its regions' checksums; 0 or -1. */
static int save_rank(fti_ckpt_writer_h w, const char *dir, int64_t step, int g, int r,
                     fti_ckpt_buf_t *b, uint64_t *fb)
{
    int64_t lo, hi;
    part(g, r, &lo, &hi);
    size_t wl = (size_t)(hi - lo) * 8, len = wl + (g == 0 ? REP : 0);
    char *data = malloc(len + 1);
    for (int64_t i = lo; i < hi; i++) {
        double v = val(step, i);
        memcpy(data + (i - lo) * 8, &v, 8);
    }
    if (g == 0)
        memset(data + wl, (int)(step & 0xff), REP);
    size_t off[2] = {0, wl}, rl[2] = {wl, REP};
    uint64_t sums[2] = {0, 0};
    int rc = -1;
    fti_ckpt_writer_write(w, dir, g, data, len, off, rl, g == 0 ? 2 : 1);
    fti_ckpt_writer_wait_idle(w);
    fti_ckpt_writer_write_state(w, &rc, sums, 2);
    fti_ckpt_writer_collect(w);
    free(data);
    b[0].shards[g] = (fti_ckpt_shard_t){g, lo, hi, 0, sums[0]};
    if (g == 0)
        b[1].shards[0] = (fti_ckpt_shard_t){0, 0, REP, wl, sums[1]};
    fb[g] = len;
    return rc == FT_SUCCESS ? 0 : -1;
}

static int save(const char *root, int64_t step, int r, int pause_ms)
{
    fti_ckpt_writer_h w;
    char dir[2048];
    if (fti_ckpt_writer_create(job_key, &w) != FT_SUCCESS)
        return 1;
    snprintf(dir, sizeof(dir), "%s/step-%" PRId64 ".tmp-helper", root, step);
    fti_ckpt_meta_t m = {step, r, calloc((size_t)r, sizeof(uint64_t)), 2,
                         calloc(2, sizeof(fti_ckpt_buf_t))};
    m.bufs[0] = (fti_ckpt_buf_t){"w", FTI_CKPT_SHARD, "double", 8, G, (size_t)r,
                                 calloc((size_t)r, sizeof(fti_ckpt_shard_t))};
    m.bufs[1] = (fti_ckpt_buf_t){"rep", FTI_CKPT_REPLICATED, "byte", 1, REP, 1,
                                 calloc(1, sizeof(fti_ckpt_shard_t))};
    int failed = 0;
    for (int g = 0; g < r && !failed; g++) {
        failed = save_rank(w, dir, step, g, r, m.bufs, m.file_bytes) != 0;
        if (pause_ms > 0) {
            struct timespec ts = {pause_ms / 1000, (long)(pause_ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    fti_ckpt_writer_stats_t st;
    if (failed) {
        fti_ckpt_meta_free(&m);
        fti_ckpt_writer_abandon(w, dir);
    } else {
        fti_ckpt_writer_publish(w, root, dir, &m, 2);
    }
    fti_ckpt_writer_wait_idle(w);
    fti_ckpt_writer_stats(w, &st);
    fti_ckpt_writer_destroy(w);
    printf("save step %" PRId64 ": %s (failures %" PRIu64 ")\n", step,
           st.failed == 0 ? "published" : "failed", st.failed);
    return st.failed == 0 ? 0 : 1;
}

/* Every rank loads from `where`; as the group does (state/ckpt_step.c), when the ranks
 * staged different steps (each checks only the shards it reads), they all
 * load the oldest of them.  *step_p: the step every rank loaded, or -1. */
static int load_from(const char *root, const char *where, int r, int64_t *step_p)
{
    int64_t step = -1;
    for (int g = 0; g < r; g++) {
        int64_t lo, hi;
        part(g, r, &lo, &hi);
        fti_ckpt_target_t t[2] = {{"w", FTI_CKPT_SHARD, 8, G, lo, hi - lo},
                                  {"rep", FTI_CKPT_REPLICATED, 1, REP, 0, REP}};
        fti_ckpt_staged_t s;
        char err[2048];
        if (fti_ckpt_stage(where, job_key, t, 2, &s, err, sizeof(err)) != FT_SUCCESS) {
            printf("rank %d of %d: nothing loaded: %s\n", g, r, err);
            return 1;
        }
        if (step >= 0 && s.step != step) {
            int64_t lo = s.step < step ? s.step : step;
            char dir[2048];
            fti_ckpt_staged_free(&s);
            fti_ckpt_step_dir(root, lo, dir, sizeof(dir));
            fprintf(stderr, "rank %d staged another step than rank 0: all load step %" PRId64 "\n",
                    g, lo);
            return where == root ? load_from(root, dir, r, step_p) : 1;
        }
        step = s.step;
        for (int64_t i = lo; i < hi; i++) {
            double v = val(step, i);
            if (memcmp((char *)s.bufs[0] + (i - lo) * 8, &v, 8) != 0) {
                printf("rank %d: element %" PRId64 " differs\n", g, i);
                return 1;
            }
        }
        for (int k = 0; k < REP; k++)
            if (((unsigned char *)s.bufs[1])[k] != (unsigned char)(step & 0xff)) {
                printf("rank %d: replicated byte %d differs\n", g, k);
                return 1;
            }
        fti_ckpt_staged_free(&s);
    }
    *step_p = step;
    return 0;
}

static int load(const char *root, int r)
{
    int64_t step = -1;
    if (load_from(root, root, r, &step) != 0)
        return 1;
    printf("loaded step %" PRId64 "\n", step);
    return 0;
}

int main(int argc, char **argv)
{
    /* CKPT_HELPER_TOKEN=FILE: the job secret, as FT_Init takes FTMPI_TOKEN_FILE */
    const char *tok = getenv("CKPT_HELPER_TOKEN");
    /* CKPT_HELPER_PROGRESS_MS=N: a load's progress lines every N ms */
    const char *pms = getenv("CKPT_HELPER_PROGRESS_MS");
    if (pms != NULL)
        fti_ckpt_progress_ms = atoll(pms);
    char err[2048];
    if (tok != NULL && tok[0] != '\0') {
        if (fti_auth_load_key(tok, &job_key_buf, err, sizeof(err)) != FT_SUCCESS) {
            fprintf(stderr, "ckpt_helper: %s\n", err);
            return 2;
        }
        job_key = &job_key_buf;
    }
    if (argc >= 5 && strcmp(argv[1], "save") == 0)
        return save(argv[2], atoll(argv[3]), atoi(argv[4]), argc > 5 ? atoi(argv[5]) : 0);
    if (argc == 4 && strcmp(argv[1], "load") == 0)
        return load(argv[2], atoi(argv[3]));
    fprintf(stderr, "usage: ckpt_helper save ROOT STEP R [PAUSE_MS] | load ROOT R\n");
    return 2;
}
