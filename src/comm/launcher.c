/* launcher.c - FT_Init's launcher check (see launcher.h). */
#include "comm/launcher.h"

#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi.h"
#include "ftmpi_config.h"
#include "base/log.h"
#include "comm/ulfm.h"

/* A positive decimal size, or 0 when s is NULL or not one. */
static long parse_size(const char *s)
{
    if (s == NULL || *s == '\0')
        return 0;
    char *end = NULL;
    long v = strtol(s, &end, 10);
    return *end == '\0' && v > 0 ? v : 0;
}

bool fti_launcher_mismatch(int world_size, const char *ompi_size, const char *pmi_size,
                           const char *slurm_tasks, const char *mpi_library, const char *mpirun,
                           char *msg, size_t len)
{
    if (world_size != 1)
        return false; /* a launcher of another MPI makes singletons only */
    long n = parse_size(ompi_size);
    const char *var = "OMPI_COMM_WORLD_SIZE";
    const char *who = "Open MPI's mpirun";
    if (n <= 1) {
        long p = parse_size(pmi_size);
        long t = ompi_size == NULL && pmi_size == NULL ? parse_size(slurm_tasks) : 0;
        if (p > 1) {
            n = p;
            var = "PMI_SIZE";
            who = "a PMI launcher (MPICH's hydra, srun --mpi=pmi2)";
        } else if (t > 1) {
            n = t;
            var = "SLURM_STEP_NUM_TASKS";
            who = "srun with an --mpi= plugin this MPI does not speak (Debian: pmix for Open "
                  "MPI 4.1, pmi2 for MPICH 4.0; srun --mpi=list)";
        } else {
            return false;
        }
    }
    snprintf(msg, len,
             "FT_Init: MPI says this process is alone in its world (size %d), but its launcher "
             "started %ld "
             "(%s=%ld, set by %s): the launcher belongs to another MPI than the one this "
             "program runs on (libftmpi was built against %s), so every process started as a "
             "singleton and would claim group rank 0 of its group. Start the group with the "
             "launcher of %s (%s, or srun with its --mpi= plugin), or rebuild against the MPI "
             "of this launcher "
             "(configure --with-mpi=openmpi|mpich|DIR)",
             world_size, n, var, n, who, mpi_library, mpi_library,
             mpirun[0] != '\0' ? mpirun : "its mpiexec");
    return true;
}

int fti_launcher_check(int world_size)
{
    char msg[768];
    /* the launchers' own variables, not settings (FTMPI_* are in the
     * settings table): read here only */
    if (!fti_launcher_mismatch(world_size, getenv("OMPI_COMM_WORLD_SIZE"), getenv("PMI_SIZE"),
                               getenv("SLURM_STEP_NUM_TASKS"), FTMPI_MPI_LIBRARY, FTMPI_MPIRUN, msg,
                               sizeof(msg)))
        return FT_SUCCESS;
    FTI_ERROR("%s", msg);
    return FT_ERR_CONFIG;
}

int fti_launcher_modeb_check(int world_rank, bool allow_no_recovery)
{
    char why[256];
#if defined(OPEN_MPI) && OMPI_MAJOR_VERSION < 5
    /* Open MPI 4.x: mpirun --enable-recovery keeps the survivors (mode B's
     * deadlines and abandoned requests do the rest, src/mode/) */
    (void)why;
    (void)allow_no_recovery;
    const char *rec = getenv("OMPI_MCA_orte_enable_recovery");
    if (world_rank == 0 && (rec == NULL || strcmp(rec, "1") != 0))
        FTI_WARN("mode B without mpirun --enable-recovery: a rank that dies ends the whole job "
                 "(mpirun kills every rank); start it with mpirun --enable-recovery so that the "
                 "other groups go on");
    return FT_SUCCESS;
#else
    if (fti_ulfm_usable(why, sizeof(why))) {
        if (world_rank == 0 && fti_ulfm_active())
            FTI_INFO("mode B on %s with its fault tolerance (ULFM) on: a dead rank reaches the "
                     "survivors as MPIX_ERR_PROC_FAILED, a lost group's communicators are "
                     "revoked (MPIX_Comm_revoke), the commit is one MPIX_Comm_iagree",
                     FTMPI_MPI_LIBRARY);
        else if (world_rank == 0)
            FTI_INFO("mode B on %s without its fault tolerance (ULFM off): the library's own "
                     "deadlines find a dead rank; start it with %s",
                     FTMPI_MPI_LIBRARY,
#if defined(OPEN_MPI)
                     "mpirun --with-ft ulfm (without it or --enable-recovery a dead rank ends "
                     "the job)"
#else
                     "mpiexec -disable-auto-cleanup"
#endif
            );
        return FT_SUCCESS;
    }
    if (allow_no_recovery) {
        if (world_rank == 0)
            FTI_WARN("mode B on %s without recovery (FTMPI_MODEB_ALLOW_NO_RECOVERY=1): %s; a rank "
                     "that dies ends the whole job",
                     FTMPI_MPI_LIBRARY, why);
        return FT_SUCCESS;
    }
    if (world_rank == 0)
        FTI_ERROR("FT_Init: mode B cannot keep the other groups going after a rank dies on this "
                  "MPI: %s, and its launcher (MPICH's hydra, even with -disable-auto-cleanup) "
                  "ends or strands the survivors (doc/USER_GUIDE.md, \"Mode B and MPICH\"). Run "
                  "mode B on Open MPI 4.1 with mpirun --enable-recovery or on Open MPI 5 with "
                  "mpirun --with-ft ulfm, or use mode A (one launcher per group under ftmpi-run: "
                  "any MPI), or set FTMPI_MODEB_ALLOW_NO_RECOVERY=1 to run mode B anyway (a dead "
                  "rank then ends the job)",
                  why);
    return FT_ERR_UNSUPPORTED;
#endif
}

void fti_launcher_modeb_sigpipe(int world_rank)
{
    struct sigaction old;
    if (sigaction(SIGPIPE, NULL, &old) != 0) {
        FTI_WARN("mode B: sigaction(SIGPIPE) failed: %m; SIGPIPE is left as it is");
        return;
    }
    if ((old.sa_flags & SA_SIGINFO) != 0 || old.sa_handler != SIG_DFL)
        return; /* the program's own choice */
    struct sigaction ign;
    memset(&ign, 0, sizeof(ign));
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    if (sigaction(SIGPIPE, &ign, NULL) != 0) {
        FTI_WARN("mode B: cannot ignore SIGPIPE (%m): a write of the MPI to a dead rank's "
                 "socket may end this rank");
        return;
    }
    if (world_rank == 0)
        FTI_INFO("mode B: SIGPIPE ignored (it was at its default): a write of the MPI to a dead "
                 "rank's socket (Open MPI's tcp BTL, ranks on other nodes) fails with EPIPE "
                 "instead of ending a survivor");
}
