/*
 * test_group.c - the group's operations (src/group.c) on 3 real MPI ranks:
 * gather, broadcast and the commit decision give the right values (M1: the
 * group's commit decision is the AND of its ranks' votes, fti_group_decide,
 * the call FT_Commit makes, whichever rank votes no), late voters get the
 * same decision as everyone (issue 10, item 2), and after a rank gave up on
 * an operation at its deadline the next operations still match (no stale
 * message is taken for a later one).
 *
 *   mpirun -np 3 test_group      exit 0 when every check passed
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <mpi.h>

#include "ftmpi.h"
#include "group.h"
#include "base/util.h"

static int failures, rank;

#define CHECK(cond, ...)                                                     \
    do {                                                                     \
        if (!(cond)) {                                                       \
            failures++;                                                      \
            fprintf(stderr, "rank %d: FAIL line %d: ", rank, __LINE__);      \
            fprintf(stderr, __VA_ARGS__);                                    \
            fputc('\n', stderr);                                             \
        }                                                                    \
    } while (0)

static int64_t in_ms(int ms)
{
    return fti_now_ms() + ms;
}

/* Gathers (tag, rank) from every rank; root checks them. */
static int gather_round(fti_group_h g, int64_t tag, int ms)
{
    int64_t mine[2] = {tag, rank}, all[3][2];
    memset(all, 0, sizeof(all));
    int rc = fti_group_gather(g, mine, sizeof(mine), all, in_ms(ms));
    if (rc == FT_SUCCESS && rank == 0)
        for (int r = 0; r < 3; r++)
            CHECK(all[r][0] == tag && all[r][1] == r, "gather %lld: rank %d sent (%lld, %lld)",
                  (long long)tag, r, (long long)all[r][0], (long long)all[r][1]);
    return rc;
}

