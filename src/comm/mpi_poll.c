/* mpi_poll.c - fti_mpi_poll (mpi_backend.h): the wait on MPI requests
 * against a deadline that both the mpi backend (mpi.c) and its ring
 * (mpi_ring.c) use, so that neither file calls back into the other. */
#include "comm/mpi_backend.h"

#include <sched.h>
#include <stdbool.h>
#include <time.h>

#include "ftmpi.h"
#include "base/util.h"

/* Polling (mpi_backend.h: fti_mpi_poll).  Open MPI advances a non-blocking
 * collective (libnbc) only inside MPI_Test*, so a rank that sleeps stalls
 * every rank waiting for its part of the schedule.  fti_mpi_poll therefore
 * keeps calling MPI_Testall: it spins for POLL_SPIN_MS (sched_yield between
 * tries after the first quiet_tries, so an oversubscribed core goes to
 * whoever can run), then sleeps at most POLL_NAP_US between tries, so that
 * a rank waiting for a dead peer until its deadline leaves the cores to the
 * living but still progresses every POLL_NAP_US.  The clock is read every
 * POLL_CLOCK_EVERY tries only. */
#define POLL_SPIN_MS 50
#define POLL_NAP_US 50L
#define POLL_CLOCK_EVERY 64u

int fti_mpi_poll(MPI_Request *reqs, int n, int64_t deadline_ms, unsigned quiet_tries)
{
    int64_t spin_until = -1; /* read the clock only once the first tries fail */
    bool nap = false;
    for (unsigned tries = 0;; tries++) {
        int done = 0;
        int trc = fti_mpi_testall(MPI_Testall, n, reqs, &done);
        if (trc != MPI_SUCCESS)
            return FT_ERR_PROC_FAILED;
        if (done)
            return FT_SUCCESS;
        if (nap || tries % POLL_CLOCK_EVERY == POLL_CLOCK_EVERY - 1) {
            int64_t now = fti_now_ms();
            if (now >= deadline_ms)
                return FT_ERR_TIMEOUT;
            if (spin_until < 0)
                spin_until = now + POLL_SPIN_MS;
            else if (now >= spin_until)
                nap = true;
        }
        if (nap) {
            struct timespec ts = {0, POLL_NAP_US * 1000};
            nanosleep(&ts, NULL);
        } else if (tries >= quiet_tries) {
            sched_yield();
        }
    }
}
