/*
 * shim_errh.c - an unmodified MPI program with an error handler of its own
 * (MPI_Comm_create_errhandler, MPI_Comm_set_errhandler) for the drop-in's
 * test_shim_errh: sums ones every 10 ms, 300 times, on the communicator
 * SHIM_ERRH_COMM names (world: MPI_COMM_WORLD; split: a split of it with
 * one color, key = world rank), world rank R SIGKILLs itself before call I
 * (SHIM_ERRH_DIE=R:I; SHIM_ERRH_STOP=R:I: SIGSTOPs itself).  The handler counts its calls, checks that it was
 * given the communicator of the call, and keeps the code's string.
 * After MPI_Finalize (the line not flushed) each rank prints "shim_errh rank=R handler=H comm=ok|bad
 * errors=E class=STRING" (errors: calls that returned an error; STRING:
 * the code's string, empty when its class is MPI_ERR_OTHER).
 */
#define _POSIX_C_SOURCE 200809L
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static MPI_Comm used = MPI_COMM_NULL;
static int handled, comm_ok = 1;
static char class_text[MPI_MAX_ERROR_STRING] = "none";

static void handler(MPI_Comm *comm, int *code, ...)
{
    int cls = 0, len = 0;
    handled++;
    if (comm == NULL || *comm != used)
        comm_ok = 0;
    MPI_Error_class(*code, &cls);
    MPI_Error_string(*code, class_text, &len);
    if (cls == MPI_ERR_OTHER || cls <= MPI_SUCCESS)
        class_text[0] = '\0'; /* must be a class of its own */
}

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    int rank, errors = 0, die_rank = -1, die_at = -1;
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    const char *which = getenv("SHIM_ERRH_COMM");
    used = MPI_COMM_WORLD;
    if (which != NULL && strcmp(which, "split") == 0)
        MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &used);
    MPI_Errhandler eh;
    MPI_Comm_create_errhandler(handler, &eh);
    MPI_Comm_set_errhandler(used, eh);
    MPI_Errhandler_free(&eh);
    int stop = getenv("SHIM_ERRH_STOP") != NULL;
    if (stop)
        sscanf(getenv("SHIM_ERRH_STOP"), "%d:%d", &die_rank, &die_at);
    else if (getenv("SHIM_ERRH_DIE"))
        sscanf(getenv("SHIM_ERRH_DIE"), "%d:%d", &die_rank, &die_at);
    if (rank == 0)
        printf("shim_errh started\n");
    fflush(stdout);
    for (int i = 0; i < 300; i++) {
        if (rank == die_rank && i == die_at)
            raise(stop ? SIGSTOP : SIGKILL);
        int one = 1, sum = 0;
        if (MPI_Allreduce(&one, &sum, 1, MPI_INT, MPI_SUM, used) != MPI_SUCCESS)
            errors++;
        sleep_ms(10);
    }
    MPI_Finalize();
    /* after MPI_Finalize, not flushed: the drop-in's exit after a loss
     * must not lose it (stdout is a pipe: fully buffered) */
    printf("shim_errh rank=%d handler=%d comm=%s errors=%d class=%s\n", rank, handled,
           comm_ok ? "ok" : "bad", errors, class_text);
    return 0;
}
