/*
 * dtype.h - maps the MPI datatypes and ops of FT_Allreduce onto the data
 * plane's element types and reduction ops (comm/reduce.h).
 */
#ifndef FTI_DTYPE_H
#define FTI_DTYPE_H

#include <mpi.h>

#include "comm/reduce.h"

/* MPI_FLOAT, MPI_DOUBLE, MPI_INT, MPI_LONG, MPI_INT32_T, MPI_INT64_T and
 * MPI_UINT64_T; FT_ERR_UNSUPPORTED for anything else (MPI_CHAR, MPI_BYTE,
 * derived types, ...). */
int fti_dtype_from_mpi(MPI_Datatype dt, enum fti_dtype *dt_p);

/* MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, and avg_op (ftmpi_op_avg; ignored
 * when it is MPI_OP_NULL); FT_ERR_UNSUPPORTED for anything else. */
int fti_op_from_mpi(MPI_Op op, MPI_Op avg_op, enum fti_op *op_p);

/* Both, and whether the pair is supported (AVG only for floating point). */
int fti_reduction_from_mpi(MPI_Datatype dt, MPI_Op op, MPI_Op avg_op, enum fti_dtype *dt_p,
                           enum fti_op *op_p);

#endif
