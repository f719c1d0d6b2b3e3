/*
 * comms.c - which communicators libftmpi_pmpi protects: MPI_COMM_WORLD and
 * the duplicates of it (or of a duplicate) made while the shim is on,
 * until they are freed (see shim.h).
 */
#include "mpi_shim/shim.h"

#include <stdlib.h>

static MPI_Comm *dups;
static int n_dups, cap_dups;

bool fti_shim_world_like(MPI_Comm comm)
{
    if (comm == MPI_COMM_WORLD)
        return true;
    for (int i = 0; i < n_dups; i++)
        if (dups[i] == comm)
            return true;
    return false;
}

/* Remembers a new duplicate of a world-like comm (none when out of memory:
 * the duplicate then goes unprotected, straight to MPI). */
static void add(MPI_Comm comm)
{
    if (n_dups == cap_dups) {
        int cap = cap_dups ? 2 * cap_dups : 8;
        MPI_Comm *p = realloc(dups, (size_t)cap * sizeof(*p));
        if (p == NULL)
            return;
        dups = p;
        cap_dups = cap;
    }
    dups[n_dups++] = comm;
}

int fti_shim_Comm_dup(MPI_Comm comm, MPI_Comm *newcomm)
{
    int rc = PMPI_Comm_dup(comm, newcomm);
    if (rc == MPI_SUCCESS && fti_shim_world_like(comm))
        add(*newcomm);
    return rc;
}

int fti_shim_Comm_dup_with_info(MPI_Comm comm, MPI_Info info, MPI_Comm *newcomm)
{
    int rc = PMPI_Comm_dup_with_info(comm, info, newcomm);
    if (rc == MPI_SUCCESS && fti_shim_world_like(comm))
        add(*newcomm);
    return rc;
}

int fti_shim_Comm_free(MPI_Comm *comm)
{
    for (int i = 0; comm != NULL && i < n_dups; i++) {
        if (dups[i] == *comm) {
            dups[i] = dups[--n_dups];
            break;
        }
    }
    return PMPI_Comm_free(comm);
}
