/*
 * ftmpi-ckpt - inspect and verify durable checkpoints (no MPI).
 *
 *   ftmpi-ckpt ls DIR        published checkpoints of DIR, newest first
 *                            (step, group size, buffers, bytes), then the
 *                            unfinished step-<N>.tmp-* folders
 *   ftmpi-ckpt show DIR      the layout of DIR's newest checkpoint (or of
 *                            DIR itself when it is a step-<N> folder):
 *                            every buffer and its shards
 *   ftmpi-ckpt verify DIR    reads every shard and checks its checksum;
 *                            a failure names the file.  Exit 1 if any fails.
 * Exit status: 0 ok, 1 a check failed or nothing found, 2 usage.
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ftmpi_config.h"
#include "ftmpi_errors.h"
#include "state/ckpt_io.h"

#define PATH_LEN 2048

static void usage(FILE *out)
{
    fprintf(out, "Usage: ftmpi-ckpt ls|show|verify DIR | --version | --help\n"
                 "  DIR: FTMPI_CKPT_DIR (its checkpoints) or one step-<N> folder\n");
}

static int is_step_dir(const char *dir)
{
    char path[PATH_LEN];
    struct stat sb;
    snprintf(path, sizeof(path), "%s/%s", dir, FTI_CKPT_META);
    return stat(path, &sb) == 0;
}

/* The step folders DIR stands for (itself, or its checkpoints newest first). */
static int folders(const char *dir, char ***list_p, size_t *n_p)
{
    char err[PATH_LEN];
    int64_t *steps = NULL;
    size_t n = 0;
    if (is_step_dir(dir)) {
        char **l = malloc(sizeof(*l));
        if (l == NULL || (l[0] = strdup(dir)) == NULL)
            return FT_ERR_NO_MEMORY;
        *list_p = l;
        *n_p = 1;
        return FT_SUCCESS;
    }
    int rc = fti_ckpt_list(dir, &steps, &n, err, sizeof(err));
    if (rc != FT_SUCCESS) {
        fprintf(stderr, "ftmpi-ckpt: %s\n", err);
        return rc;
    }
    char **l = calloc(n ? n : 1, sizeof(*l));
    for (size_t i = 0; l != NULL && i < n; i++) {
        char path[PATH_LEN];
        fti_ckpt_step_dir(dir, steps[i], path, sizeof(path));
        l[i] = strdup(path);
    }
    free(steps);
    *list_p = l;
    *n_p = l ? n : 0;
    return l ? FT_SUCCESS : FT_ERR_NO_MEMORY;
}

static void free_list(char **l, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(l[i]);
    free(l);
}

static void print_layout(const fti_ckpt_meta_t *m)
{
    for (int g = 0; g < m->group_size; g++)
        printf("  rank-%d.bin %" PRIu64 " bytes\n", g, m->file_bytes[g]);
    for (size_t i = 0; i < m->n_bufs; i++) {
        const fti_ckpt_buf_t *b = &m->bufs[i];
        printf("  buffer %s: %s, %" PRId64 " x %s (%zu bytes each)\n", b->name,
               b->kind == FTI_CKPT_SHARD ? "sharded" : "replicated", b->global, b->type, b->elem);
        for (size_t k = 0; k < b->n_shards; k++)
            printf("    [%" PRId64 ", %" PRId64 ") rank-%d.bin @%" PRIu64 " checksum %016" PRIx64
                   "\n", b->shards[k].start, b->shards[k].end, b->shards[k].rank,
                   b->shards[k].offset, b->shards[k].sum);
    }
}

static void list_unfinished(const char *dir)
{
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL)
        if (strncmp(e->d_name, "step-", 5) == 0 && strstr(e->d_name, ".tmp-") != NULL)
            printf("%s/%s (unfinished: never loaded)\n", dir, e->d_name);
    if (d != NULL)
        closedir(d);
}

static int run(const char *cmd, const char *dir)
{
    char **l = NULL, err[PATH_LEN];
    size_t n = 0;
    int bad = 0, stop = 0;
    if (folders(dir, &l, &n) != FT_SUCCESS)
        return 1;
    if (n == 0)
        fprintf(stderr, "ftmpi-ckpt: %s holds no complete checkpoint\n", dir);
    for (size_t i = 0; i < n && !stop; i++) {
        fti_ckpt_meta_t m;
        uint64_t bytes = 0;
        if (fti_ckpt_meta_read(l[i], NULL, &m, err, sizeof(err)) != FT_SUCCESS) {
            printf("%s: BAD: %s\n", l[i], err);
            bad = 1;
            continue;
        }
        if (strcmp(cmd, "ls") == 0) {
            printf("%s step %" PRId64 " group_size %d buffers %zu bytes %" PRIu64 "\n", l[i],
                   m.step, m.group_size, m.n_bufs, fti_ckpt_meta_bytes(&m));
        } else if (strcmp(cmd, "show") == 0) {
            printf("%s: step %" PRId64 ", written by %d ranks\n", l[i], m.step, m.group_size);
            print_layout(&m);
            stop = 1; /* the newest only */
        } else if (fti_ckpt_verify(l[i], &m, &bytes, err, sizeof(err)) == FT_SUCCESS) {
            printf("%s: ok (%" PRIu64 " bytes checked)\n", l[i], bytes);
        } else {
            printf("%s: FAILED: %s\n", l[i], err);
            bad = 1;
        }
        fti_ckpt_meta_free(&m);
    }
    if (strcmp(cmd, "ls") == 0 && !is_step_dir(dir))
        list_unfinished(dir);
    free_list(l, n);
    return bad || n == 0 ? 1 : 0;
}

int main(int argc, char **argv)
{
    if (argc == 2 && !strcmp(argv[1], "--version")) {
        printf("ftmpi-ckpt (libftmpi) %s\n", PACKAGE_VERSION);
        return 0;
    }
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        usage(stdout);
        return 0;
    }
    if (argc != 3 || (strcmp(argv[1], "ls") && strcmp(argv[1], "show") && strcmp(argv[1], "verify"))) {
        usage(stderr);
        return 2;
    }
    return run(argv[1], argv[2]);
}
