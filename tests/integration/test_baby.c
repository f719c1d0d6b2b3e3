/*
 * test_baby.c - the baby runner (src/comm/baby.c) with real ftmpi-baby
 * children on loopback, no MPI and no GPU:
 *   - equal: N = 1..3 rank processes, each with its own child, form a
 *     baby-tcp ring and an in-process tcp ring; every case (several sizes,
 *     types and ops, on malloc'd buffers that are staged and on
 *     fti_mem_alloc'd ones the child reduces in place) must give the same
 *     bits on both, and on every rank;
 *   - B1: one rank's child SIGKILLed in the middle of large allreduces: both
 *     ranks' calls fail within their deadline + 1 s, and the next quorum's
 *     ring (new children) computes the right sums;
 *   - B2: one rank's child SIGSTOPped: its rank kills it at the deadline
 *     (FT_ERR_TIMEOUT, the child reaped), the other's call fails by then;
 *   - channel: a child that answers garbage, a wrong sequence number, a huge
 *     length, half a header, nothing, or closes the channel: each call
 *     fails within its deadline + 1 s and the child is reaped;
 *   - auth: with a job key (auth.h) the child's ring runs the same
 *     challenge-response as the in-process tcp ring: a child and an
 *     in-process rank with the key, or two children, form a ring; a peer
 *     without the key or with another is refused (FT_ERR_AUTH);
 *   - B3: 500 children started and ended (half killed after an allreduce,
 *     half ended normally): the open fds, memfd mappings, threads and child
 *     processes of this process return to their starting counts.
 * `test_baby --bench NP BYTES` prints baby-tcp vs tcp bus bandwidth.
 */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/auth.h"
#include "comm/baby.h"
#include "comm/comm.h"
#include "comm/tcp.h"
#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/sizes.h"
#include "base/util.h"

#define MAXN 3
#define MAXCASES 64
#define RANK_WAIT_MS 120000

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

#define NPHASE 8

/* shared between the test and its rank processes */
struct shared {
    char addr[NPHASE][MAXN][FTI_ADDRESS_SIZE]; /* listeners of each phase */
    volatile int published[NPHASE];            /* ranks that published, per phase */
    volatile int ready[MAXN];
    volatile pid_t child[MAXN];
    int rc[MAXN][2][MAXCASES];
    uint64_t sum[MAXN][2][MAXCASES];
    int frc[MAXN], frc2[MAXN], nrc[MAXN], reaped[MAXN];
    int64_t flate_ms[MAXN]; /* failing call's return minus its deadline */
    long nbad[MAXN];
    double gbps[MAXN][2];
    int arc[NPHASE][MAXN][2]; /* auth phases: ring create, allreduce */
    long abad[NPHASE][MAXN];
};
static struct shared *S;
static char baby_path[FTI_PATH_SIZE], fake_path[FTI_PATH_SIZE];

struct tcase {
    enum fti_dtype dt;
    enum fti_op op;
    size_t count;
    int shared_mem; /* buffer from fti_mem_alloc */
};

static int make_cases(struct tcase *c)
{
    static const size_t counts[] = {0, 1, 7, 4099, 300007};
    static const struct {
        enum fti_dtype dt;
        enum fti_op op;
    } ops[] = {{FTI_DT_FLOAT, FTI_OP_SUM},  {FTI_DT_DOUBLE, FTI_OP_AVG},
               {FTI_DT_FLOAT, FTI_OP_AVG},  {FTI_DT_INT32, FTI_OP_PROD},
               {FTI_DT_INT64, FTI_OP_MIN},  {FTI_DT_UINT64, FTI_OP_MAX},
               {FTI_DT_DOUBLE, FTI_OP_SUM}};
    int k = 0;
    for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++)
        for (size_t j = 0; j < sizeof(ops) / sizeof(ops[0]); j++)
            c[k++] = (struct tcase){ops[j].dt, ops[j].op, counts[i], (int)((i + j) % 2)};
    return k;
}

/* Values whose sums depend on the order of the additions (floats), so equal
 * bits mean the same reduction order. */
