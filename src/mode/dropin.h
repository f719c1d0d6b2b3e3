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
#include <stddef.h>

/* FTMPI_SHIM_ON_FAILURE: what a protected call does when a rank is lost
 * (DESIGN section 10); auto: abort under MPI_ERRORS_ARE_FATAL, return
 * otherwise.  Values index fti_shim_on_failure_names. */
enum fti_shim_on_failure { FTI_SHIM_AUTO, FTI_SHIM_ABORT, FTI_SHIM_RETURN, FTI_SHIM_CONTINUE };
/* The names of the failure modes, in enum order, NULL-terminated. */
extern const char *const fti_shim_on_failure_names[];
/* The failure mode that name (FTMPI_SHIM_ON_FAILURE's value) names into
 * *mode.  FT_ERR_CONFIG with a message naming the setting and the known
 * names in err (not logged) when there is none; *mode set only on
 * success. */
int fti_shim_on_failure_parse(const char *name, int *mode, char *err, size_t errlen);

void fti_shim_select(void);
/* Whether fti_shim_select() ran in this process. */
bool fti_shim_selected(void);

#endif
