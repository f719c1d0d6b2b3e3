/*
 * e2e_allreduce.c - FT_Allreduce across replica groups gives what
 * MPI_Allreduce would: for every supported datatype and op and several
 * counts, each group (one rank each, every group its own mpirun) fills its
 * input as a deterministic function of (its replica rank, i), and checks
 * the result against the same reduction computed locally with
 * MPI_Reduce_local over every group's input (MPI's own operator code; FT_AVG
 * is MPI_SUM divided by the number of participants).  The inputs are small
 * integers (and quarters for floating point), so every order of reduction
 * gives the same bits and the comparison is exact.  64-bit types carry
 * values above 2^32.
 *
 *   e2e_allreduce --groups N [--counts C1,C2,...] [--spares S] [--mpi-compare] [--mem]
 *
 * --mem: the input and output buffers come from ftmpi_mem_alloc (what
 * FTMPI_MODEB_ZERO_COPY=1 lets MPI write directly).
 *
 * Mode B (FTMPI_GROUP_SIZE=R, one mpirun of N*R+1 ranks, or (N+S)*R+1 with
 * spares): --spares S says the quorum also holds S spare groups
 * (FTMPI_WORLD_SIZE_MODE=fixed_with_spares): their input is filled like a
 * participant's but must not count, so every result is still the fold over
 * the N participants.  --mpi-compare (mode B, no spares) also runs
 * MPI_Allreduce on a communicator of the same ranks as the slice (split
 * off MPI_COMM_WORLD before FT_Init, which the lighthouse rank never leaves)
 * and requires bitwise the same bytes as FT_Allreduce.
 *
 * Default counts: 0, 1, 7919 (a prime), 16 Mi.  One step (FT_Quorum ...
 * FT_Commit) per count, which begins with a 1-element allreduce (it keeps
 * the groups in lockstep even when the count is 0); each step must commit
 * with N participants.  A last
 * step checks that MPI_CHAR and MPI_BYTE arithmetic and FT_AVG on an
 * integer type are refused with FT_ERR_UNSUPPORTED.  Exit 0 when every
 * check passed.  Every rank ends with the "final replica=..." line of
 * print_final (the step and a checksum of its registered state).
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <mpi.h>

#include "ftmpi.h"

enum { OP_SUM, OP_PROD, OP_MAX, OP_MIN, OP_AVG, N_OPS };
static const char *const op_names[N_OPS] = {"SUM", "PROD", "MAX", "MIN", "AVG"};

struct type_info {
    const char *name;
    MPI_Datatype type; /* filled at run time: MPI handles are not constants everywhere */
    size_t size;
    int kind; /* 0 float, 1 double, 2 int, 3 long, 4 int32, 5 int64, 6 uint64 */
};

static int failures, checks;

/* The line every rank prints at the end (as examples/ft_sgd does), so the
 * tests can check that every rank of every group holds the same step and
 * registered bytes: "final replica=ID rank=G step=N checksum=0x..." with
 * G the group rank and the checksum FNV-1a 64 of the registered bytes. */
static void print_final(const void *state, size_t bytes)
{
    char id[128] = "?";
    int rank = 0;
    MPI_Comm group;
    const unsigned char *p = state;
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < bytes; i++) {
        h ^= p[i];
        h *= UINT64_C(0x100000001b3);
    }
    ftmpi_replica_id(id, sizeof(id));
    if (ftmpi_group_comm(&group) == FT_SUCCESS)
        MPI_Comm_rank(group, &rank);
    printf("final replica=%s rank=%d step=%" PRId64 " checksum=0x%016" PRIx64 "\n", id, rank,
           FT_Step(), h);
}

/* Input of replica rank r (of n) at index i. */
static double value_d(int op, int r, int n, long i, double c)
{
    if (op == OP_PROD)
        return (double)((i + 3 * r) % 5 - 2);
    double base = (double)((long)(((uint64_t)i * UINT64_C(2654435761)) % 2001) - 1000);
    double off = c * (2 * r - (n - 1)) * ((i & 1) ? -1 : 1);
    return base + off;
}

static int64_t value_i64(int op, int r, int n, long i, int64_t scale)
{
    if (op == OP_PROD)
        return (i + 3 * r) % 5 - 2;
    int64_t base = (int64_t)(((uint64_t)i * UINT64_C(2654435761)) % 2001) - 1000;
    int64_t off = 3 * (2 * r - (n - 1)) * ((i & 1) ? -1 : 1);
    return base * scale + off;
}

