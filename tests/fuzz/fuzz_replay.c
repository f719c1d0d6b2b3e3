/*
 * fuzz_replay.c - the main of a harness's replay program (make check).
 *
 *   fuzz_<name>_replay                 every file of
 *                                      $top_srcdir/tests/fuzz/corpus/<name>/,
 *                                      then the harness's generated cases
 *   fuzz_<name>_replay FILE|DIR...     those instead of the corpus
 *   fuzz_<name>_replay --write-seeds DIR   the generated cases as files
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_common.h"

#ifndef FUZZ_NAME
#error "FUZZ_NAME must name the harness"
#endif

static int n_inputs;
static const char *seed_dir;

static void run(const uint8_t *d, size_t n)
{
    LLVMFuzzerTestOneInput(n ? d : (const uint8_t *)"", n);
    n_inputs++;
}

static void write_seed(const uint8_t *d, size_t n)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/gen-%03d", seed_dir, n_inputs++);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    CHECK(fwrite(d, 1, n, f) == n);
    CHECK(fclose(f) == 0);
}

static int run_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        fprintf(stderr, "fuzz_%s_replay: %s: %s\n", FUZZ_NAME, path, strerror(errno));
        return -1;
    }
    size_t cap = 1 << 16, n = 0, k;
    uint8_t *d = malloc(cap);
    CHECK(d != NULL);
    while ((k = fread(d + n, 1, cap - n, f)) > 0) {
        n += k;
        if (n == cap) {
            cap *= 2;
            d = realloc(d, cap);
            CHECK(d != NULL);
        }
    }
    fclose(f);
    run(d, n);
    free(d);
    return 0;
}

static int run_path(const char *path)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        fprintf(stderr, "fuzz_%s_replay: %s: %s\n", FUZZ_NAME, path, strerror(errno));
        return -1;
    }
    if (!S_ISDIR(st.st_mode))
        return run_file(path);
    struct dirent **names = NULL;
    int n = scandir(path, &names, NULL, alphasort);
    if (n < 0)
        return -1;
    int rc = 0;
    for (int i = 0; i < n; i++) {
        char p[4096];
        if (names[i]->d_name[0] != '.') {
            snprintf(p, sizeof(p), "%s/%s", path, names[i]->d_name);
            if (rc == 0 && run_file(p) != 0)
                rc = -1;
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "--write-seeds") == 0) {
        seed_dir = argv[2];
        fuzz_generated(write_seed);
        printf("fuzz_%s_replay: %d seeds written to %s\n", FUZZ_NAME, n_inputs, seed_dir);
        return 0;
    }
    if (argc > 1) {
        for (int i = 1; i < argc; i++)
            if (run_path(argv[i]) != 0)
                return 1;
    } else {
        const char *top = getenv("top_srcdir");
        char dir[4096];
        snprintf(dir, sizeof(dir), "%s/tests/fuzz/corpus/%s", top ? top : ".", FUZZ_NAME);
        if (run_path(dir) != 0)
            return 1;
    }
    int from_files = n_inputs;
    fuzz_generated(run);
    printf("fuzz_%s_replay: %d corpus inputs, %d generated, no failure\n", FUZZ_NAME, from_files,
           n_inputs - from_files);
    return 0;
}
