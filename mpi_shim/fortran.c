/*
 * fortran.c - the Fortran MPI_ALLREDUCE, MPI_BARRIER, MPI_BCAST, MPI_REDUCE
 * and MPI_ALLGATHER of libftmpi_pmpi: every symbol Open MPI exports for
 * them (wrappers.c, generated from fortran.txt) lands here, and each runs
 * as the C call does (fti_shim_<Name>: protected on a communicator
 * spanning the world, marked for the watchdog, counted as from Fortran).
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

/* Runs call (an int expression of the C handles) as the C wrapper would:
 * straight to PMPI_ (plain) while the drop-in is off or busy, otherwise
 * through the drop-in, marked as a blocking call named name, a lost rank
 * raised to the error handler of c (the communicator); *ierr gets the
 * code (optional in mpi_f08). */
#define FTI_SHIMF_RUN(name, plain, call)                                                     \
    do {                                                                                     \
        int rc_;                                                                             \
        if (!fti_shim_on || fti_shim_busy) {                                                 \
            rc_ = (plain);                                                                   \
        } else {                                                                             \
            fti_shim_fortran_calls++;                                                        \
            fti_shim_enter(name, FTI_CALL_BLOCKING);                                         \
            fti_shim_busy = 1;                                                               \
            rc_ = (call);                                                                    \
            fti_shim_busy = 0;                                                               \
            fti_shim_leave();                                                                \
            rc_ = fti_shim_raise(c, rc_);                                                    \
        }                                                                                    \
        if (ierr != NULL)                                                                    \
            *ierr = (MPI_Fint)rc_;                                                           \
    } while (0)

void fti_shimf_allreduce(void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *datatype,
                         MPI_Fint *op, MPI_Fint *comm, MPI_Fint *ierr)
{
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    MPI_Datatype t = PMPI_Type_f2c(*datatype);
    MPI_Op o = PMPI_Op_f2c(*op);
    void *s = c_buffer(sendbuf), *r = c_buffer(recvbuf);
    FTI_SHIMF_RUN("MPI_Allreduce", PMPI_Allreduce(s, r, (int)*count, t, o, c),
                  fti_shim_Allreduce(s, r, (int)*count, t, o, c));
}

void fti_shimf_barrier(MPI_Fint *comm, MPI_Fint *ierr)
{
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    FTI_SHIMF_RUN("MPI_Barrier", PMPI_Barrier(c), fti_shim_Barrier(c));
}

void fti_shimf_bcast(void *buffer, MPI_Fint *count, MPI_Fint *datatype, MPI_Fint *root,
                     MPI_Fint *comm, MPI_Fint *ierr)
{
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    MPI_Datatype t = PMPI_Type_f2c(*datatype);
    void *b = c_buffer(buffer);
    FTI_SHIMF_RUN("MPI_Bcast", PMPI_Bcast(b, (int)*count, t, (int)*root, c),
                  fti_shim_Bcast(b, (int)*count, t, (int)*root, c));
}

void fti_shimf_reduce(void *sendbuf, void *recvbuf, MPI_Fint *count, MPI_Fint *datatype,
                      MPI_Fint *op, MPI_Fint *root, MPI_Fint *comm, MPI_Fint *ierr)
{
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    MPI_Datatype t = PMPI_Type_f2c(*datatype);
    MPI_Op o = PMPI_Op_f2c(*op);
    void *s = c_buffer(sendbuf), *r = c_buffer(recvbuf);
    FTI_SHIMF_RUN("MPI_Reduce", PMPI_Reduce(s, r, (int)*count, t, o, (int)*root, c),
                  fti_shim_Reduce(s, r, (int)*count, t, o, (int)*root, c));
}

void fti_shimf_allgather(void *sendbuf, MPI_Fint *sendcount, MPI_Fint *sendtype, void *recvbuf,
                         MPI_Fint *recvcount, MPI_Fint *recvtype, MPI_Fint *comm, MPI_Fint *ierr)
{
    MPI_Comm c = PMPI_Comm_f2c(*comm);
    MPI_Datatype st = PMPI_Type_f2c(*sendtype), rt = PMPI_Type_f2c(*recvtype);
    void *s = c_buffer(sendbuf), *r = c_buffer(recvbuf);
    FTI_SHIMF_RUN("MPI_Allgather",
                  PMPI_Allgather(s, (int)*sendcount, st, r, (int)*recvcount, rt, c),
                  fti_shim_Allgather(s, (int)*sendcount, st, r, (int)*recvcount, rt, c));
}
