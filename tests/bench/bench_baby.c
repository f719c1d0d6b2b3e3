/*
 * bench_baby.c - the baby runner's cost (doc/PERFORMANCE.md, baby-tcp):
 * two processes (this one and a fork, before any thread) build both a tcp
 * ring in process and a baby-tcp ring (the same ring in an ftmpi-baby child
 * each) on 127.0.0.1, and time allreduce of float SUM on ftmpi_mem_alloc
 * memory (the child reduces it in place: no copy), the two kinds
 * alternating per repetition so they see the same machine.  Then the child
 * respawn time: SIGKILL + reap, spawn + the first command's reply; and the
 * channel's own cost per call: allreduce of one float on a 1-rank baby
 * ring (the child does nothing but answer), back to back and with a 200 us
 * pause between calls (the child asleep when the command comes).
 * (fti_mem_alloc is what ftmpi_mem_alloc hands out.)
 *
 *   bench_baby [--max BYTES] [--reps N] [--respawns N]
 * Prints "size tcp_busbw baby_busbw ratio best_ratio" rows (MB/s, 1e6 B/s;
 * the bus bandwidth of 2 ranks is bytes / time; the medians of N, their
 * ratio, and the ratio of the fastest of each kind: on a shared machine
 * the least disturbed figure of the intrinsic cost), then
 * "respawn_ms median p90" and "call_us back-to-back paused" (medians).  FTMPI_BABY_PATH or top_builddir: the child.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "comm/baby.h"
#include "comm/comm.h"
#include "ftmpi_errors.h"
#include "base/sizes.h"
#include "comm/tcp.h"
#include "base/util.h"

static int sp; /* to the peer */
static char child[4096];

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void sync_peer(void)
{
    char c = 0;
    if (write(sp, &c, 1) != 1 || read(sp, &c, 1) != 1)
        exit(3);
}

static void swap_addr(const char *mine, char *peer)
{
    char buf[FTI_ADDRESS_SIZE] = {0};
    strncpy(buf, mine, sizeof(buf) - 1);
    if (write(sp, buf, sizeof(buf)) != (ssize_t)sizeof(buf) ||
        read(sp, peer, FTI_ADDRESS_SIZE) != FTI_ADDRESS_SIZE)
        exit(3);
}

