/*
 * shim.c - the drop-in's hand-written wrappers: MPI_Init,
 * MPI_Init_thread and MPI_Finalize (see shim.h; DESIGN section 10.1).
 *
 * MPI_Init sets the fault-tolerant layer up after PMPI_Init: the drop-in's
 * settings (settings.c), then FT_Init in the drop-in's mode with the table
 * read before PMPI_Init (fti_init, ft_init.h; the mode: every world rank a
 * group of one, src/mode/dropin.c) and the first quorum.  Every world rank agrees on the outcome; a layer
 * that did not start ends the job with a message (a user who preloads the
 * shim asked for protection, and a bad FTMPI_* value is refused).
 *
 * Before PMPI_Init (before_init) the FTMPI_* table is read, the one load
 * of this process, and under
 * ftmpi-run (FTMPI_AGENT_DIR) the rank's mark is made (base/agent_mark.h):
 * a rank lost inside MPI's own start-up leaves the others waiting there
 * for good (Open MPI 4.1 under --enable-recovery: PMIx_Get in its start-up
 * exchange), before any watchdog of ours exists; the agent sees the mark's
 * process gone and ends and restarts the job.  FT_Init writes the mark
 * again, MPI_Finalize's FT_Finalize removes it.
 */
#include "mpi_shim/shim.h"

#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi.h"
#include "ftmpi_config.h" /* FTMPI_TEST_HOOKS */
#include "base/agent_mark.h"
#include "base/log.h"
#include "base/net.h"
#include "base/settings.h"
#include "base/util.h"
#include "ft_init.h"
#include "mode/dropin.h"

/* With an external lighthouse (FTMPI_LIGHTHOUSE), the first quorum waits
 * until every rank's manager has been heard this many heartbeat periods
 * (see announce). */
#define SHIM_FIRST_HEARTBEATS 2

int fti_shim_on;
__thread int fti_shim_busy;
atomic_uint fti_shim_errh_gen = 1; /* 0: allreduce.c's cache is empty */
struct fti_shim_cfg fti_shim_cfg;

/* MPI_Errhandler_set: MPI-1's MPI_Comm_set_errhandler, removed in MPI-3.0,
 * which Open MPI 4.1 still exports for old codes (mpi.h refuses a call of
 * it, hence the #undef): the same call, and the error handlers changed
 * (fti_shim_errh_changed; its Fortran symbols are wrappers.txt's). */
#undef MPI_Errhandler_set
FTI_SHIM_EXPORT int MPI_Errhandler_set(MPI_Comm comm, MPI_Errhandler errhandler);
FTI_SHIM_EXPORT int MPI_Errhandler_set(MPI_Comm comm, MPI_Errhandler errhandler)
{
    int rc = PMPI_Comm_set_errhandler(comm, errhandler);
    fti_shim_errh_changed();
    return rc;
}

/* The FTMPI_* table, read once in before_init (setup uses it). */
static fti_config_t shim_table;
static int shim_table_rc = FT_ERR_INTERNAL;
static char shim_table_err[512] = "the FTMPI_* settings were not read";

/* The world rank the launcher gave this process (Open MPI, PMIx, MPICH's
 * hydra), before MPI says; -1 when none does. */
static int launcher_rank(void)
{
    static const char *const names[] = {"OMPI_COMM_WORLD_RANK", "PMIX_RANK", "PMI_RANK"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *v = getenv(names[i]);
        char *end = NULL;
        long r = v != NULL && *v != '\0' ? strtol(v, &end, 10) : -1;
        if (end != NULL && *end == '\0' && r >= 0 && r <= INT_MAX)
            return (int)r;
    }
    return -1;
}

/* Test hook (configure --enable-test-hooks): FTMPI_TEST_SHIM_INIT_DIE=R,
 * the process the launcher made world rank R SIGKILLs itself after its mark,
 * before PMPI_Init, in a job's first run (FTMPI_RESTART_COUNT unset or 0;
 * test_shim_restart). */
static void init_die_hook(void)
{
#ifdef FTMPI_TEST_HOOKS
    const char *v = getenv("FTMPI_TEST_SHIM_INIT_DIE");
    const char *n = getenv("FTMPI_RESTART_COUNT");
    if (v != NULL && *v != '\0' && atoi(v) == launcher_rank() && (n == NULL || atoi(n) == 0))
        raise(SIGKILL);
#endif
}

