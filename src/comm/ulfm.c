/* comm/ulfm.c - the MPI's ULFM calls where they work (see comm/ulfm.h). */
#include "comm/ulfm.h"

#include <stdio.h>
#include <stdlib.h>
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
