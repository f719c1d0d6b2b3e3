/*
 * test_tcp_ring.c - the tcp data plane with real processes on loopback.
 *
 * The parent opens one listener per rank, forks the ranks (each builds the
 * ring with its own listener and the next rank's address) and reads their
 * verdicts from shared memory:
 *   - N = 1..4 ranks allreduce counts 0, 1, 7, 4099 and 1000003 over many
 *     (dtype, op) pairs, through the small-message path and the ring path;
 *     every element is checked against a locally computed value, and every
 *     rank's result must be bitwise identical (checksums);
 *   - faults: a rank SIGKILLed in the middle of large allreduces, a rank that
 *     exits instead of taking part, a rank frozen with SIGSTOP, a peer with
 *     the wrong ring size, a dead next address.  The others must return an
 *     error no later than their deadline + 1 s, and FT_ERR_ABORTED after.
 * Every wait of the parent has a timeout; every child is killed at the end.
 *
 * `test_tcp_ring --bench NP BYTES[k|m]` prints the time and bus bandwidth
 * of float SUM allreduces instead (not part of make check).
 */
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "comm/tcp.h"
#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/util.h"

#define MAXN 4
#define MAXCASES 256
#define CHUNK_BYTES 65540 /* not a multiple of 8: chunks round to whole elements */
#define CHILD_WAIT_MS 60000

struct rank_res {
    volatile int ready; /* ring built */
    int build_rc;
    int unsup_rc;
    int ncases;
    int rc[MAXCASES];
    long bad[MAXCASES]; /* elements different from the expected value */
    uint64_t sum[MAXCASES];
    /* fault scenarios */
    int frc, frc2;    /* first failing call, and the call after it */
    int64_t flate_ms; /* when the failing call returned, minus its deadline */
    int fcalls;       /* successful calls before the failure */
    double usec, gbps; /* --bench */
};

static struct rank_res *res;
static volatile int *go; /* parent -> children: start the fault phase */
static int failures;

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__);             \
            fprintf(stderr, __VA_ARGS__);                                    \
            fputc('\n', stderr);                                             \
            failures++;                                                      \
        }                                                                    \
    } while (0)

/* ---- cases ----------------------------------------------------------------- */

struct tcase {
    enum fti_dtype dt;
    enum fti_op op;
    size_t count;
    size_t small_max; /* (size_t)-1: the comm's default */
};

static int make_cases(struct tcase *c)
{
    static const size_t small_counts[] = {0, 1, 7};
    static const struct {
        enum fti_dtype dt;
        enum fti_op op;
    } big[] = {{FTI_DT_FLOAT, FTI_OP_SUM},  {FTI_DT_DOUBLE, FTI_OP_AVG},
               {FTI_DT_INT32, FTI_OP_PROD}, {FTI_DT_INT64, FTI_OP_MIN},
               {FTI_DT_UINT64, FTI_OP_MAX}, {FTI_DT_FLOAT, FTI_OP_AVG}};
    int k = 0;
    for (size_t ci = 0; ci < 3; ci++)
        for (int path = 0; path < 2; path++)
            for (int dt = 0; dt < FTI_DT_COUNT; dt++)
                for (int op = 0; op < FTI_OP_COUNT; op++)
                    if (fti_reduce_supported((enum fti_dtype)dt, (enum fti_op)op))
                        c[k++] = (struct tcase){(enum fti_dtype)dt, (enum fti_op)op,
                                                small_counts[ci], path ? 0 : (size_t)-1};
    /* a medium count through both paths */
    c[k++] = (struct tcase){FTI_DT_FLOAT, FTI_OP_SUM, 4099, (size_t)-1};
    c[k++] = (struct tcase){FTI_DT_FLOAT, FTI_OP_SUM, 4099, 0};
    c[k++] = (struct tcase){FTI_DT_DOUBLE, FTI_OP_MAX, 4099, 0};
    for (size_t i = 0; i < sizeof(big) / sizeof(big[0]); i++)
        c[k++] = (struct tcase){big[i].dt, big[i].op, 1000003, (size_t)-1};
    return k;
}

