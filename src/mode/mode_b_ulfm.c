/* mode/mode_b_ulfm.c - mode B on ULFM: the group's goodbye, and a partner
 * that says none ended through the launcher (comm/ulfm.h's
 * fti_ulfm_end_rank; see mode/mode_b.h; DESIGN section 2, "Mode B on
 * ULFM"). */
#include "mode/mode_b.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ftmpi.h"
#include "base/log.h"
#include "base/util.h"
#include "comm/ulfm.h"

/* The goodbye's tag on the group's goodbye communicator (nothing else is
 * sent there). */
#define BYE_TAG 1

int fti_modeb_bye_create(fti_modeb_t *mb)
{
    mb->bye = MPI_COMM_NULL;
    if (!fti_ulfm_active() || mb->split == MPI_COMM_NULL || mb->group_size < 2)
        return FT_SUCCESS;
    if (MPI_Comm_dup(mb->split, &mb->bye) != MPI_SUCCESS) {
        FTI_ERROR("mode B: MPI_Comm_dup of the group's communicator failed");
        mb->bye = MPI_COMM_NULL;
        return FT_ERR_MPI;
    }
    MPI_Comm_set_errhandler(mb->bye, MPI_ERRORS_RETURN);
    return FT_SUCCESS;
}

void fti_modeb_bye(fti_modeb_t *mb, int wait_ms)
{
    if (mb->bye == MPI_COMM_NULL)
        return;
    int n = mb->group_size, me = mb->world_rank - mb->first_world_rank;
    MPI_Request *req = calloc((size_t)(2 * n), sizeof(*req));
    int *in = calloc((size_t)n, sizeof(*in));
    if (req == NULL || in == NULL) {
        FTI_ERROR("mode B: no memory for the group's goodbye: a stopped partner is not ended");
        free(req);
        free(in);
        return;
    }
    static const int token = 1;
    for (int g = 0; g < 2 * n; g++)
        req[g] = MPI_REQUEST_NULL;
    for (int g = 0; g < n; g++) {
        if (g == me)
            continue;
        /* a failed member: both complete with MPIX_ERR_PROC_FAILED */
        (void)MPI_Irecv(&in[g], 1, MPI_INT, g, BYE_TAG, mb->bye, &req[g]);
        (void)MPI_Isend(&token, 1, MPI_INT, g, BYE_TAG, mb->bye, &req[n + g]);
    }
    int64_t t0 = fti_now_ms(), deadline = t0 + wait_ms;
    int open = n - 1;
    bool cancelled = false;
    while (open > 0 && fti_now_ms() < deadline) {
        open = 0;
        for (int g = 0; g < n; g++) {
            int done = 1;
            if (req[g] != MPI_REQUEST_NULL &&
                MPI_Test(&req[g], &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
                req[g] = MPI_REQUEST_NULL; /* failed: MPI knows the member dead */
                done = 1;
            }
            open += !done;
        }
        struct timespec ts = {0, 2000000};
        nanosleep(&ts, NULL);
    }
    for (int g = 0; g < n; g++) {
        if (req[g] == MPI_REQUEST_NULL)
            continue;
        char why[96];
        snprintf(why, sizeof(why), "said no goodbye in %d ms after this rank reached FT_Finalize",
                 wait_ms);
        fti_ulfm_end_rank(mb->first_world_rank + g, why);
        (void)MPI_Cancel(&req[g]);
        (void)MPI_Request_free(&req[g]);
        cancelled = true;
    }
    /* the sends: given to MPI (a stopped member's never completes) */
    for (int g = n; g < 2 * n; g++)
        if (req[g] != MPI_REQUEST_NULL)
            (void)MPI_Request_free(&req[g]);
    FTI_DEBUG("mode B: the group's goodbye took %" PRId64 " ms", fti_now_ms() - t0);
    free(req);
    if (!cancelled) {
        free(in);
        MPI_Comm_free(&mb->bye);
    } /* else left to MPI, with the comm: a cancel may come too late */
    mb->bye = MPI_COMM_NULL;
}
