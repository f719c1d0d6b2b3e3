/*
 * gpu_heal.c - healing device state: each group (one rank) keeps its
 * parameters w in cudaMalloc'ed memory registered with FT_State_register.
 * Every step it reduces a gradient (a function of the step and the index,
 * the same in every group) with FT_AVG and, once committed, adds it to w
 * (through the host: no kernels).  A group that starts late heals w from a
 * live group (the source's pinned mirror, the socket, the healer's staging,
 * cudaMemcpy into w): its first FT_Quorum moves it past step 0 and it
 * prints "healed at step N"; every group ends with the same
 * "final steps=... sum=<hex checksum of w>".  "step N loss X" lines follow
 * ft_sgd's, so the e2e helpers can follow the steps.
 *
 *   gpu_heal [--steps N] [--count C] [--sleep-ms M] [--host 1]
 * --host 1: the weights in host memory (the heal benchmark's baseline); the
 * healed line gives the first FT_Quorum's time, which includes the heal.
 * Exit 0 when every step committed; 77 without a device.
 */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "ftmpi.h"

static int fail(const char *what, int rc)
{
    fprintf(stderr, "gpu_heal: %s: %d\n", what, rc);
    return 1;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* One step: FT_AVG of the step's gradient in g (device), w += g on
 * commit (h: host scratch of count floats). */
static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int one_step(float *w, float *g, float *h, int count, int *healed)
{
    double t0 = now_ms();
    int rc = FT_Quorum(0), committed = 0;
    if (rc != FT_SUCCESS)
        return rc;
    int64_t step = FT_Step();
    if (*healed < 0) {
        *healed = (int)step;
        if (step > 0)
            printf("healed at step %lld (first FT_Quorum with the heal: heal_ms=%.1f)\n",
                   (long long)step, now_ms() - t0);
    }
    size_t bytes = (size_t)count * sizeof(float);
    for (int i = 0; i < count; i++)
        h[i] = (float)((i + step) % 7);
    if (cudaMemcpy(g, h, bytes, cudaMemcpyDefault) != cudaSuccess)
        return fail("copy in", 0);
    rc = FT_Allreduce(MPI_IN_PLACE, g, count, MPI_FLOAT, ftmpi_op_avg, FT_COMM_REPLICAS);
    int crc = FT_Commit(&committed);
    if (rc != FT_SUCCESS || crc != FT_SUCCESS || !committed)
        return rc != FT_SUCCESS ? rc : crc != FT_SUCCESS ? crc : FT_ERR_ABORTED;
    float *hw = h + count;
    if (cudaMemcpy(hw, w, bytes, cudaMemcpyDefault) != cudaSuccess ||
        cudaMemcpy(h, g, bytes, cudaMemcpyDefault) != cudaSuccess)
        return fail("copy out", 0);
    for (int i = 0; i < count; i++)
        hw[i] += h[i];
    if (cudaMemcpy(w, hw, bytes, cudaMemcpyDefault) != cudaSuccess)
        return fail("update", 0);
    printf("step %lld loss %g\n", (long long)FT_Step(), (double)hw[1]);
    fflush(stdout);
    return FT_SUCCESS;
}

int main(int argc, char **argv)
{
    int steps = 40, count = 1 << 20, pause = 0, n = 0, on_host = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--steps"))
            steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--count"))
            count = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--sleep-ms"))
            pause = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--host"))
            on_host = atoi(argv[i + 1]); /* w in host memory: the bench's baseline */
    }
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0)
        return 77;
    MPI_Init(&argc, &argv);
    int rc = FT_Init(&argc, &argv);
    if (rc != FT_SUCCESS)
        return fail("FT_Init", rc);
    size_t bytes = (size_t)count * sizeof(float);
    float *w = NULL, *g = NULL, *h = malloc(2 * bytes);
    if (on_host)
        w = calloc(1, bytes);
    else if (cudaMalloc((void **)&w, bytes) != cudaSuccess || cudaMemset(w, 0, bytes) != cudaSuccess)
        w = NULL;
    if (h == NULL || w == NULL || cudaMalloc((void **)&g, bytes) != cudaSuccess)
        return fail("memory", 0);
    rc = FT_State_register("w", w, bytes);
    if (rc != FT_SUCCESS)
        return fail("FT_State_register of device memory", rc);
    printf("initial loss 0\n");
    int healed = -1;
    for (int tries = 0; FT_Step() < steps && tries < 5 * steps; tries++) {
        rc = one_step(w, g, h, count, &healed);
        if (rc == 1 || rc == FT_ERR_GROUP_LOST)
            return fail("step", rc);
        if (pause > 0)
            sleep_ms(pause);
    }
    if (FT_Step() < steps)
        return fail("steps committed", (int)FT_Step());
    if (cudaMemcpy(h, w, bytes, cudaMemcpyDefault) != cudaSuccess)
        return fail("final copy", 0);
    uint64_t sum = 0;
    for (int i = 0; i < count; i++) {
        uint32_t b;
        memcpy(&b, &h[i], sizeof(b));
        sum = sum * 1099511628211ull + b;
    }
    printf("final steps=%lld sum=%016llx\n", (long long)FT_Step(), (unsigned long long)sum);
    FT_Finalize();
    MPI_Finalize();
    return 0;
}