/* Before PMPI_Init (see the top). */
static void before_init(void)
{
    if (fti_shim_busy)
        return;
    shim_table_rc = fti_config_load(&shim_table, shim_table_err, sizeof(shim_table_err));
    if (shim_table_rc == FT_SUCCESS)
        fti_agent_mark(shim_table.agent_dir, launcher_rank());
    init_die_hook();
}

#if defined(OPEN_MPI) && OMPI_MAJOR_VERSION == 4
/* Open MPI 4.x: MPI_Finalize without its job-wide fence (see src/mode/mode_b.c:
 * after a rank was SIGKILLed the survivors' fence may never complete). */
extern bool ompi_async_mpi_finalize __attribute__((weak));
#define SHIM_HAVE_ASYNC_FINALIZE 1
#endif

/* An external lighthouse does not know how many ranks the job has (rank 0's
 * own lighthouse is told): every rank's manager heartbeats for a few
 * periods before any rank asks for the first quorum, so that every rank is
 * a healthy group when the first asks, and the lighthouse waits for all of
 * them (its join timeout) instead of starting a quorum with the first
 * few.  Its --min-replicas is then free to be as low as the survivors
 * that may go on. */
static void announce(const fti_config_t *cfg, int rc)
{
    if (rc == FT_SUCCESS && cfg->lighthouse[0] != '\0')
        fti_sleep_ms(SHIM_FIRST_HEARTBEATS * (cfg->heartbeat_ms > 0 ? cfg->heartbeat_ms : 100));
    PMPI_Barrier(MPI_COMM_WORLD); /* on every rank, whatever its outcome so far */
}

/* Runs inside the drop-in (fti_shim_busy set): the library's own MPI calls
 * go to PMPI_. */
static int sh_rank(void)
{
    int r = 0;
    PMPI_Comm_rank(MPI_COMM_WORLD, &r);
    return r;
}

static int sh_size(void)
{
    int n = 1;
    PMPI_Comm_size(MPI_COMM_WORLD, &n);
    return n;
}

static int setup(void)
{
    const fti_config_t *cfg = &shim_table;
    char err[512] = "";
    int rc = shim_table_rc;
    snprintf(err, sizeof(err), "%s", shim_table_err);
    if (rc == FT_SUCCESS)
        rc = fti_shim_settings(cfg, &fti_shim_cfg, err, sizeof(err));
    if (rc == FT_SUCCESS) {
        /* FT_Init in the drop-in's mode, with the table read above: one
         * load per process; collective, logs its failures */
        rc = fti_init(&fti_mode_dropin, cfg);
        announce(cfg, rc);
    } else {
        /* FT_Init, which would log it, is not reached: every rank still
         * takes part in the agreement below */
        fti_log_init("ftmpi", FTI_LOG_ERROR);
        FTI_ERROR("%s", err);
        PMPI_Barrier(MPI_COMM_WORLD); /* announce's, on the other ranks */
    }
    if (rc == FT_SUCCESS)
        rc = fti_shim_start();
    int all = rc;
    if (PMPI_Allreduce(&rc, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD) != MPI_SUCCESS)
        all = FT_ERR_MPI;
    if (all == FT_SUCCESS) { /* collective; without it the job runs unwatched (logged) */
        /* the hub binds the host the ranks' servers advertise (FT_Init
         * resolved it the same way: it cannot fail here) */
        char host[sizeof(cfg->bind_host)] = "";
        (void)fti_bind_host_resolve(cfg->bind_host, host, sizeof(host));
        fti_shim_watch_agent_dir(cfg->agent_dir);
        fti_shim_watch_exit_after_loss(fti_shim_cfg.success_after_loss != 0);
        (void)fti_shim_watch_start(sh_rank(), sh_size(), host, fti_config_key(cfg),
                                   cfg->lighthouse[0] == '\0', cfg->timeout_ms, cfg->heartbeat_ms,
                                   cfg->connect_timeout_ms);
    }
    if (all != FT_SUCCESS) {
        int wr = 0;
        PMPI_Comm_rank(MPI_COMM_WORLD, &wr);
        if (wr == 0)
            FTI_ERROR("libftmpi_pmpi: the fault-tolerant layer did not start (%s): ending the "
                      "job (run without LD_PRELOAD=libftmpi_pmpi.so for plain MPI)",
                      FT_Error_string(all));
        PMPI_Abort(MPI_COMM_WORLD, 1);
    }
    return all;
}

static int after_init(int rc)
{
    if (rc != MPI_SUCCESS || fti_shim_busy)
        return rc;
    fti_shim_busy = 1;
    if (setup() == FT_SUCCESS)
        fti_shim_on = 1;
    fti_shim_busy = 0;
    return rc;
}

