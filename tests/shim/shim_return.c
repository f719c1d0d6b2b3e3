/*
 * shim_return.c - an unmodified MPI program under MPI_ERRORS_RETURN for the
 * drop-in's S2 test: sums ones over the world every 10 ms for 4 s, counts
 * the calls that fail; at the end each rank prints
 * "shim_return rank=R errors=E after=ok|bad" (after: every call after the
 * first error summed to the number of ranks then alive, world size - 1).
 *
 * SHIM_RETURN_DIE=R:I makes world rank R SIGKILL itself before call I, and
 * SHIM_RETURN_STALL=R:I:MS makes world rank R compute MS ms longer before
 * call I (a survivor that enters the failing call late: it asks for the
 * new quorum that much after the others and must not be left out).
 * SHIM_RETURN_LATE=N sets MPI_ERRORS_RETURN only before call N: the calls
 * before it run under MPI_ERRORS_ARE_FATAL (the failure mode auto is then
 * abort, and the drop-in's hot path runs them), the later ones return;
 * built with -DSHIM_RETURN_MPI1 (test_shim_hot, where the MPI has it), it
 * is set with MPI-1's MPI_Errhandler_set (removed in MPI-3.0; Open MPI 4.1
 * still exports it for old codes).
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#ifdef SHIM_RETURN_MPI1
/* MPI-1's, which mpi.h refuses to let a program call: declared here */
#undef MPI_Errhandler_set
int MPI_Errhandler_set(MPI_Comm comm, MPI_Errhandler errhandler);
#define SET_ERRHANDLER MPI_Errhandler_set
#else
#define SET_ERRHANDLER MPI_Comm_set_errhandler
#endif
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    int rank, size, errors = 0, after_ok = 1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    int late = getenv("SHIM_RETURN_LATE") != NULL ? atoi(getenv("SHIM_RETURN_LATE")) : 0;
    if (late <= 0)
        MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    if (rank == 0)
        printf("shim_return started\n");
    fflush(stdout);
    int die_rank = -1, die_at = -1, stall_rank = -1, stall_at = -1, stall_ms = 0;
    if (getenv("SHIM_RETURN_DIE"))
        sscanf(getenv("SHIM_RETURN_DIE"), "%d:%d", &die_rank, &die_at);
    if (getenv("SHIM_RETURN_STALL"))
        sscanf(getenv("SHIM_RETURN_STALL"), "%d:%d:%d", &stall_rank, &stall_at, &stall_ms);
    for (int i = 0; i < 400; i++) {
        if (rank == die_rank && i == die_at)
            raise(SIGKILL);
        if (rank == stall_rank && i == stall_at)
            sleep_ms(stall_ms);
        if (late > 0 && i == late)
            SET_ERRHANDLER(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
        int one = 1, sum = 0;
        int rc = MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
        if (rc != MPI_SUCCESS)
            errors++;
        else if (errors > 0 && sum != size - 1)
            after_ok = 0;
        else if (errors == 0 && sum != size && sum != size - 1)
            after_ok = 0;
        sleep_ms(10);
    }
    printf("shim_return rank=%d errors=%d after=%s\n", rank, errors, after_ok ? "ok" : "bad");
    MPI_Finalize();
    return 0;
}
