/*
 * test_gpu.c - the nccl backends on a real GPU (issue 12 item 6).  Skips
 * (exit 77) where no CUDA device is present; never needed by CI.
 *   1. nccl in process, a slice of one: device and host buffers, every op.
 *   2. baby-nccl, a slice of one: a device buffer crosses into the child by
 *      CUDA IPC and comes back reduced in place (and a host buffer, staged).
 *   3. SIGKILL of a child that holds device memory (its IPC mapping and its
 *      NCCL communicator): the next allreduce fails within its deadline plus
 *      a second, a new slice (a new child) works, and the device's free
 *      memory comes back to within 64 MiB of what it was with a child.
 * Run by `make check` (a skip here) and `make check-gpu`.
 */
#include <cuda_runtime_api.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "comm/baby.h"
#include "comm/comm.h"
#include "ftmpi_errors.h"
#include "comm/nccl_slice.h"
#include "base/util.h"

#define N 4099
#define CHECK(c)                                                                  \
    do {                                                                          \
        if (!(c)) {                                                               \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #c); \
            exit(1);                                                              \
        }                                                                         \
    } while (0)

static char child[4096];

static fti_comm_h slice_of_one(const struct fti_comm_backend *b)
{
    fti_comm_rendezvous_t r = {.quorum_id = 1, .size = 1, .bind_host = "127.0.0.1",
                               .child_path = child};
    fti_comm_h c = NULL;
    CHECK(fti_comm_create(b, &r, fti_now_ms() + 30000, &c) == FT_SUCCESS);
    CHECK(c->rank == 0 && c->size == 1);
    return c;
}

/* Every op on a device buffer and a host buffer leaves the data as it is. */
static void identity_ops(fti_comm_h c)
{
    float want[N], got[N], *dev = NULL;
    for (int i = 0; i < N; i++)
        want[i] = (float)(i % 97) * 0.25f - 3.0f;
    CHECK(cudaMalloc((void **)&dev, sizeof(want)) == cudaSuccess);
    for (int op = 0; op < FTI_OP_COUNT; op++) {
        CHECK(cudaMemcpy(dev + 0, want, sizeof(want), cudaMemcpyHostToDevice) == cudaSuccess);
        CHECK(fti_comm_allreduce(c, dev, N, FTI_DT_FLOAT, op, fti_now_ms() + 10000) ==
              FT_SUCCESS);
        CHECK(cudaMemcpy(got, dev, sizeof(got), cudaMemcpyDeviceToHost) == cudaSuccess);
        CHECK(memcmp(got, want, sizeof(got)) == 0);
        memcpy(got, want, sizeof(got));
        CHECK(fti_comm_allreduce(c, got, N, FTI_DT_FLOAT, op, fti_now_ms() + 10000) ==
              FT_SUCCESS);
        CHECK(memcmp(got, want, sizeof(got)) == 0);
    }
    cudaFree(dev);
}

static void test_kill_respawn(const struct fti_comm_backend *b)
{
    size_t free0 = 0, free1 = 0, total = 0;
    fti_comm_h c = slice_of_one(b);
    identity_ops(c);
    CHECK(cudaMemGetInfo(&free0, &total) == cudaSuccess);
    fti_baby_h runner = fti_baby_nccl_runner(c);
    CHECK(runner != NULL && fti_baby_pid(runner) > 0);
    CHECK(kill(fti_baby_pid(runner), SIGKILL) == 0);
    float x = 1.0f, *dev = NULL;
    CHECK(cudaMalloc((void **)&dev, sizeof(x)) == cudaSuccess);
    CHECK(cudaMemcpy(dev, &x, sizeof(x), cudaMemcpyHostToDevice) == cudaSuccess);
    int64_t t0 = fti_now_ms(), deadline = t0 + 2000;
    CHECK(fti_comm_allreduce(c, dev, 1, FTI_DT_FLOAT, FTI_OP_SUM, deadline) != FT_SUCCESS);
    CHECK(fti_now_ms() <= deadline + 1000);
    fti_comm_destroy(c);
    c = slice_of_one(b); /* a new child */
    identity_ops(c);
    fti_comm_destroy(c);
    usleep(500 * 1000); /* the driver frees a dead context's memory */
    CHECK(cudaMemGetInfo(&free1, &total) == cudaSuccess);
    printf("free device memory with a child %zu MiB, after kill + respawn + exit %zu MiB\n",
           free0 >> 20, free1 >> 20);
    CHECK(free1 + (64u << 20) >= free0);
    cudaFree(dev);
}

int main(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0) {
        printf("SKIP: no CUDA device\n");
        return 77;
    }
    const char *tb = getenv("top_builddir");
    snprintf(child, sizeof(child), "%s/ftmpi-baby", tb ? tb : ".");
    const struct fti_comm_backend *nccl = fti_comm_backend_find("nccl");
    const struct fti_comm_backend *baby = fti_comm_backend_find("baby-nccl");
    CHECK(nccl != NULL && baby != NULL);
    fti_comm_h c = slice_of_one(nccl);
    identity_ops(c);
    fti_comm_destroy(c);
    printf("ok: nccl, a slice of one, device and host buffers\n");
    c = slice_of_one(baby);
    identity_ops(c);
    fti_comm_destroy(c);
    printf("ok: baby-nccl, CUDA IPC into the child and back\n");
    test_kill_respawn(baby);
    printf("ok: SIGKILL of a child holding device memory, clean respawn\n");
    return 0;
}
