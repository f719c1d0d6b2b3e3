/*
 * shim_agree.c - an unmodified MPI program under MPI_ERRORS_RETURN for the
 * drop-in's S2 test: SHIM_AGREE_CALLS (default 400) MPI_Allreduce calls of
 * SHIM_AGREE_COUNT doubles (default 32 Ki: 256 KiB, Open MPI's ring) back to
 * back, no pause, so that a rank SIGKILLed meanwhile dies inside a call
 * and a survivor may complete the call the others fail (it is then one
 * call ahead and hands its result over).  Each rank hashes every result
 * (and every failed call) and prints "shim_agree rank=R errors=E
 * hash=H": the survivors must print the same E and H.
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    int rank, errors = 0;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    int calls = getenv("SHIM_AGREE_CALLS") ? atoi(getenv("SHIM_AGREE_CALLS")) : 400;
    int count = getenv("SHIM_AGREE_COUNT") ? atoi(getenv("SHIM_AGREE_COUNT")) : 32 << 10;
    double *s = malloc((size_t)count * sizeof(*s)), *r = malloc((size_t)count * sizeof(*r));
    if (s == NULL || r == NULL || count < 1) {
        fprintf(stderr, "shim_agree: bad count or out of memory\n");
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    if (rank == 0)
        printf("shim_agree started\n");
    fflush(stdout);
    uint64_t hash = 0;
    for (int c = 0; c < calls; c++) {
        for (int i = 0; i < count; i++)
            s[i] = rank + 1 + (i + c) % 5;
        if (MPI_Allreduce(s, r, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD) != MPI_SUCCESS) {
            errors++;
            hash = hash * 31 + 7;
            continue;
        }
        uint64_t x = 0;
        for (int i = 0; i < count; i += 997)
            x += (uint64_t)r[i];
        hash = hash * 1000003u + x;
    }
    printf("shim_agree rank=%d errors=%d hash=%llx\n", rank, errors, (unsigned long long)hash);
    free(s);
    free(r);
    MPI_Finalize();
    return 0;
}
