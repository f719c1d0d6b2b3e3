/*
 * shim_trainer.c - a data-parallel trainer written with plain MPI (no FT_
 * call): least-squares regression by SGD, each rank its own shard of the
 * data, the gradient averaged with MPI_Allreduce on MPI_COMM_WORLD.  Run it
 * under the drop-in to survive a rank's death:
 *
 *   mpirun --enable-recovery -np 4 -x LD_PRELOAD=libftmpi_pmpi.so \
 *       -x FTMPI_SHIM_ON_FAILURE=continue -x FTMPI_SHIM_RESCALE=1 ./shim_trainer
 *
 * Environment (all optional): SHIM_TRAINER_STEPS (default 200),
 * SHIM_TRAINER_SLEEP_MS per step (default 0).  Prints the initial loss,
 * and at the end, per rank, "final rank=R steps=S loss=L checksum=C".
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define DIM 16
#define SAMPLES 256

static double rnd(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return (double)(*s >> 11) / 9007199254740992.0 - 0.5;
}

/* Mean squared error of w on the shard, and its gradient (if g). */
static double loss(const double *x, const double *y, const double *w, double *g)
{
    double l = 0;
    if (g)
        memset(g, 0, DIM * sizeof(*g));
    for (int i = 0; i < SAMPLES; i++) {
        double e = -y[i];
        for (int d = 0; d < DIM; d++)
            e += w[d] * x[i * DIM + d];
        l += e * e / SAMPLES;
        for (int d = 0; g && d < DIM; d++)
            g[d] += 2 * e * x[i * DIM + d] / SAMPLES;
    }
    return l;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int steps = getenv("SHIM_TRAINER_STEPS") ? atoi(getenv("SHIM_TRAINER_STEPS")) : 200;
    int sleep_ms = getenv("SHIM_TRAINER_SLEEP_MS") ? atoi(getenv("SHIM_TRAINER_SLEEP_MS")) : 0;
    static double x[SAMPLES * DIM], y[SAMPLES];
    double w[DIM] = {0}, g[DIM], truth[DIM];
    uint64_t seed = 12345;
    for (int d = 0; d < DIM; d++)
        truth[d] = rnd(&seed) * 4;
    seed = 777 + (uint64_t)rank;
    for (int i = 0; i < SAMPLES; i++) {
        y[i] = 0;
        for (int d = 0; d < DIM; d++) {
            x[i * DIM + d] = rnd(&seed);
            y[i] += truth[d] * x[i * DIM + d];
        }
    }
    double l0 = loss(x, y, w, NULL);
    MPI_Allreduce(MPI_IN_PLACE, &l0, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("initial loss %.6f\n", l0 / size);
    fflush(stdout);
    int s;
    for (s = 0; s < steps; s++) {
        loss(x, y, w, g);
        MPI_Allreduce(MPI_IN_PLACE, g, DIM, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        for (int d = 0; d < DIM; d++)
            w[d] -= 0.1 * g[d] / size; /* the average over the world */
        if (sleep_ms > 0) {
            struct timespec ts = {sleep_ms / 1000, (long)(sleep_ms % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    double l = loss(x, y, w, NULL);
    MPI_Allreduce(MPI_IN_PLACE, &l, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    uint64_t sum = 0;
    for (int d = 0; d < DIM; d++) {
        uint64_t b;
        memcpy(&b, &w[d], sizeof(b));
        sum = sum * 31 + b;
    }
    printf("final rank=%d steps=%d loss=%.6f checksum=%016llx\n", rank, s, l / size,
           (unsigned long long)sum);
    MPI_Finalize();
    return 0;
}
