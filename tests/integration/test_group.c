/*
 * test_group.c - the group's operations (src/group.c) on 3 real MPI ranks:
 * gather, broadcast and AND give the right values (M1: the group's commit
 * decision is the AND of its ranks' votes, fti_group_and, the call
 * FT_Commit makes), and after a rank gave
 * up on an operation at its deadline the next operations still match
 * (no stale message is taken for a later one, collectives stay in order).
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
#include "util.h"

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
    int all = -1;
    CHECK(fti_group_and(g, 1, &all, in_ms(5000)) == FT_SUCCESS && all == 1, "M1: and of 1s: %d",
          all);
    CHECK(fti_group_and(g, rank != 2, &all, in_ms(5000)) == FT_SUCCESS && all == 0,
          "M1: and with the last rank's 0: %d", all);
    CHECK(fti_group_and(g, rank != 0, &all, in_ms(5000)) == FT_SUCCESS && all == 0,
          "M1: and with the first rank's 0: %d", all);
    CHECK(fti_group_and(g, 0, &all, in_ms(5000)) == FT_SUCCESS && all == 0, "M1: and of 0s: %d",
          all);

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

    /* 4. rank 1 is late for an AND: the others give up, rank 1 completes
     * it later; the next AND still pairs up */
    if (rank == 1)
        fti_sleep_ms(600);
    rc = fti_group_and(g, 1, &all, in_ms(150));
    CHECK(rc == (rank == 1 ? FT_SUCCESS : FT_ERR_TIMEOUT), "late and: %s", FT_Error_string(rc));
    CHECK(fti_group_and(g, rank != 0, &all, in_ms(5000)) == FT_SUCCESS && all == 0,
          "and after a timeout: %d", all);
    CHECK(fti_group_and(g, 1, &all, in_ms(5000)) == FT_SUCCESS && all == 1,
          "second and after a timeout: %d", all);
    CHECK(gather_round(g, 4, 5000) == FT_SUCCESS, "last gather");

    fti_group_destroy(g);
    int total = 0;
    MPI_Allreduce(&failures, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (rank == 0)
        printf("%s: %d failed check(s)\n", total ? "FAIL" : "PASS", total);
    MPI_Finalize();
    return total ? 1 : 0;
}
