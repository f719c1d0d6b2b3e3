/*
 * test_baby_slice.c - the baby-tcp slice through a real quorum store
 * (fti_baby_slice_create): a store server process, 3 rank processes that
 * rendezvous for quorum 7 (a ring of 3 ftmpi-baby children) and allreduce,
 * then quorum 8 without rank 2 (new children, a ring of 2).  Each rank
 * checks its sums and that quorum 8 runs in a different child.
 */
#include <event2/event.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "comm/baby_slice.h"
#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/rpc.h"
#include "base/sizes.h"
#include "control/store.h"
#include "base/util.h"

#define WAIT_MS 60000

struct shared {
    char store[FTI_ADDRESS_SIZE];
    volatile int store_up;
    int rc[3][2];
    long bad[3][2];
    int new_child[3];
};
static struct shared *S;

static void store_main(void)
{
    struct event_base *base = event_base_new();
    fti_store_server_h st;
    fti_rpc_server_h rpc;
    fti_rpc_method_t m[8];
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (base == NULL || fti_store_server_create(base, &st) != FT_SUCCESS)
        _exit(1);
    size_t n = fti_store_server_methods(m, 8);
    if (fti_rpc_server_create(base, "127.0.0.1:0", FTI_STORE_MAX_FRAME, NULL, m, n, st, &rpc) !=
        FT_SUCCESS)
        _exit(1);
    fti_strlcpy(S->store, fti_rpc_server_address(rpc), sizeof(S->store));
    __atomic_store_n(&S->store_up, 1, __ATOMIC_SEQ_CST);
    event_base_loop(base, EVLOOP_NO_EXIT_ON_EMPTY);
    _exit(0);
}

static int one_quorum(const char *baby, int q, int rank, int size, pid_t *child_p, long *bad)
{
    fti_baby_opts_t o = {.path = baby};
    fti_slice_params_t p = {.quorum_id = q, .group_rank = 0, .replica_rank = rank,
                            .size = size, .store_address = S->store, .bind_host = "127.0.0.1",
                            .connect_timeout_ms = 5000};
    fti_comm_h c = NULL;
    int32_t v[5000];
    for (int i = 0; i < 5000; i++)
        v[i] = i * (rank + 1);
    int rc = fti_baby_slice_create(&p, &o, fti_now_ms() + 20000, &c);
    if (rc == FT_SUCCESS) {
        *child_p = fti_baby_pid(fti_baby_tcp_runner(c));
        rc = fti_comm_allreduce(c, v, 5000, FTI_DT_INT32, FTI_OP_SUM, fti_now_ms() + 20000);
    }
    int f = size * (size + 1) / 2; /* sum of rank + 1 */
    for (int i = 0; i < 5000 && rc == FT_SUCCESS; i++)
        *bad += v[i] != i * f;
    fti_comm_destroy(c);
    return rc;
}

static void rank_main(const char *baby, int rank)
{
    pid_t c7 = -1, c8 = -1;
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    S->rc[rank][0] = one_quorum(baby, 7, rank, 3, &c7, &S->bad[rank][0]);
    if (rank < 2) {
        S->rc[rank][1] = one_quorum(baby, 8, rank, 2, &c8, &S->bad[rank][1]);
        S->new_child[rank] = c8 > 0 && c8 != c7;
    }
    _exit(0);
}

int main(void)
{
    const char *top = getenv("top_builddir");
    char baby[FTI_PATH_SIZE];
    snprintf(baby, sizeof(baby), "%s/ftmpi-baby", top ? top : ".");
    if (access(baby, X_OK) != 0)
        return 77;
    S = mmap(NULL, sizeof(*S), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (S == MAP_FAILED)
        return 1;
    fti_log_init("test_baby_slice", FTI_LOG_ERROR);
    alarm(120);
    pid_t store = fork();
    if (store == 0)
        store_main();
    int64_t end = fti_now_ms() + WAIT_MS;
    while (!__atomic_load_n(&S->store_up, __ATOMIC_SEQ_CST) && fti_now_ms() < end)
        fti_sleep_ms(2);
    pid_t r[3];
    for (int k = 0; k < 3; k++)
        if ((r[k] = fork()) == 0)
            rank_main(baby, k);
    int failures = 0;
    for (int k = 0; k < 3; k++) {
        int st = 0;
        while (waitpid(r[k], &st, WNOHANG) == 0 && fti_now_ms() < end)
            fti_sleep_ms(5);
        if (fti_now_ms() >= end) {
            kill(r[k], SIGKILL);
            waitpid(r[k], &st, 0);
        }
        failures += !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    }
    kill(store, SIGKILL);
    waitpid(store, NULL, 0);
    for (int k = 0; k < 3; k++) {
        printf("rank %d: quorum 7 rc %d (%ld wrong)", k, S->rc[k][0], S->bad[k][0]);
        failures += S->rc[k][0] != FT_SUCCESS || S->bad[k][0] != 0;
        if (k < 2) {
            printf(", quorum 8 rc %d (%ld wrong) in a new child: %d", S->rc[k][1], S->bad[k][1],
                   S->new_child[k]);
            failures += S->rc[k][1] != FT_SUCCESS || S->bad[k][1] != 0 || !S->new_child[k];
        }
        printf("\n");
    }
    printf("%s\n", failures ? "FAIL" : "PASS");
    return failures ? 1 : 0;
}