static void fill(void *buf, size_t count, enum fti_dtype dt, enum fti_op op, int rank)
{
    for (size_t i = 0; i < count; i++) {
        double v = sin((double)i * 0.37 + rank) * 1000.0 / (1.0 + (double)(i % 13));
        long l = op == FTI_OP_PROD ? (long)((i + 3u * (size_t)rank) % 5) - 2 : (long)(v * 1000);
        switch (dt) {
        case FTI_DT_FLOAT: ((float *)buf)[i] = (float)v; break;
        case FTI_DT_DOUBLE: ((double *)buf)[i] = v; break;
        case FTI_DT_INT32: ((int32_t *)buf)[i] = (int32_t)l; break;
        case FTI_DT_INT64: ((int64_t *)buf)[i] = (int64_t)l; break;
        case FTI_DT_UINT64: ((uint64_t *)buf)[i] = (uint64_t)l; break;
        default: break;
        }
    }
}

static void wait_count(volatile int *counter, int n)
{
    int64_t end = fti_now_ms() + RANK_WAIT_MS;
    while (__atomic_load_n(counter, __ATOMIC_SEQ_CST) < n && fti_now_ms() < end)
        fti_sleep_ms(1);
}

/* Builds rank's ring of phase ph (the listeners' addresses meet in S, as in
 * the quorum's store); baby: 1 baby-tcp, 0 tcp. */
static int build(int baby, int ph, int rank, int n, const fti_auth_key_t *key, int64_t deadline_ms,
                 fti_comm_h *c_p)
{
    fti_baby_opts_t o = {.path = baby_path, .key = key};
    fti_tcp_listener_h tl = NULL;
    fti_baby_tcp_listener_h bl = NULL;
    int rc = baby ? fti_baby_tcp_listener_create(&o, "127.0.0.1", deadline_ms, &bl)
                  : fti_tcp_listener_create("127.0.0.1", &tl);
    if (rc != FT_SUCCESS)
        return rc;
    fti_strlcpy(S->addr[ph][rank],
                baby ? fti_baby_tcp_listener_address(bl) : fti_tcp_listener_address(tl),
                FTI_ADDRESS_SIZE);
    __atomic_add_fetch(&S->published[ph], 1, __ATOMIC_SEQ_CST);
    wait_count(&S->published[ph], n);
    const char *next = S->addr[ph][(rank + 1) % n];
    if (baby)
        return fti_baby_tcp_ring_create(bl, rank, n, next, 0, deadline_ms, c_p);
    rc = fti_tcp_ring_create(tl, rank, n, next, 0, key, deadline_ms, c_p);
    fti_tcp_listener_destroy(tl);
    return rc;
}

/* ---- rank processes -------------------------------------------------------- */

static void rank_equal(int rank, int n)
{
    static struct tcase cases[MAXCASES];
    int nc = make_cases(cases);
    size_t maxb = 300007 * 8;
    char *heap = malloc(maxb), *shm = NULL;
    if (heap == NULL || fti_mem_alloc(maxb, (void **)&shm) != FT_SUCCESS)
        return;
    for (int b = 0; b < 2; b++) {
        fti_comm_h c = NULL;
        int rc = build(b, b, rank, n, NULL, fti_now_ms() + 20000, &c);
        for (int k = 0; k < nc; k++) {
            const struct tcase *t = &cases[k];
            char *buf = t->shared_mem ? shm : heap;
            fill(buf, t->count, t->dt, t->op, rank);
            S->rc[rank][b][k] = rc != FT_SUCCESS ? rc
                : fti_comm_allreduce(c, buf, t->count, t->dt, t->op, fti_now_ms() + 20000);
            S->sum[rank][b][k] = fti_checksum64(buf, t->count * fti_dtype_size(t->dt), 0);
        }
        fti_comm_destroy(c);
    }
    fti_mem_free(shm);
    free(heap);
}

/* The next quorum after a failure: new children, a sum to check. */
static void rank_next_quorum(int ph, int rank, int n)
{
    fti_comm_h c = NULL;
    int32_t v[1000];
    for (int i = 0; i < 1000; i++)
        v[i] = i + rank;
    S->nrc[rank] = build(1, ph, rank, n, NULL, fti_now_ms() + 20000, &c);
    if (S->nrc[rank] == FT_SUCCESS)
        S->nrc[rank] = fti_comm_allreduce(c, v, 1000, FTI_DT_INT32, FTI_OP_SUM,
                                          fti_now_ms() + 20000);
    for (int i = 0; i < 1000; i++)
        S->nbad[rank] += v[i] != 2 * i + 1;
    fti_comm_destroy(c);
}

