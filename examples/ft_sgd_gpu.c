/*
 * ft_sgd_gpu.c - libftmpi with a GPU-resident gradient (CUDA runtime API).
 * Built when configure found CUDA (HAVE_CUDA); needs no nvcc.  It runs where
 * a GPU is present and exits 77 ("no GPU") elsewhere.
 *
 * FT_Allreduce works on host memory in this release (CUDA is detected, not
 * used by the library), so a GPU program stages each step's gradient: the
 * device buffer is copied to pinned host memory (cudaMallocHost), reduced
 * across the replica groups, and copied back to the device, where the
 * update would run.  The registered state (what healing copies) is the
 * host copy of the weights; after a heal the device copy is refreshed from
 * it.  The "compute" of this example is a device-side fill of the gradient
 * (cudaMemcpy of a host-made buffer stands in for a kernel).
 *
 *   ft_sgd_gpu [steps]      (default 100)
 * Output: "final replica=ID rank=R step=S checksum=0x..." on every rank.
 */
#include <cuda_runtime_api.h>
#include <inttypes.h>
#include <math.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#include "ftmpi.h"

#define N 1024

static int cuda_ok(cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return 1;
    fprintf(stderr, "ft_sgd_gpu: %s: %s\n", what, cudaGetErrorString(e));
    return 0;
}

/* One attempt at the step; 1 when it committed (w then updated), -1 when
 * the lighthouse killed the group (FT_ERR_KILLED: leave). */
static int step(float *w, float *host_grad, float *dev_grad, float *dev_w, MPI_Comm group,
                int rank)
{
    int qrc = FT_Quorum(0);
    if (qrc == FT_ERR_KILLED)
        return -1;
    if (qrc != FT_SUCCESS)
        return 0;
    int64_t s = FT_Step();
    for (int i = 0; i < N; i++) /* stands in for a kernel writing dev_grad */
        host_grad[i] = (w[i] - sinf(0.01f * (float)i)) * (1.0f + 0.1f * cosf((float)(s + rank)));
    if (!cuda_ok(cudaMemcpy(dev_grad, host_grad, sizeof(float) * N, cudaMemcpyHostToDevice),
                 "H2D"))
        return 0;
    /* stage: device -> pinned host, reduce, back to the device */
    if (!cuda_ok(cudaMemcpy(host_grad, dev_grad, sizeof(float) * N, cudaMemcpyDeviceToHost),
                 "D2H"))
        return 0;
    MPI_Allreduce(MPI_IN_PLACE, host_grad, N, MPI_FLOAT, MPI_SUM, group);
    int rc = FT_Allreduce(MPI_IN_PLACE, host_grad, N, MPI_FLOAT, FT_AVG, FT_COMM_REPLICAS);
    int committed = 0;
    if (FT_Commit(&committed) != FT_SUCCESS || rc != FT_SUCCESS || !committed)
        return 0;
    for (int i = 0; i < N; i++)
        w[i] -= 0.05f * host_grad[i];
    return cuda_ok(cudaMemcpy(dev_w, w, sizeof(float) * N, cudaMemcpyHostToDevice), "H2D w");
}

int main(int argc, char **argv)
{
    int ndev = 0;
    long steps = argc > 1 ? atol(argv[1]) : 100;
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        printf("ft_sgd_gpu: no GPU here: nothing to run\n");
        return 77;
    }
    MPI_Init(&argc, &argv);
    static char out_buf[BUFSIZ]; /* a buffer of its own: see ft_sgd.c */
    setvbuf(stdout, out_buf, _IOLBF, sizeof(out_buf));
    MPI_Comm group;
    if (FT_Init(&argc, &argv) != FT_SUCCESS || ftmpi_group_comm(&group) != FT_SUCCESS) {
        fprintf(stderr, "ft_sgd_gpu: FT_Init failed\n");
        MPI_Finalize();
        return 2;
    }
    int rank = 0;
    MPI_Comm_rank(group, &rank);
    cudaSetDevice(rank % ndev);
    static float w[N];
    float *host_grad = NULL, *dev_grad = NULL, *dev_w = NULL;
    int ok = cuda_ok(cudaMallocHost((void **)&host_grad, sizeof(float) * N), "cudaMallocHost") &&
             cuda_ok(cudaMalloc((void **)&dev_grad, sizeof(float) * N), "cudaMalloc") &&
             cuda_ok(cudaMalloc((void **)&dev_w, sizeof(float) * N), "cudaMalloc");
    FT_State_register("w", w, sizeof(w));
    int killed = 0;
    for (long failures = 0; ok && !killed && FT_Step() < steps && failures < 1000;) {
        int r = step(w, host_grad, dev_grad, dev_w, group, rank);
        killed = r < 0;
        failures += r == 0;
    }
    if (killed)
        fprintf(stderr, "ft_sgd_gpu: the lighthouse killed this group: leaving\n");
    uint64_t h = 1469598103934665603ULL;
    const unsigned char *b = (const unsigned char *)w;
    for (size_t i = 0; i < sizeof(w); i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    char id[64] = "?"; /* a replica id is 1 to 63 characters */
    ftmpi_replica_id(id, sizeof(id));
    printf("final replica=%s rank=%d step=%" PRId64 " checksum=0x%016" PRIx64 "\n", id, rank,
           FT_Step(), h);
    int done = FT_Step() >= steps;
    cudaFree(dev_w);
    cudaFree(dev_grad);
    cudaFreeHost(host_grad);
    FT_Finalize();
    MPI_Finalize();
    return killed ? 5 : done ? 0 : 1;
}
