/*
 * launcher.h - FT_Init's check that the launcher belongs to the MPI the
 * program runs on.  A launcher of another MPI (Open MPI's mpirun starting
 * an MPICH program, hydra or srun without the MPI's plugin starting an Open
 * MPI one) starts every process as a singleton: MPI_COMM_WORLD of size 1,
 * rank 0, while the launcher's own variables say how many it started.
 * Every such process would claim group rank 0 of its group.
 */
#ifndef FTI_LAUNCHER_H
#define FTI_LAUNCHER_H

#include <stdbool.h>
#include <stddef.h>

/* Pure: whether a world of world_size 1 contradicts the launcher's size
 * variables (each NULL when unset): ompi_size (OMPI_COMM_WORLD_SIZE, Open
 * MPI's mpirun), pmi_size (PMI_SIZE: hydra, srun --mpi=pmi2) and, only when
 * neither is set (no MPI launcher in between), slurm_tasks
 * (SLURM_STEP_NUM_TASKS: srun whose --mpi= plugin the MPI does not speak,
 * MPICH under --mpi=pmix or none).  If so, writes into msg why, naming the
 * launcher, this build's MPI (mpi_library) and its launcher (mpirun). */
bool fti_launcher_mismatch(int world_size, const char *ompi_size, const char *pmi_size,
                           const char *slurm_tasks, const char *mpi_library, const char *mpirun,
                           char *msg, size_t len);

/* fti_launcher_mismatch with this process's environment and this build's
 * MPI; logs the message and returns FT_ERR_CONFIG on a mismatch. */
int fti_launcher_check(int world_size);

/* Mode B: whether a rank's death leaves the others running in this job.
 * Open MPI 4.x's mpirun does so with --enable-recovery (its ranks then see
 * OMPI_MCA_orte_enable_recovery=1; without it: a warning, FT_SUCCESS); an
 * MPI whose ULFM calls work (comm/ulfm.h: Open MPI 5, MPICH from 4.2) with
 * MPIX_Comm_revoke.  Anywhere else (MPICH 4.0.2: doc/USER_GUIDE.md, "Mode B and MPICH") it cannot:
 * FT_ERR_UNSUPPORTED naming what is needed, unless allow_no_recovery
 * (FTMPI_MODEB_ALLOW_NO_RECOVERY=1: a warning).  The same answer on every
 * rank; world rank 0 logs it. */
int fti_launcher_modeb_check(int world_rank, bool allow_no_recovery);

/* Mode B's survivors go on after a peer died, and the MPI may then write
 * to the dead peer's socket: Open MPI's tcp BTL (ranks on other nodes)
 * writes with writev(), which on Linux raises SIGPIPE, whose default
 * action ends the survivor without a word (the BTL guards only where
 * SO_NOSIGPIPE exists).  So SIGPIPE is ignored where the program left it
 * at its default (its own handler or SIG_IGN is kept): the write fails
 * with EPIPE, which the MPI reports as the peer's failure.  World rank 0
 * logs it.  DESIGN section 2, "Mode B on ULFM". */
void fti_launcher_modeb_sigpipe(int world_rank);

#endif