/* B1/B2: allreduce until the test kills or stops a child. */
static void rank_fault(int ph, int rank, int n, int deadline_ms)
{
    fti_comm_h c = NULL;
    size_t count = 4u << 20;
    float *buf = NULL;
    S->frc[rank] = build(1, ph, rank, n, NULL, fti_now_ms() + 20000, &c);
    if (S->frc[rank] != FT_SUCCESS || fti_mem_alloc(count * sizeof(float), (void **)&buf))
        return;
    pid_t pid = fti_baby_pid(fti_baby_tcp_runner(c));
    S->child[rank] = pid;
    __atomic_store_n(&S->ready[rank], 1, __ATOMIC_SEQ_CST);
    int rc = FT_SUCCESS;
    int64_t deadline = 0;
    for (int i = 0; i < 100000 && rc == FT_SUCCESS; i++) {
        deadline = fti_now_ms() + deadline_ms;
        rc = fti_comm_allreduce(c, buf, count, FTI_DT_FLOAT, FTI_OP_SUM, deadline);
    }
    S->flate_ms[rank] = fti_now_ms() - deadline;
    S->frc[rank] = rc;
    S->frc2[rank] = fti_comm_allreduce(c, buf, 16, FTI_DT_FLOAT, FTI_OP_SUM, fti_now_ms() + 1000);
    S->reaped[rank] = kill(pid, 0) != 0 && errno == ESRCH;
    fti_comm_destroy(c);
    fti_mem_free(buf);
    rank_next_quorum(ph + 1, rank, n);
}

/* The auth phases: per rank of 2, baby-tcp (1) or tcp in process (0), and
 * its key (0 none, 1 the job's, 2 another); ok: the ring must work. */
static const struct {
    int baby[2], key[2], ok;
    const char *what;
} auth_ph[] = {
    {{1, 0}, {1, 1}, 1, "child + in-process rank, same key"},
    {{1, 1}, {1, 1}, 1, "two children, same key"},
    {{1, 0}, {1, 0}, 0, "child with the key, in-process rank without"},
    {{1, 1}, {1, 2}, 0, "two children, different keys"},
    {{1, 0}, {0, 1}, 0, "child without a key, in-process rank with it"},
};
#define NAUTH ((int)(sizeof(auth_ph) / sizeof(auth_ph[0])))

static void rank_auth(int rank)
{
    fti_auth_key_t k[3];
    fti_auth_key_from_token("baby-job-secret", &k[1]);
    fti_auth_key_from_token("a-guess-7f3a9c2e41b8d6057e1f", &k[2]);
    for (int ph = 0; ph < NAUTH; ph++) {
        int key = auth_ph[ph].key[rank];
        fti_comm_h c = NULL;
        int32_t v[1000];
        for (int i = 0; i < 1000; i++)
            v[i] = i + rank;
        int rc = build(auth_ph[ph].baby[rank], ph, rank, 2, key ? &k[key] : NULL,
                       fti_now_ms() + 5000, &c);
        S->arc[ph][rank][0] = rc;
        S->arc[ph][rank][1] = rc != FT_SUCCESS ? rc
            : fti_comm_allreduce(c, v, 1000, FTI_DT_INT32, FTI_OP_SUM, fti_now_ms() + 5000);
        for (int i = 0; i < 1000; i++)
            S->abad[ph][rank] += v[i] != 2 * i + 1;
        fti_comm_destroy(c);
    }
}

/* ---- the test's side -------------------------------------------------------- */

enum scenario { SC_EQUAL, SC_KILL, SC_STOP, SC_BENCH, SC_AUTH };
static size_t bench_bytes;

