/*
 * gpu_allreduce.c - FT_Allreduce of a device buffer across replica groups
 * (one rank each): every step each group fills a cudaMalloc'ed buffer with
 * small integers (the same function of i in every group), reduces it with
 * MPI_SUM, and checks on the host that each element is its value times the
 * participants (FT_Comm_size); then FT_AVG must give the value back.  The
 * values are exact in float, so every backend gives the same bytes; the
 * last line, "sum=<hex checksum>", lets a test compare backends.
 *
 *   gpu_allreduce [--steps N] [--count C] [--host 1]
 * --host 1: the same on a malloc'ed host buffer (the benchmark's baseline);
 * the last line also gives the mean wall time of one step's two
 * FT_Allreduce calls ("us_per_allreduce=").
 * Exit 0 when every step committed and checked; 77 without a device.
 */
#include <cuda_runtime_api.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "ftmpi.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static double reduce_us; /* time inside FT_Allreduce, committed steps */

static int fail(const char *what, int rc)
{
    fprintf(stderr, "gpu_allreduce: %s: %d\n", what, rc);
    return 1;
}

static int one_step(float *dev, float *host, int count, int *size_p)
{
    int rc = FT_Quorum(0), committed = 0, size = 0;
    if (rc != FT_SUCCESS)
        return rc;
    for (int i = 0; i < count; i++)
        host[i] = (float)(i % 13 + 1);
    if (dev != host)
        cudaMemcpy(dev, host, (size_t)count * sizeof(float), cudaMemcpyHostToDevice);
    double t0 = now_us(), t = 0;
    rc = FT_Allreduce(MPI_IN_PLACE, dev, count, MPI_FLOAT, MPI_SUM, FT_COMM_REPLICAS);
    t += now_us() - t0;
    if (rc == FT_SUCCESS)
        rc = FT_Comm_size(FT_COMM_REPLICAS, &size);
    if (rc == FT_SUCCESS) {
        if (dev != host)
            cudaMemcpy(host, dev, (size_t)count * sizeof(float), cudaMemcpyDeviceToHost);
        for (int i = 0; i < count; i++)
            if (host[i] != (float)((i % 13 + 1) * size))
                return fail("wrong sum", i);
        t0 = now_us();
        rc = FT_Allreduce(MPI_IN_PLACE, dev, count, MPI_FLOAT, ftmpi_op_avg, FT_COMM_REPLICAS);
        t += now_us() - t0;
    }
    if (rc == FT_SUCCESS) {
        if (dev != host)
            cudaMemcpy(host, dev, (size_t)count * sizeof(float), cudaMemcpyDeviceToHost);
        for (int i = 0; i < count; i++)
            if (host[i] != (float)((i % 13 + 1) * size))
                return fail("wrong average", i);
    }
    int crc = FT_Commit(&committed);
    if (rc == FT_SUCCESS && (crc != FT_SUCCESS || !committed))
        rc = crc != FT_SUCCESS ? crc : FT_ERR_ABORTED;
    *size_p = size;
    if (rc == FT_SUCCESS)
        reduce_us += t;
    return rc;
}

int main(int argc, char **argv)
{
    int steps = 20, count = 1 << 20, n = 0, on_host = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--steps"))
            steps = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--count"))
            count = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--host"))
            on_host = atoi(argv[i + 1]);
    }
    if (cudaGetDeviceCount(&n) != cudaSuccess || n == 0)
        return 77;
    MPI_Init(&argc, &argv);
    int rc = FT_Init(&argc, &argv);
    if (rc != FT_SUCCESS)
        return fail("FT_Init", rc);
    float *dev = NULL, *host = malloc((size_t)count * sizeof(float));
    if (host == NULL)
        return fail("memory", 0);
    if (on_host)
        dev = host;
    else if (cudaMalloc((void **)&dev, (size_t)count * sizeof(float)) != cudaSuccess)
        return fail("device memory", 0);
    int done = 0, size = 0;
    for (int tries = 0; done < steps && tries < 5 * steps; tries++) {
        rc = one_step(dev, host, count, &size);
        if (rc == FT_SUCCESS)
            done++;
        else if (rc == 1)
            return 1; /* a wrong value: the check failed */
    }
    if (done < steps)
        return fail("steps committed", done);
    uint64_t sum = 0;
    for (int i = 0; i < count; i++) {
        uint32_t b;
        memcpy(&b, &host[i], sizeof(b));
        sum = sum * 1099511628211ull + b;
    }
    printf("final steps=%d participants=%d sum=%016llx\n", done, size, (unsigned long long)sum);
    printf("%s buffer of %d floats: us_per_allreduce=%.1f\n", on_host ? "host" : "device", count,
           reduce_us / (2.0 * done));
    FT_Finalize();
    MPI_Finalize();
    return 0;
}
