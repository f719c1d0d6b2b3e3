/*
 * e2e_thread_level.c - FT_Init checks the thread level MPI granted
 * (issue 10, item 9).  The FT_ calls make MPI calls, so they must come from
 * the thread that initialised MPI, unless MPI granted at least
 * MPI_THREAD_SERIALIZED.
 *
 *   e2e_thread_level funneled    MPI_THREAD_FUNNELED, FT_Init from a second
 *                                thread: must fail with FT_ERR_CONFIG
 *   e2e_thread_level serialized  MPI_THREAD_SERIALIZED, FT_Init from a
 *                                second thread: the thread check passes
 *                                (FT_Init then fails on the unreachable
 *                                lighthouse, with another code)
 *
 * Prints "rc=<code> <name>" and exits 0; the script judges.  Run with
 * -np 1 and FTMPI_LIGHTHOUSE pointing at nothing.
 */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "ftmpi.h"

static int init_rc = 1;

static void *init_thread(void *arg)
{
    (void)arg;
    init_rc = FT_Init(NULL, NULL);
    return NULL;
}

int main(int argc, char **argv)
{
    int want = argc > 1 && strcmp(argv[1], "serialized") == 0 ? MPI_THREAD_SERIALIZED
                                                              : MPI_THREAD_FUNNELED;
    int provided = MPI_THREAD_SINGLE;
    MPI_Init_thread(&argc, &argv, want, &provided);
    if (provided < want) {
        printf("skip: MPI granted %d < %d\n", provided, want);
        MPI_Finalize();
        return 77;
    }
    pthread_t t;
    if (pthread_create(&t, NULL, init_thread, NULL) != 0 || pthread_join(t, NULL) != 0) {
        printf("pthread failed\n");
        MPI_Finalize();
        return 1;
    }
    printf("rc=%d %s\n", init_rc, FT_Error_string(init_rc));
    fflush(stdout);
    FT_Finalize();
    MPI_Finalize();
    return 0;
}
