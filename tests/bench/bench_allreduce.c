/*
 * bench_allreduce.c - times FT_Allreduce or MPI_Allreduce per message size
 * (driver: bench_allreduce.sh; results in doc/PERFORMANCE.md).
 *
 *   bench_allreduce mpi|ft [--max BYTES] [--reps R] [--warmup W] [--mem 1]
 *
 * --mem 1 (ft): the buffers come from ftmpi_mem_alloc (what mode B's
 * FTMPI_MODEB_ZERO_COPY=1 lets MPI write directly).
 * --mpi-too 1 (ft, mode B with FTMPI_GROUP_SIZE=1): also times
 * MPI_Allreduce over the same ranks in the same job (a communicator of
 * every world rank but the lighthouse's, split off before FT_Init), right
 * before FT_Allreduce at each size, inside the same step; printed as
 * "MPIRESULT <bytes> <calls_per_rep> <median_us> <min_us> <max_us>", the
 * baseline of a ratio that no other job's timing disturbs.
 *
 * mpi: MPI_Allreduce(SUM, MPI_FLOAT) over MPI_COMM_WORLD.
 * ft:  FT_Init, a first step (retried until it commits), then per size
 *      one step: FT_Quorum(0), the timed FT_Allreduce calls on
 *      FT_COMM_REPLICAS, FT_Commit.  Mode A (one
 *      process per mpirun, FTMPI_LIGHTHOUSE set) or mode B (FTMPI_GROUP_SIZE=1,
 *      the last world rank runs the lighthouse inside FT_Init).
 *
 * Sizes: 8 B, then x8 up to --max (default 64 MiB), and --max itself.  A
 * repetition is k calls (k = 4 MiB / size, clamped to [1, 200]) after a
 * barrier; its time per call is the slowest rank's (an allreduce of the
 * repetition times with MAX).  After --warmup repetitions (whose result is
 * checked: every element = n(n+1)/2 with rank r sending r+1), --reps
 * (default 7) are timed.  The reporting rank (world rank 0, or replica rank
 * 0 for ft) prints one line per size:
 *
 *   RESULT <bytes> <calls_per_rep> <median_us> <min_us> <max_us>
 *
 * Exit status 0, or 1 on any error (the message says where).
 */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_util.h"
#include "ftmpi.h"

#define MAX_REPS 1000

static int use_ft;
static int me, np;
static MPI_Comm mpi_comm; /* MPI_Allreduce's: the world, or --mpi-too's ranks */

static int fail(const char *where, int rc)
{
    fprintf(stderr, "bench_allreduce: %s failed: %d (%s)\n", where, rc,
            use_ft ? FT_Error_string(rc) : "MPI");
    return 1;
}

static int reduce(const void *s, void *r, int count, MPI_Datatype dt, MPI_Op op)
{
    if (use_ft)
        return FT_Allreduce(s, r, count, dt, op, FT_COMM_REPLICAS);
    return MPI_Allreduce(s, r, count, dt, op, mpi_comm) == MPI_SUCCESS ? 0 : FT_ERR_MPI;
}

static int barrier(void)
{
    int one = 1, sum = 0;
    if (!use_ft)
        return MPI_Barrier(mpi_comm) == MPI_SUCCESS ? 0 : FT_ERR_MPI;
    return reduce(&one, &sum, 1, MPI_INT, MPI_SUM);
}

/* Times one size; fills med/min/max (microseconds per call). */
static int run_size(size_t bytes, int reps, int warmup, float *sbuf, float *rbuf, int *k_p,
                    double *med_p, double *min_p, double *max_p)
{
    int count = (int)(bytes / sizeof(float)), rc;
    int k = (int)((size_t)(4u << 20) / bytes);
    double t[MAX_REPS], tmax[MAX_REPS];
    k = k < 1 ? 1 : k > 200 ? 200 : k;

    for (int i = 0; i < count; i++)
        sbuf[i] = (float)(me + 1);
    for (int w = 0; w < warmup; w++)
        for (int i = 0; i < k; i++)
            if ((rc = reduce(sbuf, rbuf, count, MPI_FLOAT, MPI_SUM)) != 0)
                return fail("warm-up allreduce", rc);
    float want = (float)np * (float)(np + 1) / 2.0f;
    if (warmup > 0 && (rbuf[0] != want || rbuf[count - 1] != want)) {
        fprintf(stderr, "bench_allreduce: wrong result at %zu bytes: %g, %g (want %g)\n", bytes,
                (double)rbuf[0], (double)rbuf[count - 1], (double)want);
        return 1;
    }
    for (int r = 0; r < reps; r++) {
        if ((rc = barrier()) != 0)
            return fail("barrier", rc);
        double t0 = bench_now();
        for (int i = 0; i < k; i++)
            if ((rc = reduce(sbuf, rbuf, count, MPI_FLOAT, MPI_SUM)) != 0)
                return fail("timed allreduce", rc);
        t[r] = (bench_now() - t0) / k * 1e6;
    }
    if ((rc = reduce(t, tmax, reps, MPI_DOUBLE, MPI_MAX)) != 0)
        return fail("allreduce of the times", rc);
    double lo = tmax[0], hi = tmax[0];
    for (int r = 1; r < reps; r++) {
        lo = tmax[r] < lo ? tmax[r] : lo;
        hi = tmax[r] > hi ? tmax[r] : hi;
    }
    *k_p = k;
    *med_p = bench_median(tmax, (size_t)reps);
    *min_p = lo;
    *max_p = hi;
    return 0;
}