static uint64_t value_u64(int op, int r, int n, long i)
{
    if (op == OP_PROD)
        return (uint64_t)((i + 3 * r) % 3 + 1);
    uint64_t base = ((uint64_t)i * UINT64_C(2654435761)) % 2001;
    int64_t off = 3 * (2 * r - (n - 1)) * ((i & 1) ? -1 : 1);
    return (base << 34) + (UINT64_C(1) << 40) + (uint64_t)(off + 100);
}

static void fill(const struct type_info *t, int op, int r, int n, void *buf, long count)
{
    for (long i = 0; i < count; i++) {
        switch (t->kind) {
        case 0: ((float *)buf)[i] = (float)value_d(op, r, n, i, 0.25); break;
        case 1: ((double *)buf)[i] = value_d(op, r, n, i, 0.125); break;
        case 2: ((int *)buf)[i] = (int)value_i64(op, r, n, i, 1000); break;
        case 3: ((long *)buf)[i] = (long)value_i64(op, r, n, i, (int64_t)sizeof(long) > 4 ? INT64_C(1) << 33 : 1000); break;
        case 4: ((int32_t *)buf)[i] = (int32_t)value_i64(op, r, n, i, 1000); break;
        case 5: ((int64_t *)buf)[i] = value_i64(op, r, n, i, INT64_C(1) << 33); break;
        case 6: ((uint64_t *)buf)[i] = value_u64(op, r, n, i); break;
        }
    }
}

/* expected = fold over r of the inputs with MPI_Reduce_local; AVG = SUM / n. */
static void expect(const struct type_info *t, int op, int n, void *exp, void *tmp, long count)
{
    static const int mpi_ops[N_OPS] = {0, 1, 2, 3, 0};
    MPI_Op ops[4] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN};
    fill(t, op, 0, n, exp, count);
    for (int r = 1; r < n; r++) {
        fill(t, op, r, n, tmp, count);
        if (count > 0)
            MPI_Reduce_local(tmp, exp, (int)count, t->type, ops[mpi_ops[op]]);
    }
    if (op == OP_AVG) {
        for (long i = 0; i < count; i++) {
            if (t->kind == 0)
                ((float *)exp)[i] /= (float)n;
            else
                ((double *)exp)[i] /= (double)n;
        }
    }
}

static void report(int ok, const char *what, const struct type_info *t, int op, long count,
                   const char *detail)
{
    checks++;
    if (!ok) {
        failures++;
        printf("FAIL %s %s %s count %ld: %s\n", what, t ? t->name : "-", op >= 0 ? op_names[op] : "-",
               count, detail);
    }
}

static long parse_counts(const char *s, long *counts, long max)
{
    long n = 0;
    while (*s && n < max) {
        char *end;
        counts[n++] = strtol(s, &end, 0);
        s = *end == ',' ? end + 1 : end;
        if (*end != ',' && *end != '\0')
            return -1;
    }
    return n;
}