static void build(int rank, fti_comm_h *tcp, fti_comm_h *baby)
{
    fti_tcp_listener_h l = NULL;
    fti_baby_tcp_listener_h bl = NULL;
    fti_baby_opts_t o = {.path = child};
    char peer[FTI_ADDRESS_SIZE];
    int64_t dl = fti_now_ms() + 20000;
    if (fti_tcp_listener_create("127.0.0.1", &l) != FT_SUCCESS)
        exit(4);
    swap_addr(fti_tcp_listener_address(l), peer);
    if (fti_tcp_ring_create(l, rank, 2, peer, 0, NULL, dl, tcp) != FT_SUCCESS)
        exit(4);
    fti_tcp_listener_destroy(l);
    if (fti_baby_tcp_listener_create(&o, "127.0.0.1", dl, &bl) != FT_SUCCESS)
        exit(5);
    swap_addr(fti_baby_tcp_listener_address(bl), peer);
    if (fti_baby_tcp_ring_create(bl, rank, 2, peer, 0, dl, baby) != FT_SUCCESS)
        exit(5);
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double timed(fti_comm_h c, float *buf, size_t n)
{
    sync_peer();
    double t0 = now_s();
    if (fti_comm_allreduce(c, buf, n, FTI_DT_FLOAT, FTI_OP_SUM, fti_now_ms() + 60000) !=
        FT_SUCCESS)
        exit(6);
    return now_s() - t0;
}

static void bandwidth(int rank, size_t max, int reps)
{
    fti_comm_h tcp = NULL, baby = NULL;
    build(rank, &tcp, &baby);
    float *buf = NULL;
    if (fti_mem_alloc(max, (void **)&buf) != FT_SUCCESS)
        exit(7);
    double *tt = calloc((size_t)reps, sizeof(double)), *tb = calloc((size_t)reps, sizeof(double));
    if (rank == 0)
        printf("%-10s %12s %12s %8s %8s\n", "bytes", "tcp_MB/s", "baby_MB/s", "ratio", "best");
    for (size_t bytes = 4096; bytes <= max; bytes *= 4) {
        size_t n = bytes / sizeof(float);
        timed(tcp, buf, n); /* warm-up */
        timed(baby, buf, n);
        for (int r = 0; r < reps; r++) {
            tt[r] = timed(tcp, buf, n);
            tb[r] = timed(baby, buf, n);
        }
        qsort(tt, (size_t)reps, sizeof(double), cmp);
        qsort(tb, (size_t)reps, sizeof(double), cmp);
        double mt = tt[reps / 2], mb = tb[reps / 2];
        if (rank == 0)
            printf("%-10zu %12.1f %12.1f %8.2f %8.2f\n", bytes, bytes / mt / 1e6,
                   bytes / mb / 1e6, mt / mb, tt[0] / tb[0]);
        fflush(stdout);
    }
    fti_comm_destroy(tcp);
    fti_comm_destroy(baby);
    fti_mem_free(buf);
    free(tt);
    free(tb);
}

/* Median us of one call over batches of 200: back to back, or pause_us
 * between calls (not counted). */
static double call_us(fti_comm_h c, float *buf, int pause_us)
{
    enum { BATCHES = 15, CALLS = 200 };
    double t[BATCHES];
    for (int k = 0; k < BATCHES; k++) {
        double sum = 0;
        for (int i = 0; i < CALLS; i++) {
            if (pause_us) {
                struct timespec ts = {0, pause_us * 1000L};
                nanosleep(&ts, NULL);
            }
            double t0 = now_s();
            if (fti_comm_allreduce(c, buf, 1, FTI_DT_FLOAT, FTI_OP_SUM, fti_now_ms() + 10000) !=
                FT_SUCCESS)
                exit(9);
            sum += now_s() - t0;
        }
        t[k] = sum / CALLS * 1e6;
    }
    qsort(t, BATCHES, sizeof(double), cmp);
    return t[BATCHES / 2];
}

/* The channel's cost: a 1-rank baby ring answers at once. */
static void call_cost(void)
{
    fti_baby_opts_t o = {.path = child};
    fti_baby_tcp_listener_h l = NULL;
    fti_comm_h c = NULL;
    float *buf = NULL;
    if (fti_baby_tcp_listener_create(&o, "127.0.0.1", fti_now_ms() + 10000, &l) != FT_SUCCESS ||
        fti_baby_tcp_ring_create(l, 0, 1, NULL, 0, fti_now_ms() + 10000, &c) != FT_SUCCESS ||
        fti_mem_alloc(4096, (void **)&buf) != FT_SUCCESS)
        exit(9);
    double b2b = call_us(c, buf, 0), paused = call_us(c, buf, 200);
    printf("call_us %.2f %.2f (one call's round trip to the child, back to back and 200 us "
           "apart, median)\n", b2b, paused);
    fti_comm_destroy(c);
    fti_mem_free(buf);
}

static void respawn(int n)
{
    fti_baby_opts_t o = {.path = child};
    fti_baby_h b = NULL;
    char addr[FTI_ADDRESS_SIZE];
    double *t = calloc((size_t)n, sizeof(double));
    if (t == NULL || fti_baby_create(&o, &b) != FT_SUCCESS)
        exit(8);
    for (int i = 0; i < n; i++) {
        double t0 = now_s();
        fti_baby_kill(b);
        if (fti_baby_listen(b, "127.0.0.1", fti_now_ms() + 10000, addr, sizeof(addr)) !=
            FT_SUCCESS)
            exit(8);
        t[i] = (now_s() - t0) * 1e3;
    }
    qsort(t, (size_t)n, sizeof(double), cmp);
    printf("respawn_ms %.2f %.2f (kill + reap + spawn + first reply, %d times, median p90)\n",
           t[n / 2], t[n * 9 / 10], n);
    fti_baby_destroy(b);
    free(t);
}

int main(int argc, char **argv)
{
    size_t max = 64u << 20;
    int reps = 7, respawns = 50, s[2];
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--max"))
            max = strtoull(argv[i + 1], NULL, 0);
        else if (!strcmp(argv[i], "--reps"))
            reps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--respawns"))
            respawns = atoi(argv[i + 1]);
    }
    const char *p = getenv("FTMPI_BABY_PATH"), *tb = getenv("top_builddir");
    if (p && *p)
        snprintf(child, sizeof(child), "%s", p);
    else
        snprintf(child, sizeof(child), "%s/ftmpi-baby", tb ? tb : ".");
    if (reps < 1 || respawns < 1 || socketpair(AF_UNIX, SOCK_STREAM, 0, s) != 0)
        return 2;
    fflush(stdout);
    pid_t pid = fork();
    if (pid < 0)
        return 2;
    sp = pid == 0 ? s[1] : s[0];
    bandwidth(pid == 0 ? 1 : 0, max, reps);
    if (pid == 0)
        _exit(0);
    int st = 0;
    waitpid(pid, &st, 0);
    respawn(respawns);
    call_cost();
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}