int main(int argc, char **argv)
{
    size_t max_bytes = (size_t)64 << 20;
    int reps = 7, warmup = 1, rc, world_rank, world_size, use_mem = 0, mpi_too = 0;

    MPI_Init(&argc, &argv);
    mpi_comm = MPI_COMM_WORLD;
    MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world_size);
    if (argc < 2 || (strcmp(argv[1], "mpi") && strcmp(argv[1], "ft"))) {
        fprintf(stderr, "usage: bench_allreduce mpi|ft [--max BYTES] [--reps R] [--warmup W]\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    use_ft = !strcmp(argv[1], "ft");
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--max") && bench_parse_bytes(argv[i + 1], &max_bytes) == 0)
            continue;
        if (!strcmp(argv[i], "--reps") && (reps = atoi(argv[i + 1])) >= 1 && reps <= MAX_REPS)
            continue;
        if (!strcmp(argv[i], "--warmup") && (warmup = atoi(argv[i + 1])) >= 0)
            continue;
        if (!strcmp(argv[i], "--mem") && (use_mem = atoi(argv[i + 1])) >= 0)
            continue;
        if (!strcmp(argv[i], "--mpi-too") && (mpi_too = atoi(argv[i + 1])) >= 0)
            continue;
        fprintf(stderr, "bench_allreduce: bad flag %s %s\n", argv[i], argv[i + 1]);
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (max_bytes < 8)
        max_bytes = 8;

    MPI_Comm same = MPI_COMM_NULL; /* --mpi-too: every world rank but the lighthouse's */
    if (use_ft && mpi_too) {
        const char *gs = getenv("FTMPI_GROUP_SIZE");
        if (gs == NULL || strcmp(gs, "1") != 0) {
            fprintf(stderr, "bench_allreduce: --mpi-too needs mode B with FTMPI_GROUP_SIZE=1\n");
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
        MPI_Comm_split(MPI_COMM_WORLD, world_rank == world_size - 1 ? MPI_UNDEFINED : 0,
                       world_rank, &same);
    }
    if (use_ft) {
        if ((rc = FT_Init(&argc, &argv)) != FT_SUCCESS)
            return fail("FT_Init", rc);
        /* first steps: quorum, initial sync, the participants; a step with
         * a collective, so no group commits before the others healed */
        for (int attempt = 0;; attempt++) {
            int committed = 0, one = 1, sum = 0;
            if ((rc = FT_Quorum(0)) == FT_SUCCESS &&
                (rc = FT_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, FT_COMM_REPLICAS)) == 0 &&
                (rc = FT_Comm_size(FT_COMM_REPLICAS, &np)) == 0)
                rc = FT_Comm_rank(FT_COMM_REPLICAS, &me);
            int crc = FT_Commit(&committed);
            if (rc == FT_SUCCESS && crc == FT_SUCCESS && committed)
                break;
            if (attempt == 20)
                return fail("first step", rc ? rc : crc);
        }
    } else {
        MPI_Comm_size(MPI_COMM_WORLD, &np);
        me = world_rank;
    }

    float *sbuf = NULL, *rbuf = NULL;
    if (use_ft && use_mem) {
        (void)ftmpi_mem_alloc(max_bytes, (void **)&sbuf);
        (void)ftmpi_mem_alloc(max_bytes, (void **)&rbuf);
    } else {
        sbuf = malloc(max_bytes);
        rbuf = malloc(max_bytes);
    }
    if (sbuf == NULL || rbuf == NULL) {
        fprintf(stderr, "bench_allreduce: out of memory for %zu bytes\n", max_bytes);
        return 1;
    }
    memset(rbuf, 0, max_bytes);
    if (me == 0)
        printf("# bench_allreduce %s np=%d reps=%d warmup=%d\n", argv[1], np, reps, warmup);

    for (size_t bytes = 8;;) {
        int k = 0, committed = 0;
        double med = 0, lo = 0, hi = 0;
        if (use_ft && (rc = FT_Quorum(0)) != FT_SUCCESS)
            return fail("FT_Quorum", rc);
        if (same != MPI_COMM_NULL) { /* the same-job baseline, right before */
            int mk = 0;
            double mmed = 0, mlo = 0, mhi = 0;
            use_ft = 0;
            mpi_comm = same;
            rc = run_size(bytes, reps, warmup, sbuf, rbuf, &mk, &mmed, &mlo, &mhi);
            use_ft = 1;
            if (rc != 0)
                return 1;
            if (me == 0)
                printf("MPIRESULT %zu %d %.3f %.3f %.3f\n", bytes, mk, mmed, mlo, mhi);
        }
        if (run_size(bytes, reps, warmup, sbuf, rbuf, &k, &med, &lo, &hi) != 0)
            return 1;
        if (use_ft && ((rc = FT_Commit(&committed)) != FT_SUCCESS || !committed)) {
            fprintf(stderr, "bench_allreduce: step of %zu bytes did not commit (%s)\n", bytes,
                    FT_Error_string(rc));
            return 1;
        }
        if (me == 0) {
            printf("RESULT %zu %d %.3f %.3f %.3f\n", bytes, k, med, lo, hi);
            fflush(stdout);
        }
        if (bytes >= max_bytes)
            break;
        bytes = bytes * 8 > max_bytes ? max_bytes : bytes * 8;
    }
    if (use_ft && use_mem) {
        ftmpi_mem_free(sbuf);
        ftmpi_mem_free(rbuf);
    } else {
        free(sbuf);
        free(rbuf);
    }
    if (use_ft)
        FT_Finalize();
    if (same != MPI_COMM_NULL)
        MPI_Comm_free(&same);
    MPI_Finalize();
    return 0;
}
