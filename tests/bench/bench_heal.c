/*
 * bench_heal.c - the heal alone, without MPI or a lighthouse: one source
 * (a heal registry served by a rank server on 127.0.0.1) and one healer
 * (fti_heal_fetch from it, through real sockets) in this process, so that
 * the heal path (src/heal/fetch.c) can be timed and profiled (perf record)
 * apart from a training step.  Before each repetition the source serves a
 * new step (its checksums are summed again, as after every commit); after
 * it the healer's copy is compared with the source's.
 *
 *   bench_heal --bytes N [--reps R] [--staged] [--ucx]
 *
 * --staged heals through staging memory (FTMPI_HEAL_INSTALL=staged), else
 * straight into the registered buffer (direct).  --ucx: the source serves
 * and the healer fetches over UCX (comm/ucx_heal.c, ucp_get_nbx; builds
 * with UCX), else over HEAL_FETCH (tcp).  Prints
 * "RESULT <bytes> <median_us> <min_us> <max_us> <MiB_per_s of the median>",
 * as bench_tcpstream does (the baseline).  Exit status 0, or 1 on an error.
 */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "control/rank_server.h"
#include "ftmpi_errors.h"
#include "heal/heal.h"
#include "base/util.h"
#include "ftmpi_config.h" /* FTMPI_HAVE_UCX */
#ifdef FTMPI_HAVE_UCX
#include "comm/ucx_heal.h"

static const fti_heal_rma_t ucx_rma = {"ucx", fti_ucx_heal_expose, fti_ucx_heal_release,
                                       fti_ucx_heal_connect, fti_ucx_heal_get,
                                       fti_ucx_heal_disconnect};
#endif

#define MAX_REPS 1000

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int main(int argc, char **argv)
{
    size_t bytes = 0;
    int reps = 7;
    bool staged = false, ucx = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--bytes") && i + 1 < argc && bench_parse_bytes(argv[i + 1], &bytes) == 0)
            i++;
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc)
            reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--staged"))
            staged = true;
        else if (!strcmp(argv[i], "--ucx"))
            ucx = true;
        else
            bytes = 0, i = argc;
    }
    if (bytes == 0 || reps < 1 || reps > MAX_REPS) {
        fprintf(stderr, "usage: bench_heal --bytes N [--reps R] [--staged] [--ucx]\n");
        return 1;
    }
    const fti_heal_rma_t *rma = NULL;
#ifdef FTMPI_HAVE_UCX
    rma = ucx ? &ucx_rma : NULL;
#endif
    if (ucx && rma == NULL) {
        fprintf(stderr, "bench_heal: --ucx in a build without UCX\n");
        return 77;
    }
    unsigned char *src = malloc(bytes), *dst = malloc(bytes);
    if (src == NULL || dst == NULL) {
        fprintf(stderr, "bench_heal: no memory for 2 x %zu bytes\n", bytes);
        return 1;
    }
    for (size_t i = 0; i < bytes; i++)
        src[i] = (unsigned char)(i * 131 + (i >> 12));
    memset(dst, 1, bytes); /* resident, as a registered buffer is */

    fti_heal_h hs = NULL, hd = NULL;
    fti_rank_server_h srv = NULL;
    int rc = fti_heal_create(&hs);
    if (rc == FT_SUCCESS)
        rc = fti_heal_register(hs, "state", src, bytes);
    if (rc == FT_SUCCESS)
        fti_heal_set_rma(hs, rma);
    if (rc == FT_SUCCESS)
        rc = fti_rank_server_start("127.0.0.1", 1 << 20, NULL, true, fti_heal_rpc, hs, &srv);
    const char *addr = rc == FT_SUCCESS ? fti_rank_server_address(srv) : NULL;
    if (rc == FT_SUCCESS)
        rc = fti_rank_server_set_peers(srv, &addr, 1);
    if (rc == FT_SUCCESS)
        rc = fti_heal_create(&hd);
    if (rc == FT_SUCCESS)
        rc = fti_heal_register(hd, "state", dst, bytes);
    fti_heal_opts_t o = {5000, 1 << 20, 0, !staged, NULL, rma};
    int64_t us[MAX_REPS];
    for (int r = 0; rc == FT_SUCCESS && r < reps; r++) {
        fti_heal_set_step(hs, 10 + r, true);
        fti_heal_stats_t st;
        int64_t t0 = fti_now_us();
        rc = fti_heal_fetch(hd, addr, 0, 10 + r, &o, fti_now_ms() + 60000, &st);
        if (rc == FT_SUCCESS && ucx && st.rma_sources != 1) {
            fprintf(stderr, "bench_heal: --ucx, but the heal did not go over ucx\n");
            rc = FT_ERR_INTERNAL;
        }
        us[r] = fti_now_us() - t0;
        if (rc == FT_SUCCESS && memcmp(src, dst, bytes) != 0) {
            fprintf(stderr, "bench_heal: the healed copy differs from the source\n");
            rc = FT_ERR_CHECKSUM;
        }
        dst[r % bytes] ^= 1; /* the next heal has something to fix */
    }
    if (rc != FT_SUCCESS)
        fprintf(stderr, "bench_heal: %s\n", FT_Error_string(rc));
    fti_rank_server_stop(srv);
    fti_heal_destroy(hd);
    fti_heal_destroy(hs);
    if (rc != FT_SUCCESS)
        return 1;
    qsort(us, (size_t)reps, sizeof(us[0]), cmp_i64);
    int64_t med = us[reps / 2];
    printf("RESULT %zu %.1f %.1f %.1f %.1f\n", bytes, (double)med, (double)us[0],
           (double)us[reps - 1], (double)bytes / (1 << 20) / ((double)med / 1e6));
    free(src);
    free(dst);
    return 0;
}
