/*
 * mode/dropin.h - the drop-in's mode (its table entry; the drop-in itself,
 * libftmpi_pmpi, is mpi_shim/, DESIGN section 10).
 *
 * The drop-in passes fti_mode_dropin to the step's set-up
 * (step/facade.h, fti_init): every world rank a replica group of one
 * (group communicator MPI_COMM_SELF, replica id "r<world rank>"), the
 * `mpi` backend's slices over the world (FTMPI_BACKEND auto or mpi), and
 * the lighthouse on a thread of world rank 0 unless FTMPI_LIGHTHOUSE is
 * set.  FT_Init never picks it.
 */
#ifndef FTI_MODE_DROPIN_H
#define FTI_MODE_DROPIN_H

#include "mode/mode.h"

extern const struct fti_mode fti_mode_dropin;

#endif
