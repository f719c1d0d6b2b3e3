/*
 * fortran.c - the Fortran MPI_ALLREDUCE of libftmpi_pmpi: every symbol Open
 * MPI exports for it (wrappers.c, generated from fortran.txt) lands here.
 * Handles are converted with PMPI_*_f2c; Fortran's MPI_IN_PLACE and
 * MPI_BOTTOM are the addresses of common blocks (Open MPI's
 * OMPI_IS_FORTRAN_IN_PLACE compares with each mangling of
 * mpi_fortran_in_place; mpi_f08 uses the same block), mapped to C's.
 */
#include "mpi_shim/shim.h"

#include <stddef.h>

uint64_t fti_shim_fortran_calls;

/* Weak: present only in a program that loaded Open MPI's Fortran layer. */
#define FTI_SENTINEL(x) extern int x __attribute__((weak));
FTI_SENTINEL(MPI_FORTRAN_IN_PLACE)
FTI_SENTINEL(mpi_fortran_in_place)
FTI_SENTINEL(mpi_fortran_in_place_)
FTI_SENTINEL(mpi_fortran_in_place__)
FTI_SENTINEL(MPI_FORTRAN_BOTTOM)
FTI_SENTINEL(mpi_fortran_bottom)
FTI_SENTINEL(mpi_fortran_bottom_)
FTI_SENTINEL(mpi_fortran_bottom__)
#undef FTI_SENTINEL

static bool is_in_place(const void *p)
{
    return p != NULL && (p == (void *)&MPI_FORTRAN_IN_PLACE || p == (void *)&mpi_fortran_in_place ||
                         p == (void *)&mpi_fortran_in_place_ ||
                         p == (void *)&mpi_fortran_in_place__);
}

static bool is_bottom(const void *p)
{
    return p != NULL && (p == (void *)&MPI_FORTRAN_BOTTOM || p == (void *)&mpi_fortran_bottom ||
                         p == (void *)&mpi_fortran_bottom_ || p == (void *)&mpi_fortran_bottom__);
}

static void *c_buffer(void *p)
{
    if (is_in_place(p))
        return MPI_IN_PLACE;
    if (is_bottom(p))
        return MPI_BOTTOM;
    return p;
}

void fti_shimf_allreduce(void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *datatype,
                         MPI_Fint *op, MPI_Fint *comm, MPI_Fint *ierr)
{
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    MPI_Datatype t = PMPI_Type_f2c(*datatype);
    MPI_Op o = PMPI_Op_f2c(*op);
    void *s = c_buffer(sendbuf), *r = c_buffer(recvbuf);
    int rc;
    if (!fti_shim_on || fti_shim_busy) {
        rc = PMPI_Allreduce(s, r, (int)*count, t, o, c);
    } else {
        fti_shim_fortran_calls++;
        fti_shim_enter("MPI_Allreduce", FTI_CALL_BLOCKING);
        fti_shim_busy = 1;
        rc = fti_shim_Allreduce(s, r, (int)*count, t, o, c);
        fti_shim_busy = 0;
        fti_shim_leave();
    }
    if (ierr != NULL) /* optional in mpi_f08 */
        *ierr = (MPI_Fint)rc;
}
