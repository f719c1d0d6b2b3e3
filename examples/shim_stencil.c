/*
 * shim_stencil.c - a plain MPI code (no libftmpi call) that comes back by
 * itself from its own restart files under the drop-in (DESIGN section 10,
 * issue 28 item 4):
 *
 *     ftmpi-run --replica-id stencil --max-restarts 3 -- \
 *         mpirun -np 4 -x LD_PRELOAD=libftmpi_pmpi.so ./shim_stencil 400 20 ckpt/
 *
 * A 2-D Jacobi iteration on a 96 x 96 grid (the top edge held at 1, the
 * others at 0), split into blocks of rows: each iteration exchanges halo
 * rows with the neighbours (MPI_Sendrecv), updates the block and sums the
 * residual over the world (MPI_Allreduce).  Every K iterations each rank
 * writes its block to DIR/stencil.RANK.SLOT (two slots, written to a
 * temporary file and renamed: a rank killed while writing leaves the
 * older slot whole).  At start each rank reads its slots; the ranks agree
 * on the newest iteration all of them hold (MPI_Allreduce of MIN: the
 * ranks are never more than one checkpoint apart, so every rank holds
 * that one) and resume from it (the block and the residual it had).  The computation is deterministic, so a
 * run that was killed and restarted ends with the same bits as one that
 * was not.  Rank 0 prints "stencil resume it=I" and, at the end,
 * "stencil done iters=N residual=R sum=S".
 * Usage: shim_stencil [ITERS [K [DIR]]]; SHIM_STENCIL_SLEEP_MS sleeps that
 * long each iteration (a longer run for the tests).
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define NX 96
#define NY 96

struct header {
    int magic, iter, rows, cols;
    double residual; /* of the iteration that made this block */
};
#define MAGIC 0x5354454e

static int save(const char *dir, int rank, int iter, int every, int rows, const double *u,
                double residual)
{
    char path[4096], tmp[4200];
    snprintf(path, sizeof(path), "%s/stencil.%d.%d", dir, rank, (iter / every) % 2);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    if (f == NULL)
        return -1;
    struct header h = {MAGIC, iter, rows, NX, residual};
    int ok = fwrite(&h, sizeof(h), 1, f) == 1 &&
             fwrite(u, sizeof(double), (size_t)(rows + 2) * NX, f) == (size_t)(rows + 2) * NX;
    ok = fclose(f) == 0 && ok;
    return ok && rename(tmp, path) == 0 ? 0 : -1;
}

/* The iteration in slot s (-1 if none), its block read into u when load. */
static int slot(const char *dir, int rank, int s, int rows, double *u, double *residual)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/stencil.%d.%d", dir, rank, s);
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -1;
    struct header h;
    int it = -1;
    if (fread(&h, sizeof(h), 1, f) == 1 && h.magic == MAGIC && h.rows == rows && h.cols == NX) {
        it = h.iter;
        if (u != NULL && fread(u, sizeof(double), (size_t)(rows + 2) * NX, f) != (size_t)(rows + 2) * NX)
            it = -1;
        if (residual != NULL)
            *residual = h.residual;
    }
    fclose(f);
    return it;
}

int main(int argc, char **argv)
{
    int rank, size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int iters = argc > 1 ? atoi(argv[1]) : 400, every = argc > 2 ? atoi(argv[2]) : 20;
    const char *dir = argc > 3 ? argv[3] : ".";
    long nap = getenv("SHIM_STENCIL_SLEEP_MS") ? atol(getenv("SHIM_STENCIL_SLEEP_MS")) : 0;
    if (every < 1)
        every = 1;
    /* rows of this rank: NY split as evenly as possible */
    int rows = NY / size + (rank < NY % size), first = rank * (NY / size) + (rank < NY % size ? rank : NY % size);
    int up = rank > 0 ? rank - 1 : MPI_PROC_NULL, down = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
    size_t n = (size_t)(rows + 2) * NX;
    double *u = calloc(n, sizeof(double)), *v = calloc(n, sizeof(double));
    if (u == NULL || v == NULL)
        MPI_Abort(MPI_COMM_WORLD, 1);
    if (first == 0) /* the top edge (global row 0) is row 1 of rank 0's block */
        for (int j = 0; j < NX; j++)
            u[NX + j] = 1.0;
    /* resume: the newest iteration every rank holds */
    double residual = 0;
    int s0 = slot(dir, rank, 0, rows, NULL, NULL), s1 = slot(dir, rank, 1, rows, NULL, NULL);
    int mine = s0 > s1 ? s0 : s1, start = -1;
    MPI_Allreduce(&mine, &start, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
    if (start >= 0 && slot(dir, rank, start == s0 ? 0 : 1, rows, u, &residual) != start) {
        fprintf(stderr, "stencil: rank %d cannot read its restart file of iteration %d\n", rank,
                start);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (start < 0)
        start = 0;
    if (rank == 0)
        printf("stencil resume it=%d\n", start);
    fflush(stdout);
    memcpy(v, u, n * sizeof(double));
    for (int it = start; it < iters; it++) {
        MPI_Sendrecv(&u[NX], NX, MPI_DOUBLE, up, 1, &u[(size_t)(rows + 1) * NX], NX, MPI_DOUBLE,
                     down, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Sendrecv(&u[(size_t)rows * NX], NX, MPI_DOUBLE, down, 2, &u[0], NX, MPI_DOUBLE, up, 2,
                     MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        double local = 0;
        for (int i = 1; i <= rows; i++) {
            int g = first + i - 1;
            for (int j = 0; j < NX; j++) {
                size_t k = (size_t)i * NX + j;
                if (g == 0 || g == NY - 1 || j == 0 || j == NX - 1) {
                    v[k] = u[k];
                    continue;
                }
                v[k] = 0.25 * (u[k - NX] + u[k + NX] + u[k - 1] + u[k + 1]);
                local += (v[k] - u[k]) * (v[k] - u[k]);
            }
        }
        double *t = u;
        u = v;
        v = t;
        MPI_Allreduce(&local, &residual, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
        if ((it + 1) % every == 0 && save(dir, rank, it + 1, every, rows, u, residual) != 0) {
            fprintf(stderr, "stencil: rank %d cannot write its restart file in %s\n", rank, dir);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
        if (nap > 0) {
            struct timespec ts = {nap / 1000, (nap % 1000) * 1000000L};
            nanosleep(&ts, NULL);
        }
    }
    double local = 0, sum = 0;
    for (int i = 1; i <= rows; i++)
        for (int j = 0; j < NX; j++)
            local += u[(size_t)i * NX + j];
    MPI_Reduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    if (rank == 0)
        printf("stencil done iters=%d residual=%.17g sum=%.17g\n", iters, residual, sum);
    free(u);
    free(v);
    MPI_Finalize();
    return 0;
}
