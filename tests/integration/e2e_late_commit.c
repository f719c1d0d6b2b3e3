/*
 * e2e_late_commit.c - the group's commit decision with late voters (issue
 * 10, item 2), on the ranks of one replica group (mode A: mpirun -np 3):
 *
 *   step 2: rank 1 enters FT_Commit LATE1 ms after rank 0 (--late1-ms, e.g.
 *           1500 with a 2000 ms FTMPI_TIMEOUT_MS: within rank 0's wait for
 *           the votes); rank 2 enters only after rank 1's FT_Commit of the
 *           step returned (rank 1 tells it on MPI_COMM_WORLD), then LATE2
 *           ms later (--late2-ms): rank 1 has rank 0's decision then, so
 *           rank 2's vote comes after rank 0's deadline whatever the load
 *           (a sleep alone raced rank 0's window: 2000 ms + 500 ms slack);
 *   step 4: rank 0 enters FT_Commit --late0-ms after the others (within
 *           their wait for its decision);
 * the other steps are plain.  Every rank prints one line per step
 * ("rank R step S committed C rc NAME ms T") and, at the end, the world
 * ranks' committed steps gathered on rank 0 ("final steps A B C").  Exits
 * 0 when every rank holds the same step and every FT_Commit returned
 * within twice FTMPI_TIMEOUT_MS (--timeout-ms) + 1 s, 1 otherwise.
 *
 *   e2e_late_commit --timeout-ms T --late1-ms A --late2-ms B --late0-ms C
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "ftmpi.h"

#define STEPS 6

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

int main(int argc, char **argv)
{
    long t = -1, late[3] = {0, 0, 0};
    int rank, size, bad = 0;

    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    static char out_buf[BUFSIZ]; /* of its own, not NULL: see examples/ft_sgd.c */
    setvbuf(stdout, out_buf, _IOLBF, sizeof(out_buf));
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--timeout-ms"))
            t = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--late0-ms"))
            late[0] = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--late1-ms"))
            late[1] = atol(argv[i + 1]);
        else if (!strcmp(argv[i], "--late2-ms"))
            late[2] = atol(argv[i + 1]);
    }
    if (t <= 0 || size != 3) {
        fprintf(stderr, "usage: mpirun -np 3 e2e_late_commit --timeout-ms T [--lateR-ms MS]\n");
        MPI_Finalize();
        return 2;
    }
    int rc = FT_Init(&argc, &argv);
    if (rc != FT_SUCCESS) {
        fprintf(stderr, "e2e_late_commit: FT_Init: %s\n", FT_Error_string(rc));
        MPI_Finalize();
        return 1;
    }
    float w[4] = {1, 2, 3, 4};
    FT_State_register("w", w, sizeof(w));
    for (int s = 0; s < STEPS; s++) {
        float g = 1.0f;
        rc = FT_Quorum(0);
        if (rc == FT_ERR_GROUP_LOST)
            break;
        FT_Allreduce(MPI_IN_PLACE, &g, 1, MPI_FLOAT, MPI_SUM, FT_COMM_REPLICAS);
        if (s == 2 && rank == 1)
            sleep_ms(late[1]);
        if (s == 2 && rank == 2) {
            int word = 0; /* rank 1 has rank 0's decision of step 2 */
            MPI_Recv(&word, 1, MPI_INT, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
            sleep_ms(late[2]);
        }
        if (s == 4 && rank == 0)
            sleep_ms(late[0]);
        int committed = -1;
        double t0 = now_ms();
        rc = FT_Commit(&committed);
        double dt = now_ms() - t0;
        printf("rank %d step %d committed %d rc %s ms %.0f\n", rank, s, committed,
               FT_Error_string(rc), dt);
        if (s == 2 && rank == 1) {
            int word = 1;
            MPI_Send(&word, 1, MPI_INT, 2, 2, MPI_COMM_WORLD);
        }
        if (dt > 2.0 * t + 1000) {
            printf("rank %d: FT_Commit took %.0f ms, more than 2 x %ld + 1000\n", rank, dt, t);
            bad = 1;
        }
        if (committed)
            w[0] += g;
        if (rc == FT_ERR_GROUP_LOST)
            break;
    }
    int64_t mine = FT_Step(), all[3];
    FT_Finalize();
    MPI_Allgather(&mine, 1, MPI_INT64_T, all, 1, MPI_INT64_T, MPI_COMM_WORLD);
    if (rank == 0) {
        printf("final steps %" PRId64 " %" PRId64 " %" PRId64 "\n", all[0], all[1], all[2]);
        if (all[0] != all[1] || all[0] != all[2]) {
            printf("FAIL: the ranks of the group hold different steps\n");
            bad = 1;
        }
    }
    int any = 0;
    MPI_Allreduce(&bad, &any, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s\n", any ? "FAIL" : "PASS");
    MPI_Finalize();
    return any ? 1 : 0;
}
