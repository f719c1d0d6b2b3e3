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
 * MPI's mpirun) and pmi_size (PMI_SIZE: hydra, srun --mpi=pmi2).  If so,
 * writes into msg why, naming the launcher, this build's MPI (mpi_library)
 * and its launcher (mpirun). */
bool fti_launcher_mismatch(int world_size, const char *ompi_size, const char *pmi_size,
                           const char *mpi_library, const char *mpirun, char *msg, size_t len);

/* fti_launcher_mismatch with this process's environment and this build's
 * MPI; logs the message and returns FT_ERR_CONFIG on a mismatch. */
int fti_launcher_check(int world_size);

/* Mode B: whether a rank's death leaves the others running in this job.
 * Open MPI's mpirun does so with --enable-recovery (its ranks then see
 * OMPI_MCA_orte_enable_recovery=1); MPICH's hydra does not (4.0.2 ends the
 * job on a SIGKILL even with -disable-auto-cleanup, see doc/INSTALL.md).
 * Warns once (world rank 0) when it does not, naming what is needed. */
void fti_launcher_modeb_note(int world_rank);

#endif
