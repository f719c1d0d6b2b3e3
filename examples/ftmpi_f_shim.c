/*
 * ftmpi_f_shim.c - the C side of the Fortran interface module ftmpi_f
 * (examples/ftmpi_f.f90).  FT_Allreduce takes MPI_Datatype and MPI_Op
 * handles, whose C representation differs between MPI libraries (pointers
 * in Open MPI, integers in MPICH); Fortran cannot name them portably.  These
 * helpers take small integer codes instead (FTF_* of ftmpi_f.f90) and call
 * the C API with the real handles.  Everything else (FT_Quorum, FT_Commit,
 * FT_Step, FT_State_register, FT_Finalize, FT_Init) the module binds
 * directly with BIND(C).
 */
#include <inttypes.h>
#include <mpi.h>
#include <stdio.h>

#include "ftmpi.h"

/* the codes of ftmpi_f.f90 */
enum { FTF_REAL = 1, FTF_DOUBLE = 2 };
enum { FTF_SUM = 1, FTF_AVG = 2, FTF_MAX = 3, FTF_MIN = 4 };

static int ftf_type(int code, MPI_Datatype *type_p)
{
    switch (code) {
    case FTF_REAL:
        *type_p = MPI_FLOAT;
        return 0;
    case FTF_DOUBLE:
        *type_p = MPI_DOUBLE;
        return 0;
    }
    return -1;
}

static int ftf_op(int code, MPI_Op *op_p)
{
    switch (code) {
    case FTF_SUM:
        *op_p = MPI_SUM;
        return 0;
    case FTF_AVG:
        *op_p = FT_AVG;
        return 0;
    case FTF_MAX:
        *op_p = MPI_MAX;
        return 0;
    case FTF_MIN:
        *op_p = MPI_MIN;
        return 0;
    }
    return -1;
}

/* MPI_Init and FT_Init without arguments (Fortran has no argc/argv). */
int ftmpi_f_init(void)
{
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized)
        MPI_Init(NULL, NULL);
    return FT_Init(NULL, NULL);
}

/* FT_Finalize, then MPI_Finalize. */
int ftmpi_f_finalize(void)
{
    int rc = FT_Finalize();
    MPI_Finalize();
    return rc;
}

/* FT_Allreduce(MPI_IN_PLACE, buf, count, type, op, FT_COMM_REPLICAS). */
int ftmpi_f_allreduce(void *buf, int count, int type_code, int op_code)
{
    MPI_Datatype type;
    MPI_Op op;
    if (ftf_type(type_code, &type) != 0 || ftf_op(op_code, &op) != 0)
        return FT_ERR_ARG;
    return FT_Allreduce(MPI_IN_PLACE, buf, count, type, op, FT_COMM_REPLICAS);
}

/* MPI_Allreduce in place on the group's own communicator (op SUM/MAX/MIN). */
int ftmpi_f_group_allreduce(void *buf, int count, int type_code, int op_code)
{
    MPI_Datatype type;
    MPI_Op op;
    MPI_Comm group;
    if (ftf_type(type_code, &type) != 0 || ftf_op(op_code, &op) != 0 || op_code == FTF_AVG)
        return FT_ERR_ARG;
    int rc = ftmpi_group_comm(&group);
    if (rc != FT_SUCCESS)
        return rc;
    return MPI_Allreduce(MPI_IN_PLACE, buf, count, type, op, group) == MPI_SUCCESS ? FT_SUCCESS
                                                                                 : FT_ERR_MPI;
}

/* This rank's rank in its group, or -1. */
int ftmpi_f_group_rank(void)
{
    MPI_Comm group;
    int rank = -1;
    if (ftmpi_group_comm(&group) == FT_SUCCESS)
        MPI_Comm_rank(group, &rank);
    return rank;
}

/* Prints "final replica=ID rank=R step=S checksum=0x..." (FNV-1a 64 of the
 * bytes of buf), the line the examples' tests compare. */
void ftmpi_f_print_final(const void *buf, size_t bytes)
{
    const unsigned char *b = buf;
    uint64_t h = 1469598103934665603ULL;
    char id[64] = "?"; /* a replica id is 1 to 63 characters */
    for (size_t i = 0; i < bytes; i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    ftmpi_replica_id(id, sizeof(id));
    printf("final replica=%s rank=%d step=%" PRId64 " checksum=0x%016" PRIx64 "\n", id,
           ftmpi_f_group_rank(), FT_Step(), h);
    fflush(stdout);
}
