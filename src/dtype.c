/* dtype.c - MPI datatypes and ops to data-plane types (see dtype.h). */
#include "dtype.h"

#include "ftmpi.h"

int fti_dtype_from_mpi(MPI_Datatype dt, enum fti_dtype *dt_p)
{
    enum fti_dtype d;
    if (dt == MPI_DATATYPE_NULL)
        return FT_ERR_UNSUPPORTED;
    if (dt == MPI_FLOAT)
        d = FTI_DT_FLOAT;
    else if (dt == MPI_DOUBLE)
        d = FTI_DT_DOUBLE;
    else if (dt == MPI_INT)
        d = FTI_DT_INT;
    else if (dt == MPI_LONG)
        d = FTI_DT_LONG;
    else if (dt == MPI_INT32_T)
        d = FTI_DT_INT32;
    else if (dt == MPI_INT64_T)
        d = FTI_DT_INT64;
    else if (dt == MPI_UINT64_T)
        d = FTI_DT_UINT64;
    else
        return FT_ERR_UNSUPPORTED;
    *dt_p = d;
    return FT_SUCCESS;
}

int fti_op_from_mpi(MPI_Op op, MPI_Op avg_op, enum fti_op *op_p)
{
    enum fti_op o;
    if (op == MPI_OP_NULL)
        return FT_ERR_UNSUPPORTED;
    if (op == MPI_SUM)
        o = FTI_OP_SUM;
    else if (op == MPI_PROD)
        o = FTI_OP_PROD;
    else if (op == MPI_MAX)
        o = FTI_OP_MAX;
    else if (op == MPI_MIN)
        o = FTI_OP_MIN;
    else if (avg_op != MPI_OP_NULL && op == avg_op)
        o = FTI_OP_AVG;
    else
        return FT_ERR_UNSUPPORTED;
    *op_p = o;
    return FT_SUCCESS;
}

int fti_reduction_from_mpi(MPI_Datatype dt, MPI_Op op, MPI_Op avg_op, enum fti_dtype *dt_p,
                           enum fti_op *op_p)
{
    enum fti_dtype d;
    enum fti_op o;
    if (fti_dtype_from_mpi(dt, &d) != FT_SUCCESS || fti_op_from_mpi(op, avg_op, &o) != FT_SUCCESS ||
        !fti_reduce_supported(d, o))
        return FT_ERR_UNSUPPORTED;
    *dt_p = d;
    *op_p = o;
    return FT_SUCCESS;
}
