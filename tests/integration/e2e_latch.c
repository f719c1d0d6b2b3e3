/*
 * e2e_latch.c - errors of calls made inside a step are latched (issue 23
 * item 5), on a real replica group (mpirun, the lighthouse):
 *   step A: FT_Allreduce with a bad count (FT_ERR_ARG before any reduction
 *           runs), the application ignores it: FT_Commit must not commit;
 *   step B: FT_Iallreduce with a NULL receive buffer, ignored: not committed;
 *   step C: FT_Iallreduce with no request pointer, ignored: not committed;
 *   step D: a good FT_Allreduce: committed.
 * Prints "step X rc NAME committed C" per step and PASS or FAIL; exits 0 on
 * PASS.
 */
#include <stdio.h>

#include <mpi.h>

#include "ftmpi.h"

static int fails;

static void step(const char *name, int mode, int want_committed)
{
    float v[4] = {1, 2, 3, 4};
    FT_Request req = FT_REQUEST_NULL;
    int committed = -1, rc = FT_Quorum(0);
    if (rc != FT_SUCCESS) {
        printf("step %s: FT_Quorum: %s\n", name, FT_Error_string(rc));
        fails++;
        return;
    }
    switch (mode) {
    case 0: (void)FT_Allreduce(MPI_IN_PLACE, v, -1, MPI_FLOAT, MPI_SUM, FT_COMM_REPLICAS); break;
    case 1: (void)FT_Iallreduce(v, NULL, 4, MPI_FLOAT, MPI_SUM, FT_COMM_REPLICAS, &req); break;
    case 2: (void)FT_Iallreduce(v, v, 4, MPI_FLOAT, MPI_SUM, FT_COMM_REPLICAS, NULL); break;
    default: (void)FT_Allreduce(MPI_IN_PLACE, v, 4, MPI_FLOAT, MPI_SUM, FT_COMM_REPLICAS); break;
    }
    FT_Wait(&req);
    rc = FT_Commit(&committed);
    printf("step %s rc %s committed %d\n", name, FT_Error_string(rc), committed);
    if (committed != want_committed)
        fails++;
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    int rc = FT_Init(&argc, &argv);
    if (rc != FT_SUCCESS) {
        fprintf(stderr, "e2e_latch: FT_Init: %s\n", FT_Error_string(rc));
        MPI_Finalize();
        return 1;
    }
    float w[8] = {0};
    FT_State_register("w", w, sizeof(w));
    step("A", 0, 0);
    step("B", 1, 0);
    step("C", 2, 0);
    step("D", 3, 1);
    FT_Finalize();
    MPI_Finalize();
    printf("%s\n", fails ? "FAIL" : "PASS");
    return fails ? 1 : 0;
}