/* Small integers: sums and products of up to 4 of them are exact in every
 * type, so any reduction order gives the same bits. */
static long value(int rank, size_t i, enum fti_op op)
{
    if (op == FTI_OP_PROD)
        return (long)((i + 3u * (size_t)rank) % 5) - 2;
    return (long)((i * 7u + 13u * (size_t)rank) % 23) - 11;
}

static void fill(void *buf, size_t count, enum fti_dtype dt, enum fti_op op, int rank)
{
    for (size_t i = 0; i < count; i++) {
        long v = value(rank, i, op);
        switch (dt) {
        case FTI_DT_FLOAT: ((float *)buf)[i] = (float)v; break;
        case FTI_DT_DOUBLE: ((double *)buf)[i] = (double)v; break;
        case FTI_DT_INT: ((int *)buf)[i] = (int)v; break;
        case FTI_DT_LONG: ((long *)buf)[i] = v; break;
        case FTI_DT_INT32: ((int32_t *)buf)[i] = (int32_t)v; break;
        case FTI_DT_INT64: ((int64_t *)buf)[i] = (int64_t)v; break;
        case FTI_DT_UINT64: ((uint64_t *)buf)[i] = (uint64_t)v; break;
        default: break;
        }
    }
}

/* ---- children ---------------------------------------------------------- */

static fti_tcp_listener_h lis[MAXN];
static char addrs[MAXN][160];

/* Builds rank's ring (wrong_size: claim another ring size). */
static int child_ring(int rank, int n, int wrong_size, size_t chunk, int64_t deadline_ms,
                      fti_comm_h *c_p)
{
    for (int k = 0; k < n; k++)
        if (k != rank) {
            fti_tcp_listener_destroy(lis[k]);
            lis[k] = NULL;
        }
    int size = wrong_size ? wrong_size : n;
    return fti_tcp_ring_create(n > 1 ? lis[rank] : NULL, rank, size,
                               n > 1 ? addrs[(rank + 1) % n] : NULL, chunk, NULL, deadline_ms, c_p);
}

static void child_cases(int rank, int n, struct rank_res *me)
{
    fti_comm_h c;
    me->build_rc = child_ring(rank, n, 0, CHUNK_BYTES, fti_now_ms() + 10000, &c);
    me->ready = 1;
    if (me->build_rc != FT_SUCCESS)
        return;
    int dummy = 0;
    me->unsup_rc = fti_comm_allreduce(c, &dummy, 1, FTI_DT_INT, FTI_OP_AVG, fti_now_ms() + 1000);

    static struct tcase cases[MAXCASES];
    int nc = make_cases(cases);
    size_t maxb = 1000003 * 8;
    char *buf = malloc(maxb), *exp = malloc(maxb), *tmp = malloc(maxb);
    if (!buf || !exp || !tmp)
        return;
    for (int k = 0; k < nc; k++) {
        const struct tcase *t = &cases[k];
        size_t es = fti_dtype_size(t->dt), bytes = t->count * es;
        fill(exp, t->count, t->dt, t->op, 0);
        for (int r = 1; r < n; r++) {
            fill(tmp, t->count, t->dt, t->op, r);
            fti_reduce(exp, tmp, t->count, t->dt, t->op);
        }
        if (t->op == FTI_OP_AVG)
            fti_reduce_scale(exp, t->count, t->dt, n);
        fill(buf, t->count, t->dt, t->op, rank);
        fti_tcp_set_small_max(c, t->small_max == (size_t)-1 ? 64 * 1024 : t->small_max);
        me->rc[k] = fti_comm_allreduce(c, buf, t->count, t->dt, t->op, fti_now_ms() + 20000);
        me->bad[k] = 0;
        if (memcmp(buf, exp, bytes) != 0)
            for (size_t i = 0; i < t->count; i++)
                me->bad[k] += memcmp(buf + i * es, exp + i * es, es) != 0;
        me->sum[k] = fti_checksum64(buf, bytes, 0);
        me->ncases = k + 1;
    }
    free(buf);
    free(exp);
    free(tmp);
    fti_comm_destroy(c);
}

