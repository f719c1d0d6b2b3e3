/* comm/ulfm.c - the MPI's ULFM calls where they work (see comm/ulfm.h). */
#include "comm/ulfm.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ftmpi.h"
#include "ftmpi_config.h"
#include "base/log.h"
#include "base/util.h"

#if defined(HAVE_MPIX_ULFM) && defined(HAVE_MPI_EXT_H)
#include <mpi-ext.h>
#endif

/* FTI_ULFM: the calls are declared and link (they are compiled wherever
 * they are, MPICH 4.0's included); FTI_ULFM_WORKS: this library is one
 * whose implementation of them works (comm/ulfm.h), else they are never
 * called. */
#if defined(HAVE_MPIX_ULFM)
#define FTI_ULFM 1
#if defined(OPEN_MPI)
#define FTI_ULFM_WORKS (OMPI_MAJOR_VERSION >= 5)
#elif defined(MPICH_NUMVERSION)
#define FTI_ULFM_WORKS (MPICH_NUMVERSION >= 40200000)
#else
#define FTI_ULFM_WORKS 1 /* another library that declares them: trusted */
#endif
#else
#define FTI_ULFM_WORKS 0
#endif

#if defined(OPEN_MPI) && OMPI_MAJOR_VERSION >= 5
/* Open MPI 5's switch behind mpi_ft_enable (set by mpirun --with-ft ulfm).
 * Weak: absent elsewhere. */
extern bool ompi_ftmpi_enabled __attribute__((weak));
#endif

bool fti_ulfm_active(void)
{
    if (!FTI_ULFM_WORKS)
        return false;
#if defined(OPEN_MPI) && OMPI_MAJOR_VERSION >= 5
    return &ompi_ftmpi_enabled != NULL && ompi_ftmpi_enabled;
#else
    return true;
#endif
}

bool fti_ulfm_usable(char *why, size_t len)
{
    if (FTI_ULFM_WORKS)
        return true;
    if (why != NULL && len > 0) {
#if defined(HAVE_MPIX_ULFM)
        snprintf(why, len,
                 "%s declares MPIX_Comm_revoke/shrink/agree but does not implement them "
                 "(MPICH before 4.2: its ch4 device aborts in MPIX_Comm_revoke; measured on "
                 "4.0.2)",
                 FTMPI_MPI_LIBRARY);
#else
        snprintf(why, len, "%s has no MPIX_Comm_revoke/shrink/agree (ULFM)", FTMPI_MPI_LIBRARY);
#endif
    }
    return false;
}

#ifdef FTI_ULFM
/* An MPIX call's error, by class: a failed member, a revoked comm, other. */
static int ulfm_error(const char *what, int err)
{
    int cls = MPI_ERR_OTHER;
    if (MPI_Error_class(err, &cls) != MPI_SUCCESS)
        cls = MPI_ERR_OTHER;
    if (cls == MPIX_ERR_PROC_FAILED || cls == MPIX_ERR_REVOKED)
        return FT_ERR_PROC_FAILED;
    FTI_WARN("%s failed (MPI error class %d)", what, cls);
    return FT_ERR_MPI;
}
#endif

int fti_ulfm_revoke(MPI_Comm comm)
{
#ifdef FTI_ULFM
    if (!FTI_ULFM_WORKS)
        return FT_ERR_UNSUPPORTED;
    int err = MPIX_Comm_revoke(comm);
    return err == MPI_SUCCESS ? FT_SUCCESS : ulfm_error("MPIX_Comm_revoke", err);
#else
    (void)comm;
    return FT_ERR_UNSUPPORTED;
#endif
}

int fti_ulfm_shrink(MPI_Comm comm, MPI_Comm *out)
{
#ifdef FTI_ULFM
    if (!FTI_ULFM_WORKS)
        return FT_ERR_UNSUPPORTED;
    MPI_Comm c = MPI_COMM_NULL;
    int err = MPIX_Comm_shrink(comm, &c);
    if (err != MPI_SUCCESS)
        return ulfm_error("MPIX_Comm_shrink", err);
    *out = c;
    return FT_SUCCESS;
#else
    (void)comm;
    (void)out;
    return FT_ERR_UNSUPPORTED;
#endif
}