int main(int argc, char **argv)
{
    int size;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 3) {
        if (rank == 0)
            fprintf(stderr, "run with 3 ranks\n");
        MPI_Finalize();
        return 2;
    }
    fti_group_h g = NULL;
    CHECK(fti_group_create(MPI_COMM_WORLD, &g) == FT_SUCCESS, "create");
    CHECK(fti_group_rank(g) == rank && fti_group_size(g) == 3, "rank/size");

    /* 1. plain operations */
    CHECK(gather_round(g, 1, 5000) == FT_SUCCESS, "gather 1");
    int st = -1;
    void *buf = NULL;
    size_t len = 0;
    CHECK(fti_group_bcast(g, FT_ERR_KILLED, "hello", 6, &st, &buf, &len, in_ms(5000)) ==
              FT_SUCCESS,
          "bcast 1");
    CHECK(st == FT_ERR_KILLED && len == 6 && buf && strcmp(buf, "hello") == 0,
          "bcast 1 got status %d, %zu bytes", st, len);
    free(buf);
    CHECK(fti_group_bcast(g, 0, NULL, 0, &st, &buf, &len, in_ms(5000)) == FT_SUCCESS &&
              st == 0 && len == 0 && buf == NULL,
          "empty bcast");
    /* M1: the commit decision is the AND of the votes, whichever rank
     * votes no */
    int dec = -1;
    CHECK(fti_group_decide(g, 1, in_ms(5000), in_ms(10000), &dec) == FT_SUCCESS &&
              dec == FT_SUCCESS,
          "M1: decide on 1s: %d", dec);
    CHECK(fti_group_decide(g, rank != 2, in_ms(5000), in_ms(10000), &dec) == FT_SUCCESS &&
              dec == FT_ERR_ABORTED,
          "M1: decide with the last rank's 0: %d", dec);
    CHECK(fti_group_decide(g, rank != 0, in_ms(5000), in_ms(10000), &dec) == FT_SUCCESS &&
              dec == FT_ERR_ABORTED,
          "M1: decide with the first rank's 0: %d", dec);
    CHECK(fti_group_decide(g, 0, in_ms(5000), in_ms(10000), &dec) == FT_SUCCESS &&
              dec == FT_ERR_ABORTED,
          "M1: decide on 0s: %d", dec);

    /* 2. rank 2 is late for a gather: the root gives up; rank 2's message
     * arrives after that and must not count for the next gather */
    if (rank == 2)
        fti_sleep_ms(800);
    int rc = gather_round(g, 2, 200);
    CHECK(rc == (rank == 0 ? FT_ERR_TIMEOUT : FT_SUCCESS), "late gather: %s",
          FT_Error_string(rc));
    rc = fti_group_bcast(g, rank == 0 ? FT_ERR_TIMEOUT : 0, NULL, 0, &st, &buf, &len,
                         in_ms(5000));
    CHECK(rc == FT_SUCCESS && st == FT_ERR_TIMEOUT, "status after the late gather: %s / %d",
          FT_Error_string(rc), st);
    fti_sleep_ms(100); /* rank 2's late message is in by now */
    CHECK(gather_round(g, 3, 5000) == FT_SUCCESS, "gather after a timeout");

    /* 3. the root is late for a broadcast: the others give up; the next
     * broadcast must deliver its own payload */
    if (rank == 0)
        fti_sleep_ms(600);
    rc = fti_group_bcast(g, 0, "stale", 6, &st, &buf, &len, in_ms(150));
    CHECK(rc == (rank == 0 ? FT_SUCCESS : FT_ERR_TIMEOUT), "late bcast: %s",
          FT_Error_string(rc));
    if (rc == FT_SUCCESS)
        free(buf);
    rc = fti_group_bcast(g, 7, "fresh", 6, &st, &buf, &len, in_ms(5000));
    CHECK(rc == FT_SUCCESS && st == 7 && len == 6 && buf && strcmp(buf, "fresh") == 0,
          "bcast after a timeout: %s, status %d, '%s'", FT_Error_string(rc), st,
          buf ? (char *)buf : "");
    free(buf);

    /* 4. issue 10 item 2: ranks 1 and 2 vote late, rank 2 after rank 0's
     * deadline: every rank learns the same "no" (FT_ERR_TIMEOUT), rank 2
     * too, although its vote completes later; the next decision pairs up */
    if (rank == 1)
        fti_sleep_ms(150);
    if (rank == 2)
        fti_sleep_ms(600);
    rc = fti_group_decide(g, 1, in_ms(300), in_ms(5000), &dec);
    CHECK(rc == FT_SUCCESS && dec == FT_ERR_TIMEOUT, "late voters: %s, decision %s",
          FT_Error_string(rc), FT_Error_string(dec));
    fti_sleep_ms(100); /* rank 2's late vote is in by now */
    CHECK(fti_group_decide(g, rank != 1, in_ms(5000), in_ms(10000), &dec) == FT_SUCCESS &&
              dec == FT_ERR_ABORTED,
          "decide after late voters: %s", FT_Error_string(dec));
    CHECK(fti_group_decide(g, 1, in_ms(5000), in_ms(10000), &dec) == FT_SUCCESS &&
              dec == FT_SUCCESS,
          "second decide after late voters: %s", FT_Error_string(dec));

    /* 5. rank 0 is late, within the others' wait: they get its decision */
    if (rank == 0)
        fti_sleep_ms(300);
    rc = fti_group_decide(g, 1, in_ms(200), in_ms(1500), &dec);
    CHECK(rc == FT_SUCCESS && dec == FT_SUCCESS, "late rank 0: %s, decision %s",
          FT_Error_string(rc), FT_Error_string(dec));

    /* 6. rank 0 is later than the others' wait: they cannot know (rank 0
     * decides yes with their votes) and say so; rank 0's late decision
     * must not be taken for the next one's */
    if (rank == 0)
        fti_sleep_ms(600);
    rc = fti_group_decide(g, 1, in_ms(200), in_ms(150), &dec);
    CHECK(rank == 0 ? rc == FT_SUCCESS && dec == FT_SUCCESS : rc == FT_ERR_TIMEOUT,
          "rank 0 too late: %s", FT_Error_string(rc));
    fti_sleep_ms(100);
    CHECK(fti_group_decide(g, rank != 2, in_ms(5000), in_ms(10000), &dec) == FT_SUCCESS &&
              dec == FT_ERR_ABORTED,
          "decide after a lost decision: %s", FT_Error_string(dec));
    CHECK(gather_round(g, 4, 5000) == FT_SUCCESS, "last gather");

    fti_group_destroy(g);
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s: %d failed check(s)\n", total ? "FAIL" : "PASS", total);
    MPI_Finalize();
    return total ? 1 : 0;
}