enum fault { F_KILL, F_EXIT, F_STOP, F_HELLO };

static void child_fault(int rank, int n, enum fault f, int victim, struct rank_res *me)
{
    fti_comm_h c;
    me->build_rc = child_ring(rank, n, f == F_HELLO && rank == victim ? n + 1 : 0, CHUNK_BYTES,
                              fti_now_ms() + 5000, &c);
    me->ready = 1;
    if (me->build_rc != FT_SUCCESS)
        return;
    if (rank == victim && f == F_EXIT)
        _exit(0); /* leaves without taking part: its sockets close */
    int64_t until = fti_now_ms() + 10000;
    while (!*go && fti_now_ms() < until)
        fti_sleep_ms(1);
    size_t count = f == F_KILL ? 4u << 20 : 1000;
    int timeout = f == F_STOP ? 1500 : 5000;
    float *buf = calloc(count, sizeof(float));
    if (buf == NULL)
        return;
    while (fti_now_ms() < until + 10000) {
        int64_t dl = fti_now_ms() + timeout;
        int rc = fti_comm_allreduce(c, buf, count, FTI_DT_FLOAT, FTI_OP_SUM, dl);
        if (rc != FT_SUCCESS) {
            me->flate_ms = fti_now_ms() - dl;
            me->frc = rc;
            me->frc2 = fti_comm_allreduce(c, buf, count, FTI_DT_FLOAT, FTI_OP_SUM,
                                          fti_now_ms() + 1000);
            break;
        }
        me->fcalls++;
    }
    free(buf);
    fti_comm_destroy(c);
}

static void child_bench(int rank, int n, size_t bytes, struct rank_res *me)
{
    fti_comm_h c;
    /* 0: the backend's default chunk, as FTMPI_CHUNK_BYTES's default */
    me->build_rc = child_ring(rank, n, 0, 0, fti_now_ms() + 5000, &c);
    me->ready = 1;
    if (me->build_rc != FT_SUCCESS)
        return;
    size_t count = bytes / sizeof(float);
    float *buf = malloc(bytes);
    if (buf == NULL)
        return;
    for (size_t i = 0; i < count; i++)
        buf[i] = 1.0f;
    int iters = bytes >= (16u << 20) ? 10 : bytes >= (1u << 20) ? 50 : bytes >= 4096 ? 500 : 20000;
    (void)fti_comm_allreduce(c, buf, count, FTI_DT_FLOAT, FTI_OP_SUM, fti_now_ms() + 20000);
    int64_t t0 = fti_now_us();
    for (int i = 0; i < iters; i++)
        if ((me->frc = fti_comm_allreduce(c, buf, count, FTI_DT_FLOAT, FTI_OP_SUM,
                                          fti_now_ms() + 60000)) != FT_SUCCESS)
            break;
    double us = (double)(fti_now_us() - t0) / iters;
    /* bus bandwidth: bytes * 2(n-1)/n per allreduce */
    me->usec = us;
    me->gbps = (double)bytes * 2.0 * (n - 1) / n / (us * 1e3);
    free(buf);
    fti_comm_destroy(c);
}

/* ---- parent ---------------------------------------------------------------- */

/* Reaps children before timeout_ms; kills (SIGKILL) and reaps any left. */
static int reap(pid_t *pids, int n, int timeout_ms)
{
    int64_t until = fti_now_ms() + timeout_ms;
    int left = 0, hung = 0;
    for (;;) {
        left = 0;
        for (int i = 0; i < n; i++) {
            if (pids[i] <= 0)
                continue;
            int st;
            pid_t p = waitpid(pids[i], &st, WNOHANG);
            if (p == pids[i] || (p < 0 && errno == ECHILD))
                pids[i] = 0;
            else
                left++;
        }
        if (left == 0 || fti_now_ms() >= until)
            break;
        fti_sleep_ms(5);
    }
    for (int i = 0; i < n; i++) {
        if (pids[i] > 0) {
            hung++;
            kill(pids[i], SIGKILL);
            (void)waitpid(pids[i], NULL, 0);
            pids[i] = 0;
        }
    }
    return hung;
}

