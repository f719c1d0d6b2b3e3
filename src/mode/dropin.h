/*
 * mode/dropin.h - the drop-in's entry into the library (libftmpi_pmpi,
 * mpi_shim/): the one thing mpi_shim/ calls besides the public API.
 *
 * fti_shim_select(), called before FT_Init on the application's thread,
 * makes FT_Init set up the drop-in's mode: every world rank a replica
 * group of one (group communicator MPI_COMM_SELF, replica id
 * "r<world rank>"), the `mpi` backend's slices over the world, and the
 * lighthouse on a thread of world rank 0 unless FTMPI_LIGHTHOUSE is set.
 * Not undone: a process runs one mode.
 */
#ifndef FTI_MODE_DROPIN_H
#define FTI_MODE_DROPIN_H

#include <stdbool.h>

void fti_shim_select(void);
/* Whether fti_shim_select() ran in this process. */
bool fti_shim_selected(void);

#endif