static void bench_rank(int rank, int n)
{
    float *buf = NULL;
    size_t count = bench_bytes / sizeof(float);
    if (fti_mem_alloc(count * sizeof(float), (void **)&buf) != FT_SUCCESS)
        return;
    for (int b = 0; b < 2; b++) {
        fti_comm_h c = NULL;
        if (build(b, b, rank, n, NULL, fti_now_ms() + 20000, &c) != FT_SUCCESS)
            return;
        int iters = (int)FTI_MAX(5, (256u << 20) / FTI_MAX(bench_bytes, 1));
        fti_comm_allreduce(c, buf, count, FTI_DT_FLOAT, FTI_OP_SUM, fti_now_ms() + 60000);
        int64_t t0 = fti_now_us();
        for (int i = 0; i < iters; i++)
            fti_comm_allreduce(c, buf, count, FTI_DT_FLOAT, FTI_OP_SUM, fti_now_ms() + 60000);
        double s = (double)(fti_now_us() - t0) / 1e6 / iters;
        S->gbps[rank][b] = 2.0 * (n - 1) / n * (double)bench_bytes / s / 1e9;
        fti_comm_destroy(c);
    }
    fti_mem_free(buf);
}

static void rank_main(enum scenario sc, int rank, int n)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (sc == SC_EQUAL)
        rank_equal(rank, n);
    else if (sc == SC_BENCH)
        bench_rank(rank, n);
    else if (sc == SC_AUTH)
        rank_auth(rank);
    else
        rank_fault(2, rank, n, sc == SC_KILL ? 5000 : 2000);
    _exit(0);
}

static void reset_shared(void)
{
    memset(S, 0, sizeof(*S));
}

/* Runs n rank processes; for a fault, victim's child is killed or stopped
 * once every rank allreduces. */
static void run_ranks(enum scenario sc, int n, int victim)
{
    pid_t pids[MAXN];
    reset_shared();
    for (int r = 0; r < n; r++) {
        pids[r] = fork();
        if (pids[r] == 0)
            rank_main(sc, r, n);
    }
    if (sc == SC_KILL || sc == SC_STOP) {
        int ready = 0;
        int64_t end = fti_now_ms() + RANK_WAIT_MS;
        while (ready < n && fti_now_ms() < end) {
            ready = 0;
            for (int r = 0; r < n; r++)
                ready += __atomic_load_n(&S->ready[r], __ATOMIC_SEQ_CST);
            fti_sleep_ms(2);
        }
        fti_sleep_ms(300); /* mid-allreduce */
        if (ready == n)
            kill(S->child[victim], sc == SC_KILL ? SIGKILL : SIGSTOP);
        CHECK(ready == n, "ranks not ready (%d of %d)", ready, n);
    }
    int64_t end = fti_now_ms() + RANK_WAIT_MS;
    for (int r = 0; r < n; r++) {
        int st = 0;
        while (waitpid(pids[r], &st, WNOHANG) == 0 && fti_now_ms() < end)
            fti_sleep_ms(5);
        if (fti_now_ms() >= end) {
            kill(pids[r], SIGKILL);
            waitpid(pids[r], &st, 0);
            CHECK(0, "rank %d hung", r);
        }
        CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0, "rank %d ended with status %#x", r, st);
    }
}

static void test_equal(int n)
{
    static struct tcase cases[MAXCASES];
    int nc = make_cases(cases);
    run_ranks(SC_EQUAL, n, -1);
    int same = 0;
    for (int r = 0; r < n; r++)
        for (int k = 0; k < nc; k++) {
            const struct tcase *t = &cases[k];
            CHECK(S->rc[r][0][k] == FT_SUCCESS && S->rc[r][1][k] == FT_SUCCESS,
                  "n=%d rank %d case %d (%s %s %zu): rc tcp %d baby %d", n, r, k,
                  fti_dtype_name(t->dt), fti_op_name(t->op), t->count, S->rc[r][0][k],
                  S->rc[r][1][k]);
            CHECK(S->sum[r][1][k] == S->sum[r][0][k],
                  "n=%d rank %d case %d (%s %s %zu, %s): baby-tcp bits differ from tcp", n, r,
                  k, fti_dtype_name(t->dt), fti_op_name(t->op), t->count,
                  t->shared_mem ? "ftmpi_mem_alloc" : "staged");
            CHECK(S->sum[r][1][k] == S->sum[0][1][k], "n=%d case %d: rank %d differs from 0",
                  n, k, r);
            same += S->sum[r][1][k] == S->sum[r][0][k];
        }
    printf("equal n=%d: %d of %d results bitwise equal to tcp\n", n, same, n * nc);
}