int main(int argc, char **argv)
{
    long counts[16] = {0, 1, 7919, 16L << 20};
    long n_counts = 4;
    int groups = 0, spares = 0, mpi_compare = 0;
    MPI_Comm cmp = MPI_COMM_NULL;

    MPI_Init(&argc, &argv);
    static char out_buf[BUFSIZ]; /* of its own, not NULL: see examples/ft_sgd.c */
    setvbuf(stdout, out_buf, _IOLBF, sizeof(out_buf));
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--groups"))
            groups = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--counts"))
            n_counts = parse_counts(argv[i + 1], counts, 16);
        else if (!strcmp(argv[i], "--spares"))
            spares = atoi(argv[i + 1]);
    }
    int use_mem = 0;
    for (int i = 1; i < argc; i++) {
        mpi_compare |= !strcmp(argv[i], "--mpi-compare");
        use_mem |= !strcmp(argv[i], "--mem");
    }
    if (mpi_compare) {
        /* the slices' ranks: world ranks with the same group rank, the last
         * world rank (the lighthouse) left out */
        const char *gs = getenv("FTMPI_GROUP_SIZE");
        int r = gs ? atoi(gs) : 0, wr, ws;
        MPI_Comm_rank(MPI_COMM_WORLD, &wr);
        MPI_Comm_size(MPI_COMM_WORLD, &ws);
        if (r < 1) {
            fprintf(stderr, "e2e_allreduce: --mpi-compare needs mode B (FTMPI_GROUP_SIZE)\n");
            MPI_Finalize();
            return 2;
        }
        MPI_Comm_split(MPI_COMM_WORLD, wr == ws - 1 ? MPI_UNDEFINED : wr % r, wr, &cmp);
    }
    if (groups < 1 || n_counts < 1) {
        fprintf(stderr, "usage: e2e_allreduce --groups N [--counts C1,C2,...]\n");
        MPI_Finalize();
        return 2;
    }

    struct type_info types[] = {
        {"MPI_FLOAT", MPI_FLOAT, sizeof(float), 0},
        {"MPI_DOUBLE", MPI_DOUBLE, sizeof(double), 1},
        {"MPI_INT", MPI_INT, sizeof(int), 2},
        {"MPI_LONG", MPI_LONG, sizeof(long), 3},
        {"MPI_INT32_T", MPI_INT32_T, sizeof(int32_t), 4},
        {"MPI_INT64_T", MPI_INT64_T, sizeof(int64_t), 5},
        {"MPI_UINT64_T", MPI_UINT64_T, sizeof(uint64_t), 6},
    };
    const int n_types = (int)(sizeof(types) / sizeof(types[0]));

    int rc = FT_Init(&argc, &argv);
    if (rc != FT_SUCCESS) {
        fprintf(stderr, "e2e_allreduce: FT_Init: %s\n", FT_Error_string(rc));
        MPI_Finalize();
        return 1;
    }
    long max_count = 1;
    for (long c = 0; c < n_counts; c++)
        if (counts[c] > max_count)
            max_count = counts[c];
    size_t bytes = (size_t)max_count * 8;
    char *in = NULL, *out = NULL, *exp = malloc(bytes), *tmp = malloc(bytes);
    if (use_mem) {
        (void)ftmpi_mem_alloc(bytes, (void **)&in);
        (void)ftmpi_mem_alloc(bytes, (void **)&out);
    } else {
        in = malloc(bytes);
        out = malloc(bytes);
    }
    if (!in || !out || !exp || !tmp) {
        fprintf(stderr, "e2e_allreduce: out of memory for %ld elements\n", max_count);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    /* something for healing to copy (init sync at step 0) */
    static double registered[8];
    FT_State_register("dummy", registered, sizeof(registered));

    int me = -1, n = 0;
    for (long c = 0; c < n_counts; c++) {
        long count = counts[c];
        char detail[256];
        rc = FT_Quorum(0);
        if (rc == FT_SUCCESS) {
            FT_Comm_rank(FT_COMM_REPLICAS, &me);
            FT_Comm_size(FT_COMM_REPLICAS, &n);
        }
        snprintf(detail, sizeof(detail), "FT_Quorum %s, replica rank %d of %d (want %d)",
                 FT_Error_string(rc), me, n, groups);
        report(rc == FT_SUCCESS && n == groups && me >= 0 && me < n + spares, "quorum", NULL, -1,
               count, detail);
        /* A step without a collective does not wait for the other groups:
         * a group could commit it and move on while another still heals
         * from it at step 0.  One small allreduce first keeps every step
         * in lockstep (and checks the participants). */
        int one = 1;
        if (rc == FT_SUCCESS && n == groups) {
            /* a spare's 1 does not count either */
            rc = FT_Allreduce(MPI_IN_PLACE, &one, 1, MPI_INT, MPI_SUM, FT_COMM_REPLICAS);
            snprintf(detail, sizeof(detail), "FT_Allreduce of 1 returned %s, sum %d (want %d)",
                     FT_Error_string(rc), one, n);
            report(rc == FT_SUCCESS && one == n, "lockstep", NULL, -1, count, detail);
        }
        if (rc != FT_SUCCESS || n != groups || one != n) {
            int committed;
            FT_Commit(&committed);
            break;
        }

        int k = 0;
        for (int ti = 0; ti < n_types; ti++) {
            const struct type_info *t = &types[ti];
            for (int op = 0; op < N_OPS; op++) {
                if (op == OP_AVG && t->kind > 1)
                    continue;
                MPI_Op mop = op == OP_SUM ? MPI_SUM : op == OP_PROD ? MPI_PROD
                           : op == OP_MAX ? MPI_MAX : op == OP_MIN ? MPI_MIN : FT_AVG;
                int in_place = (k++ & 1) == 0;
                fill(t, op, me, n, in_place ? out : in, count);
                rc = FT_Allreduce(in_place ? MPI_IN_PLACE : in, out, (int)count, t->type, mop,
                                  FT_COMM_REPLICAS);
                snprintf(detail, sizeof(detail), "FT_Allreduce returned %s (%s)",
                         FT_Error_string(rc), in_place ? "in place" : "separate buffers");
                report(rc == FT_SUCCESS, "call", t, op, count, detail);
                if (rc != FT_SUCCESS)
                    continue;
                expect(t, op, n, exp, tmp, count);
                if (memcmp(out, exp, (size_t)count * t->size) != 0) {
                    long i = 0;
                    while (memcmp(out + i * t->size, exp + i * t->size, t->size) == 0)
                        i++;
                    snprintf(detail, sizeof(detail), "first difference at element %ld", i);
                    report(0, "result", t, op, count, detail);
                } else {
                    report(1, "result", t, op, count, "");
                }
                if (cmp != MPI_COMM_NULL && op != OP_AVG && count > 0) {
                    /* MPI_Allreduce on the same ranks: the same bytes */
                    MPI_Op mpi_op = op == OP_SUM ? MPI_SUM : op == OP_PROD ? MPI_PROD
                                  : op == OP_MAX ? MPI_MAX : MPI_MIN;
                    fill(t, op, me, n, tmp, count);
                    MPI_Allreduce(MPI_IN_PLACE, tmp, (int)count, t->type, mpi_op, cmp);
                    report(memcmp(out, tmp, (size_t)count * t->size) == 0, "same as MPI_Allreduce",
                           t, op, count, "FT_Allreduce and MPI_Allreduce differ");
                }
                if (!in_place && count > 0) {
                    fill(t, op, me, n, tmp, count);
                    report(memcmp(in, tmp, (size_t)count * t->size) == 0, "sendbuf unchanged", t,
                           op, count, "the send buffer was modified");
                }
            }
        }
        int committed = 0;
        rc = FT_Commit(&committed);
        snprintf(detail, sizeof(detail), "FT_Commit %s, committed %d", FT_Error_string(rc),
                 committed);
        report(rc == FT_SUCCESS && committed, "commit", NULL, -1, count, detail);
        printf("count %ld: %d checks so far, %d failed\n", count, checks, failures);
    }

    /* refused combinations (a step of their own: they may latch an error) */
    if (FT_Quorum(0) == FT_SUCCESS) {
        char cbuf[8] = {0};
        rc = FT_Allreduce(MPI_IN_PLACE, cbuf, 8, MPI_CHAR, MPI_SUM, FT_COMM_REPLICAS);
        report(rc == FT_ERR_UNSUPPORTED, "refuse MPI_CHAR SUM", NULL, -1, 8, FT_Error_string(rc));
        rc = FT_Allreduce(MPI_IN_PLACE, cbuf, 8, MPI_BYTE, MPI_MAX, FT_COMM_REPLICAS);
        report(rc == FT_ERR_UNSUPPORTED, "refuse MPI_BYTE MAX", NULL, -1, 8, FT_Error_string(rc));
        int ibuf[2] = {1, 2};
        rc = FT_Allreduce(MPI_IN_PLACE, ibuf, 2, MPI_INT, FT_AVG, FT_COMM_REPLICAS);
        report(rc == FT_ERR_UNSUPPORTED, "refuse MPI_INT AVG", NULL, -1, 2, FT_Error_string(rc));
        int committed;
        FT_Commit(&committed);
    } else {
        report(0, "quorum of the last step", NULL, -1, 0, "FT_Quorum failed");
    }

    print_final(registered, sizeof(registered));
    FT_Finalize();
    if (cmp != MPI_COMM_NULL)
        MPI_Comm_free(&cmp);
    if (use_mem) {
        ftmpi_mem_free(in);
        ftmpi_mem_free(out);
    } else {
        free(in);
        free(out);
    }
    free(exp);
    free(tmp);
    MPI_Finalize();
    printf("%s: %d checks, %d failed\n", failures ? "FAIL" : "PASS", checks, failures);
    return failures ? 1 : 0;
}
