/* mode/mode_b_ulfm.c - mode B on ULFM: a lost group's goodbye, and a partner
 * that says none ended through the launcher (see mode/mode_b.h; DESIGN
 * section 2, "Mode B on ULFM"). */
#include "mode/mode_b.h"

#include <dlfcn.h>
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

/* PMIx job control: Open MPI 5's mpirun (PRRTE) ends one process of the job
 * on PMIX_JOB_CTRL_KILL (SIGCONT, SIGTERM, then SIGKILL: a stopped one
 * too), on whatever node it runs; reported failed (below), ULFM then
 * knows it dead.  The
 * library does not link PMIx: libmpi has loaded it, its calls are looked up
 * there (dlsym), so a build against another MPI is unchanged. */
#if defined(OPEN_MPI) && OMPI_MAJOR_VERSION >= 5 && defined(__has_include)
#if __has_include(<pmix.h>)
#include <pmix.h>
#define MODEB_HAVE_PMIX 1
#endif
#endif

/* The goodbye's tag on the group's goodbye communicator (nothing else is
 * sent there). */
#define BYE_TAG 1

/* A reason, with a PMIx namespace (up to 255 bytes) in it. */
#define PMIX_WHY_SIZE 400

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

/* Asks the launcher to end world rank w of this job; FT_SUCCESS when it
 * took the request. */
static int launcher_kill(int w, char *why, size_t len)
{
#ifdef MODEB_HAVE_PMIX
    typedef pmix_status_t (*init_fn)(pmix_proc_t *, pmix_info_t *, size_t);
    typedef pmix_status_t (*fin_fn)(const pmix_info_t *, size_t);
    typedef pmix_status_t (*ctl_fn)(const pmix_proc_t[], size_t, const pmix_info_t[], size_t,
                                    pmix_info_t **, size_t *);
    typedef pmix_status_t (*notify_fn)(pmix_status_t, const pmix_proc_t *, pmix_data_range_t,
                                       const pmix_info_t[], size_t, pmix_op_cbfunc_t, void *);
    init_fn pinit = (init_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "PMIx_Init");
    fin_fn pfin = (fin_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "PMIx_Finalize");
    ctl_fn pctl = (ctl_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "PMIx_Job_control");
    notify_fn pnotify = (notify_fn)(uintptr_t)dlsym(RTLD_DEFAULT, "PMIx_Notify_event");
    if (pinit == NULL || pfin == NULL || pctl == NULL || pnotify == NULL) {
        snprintf(why, len, "the MPI library loaded no PMIx client (PMIx_Job_control)");
        return FT_ERR_UNSUPPORTED;
    }
    /* PMIx_Init of a process whose MPI initialized PMIx: its name, and one
     * more reference, given back below */
    pmix_proc_t me;
    memset(&me, 0, sizeof(me));
    pmix_status_t st = pinit(&me, NULL, 0);
    if (st != PMIX_SUCCESS) {
        snprintf(why, len, "PMIx_Init failed (PMIx status %d)", (int)st);
        return FT_ERR_MPI;
    }
    /* MPI_COMM_WORLD's rank is the rank in the job's namespace */
    pmix_proc_t target;
    memset(&target, 0, sizeof(target));
    memcpy(target.nspace, me.nspace, sizeof(target.nspace));
    target.rank = (pmix_rank_t)w;
    pmix_info_t kill;
    memset(&kill, 0, sizeof(kill));
    fti_strlcpy(kill.key, PMIX_JOB_CTRL_KILL, sizeof(kill.key));
    kill.value.type = PMIX_BOOL;
    kill.value.data.flag = true;
    pmix_info_t *res = NULL;
    size_t nres = 0;
    st = pctl(&target, 1, &kill, 1, &res, &nres);
    /* res: none for a kill (PRRTE answers PMIX_OPERATION_SUCCEEDED at once);
     * left, a few bytes, were there any */
    if (st != PMIX_SUCCESS && st != PMIX_OPERATION_SUCCEEDED) {
        (void)pfin(NULL, 0);
        snprintf(why, len, "PMIx_Job_control(PMIX_JOB_CTRL_KILL) of %s:%d failed (PMIx status %d)",
                 me.nspace, w, (int)st);
        return FT_ERR_MPI;
    }
    /* A process the launcher ended on request is no failure to ULFM
     * (PRRTE reports PMIX_ERR_PROC_KILLED_BY_CMD, which Open MPI 5.0's
     * handler ignores): every MPI_Finalize still waited for it.  So this
     * rank reports it failed the way ULFM's own detector does (ompi's
     * errhandler.c): PMIX_ERR_PROC_TERM_WO_SYNC for the affected process to
     * the local daemon, which tells every process of the job. */
    pmix_info_t affected;
    memset(&affected, 0, sizeof(affected));
    fti_strlcpy(affected.key, PMIX_EVENT_AFFECTED_PROC, sizeof(affected.key));
    affected.value.type = PMIX_PROC;
    affected.value.data.proc = &target;
    st = pnotify(PMIX_ERR_PROC_TERM_WO_SYNC, &me, PMIX_RANGE_LOCAL, &affected, 1, NULL, NULL);
    (void)pfin(NULL, 0);
    if (st != PMIX_SUCCESS && st != PMIX_OPERATION_SUCCEEDED) {
        snprintf(why, len,
                 "PMIx_Notify_event(PMIX_ERR_PROC_TERM_WO_SYNC) of %s:%d failed (PMIx "
                 "status %d) after PMIX_JOB_CTRL_KILL",
                 me.nspace, w, (int)st);
        return FT_ERR_MPI;
    }
    snprintf(why, len,
             "PMIx job control (PMIX_JOB_CTRL_KILL of %s:%d, reported failed with "
             "PMIX_ERR_PROC_TERM_WO_SYNC)",
             me.nspace, w);
    return FT_SUCCESS;
#else
    (void)w;
    snprintf(why, len, "this library was built without PMIx's header (Open MPI 5's pmix.h)");
    return FT_ERR_UNSUPPORTED;
#endif
}

void fti_modeb_end_rank(int w, const char *why)
{
    char how[PMIX_WHY_SIZE];
    FTI_WARN("mode B: world rank %d %s: it is stopped or hung, and MPI_Finalize (under ULFM it "
             "waits for every rank not known dead) would wait for it; asking the launcher to "
             "end it",
             w, why);
    if (launcher_kill(w, how, sizeof(how)) == FT_SUCCESS)
        FTI_WARN("mode B: world rank %d ended through %s", w, how);
    else
        FTI_ERROR("mode B: world rank %d could not be ended: %s; MPI_Finalize may wait for it", w,
                  how);
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
        fti_modeb_end_rank(mb->first_world_rank + g, why);
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