static int open_listeners(int n)
{
    for (int k = 0; k < n; k++) {
        int rc = fti_tcp_listener_create("127.0.0.1", &lis[k]);
        if (rc != FT_SUCCESS) {
            fprintf(stderr, "listener: %s\n", FT_Error_string(rc));
            return rc;
        }
        fti_strlcpy(addrs[k], fti_tcp_listener_address(lis[k]), sizeof(addrs[k]));
    }
    return FT_SUCCESS;
}

static void close_listeners(int n)
{
    for (int k = 0; k < n; k++) {
        fti_tcp_listener_destroy(lis[k]);
        lis[k] = NULL;
    }
}

enum mode { M_CASES, M_FAULT, M_BENCH };

/* Forks n ranks running mode; the parent keeps no listener. */
static int spawn(int n, enum mode m, enum fault f, int victim, size_t bytes, pid_t *pids)
{
    memset(res, 0, sizeof(*res) * MAXN);
    *go = 0;
    if (open_listeners(n) != FT_SUCCESS)
        return -1;
    for (int r = 0; r < n; r++) {
        pid_t p = fork();
        if (p < 0) {
            perror("fork");
            return -1;
        }
        if (p == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (m == M_CASES)
                child_cases(r, n, &res[r]);
            else if (m == M_FAULT)
                child_fault(r, n, f, victim, &res[r]);
            else
                child_bench(r, n, bytes, &res[r]);
            _exit(0);
        }
        pids[r] = p;
    }
    close_listeners(n);
    return 0;
}

static int wait_ready(int n, int timeout_ms)
{
    int64_t until = fti_now_ms() + timeout_ms;
    for (;;) {
        int ready = 0;
        for (int r = 0; r < n; r++)
            ready += res[r].ready;
        if (ready == n)
            return 1;
        if (fti_now_ms() >= until)
            return 0;
        fti_sleep_ms(1);
    }
}

static void run_cases(int n)
{
    static struct tcase cases[MAXCASES];
    int nc = make_cases(cases);
    pid_t pids[MAXN];
    int64_t t0 = fti_now_ms();
    if (spawn(n, M_CASES, F_KILL, -1, 0, pids) != 0) {
        failures++;
        return;
    }
    int hung = reap(pids, n, CHILD_WAIT_MS);
    CHECK(hung == 0, "n=%d: %d ranks did not finish in %d ms", n, hung, CHILD_WAIT_MS);
    for (int r = 0; r < n; r++) {
        CHECK(res[r].build_rc == FT_SUCCESS, "n=%d rank %d: ring build: %s", n, r,
              FT_Error_string(res[r].build_rc));
        CHECK(res[r].unsup_rc == FT_ERR_UNSUPPORTED, "n=%d rank %d: int avg gave %d", n, r,
              res[r].unsup_rc);
        CHECK(res[r].ncases == nc, "n=%d rank %d: ran %d of %d cases", n, r, res[r].ncases, nc);
    }
    int bad_cases = 0;
    for (int k = 0; k < nc; k++) {
        const struct tcase *t = &cases[k];
        int ok = 1;
        for (int r = 0; r < n && r < MAXN; r++) {
            if (res[r].rc[k] != FT_SUCCESS || res[r].bad[k] != 0 ||
                res[r].sum[k] != res[0].sum[k])
                ok = 0;
        }
        if (!ok && bad_cases++ < 10)
            for (int r = 0; r < n; r++)
                fprintf(stderr, "  n=%d case %d (%s %s count %zu path %s) rank %d: rc %d, "
                        "%ld bad elements, checksum %016llx\n", n, k, fti_dtype_name(t->dt),
                        fti_op_name(t->op), t->count, t->small_max ? "auto" : "ring", r,
                        res[r].rc[k], res[r].bad[k], (unsigned long long)res[r].sum[k]);
    }
    CHECK(bad_cases == 0, "n=%d: %d of %d cases wrong or not identical on every rank", n,
          bad_cases, nc);
    printf("n=%d: %d allreduce cases checked on every rank in %lld ms\n", n, nc,
           (long long)(fti_now_ms() - t0));
}

