/*
 * shim_check.c - an unmodified MPI program (no FT_ call) for the drop-in's
 * tests (S1): MPI_Allreduce on MPI_COMM_WORLD, on a duplicate of it, on a
 * communicator split from it with one color and the ranks reversed, and on
 * one made by MPI_Comm_create of the world's group, of every datatype and
 * op the data plane reduces and some that only MPI does (MPI_SHORT,
 * MPI_CHAR, MPI_LAND), in
 * place and with separate buffers, counts 0, 1, odd and large
 * (SHIM_CHECK_LARGE elements, default 1 Mi), and two huge calls
 * (SHIM_CHECK_HUGE elements, default 16 Mi, 0 for none: a float sum with
 * separate buffers and a double sum in place); every result is checked
 * against the value computed locally.  Prints "shim_check ok: N checks"
 * on world rank 0 and exits 0, or names the first wrong result and exits 1.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size, checks, bad;

/* Element i of rank r: small integers, so float sums are exact. */
static long val(int r, long i, MPI_Op op)
{
    if (op == MPI_PROD)
        return (r + i) % 3 == 0 ? 2 : 1;
    return (long)(r + 1) * (i % 7 + 1) - (i % 2 ? 3 : 0);
}

static long expect(long i, MPI_Op op)
{
    long acc = val(0, i, op);
    for (int r = 1; r < size; r++) {
        long v = val(r, i, op);
        if (op == MPI_SUM)
            acc += v;
        else if (op == MPI_PROD)
            acc *= v;
        else if (op == MPI_MAX)
            acc = v > acc ? v : acc;
        else
            acc = v < acc ? v : acc;
    }
    return acc;
}

#define CHECK_TYPE(T, MT)                                                                       \
    static void check_##T(MPI_Comm comm, long n, MPI_Op op, int in_place)                      \
    {                                                                                          \
        T *s = calloc((size_t)n + 1, sizeof(T)), *r = calloc((size_t)n + 1, sizeof(T));          \
        for (long i = 0; i < n; i++) {                                                         \
            s[i] = (T)val(rank, i, op);                                                        \
            r[i] = in_place ? s[i] : (T)-99;                                                   \
        }                                                                                      \
        int rc = MPI_Allreduce(in_place ? MPI_IN_PLACE : s, r, (int)n, MT, op, comm);          \
        checks++;                                                                              \
        for (long i = 0; i < n && !bad; i++) {                                                 \
            if (rc != MPI_SUCCESS || r[i] != (T)expect(i, op)) {                               \
                fprintf(stderr, "shim_check: rank %d: %s count %ld op %d %s: element %ld "     \
                                "is %g, expected %g (rc %d)\n",                                \
                        rank, #T, n, (int)(op == MPI_SUM ? 0 : op == MPI_PROD ? 1 : 2),       \
                        in_place ? "in place" : "separate", i, (double)r[i],                  \
                        (double)expect(i, op), rc);                                            \
                bad = 1;                                                                       \
            }                                                                                  \
        }                                                                                      \
        free(s);                                                                               \
        free(r);                                                                               \
    }
CHECK_TYPE(float, MPI_FLOAT)
CHECK_TYPE(double, MPI_DOUBLE)
CHECK_TYPE(int, MPI_INT)
CHECK_TYPE(long, MPI_LONG)
CHECK_TYPE(int32_t, MPI_INT32_T)
CHECK_TYPE(int64_t, MPI_INT64_T)
CHECK_TYPE(uint64_t, MPI_UINT64_T)    /* sums and products: they wrap alike */
CHECK_TYPE(short, MPI_SHORT)          /* MPI's own reduction on the fast path */
CHECK_TYPE(char, MPI_CHAR)            /* the same */

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const char *large = getenv("SHIM_CHECK_LARGE");
    long counts[] = {0, 1, 7, 1001, large ? atol(large) : 1L << 20};
    MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN};
    MPI_Comm comms[4] = {MPI_COMM_WORLD, MPI_COMM_NULL, MPI_COMM_NULL, MPI_COMM_NULL};
    MPI_Group world_group;
    MPI_Comm_dup(MPI_COMM_WORLD, &comms[1]);
    MPI_Comm_split(MPI_COMM_WORLD, 7, size - rank, &comms[2]);
    MPI_Comm_group(MPI_COMM_WORLD, &world_group);
    MPI_Comm_create(MPI_COMM_WORLD, world_group, &comms[3]);
    MPI_Group_free(&world_group);
    for (int c = 0; c < 4; c++) {
        MPI_Comm comm = comms[c];
        for (size_t k = 0; k < sizeof(counts) / sizeof(counts[0]) - (c >= 2); k++)
            for (int o = 0; o < 4; o++)
                for (int ip = 0; ip < 2; ip++) {
                    long n = counts[k];
                    if (ops[o] == MPI_PROD && n > 1001)
                        n = 1001;
                    check_float(comm, n, ops[o], ip);
                    check_double(comm, n, ops[o], ip);
                    check_int(comm, n, ops[o], ip);
                    check_long(comm, n, ops[o], ip);
                    check_int32_t(comm, n, ops[o], ip);
                    check_int64_t(comm, n, ops[o], ip);
                    if (ops[o] == MPI_SUM || ops[o] == MPI_PROD)
                        check_uint64_t(comm, n, ops[o], ip);
                    if (ops[o] == MPI_SUM && n < 1000)
                        check_short(comm, n, ops[o], ip);
                    if ((ops[o] == MPI_MAX || ops[o] == MPI_MIN) && n < 1000)
                        check_char(comm, n, ops[o], ip);
                }
    }
    for (int c = 1; c < 4; c++)
        MPI_Comm_free(&comms[c]);
    {   /* a logical op on ints: MPI only */
        int t = rank != 1, all = -1;
        MPI_Allreduce(&t, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
        checks++;
        if (all != (size == 1)) {
            fprintf(stderr, "shim_check: rank %d: MPI_LAND gave %d\n", rank, all);
            bad = 1;
        }
    }
    const char *huge = getenv("SHIM_CHECK_HUGE");
    long n_huge = huge ? atol(huge) : 16L << 20;
    if (n_huge > 0) {
        check_float(MPI_COMM_WORLD, n_huge, MPI_SUM, 0);
        check_double(MPI_COMM_WORLD, n_huge, MPI_SUM, 1);
    }
    /* a child started by the program (fork+exec of a non-MPI tool) */
    const char *child = getenv("SHIM_CHECK_CHILD");
    if (child != NULL && rank == 0 && system(child) != 0) {
        fprintf(stderr, "shim_check: the child '%s' failed\n", child);
        bad = 1;
    }
    int all = 0;
    MPI_Allreduce(&bad, &all, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0 && !all)
        printf("shim_check ok: %d checks on %d ranks\n", checks, size);
    MPI_Finalize();
    return all ? 1 : 0;
}