static void test_fault(enum scenario sc)
{
    const char *what = sc == SC_KILL ? "B1 (SIGKILL)" : "B2 (SIGSTOP)";
    run_ranks(sc, 2, 1);
    for (int r = 0; r < 2; r++) {
        CHECK(S->frc[r] != FT_SUCCESS, "%s rank %d: no failure", what, r);
        CHECK(S->flate_ms[r] <= 1000, "%s rank %d: failed %lld ms after its deadline", what,
              r, (long long)S->flate_ms[r]);
        CHECK(S->frc2[r] == FT_ERR_ABORTED, "%s rank %d: the call after the failure: %d",
              what, r, S->frc2[r]);
        CHECK(S->reaped[r], "%s rank %d: the old child is still there", what, r);
        CHECK(S->nrc[r] == FT_SUCCESS && S->nbad[r] == 0,
              "%s rank %d: next quorum rc %d, %ld wrong", what, r, S->nrc[r], S->nbad[r]);
    }
    if (sc == SC_STOP) {
        CHECK(S->frc[1] == FT_ERR_TIMEOUT, "B2: the stopped child's rank got %d", S->frc[1]);
        CHECK(S->flate_ms[1] >= 0, "B2: rank 1 gave up %lld ms before its deadline",
              (long long)-S->flate_ms[1]);
    }
    printf("%s: rc %d/%d, %lld/%lld ms past the deadline, next quorum ok %d/%d\n", what,
           S->frc[0], S->frc[1], (long long)S->flate_ms[0], (long long)S->flate_ms[1],
           S->nrc[0] == 0, S->nrc[1] == 0);
}

static void test_channel(void)
{
    static const struct {
        const char *mode;
        int rc;
    } m[] = {{"garbage", FT_ERR_BAD_MESSAGE}, {"close", FT_ERR_PROC_FAILED},
             {"silent", FT_ERR_TIMEOUT},      {"wrongseq", FT_ERR_BAD_MESSAGE},
             {"huge", FT_ERR_BAD_MESSAGE},    {"trickle", FT_ERR_TIMEOUT}};
    for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++) {
        char env[64];
        snprintf(env, sizeof(env), "BABY_FAKE_MODE=%s", m[i].mode);
        const char *envv[] = {env, NULL};
        fti_baby_opts_t o = {.path = fake_path, .env = envv};
        fti_baby_h b = NULL;
        char addr[FTI_ADDRESS_SIZE];
        CHECK(fti_baby_create(&o, &b) == FT_SUCCESS, "create");
        int64_t t0 = fti_now_ms(), deadline = t0 + 1000;
        int rc = fti_baby_listen(b, "127.0.0.1", deadline, addr, sizeof(addr));
        pid_t after = fti_baby_pid(b);
        int64_t late = fti_now_ms() - deadline;
        CHECK(rc == m[i].rc, "channel %s: rc %d, expected %d", m[i].mode, rc, m[i].rc);
        CHECK(late <= 1000, "channel %s: returned %lld ms after the deadline", m[i].mode,
              (long long)late);
        CHECK(after == -1, "channel %s: the child was not killed", m[i].mode);
        /* the runner is dead until a new child: a command fails at once */
        int x = 1;
        CHECK(fti_baby_allreduce(b, &x, 1, FTI_DT_INT, FTI_OP_SUM, fti_now_ms() + 1000) ==
                  FT_ERR_ABORTED, "channel %s: allreduce on a dead runner", m[i].mode);
        fti_baby_destroy(b);
        printf("channel %s: rc %d after %lld ms (deadline 1000 ms)\n", m[i].mode, rc,
               (long long)(fti_now_ms() - t0));
    }
}

/* A child that does not take the job key is never used: killed at once. */
static void auth_refused(void)
{
    fti_auth_key_t k;
    fti_auth_key_from_token("baby-job-secret", &k);
    const char *envv[] = {"BABY_FAKE_MODE=refuse", NULL};
    fti_baby_opts_t o = {.path = fake_path, .env = envv, .key = &k};
    fti_baby_h b = NULL;
    char addr[FTI_ADDRESS_SIZE];
    CHECK(fti_baby_create(&o, &b) == FT_SUCCESS, "create");
    int rc = fti_baby_listen(b, "127.0.0.1", fti_now_ms() + 5000, addr, sizeof(addr));
    CHECK(rc == FT_ERR_STATE, "auth: a child that refused the key: listen gave %d", rc);
    CHECK(fti_baby_pid(b) == -1, "auth: a child that refused the key was kept");
    printf("auth (a child that refuses the key): rc %d, killed %s\n", rc,
           fti_baby_pid(b) == -1 ? "yes" : "no");
    fti_baby_destroy(b);
}