int fti_ulfm_agree(MPI_Comm comm, int *flag)
{
#ifdef FTI_ULFM
    if (!FTI_ULFM_WORKS)
        return FT_ERR_UNSUPPORTED;
    int f = *flag;
    int err = MPIX_Comm_agree(comm, &f);
    int cls = MPI_SUCCESS;
    if (err != MPI_SUCCESS && MPI_Error_class(err, &cls) == MPI_SUCCESS &&
        cls == MPIX_ERR_PROC_FAILED) {
        *flag = f; /* agreed among the live members, a failure seen */
        return FT_ERR_PROC_FAILED;
    }
    if (err != MPI_SUCCESS)
        return ulfm_error("MPIX_Comm_agree", err);
    *flag = f;
    return FT_SUCCESS;
#else
    (void)comm;
    (void)flag;
    return FT_ERR_UNSUPPORTED;
#endif
}

int fti_ulfm_agree_until(MPI_Comm comm, int *flag, int64_t deadline_ms)
{
#if defined(FTI_ULFM) && HAVE_DECL_MPIX_COMM_IAGREE
    if (!FTI_ULFM_WORKS)
        return FT_ERR_UNSUPPORTED;
    /* MPI writes the flag when the agreement completes: on the heap, so that
     * a request left at the deadline writes into memory of its own */
    int *f = malloc(sizeof(*f));
    if (f == NULL)
        return FT_ERR_NO_MEMORY;
    *f = *flag;
    MPI_Request req = MPI_REQUEST_NULL;
    int err = MPIX_Comm_iagree(comm, f, &req);
    int done = 0, spins = 0;
    while (err == MPI_SUCCESS) {
        err = MPI_Test(&req, &done, MPI_STATUS_IGNORE);
        if (err != MPI_SUCCESS || done)
            break;
        if (fti_now_ms() >= deadline_ms)
            return FT_ERR_TIMEOUT; /* req and f stay MPI's */
        if (++spins > 100) {
            struct timespec ts = {0, 200000};
            nanosleep(&ts, NULL);
        }
    }
    int rc = FT_SUCCESS;
    if (err != MPI_SUCCESS)
        rc = ulfm_error("MPIX_Comm_iagree", err);
    else
        *flag = *f;
    free(f);
    return rc;
#else
    (void)comm;
    (void)flag;
    (void)deadline_ms;
    return FT_ERR_UNSUPPORTED;
#endif
}

int fti_ulfm_failed(MPI_Comm comm, int *n_failed)
{
#ifdef FTI_ULFM
    if (!FTI_ULFM_WORKS)
        return FT_ERR_UNSUPPORTED;
    MPI_Group g = MPI_GROUP_NULL;
#if HAVE_DECL_MPIX_COMM_GET_FAILED
    /* the newer query (MPICH 4.2, Open MPI 5, where the acked pair is
     * deprecated) */
    int err = MPIX_Comm_get_failed(comm, &g);
#else
    int err = MPIX_Comm_failure_ack(comm);
    if (err == MPI_SUCCESS)
        err = MPIX_Comm_failure_get_acked(comm, &g);
#endif
    if (err != MPI_SUCCESS)
        return ulfm_error("the failed-process query", err);
    int n = 0;
    err = MPI_Group_size(g, &n);
    MPI_Group_free(&g);
    if (err != MPI_SUCCESS)
        return ulfm_error("MPI_Group_size", err);
    *n_failed = n;
    return FT_SUCCESS;
#else
    (void)comm;
    (void)n_failed;
    return FT_ERR_UNSUPPORTED;
#endif
}

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

/* A reason, with a PMIx namespace (up to 255 bytes) in it. */
#define PMIX_WHY_SIZE 400

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

void fti_ulfm_end_rank(int w, const char *why)
{
    char how[PMIX_WHY_SIZE];
    FTI_WARN("ULFM: world rank %d %s: it is stopped or hung, and MPI_Finalize (under ULFM it "
             "waits for every rank not known dead) would wait for it; asking the launcher to "
             "end it",
             w, why);
    if (launcher_kill(w, how, sizeof(how)) == FT_SUCCESS)
        FTI_WARN("ULFM: world rank %d ended through %s", w, how);
    else
        FTI_ERROR("ULFM: world rank %d could not be ended: %s; MPI_Finalize may wait for it", w,
                  how);
}
