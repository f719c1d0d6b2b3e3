/*
 * backends.c - the backend table of comm.h, expanded from FTI_BACKENDS.
 *
 * Built into libfti_comm_mpi.la, not libfti_comm.la: the table names the
 * mpi backend, and libfti_comm.la must link without MPI (comm.h).  The
 * file itself includes no MPI header; it only refers to the entries.
 */
#include "comm/comm.h"

#include <stddef.h>
#include <strings.h>

#define FTI_BACKEND_ENTRY(x) &fti_backend_##x,
static const struct fti_comm_backend *const table[] = {FTI_BACKENDS(FTI_BACKEND_ENTRY) NULL};
#undef FTI_BACKEND_ENTRY

const struct fti_comm_backend *fti_comm_backend_at(int i)
{
    if (i < 0 || i >= (int)(sizeof(table) / sizeof(table[0])) - 1)
        return NULL;
    return table[i];
}

const struct fti_comm_backend *fti_comm_backend_find(const char *name)
{
    for (int i = 0; name != NULL && table[i] != NULL; i++) {
        if (strcasecmp(table[i]->name, name) == 0)
            return table[i];
    }
    return NULL;
}