static const char *fault_name(enum fault f)
{
    return f == F_KILL ? "SIGKILL mid-allreduce" : f == F_EXIT ? "rank exits"
           : f == F_STOP ? "rank frozen (SIGSTOP)" : "wrong ring size";
}

static void run_fault(int n, enum fault f, int victim)
{
    pid_t pids[MAXN];
    if (spawn(n, M_FAULT, f, victim, 0, pids) != 0) {
        failures++;
        return;
    }
    int ready = wait_ready(n, 10000);
    CHECK(ready, "%s: ranks not ready", fault_name(f));
    if (f == F_STOP)
        kill(pids[victim], SIGSTOP);
    *go = 1;
    if (f == F_KILL) {
        fti_sleep_ms(300);
        kill(pids[victim], SIGKILL);
    }
    /* survivors must be done well before 10 s + their deadline */
    int64_t t0 = fti_now_ms();
    int hung = 0;
    pid_t others[MAXN];
    for (int r = 0; r < n; r++)
        others[r] = r == victim ? 0 : pids[r];
    hung = reap(others, n, 20000);
    CHECK(hung == 0, "%s: %d survivors hung", fault_name(f), hung);
    long waited = (long)(fti_now_ms() - t0);
    if (pids[victim] > 0)
        kill(pids[victim], SIGKILL);
    pid_t v[1] = {pids[victim]};
    reap(v, 1, 5000);

    for (int r = 0; r < n; r++) {
        if (f == F_HELLO) {
            CHECK(res[r].build_rc == FT_ERR_BAD_MESSAGE || res[r].build_rc == FT_ERR_PROC_FAILED,
                  "%s: rank %d ring build gave %d (%s)", fault_name(f), r, res[r].build_rc,
                  FT_Error_string(res[r].build_rc));
            continue;
        }
        CHECK(res[r].build_rc == FT_SUCCESS, "%s: rank %d ring build: %s", fault_name(f), r,
              FT_Error_string(res[r].build_rc));
        if (r == victim)
            continue;
        CHECK(res[r].frc == FT_ERR_PROC_FAILED || res[r].frc == FT_ERR_TIMEOUT,
              "%s: rank %d got %d (%s)", fault_name(f), r, res[r].frc,
              FT_Error_string(res[r].frc));
        CHECK(res[r].flate_ms <= 1000, "%s: rank %d returned %lld ms after its deadline",
              fault_name(f), r, (long long)res[r].flate_ms);
        CHECK(res[r].frc2 == FT_ERR_ABORTED, "%s: rank %d: call after the failure gave %d",
              fault_name(f), r, res[r].frc2);
        if (f == F_STOP)
            CHECK(res[r].frc == FT_ERR_TIMEOUT || res[r].frc == FT_ERR_PROC_FAILED,
                  "frozen: rank %d", r);
    }
    printf("fault '%s' (n=%d, victim %d): survivors returned in %ld ms:", fault_name(f), n,
           victim, waited);
    for (int r = 0; r < n; r++)
        if (r != victim)
            printf(" rank %d %s%s (%+lld ms vs deadline, %d calls ok)", r,
                   f == F_HELLO ? "build " : "",
                   FT_Error_string(f == F_HELLO ? res[r].build_rc : res[r].frc),
                   (long long)res[r].flate_ms, res[r].fcalls);
    printf("\n");
}