static void test_auth(void)
{
    auth_refused();
    run_ranks(SC_AUTH, 2, -1);
    for (int ph = 0; ph < NAUTH; ph++) {
        const int *rc = S->arc[ph][0];
        if (auth_ph[ph].ok) {
            for (int r = 0; r < 2; r++)
                CHECK(S->arc[ph][r][1] == FT_SUCCESS && S->abad[ph][r] == 0,
                      "auth (%s): rank %d: create %d, allreduce %d, %ld wrong",
                      auth_ph[ph].what, r, S->arc[ph][r][0], S->arc[ph][r][1],
                      S->abad[ph][r]);
        } else {
            /* the rank with the key refuses the other before any data */
            int keyed = auth_ph[ph].key[0] == 1 ? 0 : 1;
            CHECK(S->arc[ph][keyed][0] == FT_ERR_AUTH,
                  "auth (%s): the keyed rank %d built the ring: %d", auth_ph[ph].what, keyed,
                  S->arc[ph][keyed][0]);
            for (int r = 0; r < 2; r++)
                CHECK(S->arc[ph][r][1] != FT_SUCCESS, "auth (%s): rank %d allreduced",
                      auth_ph[ph].what, r);
        }
        printf("auth (%s): rank 0 create %d allreduce %d, rank 1 create %d allreduce %d\n",
               auth_ph[ph].what, rc[0], rc[1], S->arc[ph][1][0], S->arc[ph][1][1]);
    }
}

/* ---- B3: counts of this process's resources ------------------------------- */