static int shim_finalize(void)
{
    bool watched = fti_shim_on && !fti_shim_busy;
    bool saw_failure = false;
    if (watched) {
        /* a rank lost while this one finalizes still ends the job (the
         * survivors' fence may never complete), later under return and
         * continue, which let the program reach MPI_Finalize after a loss */
        fti_shim_enter("MPI_Finalize", fti_shim_cfg.on_failure == FTI_SHIM_RETURN ||
                                                fti_shim_cfg.on_failure == FTI_SHIM_CONTINUE
                                            ? FTI_CALL_REDOABLE
                                            : FTI_CALL_BLOCKING);
        fti_shim_watch_bye();
    }
    if (fti_shim_on && !fti_shim_busy) {
        fti_shim_busy = 1;
        struct fti_shim_stats n;
        fti_shim_stats(&n);
        FTI_INFO("libftmpi_pmpi: %llu MPI_Allreduce calls protected, %llu passed to MPI, %llu "
                 "made from Fortran",
                 (unsigned long long)n.protected_calls, (unsigned long long)n.passed,
                 (unsigned long long)n.fortran);
        FTI_INFO("libftmpi_pmpi: %llu MPI_Barrier, MPI_Bcast, MPI_Reduce and MPI_Allgather calls "
                 "protected",
                 (unsigned long long)n.other);
        if (sh_rank() == 0)
            fti_shim_report_passed();
        /* the tests read this line (FTMPI_LOG_LEVEL=info) */
        FTI_INFO("libftmpi_pmpi: paths: %llu fast, %llu fault-tolerant; %llu fast request(s) "
                 "abandoned to MPI with %llu bytes",
                 (unsigned long long)n.fast, (unsigned long long)n.slow,
                 (unsigned long long)n.abandoned, (unsigned long long)n.abandoned_bytes);
        FTI_INFO("libftmpi_pmpi: %llu fast call(s) ran as the point-to-point allreduce (return "
                 "or continue, at most %u bytes), %llu as the held allreduce",
                 (unsigned long long)fti_shim_fast_p2p_calls(), FTI_SHIM_P2P_MAX_BYTES,
                 (unsigned long long)fti_shim_fast_held_calls());
        saw_failure = fti_shim_saw_failure();
        fti_shim_stop();
        (void)FT_Finalize();
#ifdef SHIM_HAVE_ASYNC_FINALIZE
        if (fti_shim_saw_failure() && &ompi_async_mpi_finalize != NULL)
            ompi_async_mpi_finalize = true;
#endif
        fti_shim_on = 0;
        fti_shim_busy = 0;
    }
    int rc = PMPI_Finalize();
    if (watched) {
        fti_shim_leave();
        fti_shim_watch_stop();
        if (saw_failure)
            fti_shim_watch_saw_loss();
    }
    return rc;
}

FTI_SHIM_EXPORT int MPI_Init(int *argc, char ***argv)
{
    before_init();
    return after_init(PMPI_Init(argc, argv));
}

FTI_SHIM_EXPORT int MPI_Init_thread(int *argc, char ***argv, int required, int *provided)
{
    before_init();
    int rc = PMPI_Init_thread(argc, argv, required, provided);
    fti_shim_calls.multiple = rc == MPI_SUCCESS && *provided == MPI_THREAD_MULTIPLE;
    return after_init(rc);
}

FTI_SHIM_EXPORT int MPI_Finalize(void)
{
    return shim_finalize();
}

/* Fortran (wrappers.c, fortran.txt); ierr is optional in mpi_f08. */
void fti_shimf_init(MPI_Fint *ierr)
{
    before_init();
    int rc = after_init(PMPI_Init(NULL, NULL));
    if (ierr != NULL)
        *ierr = (MPI_Fint)rc;
}

void fti_shimf_init_thread(MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr)
{
    int p = MPI_THREAD_SINGLE;
    before_init();
    int rc = PMPI_Init_thread(NULL, NULL, (int)*required, &p);
    fti_shim_calls.multiple = rc == MPI_SUCCESS && p == MPI_THREAD_MULTIPLE;
    rc = after_init(rc);
    *provided = (MPI_Fint)p;
    if (ierr != NULL)
        *ierr = (MPI_Fint)rc;
}

void fti_shimf_finalize(MPI_Fint *ierr)
{
    int rc = shim_finalize();
    if (ierr != NULL)
        *ierr = (MPI_Fint)rc;
}
