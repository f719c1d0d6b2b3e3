/*
 * reduce.h - element types, reduction ops and the reduction kernels of the
 * data plane; mapping from MPI handles.
 */
#ifndef FTI_REDUCE_H
#define FTI_REDUCE_H

#include <stddef.h>

enum fti_dtype {
    FTI_DT_FLOAT, FTI_DT_DOUBLE, FTI_DT_INT, FTI_DT_LONG, FTI_DT_INT32, FTI_DT_INT64,
    FTI_DT_UINT64, FTI_DT_COUNT
};
enum fti_op { FTI_OP_SUM, FTI_OP_PROD, FTI_OP_MAX, FTI_OP_MIN, FTI_OP_AVG, FTI_OP_COUNT };

size_t fti_dtype_size(enum fti_dtype dt);
const char *fti_dtype_name(enum fti_dtype dt);
const char *fti_op_name(enum fti_op op);

/* inout[i] = inout[i] op in[i] for count elements.  AVG reduces as SUM
 * (the division happens once at the end, fti_reduce_scale). */
void fti_reduce(void *inout, const void *in, size_t count, enum fti_dtype dt, enum fti_op op);

/* out[i] = a[i] op b[i] for count elements, out overlapping neither a
 * nor b: the bits of fti_reduce(a, b) written once, into out. */
void fti_reduce_into(void *out, const void *a, const void *b, size_t count, enum fti_dtype dt,
                     enum fti_op op);

/* buf[i] /= n for floating-point types (end of an AVG). */
void fti_reduce_scale(void *buf, size_t count, enum fti_dtype dt, int n);

/* Fills buf (count elements of dt) with op's identity element, what a
 * spare group contributes: -0.0 for floating-point sums (x + -0.0 == x for
 * every x, -0.0 and +0.0 included), 0 for integer sums, 1 for products, the
 * lowest value for MAX and the highest for MIN.  An unknown dt writes
 * nothing. */
void fti_reduce_identity(void *buf, size_t count, enum fti_dtype dt, enum fti_op op);

/* Is (dt, op) supported? AVG only for FLOAT and DOUBLE. */
int fti_reduce_supported(enum fti_dtype dt, enum fti_op op);

/* The arguments every backend's allreduce checks first, over n ranks:
 * FT_ERR_UNSUPPORTED for a (dt, op) the kernels lack, FT_ERR_ARG for NULL
 * data with a count or a count whose bytes times n overflow; else
 * FT_SUCCESS. */
int fti_reduce_check_args(const void *buf, size_t count, enum fti_dtype dt, enum fti_op op, int n);

#endif
