/*
 * gpu_order.c - baby-nccl takes a device buffer only after the work that
 * wrote it (CUDA IPC events, src/comm/baby_nccl.c): every step zeroes a
 * cudaMalloc'ed buffer (synchronized), then queues on a stream other than
 * the legacy default one a host function that sleeps --delay-ms and a
 * cudaMemsetAsync of the step's byte pattern, and calls FT_Allreduce
 * (MPI_SUM) at once.  Each element must then be the pattern's float summed
 * over the participants: a child that reduced without waiting for the
 * rank's event reads zeros (or a half-written buffer) and fails the check.
 * The stream is, by turns, one from cudaStreamCreate, cudaStreamPerThread
 * and the legacy default stream (all ordered before FT_Allreduce, see
 * baby_nccl.c).
 *
 *   gpu_order [--steps N] [--count C] [--delay-ms D]
 * Prints "ordered steps=N participants=P" and exits 0 when every step
 * committed and checked; 1 on a wrong value; 77 without a device.
 */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "ftmpi.h"

static int delay_ms = 200;

static void CUDART_CB nap(void *arg)
{
    (void)arg;
    struct timespec ts = {delay_ms / 1000, (long)(delay_ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static float pattern(int step)
{
    unsigned char b[sizeof(float)];
    memset(b, 0x3c + step % 3, sizeof(b)); /* 0x3c3c3c3c etc.: finite, exact when doubled */
    float f;
    memcpy(&f, b, sizeof(f));
    return f;
}

/* The step's write, queued behind a sleeping host function on a stream of
 * the turn's kind. */
static int write_late(float *dev, int count, int step, cudaStream_t made)
{
    cudaStream_t s = step % 3 == 0 ? made : step % 3 == 1 ? cudaStreamPerThread : cudaStreamLegacy;
    if (cudaMemset(dev, 0, (size_t)count * sizeof(float)) != cudaSuccess ||
        cudaDeviceSynchronize() != cudaSuccess)
        return -1;
    float f = pattern(step);
    unsigned char b;
    memcpy(&b, &f, 1);
    if (cudaLaunchHostFunc(s, nap, NULL) != cudaSuccess ||
        cudaMemsetAsync(dev, b, (size_t)count * sizeof(float), s) != cudaSuccess)
        return -1;
    return 0;
}

static int one_step(float *dev, float *host, int count, int step, cudaStream_t made, int *size_p)
{
    int rc = FT_Quorum(0), committed = 0, size = 0;
    if (rc != FT_SUCCESS)
        return rc;
    if (write_late(dev, count, step, made) != 0) {
        fprintf(stderr, "gpu_order: CUDA: %s\n", cudaGetErrorString(cudaGetLastError()));
        return 2;
    }
    rc = FT_Allreduce(MPI_IN_PLACE, dev, count, MPI_FLOAT, MPI_SUM, FT_COMM_REPLICAS);
    if (rc == FT_SUCCESS)
        rc = FT_Comm_size(FT_COMM_REPLICAS, &size);
    if (rc == FT_SUCCESS) {
        cudaMemcpy(host, dev, (size_t)count * sizeof(float), cudaMemcpyDeviceToHost);
        float want = 0.0f;
        for (int i = 0; i < size; i++)
            want += pattern(step);
        for (int i = 0; i < count; i++) {
            if (host[i] != want) {
                fprintf(stderr,
                        "gpu_order: step %d (stream kind %d): element %d is %g, "
                        "not %g: the child did not wait for the write\n",
                        step, step % 3, i, (double)host[i], (double)want);
                return 1;
            }
        }
    }
    int crc = FT_Commit(&committed);
    if (rc == FT_SUCCESS && (crc != FT_SUCCESS || !committed))
        rc = crc != FT_SUCCESS ? crc : FT_ERR_ABORTED;
    *size_p = size;
    return rc;
}

int main(int argc, char **argv)
{
    int steps = 6, count = 1 << 22, n = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--steps"))
            steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--count"))
            count = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--delay-ms"))
            delay_ms = atoi(argv[i + 1]);
    }
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0)
        return 77;
    MPI_Init(&argc, &argv);
    if (FT_Init(&argc, &argv) != FT_SUCCESS) {
        fprintf(stderr, "gpu_order: FT_Init failed\n");
        return 2;
    }
    float *dev = NULL, *host = malloc((size_t)count * sizeof(float));
    cudaStream_t made = NULL;
    if (host == NULL || cudaMalloc((void **)&dev, (size_t)count * sizeof(float)) != cudaSuccess ||
        cudaStreamCreate(&made) != cudaSuccess) {
        fprintf(stderr, "gpu_order: memory or stream\n");
        return 2;
    }
    int done = 0, size = 0, rc = FT_SUCCESS;
    for (int tries = 0; done < steps && tries < 5 * steps; tries++) {
        rc = one_step(dev, host, count, done, made, &size);
        if (rc == FT_SUCCESS)
            done++;
        else if (rc == 1 || rc == 2)
            return rc; /* a wrong value, or CUDA failed */
    }
    if (done < steps) {
        fprintf(stderr, "gpu_order: %d of %d steps committed\n", done, steps);
        return 2;
    }
    printf("ordered steps=%d participants=%d\n", done, size);
    cudaStreamDestroy(made);
    cudaFree(dev);
    free(host);
    FT_Finalize();
    MPI_Finalize();
    return 0;
}