/* In-process checks of ring creation that need no second process. */
static void run_local(void)
{
    fti_comm_h c = NULL;
    fti_tcp_listener_h l, dead;
    CHECK(fti_tcp_ring_create(NULL, 2, 2, "127.0.0.1:1", 0, NULL, fti_now_ms() + 100, &c) ==
              FT_ERR_ARG,
          "rank >= size accepted");
    CHECK(fti_tcp_ring_create(NULL, 0, 0, NULL, 0, NULL, fti_now_ms() + 100, &c) == FT_ERR_ARG,
          "size 0 accepted");
    CHECK(fti_tcp_listener_create("127.0.0.1", &l) == FT_SUCCESS, "listener");
    CHECK(fti_tcp_listener_create("127.0.0.1", &dead) == FT_SUCCESS, "listener");
    char dead_addr[160];
    fti_strlcpy(dead_addr, fti_tcp_listener_address(dead), sizeof(dead_addr));
    CHECK(strncmp(dead_addr, "127.0.0.1:", 10) == 0, "listener address %s", dead_addr);
    fti_tcp_listener_destroy(dead);
    int64_t t0 = fti_now_ms();
    int rc = fti_tcp_ring_create(l, 0, 2, dead_addr, 0, NULL, fti_now_ms() + 3000, &c);
    CHECK(rc == FT_ERR_CONNECT, "connect to a closed port gave %d", rc);
    CHECK(fti_now_ms() - t0 < 1000, "refused connect took %lld ms",
          (long long)(fti_now_ms() - t0));
    /* nobody connects to us: the deadline */
    fti_tcp_listener_h l2;
    CHECK(fti_tcp_listener_create("127.0.0.1", &l2) == FT_SUCCESS, "listener");
    t0 = fti_now_ms();
    rc = fti_tcp_ring_create(l, 0, 2, fti_tcp_listener_address(l2), 0, NULL, fti_now_ms() + 300,
                             &c);
    CHECK(rc == FT_ERR_TIMEOUT, "ring without a peer gave %d", rc);
    CHECK(fti_now_ms() - t0 < 1300, "deadline overrun: %lld ms", (long long)(fti_now_ms() - t0));
    fti_tcp_listener_destroy(l2);
    fti_tcp_listener_destroy(l);
}

static void run_bench(int n, size_t bytes)
{
    pid_t pids[MAXN];
    if (spawn(n, M_BENCH, F_KILL, -1, bytes, pids) != 0) {
        failures++;
        return;
    }
    CHECK(reap(pids, n, 300000) == 0, "bench hung");
    CHECK(res[0].build_rc == FT_SUCCESS && res[0].frc == FT_SUCCESS, "bench failed");
    printf("np=%d float SUM %9zu bytes: %9.1f us, bus bandwidth %.2f GB/s\n", n, bytes,
           res[0].usec, res[0].gbps);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    signal(SIGPIPE, SIG_IGN); /* belt and braces: sends use MSG_NOSIGNAL */
    void *shm = mmap(NULL, sizeof(struct rank_res) * MAXN + 64, PROT_READ | PROT_WRITE,
                     MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shm == MAP_FAILED) {
        perror("mmap");
        return 1;
    }
    res = shm;
    go = (volatile int *)(res + MAXN);

    if (argc == 4 && strcmp(argv[1], "--bench") == 0) {
        int n = atoi(argv[2]);
        if (n < 1 || n > MAXN)
            return 2;
        char *end;
        size_t bytes = (size_t)strtoul(argv[3], &end, 10);
        bytes <<= *end == 'k' ? 10 : *end == 'm' ? 20 : 0;
        if (bytes < sizeof(float))
            return 2;
        run_bench(n, bytes);
        return failures ? 1 : 0;
    }

    run_local();
    for (int n = 1; n <= MAXN; n++)
        run_cases(n);
    run_fault(3, F_KILL, 1);
    run_fault(4, F_EXIT, 3);
    run_fault(3, F_STOP, 2);
    run_fault(2, F_HELLO, 1);
    if (failures) {
        fprintf(stderr, "%d checks failed\n", failures);
        return 1;
    }
    printf("all tcp ring checks passed\n");
    return 0;
}