static int count_dir(const char *path)
{
    DIR *d = opendir(path);
    int n = 0;
    if (d == NULL)
        return -1;
    for (struct dirent *e; (e = readdir(d));)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

static int count_memfd_maps(void)
{
    FILE *f = fopen("/proc/self/maps", "r");
    char line[512];
    int n = 0;
    if (f == NULL)
        return -1;
    while (fgets(line, sizeof(line), f))
        n += strstr(line, "/memfd:") != NULL;
    fclose(f);
    return n;
}

static int count_children(void)
{
    DIR *d = opendir("/proc");
    int n = 0;
    if (d == NULL)
        return -1;
    for (struct dirent *e; (e = readdir(d));) {
        char p[300], buf[512];
        if (e->d_name[0] < '0' || e->d_name[0] > '9')
            continue;
        snprintf(p, sizeof(p), "/proc/%s/stat", e->d_name);
        FILE *f = fopen(p, "r");
        if (f == NULL)
            continue;
        size_t len = fread(buf, 1, sizeof(buf) - 1, f);
        fclose(f);
        buf[len] = '\0';
        char *rp = strrchr(buf, ')');
        int ppid = 0;
        if (rp && sscanf(rp + 2, "%*c %d", &ppid) == 1 && ppid == (int)getpid())
            n++;
    }
    closedir(d);
    return n;
}

struct counts {
    int fds, maps, threads, children;
};

static struct counts counts_now(void)
{
    return (struct counts){count_dir("/proc/self/fd"), count_memfd_maps(),
                           count_dir("/proc/self/task"), count_children()};
}

static void test_respawns(int rounds)
{
    struct counts c0 = counts_now();
    size_t regions0 = fti_mem_regions();
    int bad = 0;
    int64_t t0 = fti_now_us();
    for (int i = 0; i < rounds; i++) {
        fti_baby_opts_t o = {.path = baby_path};
        fti_baby_tcp_listener_h l = NULL;
        fti_comm_h c = NULL;
        float heap[64] = {1.5f}, *shm = NULL;
        int rc = fti_baby_tcp_listener_create(&o, "127.0.0.1", fti_now_ms() + 10000, &l);
        if (rc == FT_SUCCESS)
            rc = fti_baby_tcp_ring_create(l, 0, 1, NULL, 0, fti_now_ms() + 10000, &c);
        if (rc == FT_SUCCESS)
            rc = fti_mem_alloc(4096, (void **)&shm);
        if (rc == FT_SUCCESS)
            rc = fti_comm_allreduce(c, heap, 64, FTI_DT_FLOAT, FTI_OP_SUM, fti_now_ms() + 10000);
        if (rc == FT_SUCCESS)
            rc = fti_comm_allreduce(c, shm, 1024, FTI_DT_FLOAT, FTI_OP_SUM, fti_now_ms() + 10000);
        if (rc == FT_SUCCESS && i % 2) {
            kill(fti_baby_pid(fti_baby_tcp_runner(c)), SIGKILL); /* a child that dies */
            rc = fti_comm_allreduce(c, heap, 64, FTI_DT_FLOAT, FTI_OP_SUM, fti_now_ms() + 10000)
                     == FT_ERR_PROC_FAILED ? FT_SUCCESS : FT_ERR_INTERNAL;
        }
        bad += rc != FT_SUCCESS || heap[0] != 1.5f;
        fti_comm_destroy(c);
        fti_mem_free(shm);
    }
    double per_ms = (double)(fti_now_us() - t0) / 1000.0 / rounds;
    struct counts c1 = counts_now();
    CHECK(bad == 0, "B3: %d of %d rounds failed", bad, rounds);
    CHECK(c1.fds == c0.fds && c1.maps == c0.maps && c1.threads == c0.threads &&
              c1.children == c0.children && fti_mem_regions() == regions0,
          "B3: fds %d -> %d, memfd maps %d -> %d, threads %d -> %d, children %d -> %d, "
          "regions %zu -> %zu", c0.fds, c1.fds, c0.maps, c1.maps, c0.threads, c1.threads,
          c0.children, c1.children, regions0, fti_mem_regions());
    printf("B3: %d children started and ended (%.2f ms a round): fds %d, memfd maps %d, "
           "threads %d, children %d (before and after equal: %s)\n", rounds, per_ms, c1.fds,
           c1.maps, c1.threads, c1.children,
           c1.fds == c0.fds && c1.maps == c0.maps && c1.children == c0.children ? "yes" : "no");
}

int main(int argc, char **argv)
{
    const char *top = getenv("top_builddir");
    snprintf(baby_path, sizeof(baby_path), "%s/ftmpi-baby", top ? top : ".");
    snprintf(fake_path, sizeof(fake_path), "%s/tests/integration/test_baby_fake", top ? top : ".");
    if (access(baby_path, X_OK) != 0) {
        fprintf(stderr, "SKIP: %s not built\n", baby_path);
        return 77;
    }
    S = mmap(NULL, sizeof(*S), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (S == MAP_FAILED)
        return 1;
    fti_log_init("test_baby", FTI_LOG_ERROR);
    alarm(600); /* the last resort: every wait above has its own timeout */
    if (argc == 4 && !strcmp(argv[1], "--bench")) {
        int n = atoi(argv[2]);
        bench_bytes = (size_t)strtoull(argv[3], NULL, 0);
        if (n < 2 || n > MAXN || bench_bytes < 4)
            return 2;
        run_ranks(SC_BENCH, n, -1);
        for (int r = 0; r < n; r++)
            printf("rank %d: %zu bytes: tcp %.3f GB/s, baby-tcp %.3f GB/s, ratio %.3f\n", r,
                   bench_bytes, S->gbps[r][0], S->gbps[r][1], S->gbps[r][1] / S->gbps[r][0]);
        return 0;
    }
    if (argc == 3 && !strcmp(argv[1], "--respawns")) {
        test_respawns(atoi(argv[2])); /* that alone */
    } else if (argc == 2 && !strcmp(argv[1], "--auth")) {
        test_auth(); /* that alone */
    } else if (argc == 1) {
        for (int n = 1; n <= MAXN; n++)
            test_equal(n);
        test_fault(SC_KILL);
        test_fault(SC_STOP);
        test_channel();
        test_auth();
        test_respawns(500);
    } else {
        fprintf(stderr, "usage: test_baby [--respawns N | --auth | --bench NP BYTES]\n");
        return 2;
    }
    printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
