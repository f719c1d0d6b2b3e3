/*
 * reduce.c - the reduction kernels of the data plane (see reduce.h).
 *
 * One kernel per (dtype, op), chosen by a switch outside the loop.  Each
 * kernel walks the arrays in blocks of FTI_RED_BLOCK elements with an inner
 * loop of constant trip count: gcc -O2 (whose "very cheap" vectoriser
 * refuses loops that need a scalar epilogue) vectorises that inner loop,
 * and -O3 or clang do the same.  The remainder is a plain scalar loop.
 *
 * Signed integer SUM and PROD are computed in the unsigned type of the same
 * width, so overflow wraps (two's complement) instead of being undefined.
 * MAX and MIN keep the left operand unless the right one compares greater
 * (smaller); with NaNs the result depends on operand order, but every rank
 * of a ring applies the same order, so results still agree bitwise.
 */
#include "comm/reduce.h"

#include "ftmpi_errors.h"

#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#define FTI_RED_BLOCK 32

/* Block-wise loop: EXPR computes the new a[i] from a[i] and b[i]. */
#define FTI_RED_LOOP(T, EXPR)                                                \
    do {                                                                     \
        T *restrict a_ = inout;                                              \
        const T *restrict b_ = in;                                           \
        size_t i_ = 0;                                                       \
        for (; i_ + FTI_RED_BLOCK <= count; i_ += FTI_RED_BLOCK) {           \
            T *restrict a = a_ + i_;                                         \
            const T *restrict b = b_ + i_;                                   \
            for (size_t i = 0; i < FTI_RED_BLOCK; i++)                       \
                a[i] = (EXPR);                                               \
        }                                                                    \
        {                                                                    \
            T *restrict a = a_ + i_;                                         \
            const T *restrict b = b_ + i_;                                   \
            for (size_t i = 0; i < count - i_; i++)                          \
                a[i] = (EXPR);                                               \
        }                                                                    \
    } while (0)

/* Defines the four kernels of one element type T (U: its unsigned twin). */
#define FTI_RED_KERNELS(NAME, T, U)                                          \
    static void red_sum_##NAME(void *restrict inout, const void *restrict in, \
                               size_t count)                                 \
    {                                                                        \
        FTI_RED_LOOP(T, (T)((U)a[i] + (U)b[i]));                             \
    }                                                                        \
    static void red_prod_##NAME(void *restrict inout, const void *restrict in, \
                                size_t count)                                \
    {                                                                        \
        FTI_RED_LOOP(T, (T)((U)a[i] * (U)b[i]));                             \
    }                                                                        \
    static void red_max_##NAME(void *restrict inout, const void *restrict in, \
                               size_t count)                                 \
    {                                                                        \
        FTI_RED_LOOP(T, a[i] < b[i] ? b[i] : a[i]);                          \
    }                                                                        \
    static void red_min_##NAME(void *restrict inout, const void *restrict in, \
                               size_t count)                                 \
    {                                                                        \
        FTI_RED_LOOP(T, b[i] < a[i] ? b[i] : a[i]);                          \
    }

/* Three-operand form: out[i] = a[i] op b[i], out aliasing neither (the
 * result written once: fti_reduce_into). */
#define FTI_RED_LOOP3(T, EXPR)                                               \
    do {                                                                     \
        T *restrict o_ = out;                                                \
        const T *restrict a_ = x;                                            \
        const T *restrict b_ = y;                                            \
        size_t i_ = 0;                                                       \
        for (; i_ + FTI_RED_BLOCK <= count; i_ += FTI_RED_BLOCK) {           \
            T *restrict o = o_ + i_;                                         \
            const T *restrict a = a_ + i_;                                   \
            const T *restrict b = b_ + i_;                                   \
            for (size_t i = 0; i < FTI_RED_BLOCK; i++)                       \
                o[i] = (EXPR);                                               \
        }                                                                    \
        {                                                                    \
            T *restrict o = o_ + i_;                                         \
            const T *restrict a = a_ + i_;                                   \
            const T *restrict b = b_ + i_;                                   \
            for (size_t i = 0; i < count - i_; i++)                          \
                o[i] = (EXPR);                                               \
        }                                                                    \
    } while (0)

#define FTI_RED_KERNELS3(NAME, T, U)                                         \
    static void into_sum_##NAME(void *restrict out, const void *restrict x,  \
                                const void *restrict y, size_t count)        \
    {                                                                        \
        FTI_RED_LOOP3(T, (T)((U)a[i] + (U)b[i]));                            \
    }                                                                        \
    static void into_prod_##NAME(void *restrict out, const void *restrict x, \
                                 const void *restrict y, size_t count)       \
    {                                                                        \
        FTI_RED_LOOP3(T, (T)((U)a[i] * (U)b[i]));                            \
    }                                                                        \
    static void into_max_##NAME(void *restrict out, const void *restrict x,  \
                                const void *restrict y, size_t count)        \
    {                                                                        \
        FTI_RED_LOOP3(T, a[i] < b[i] ? b[i] : a[i]);                         \
    }                                                                        \
    static void into_min_##NAME(void *restrict out, const void *restrict x,  \
                                const void *restrict y, size_t count)        \
    {                                                                        \
        FTI_RED_LOOP3(T, b[i] < a[i] ? b[i] : a[i]);                         \
    }

/* Floating point: no unsigned twin, the arithmetic is the type's own. */
FTI_RED_KERNELS(float, float, float)
FTI_RED_KERNELS(double, double, double)
FTI_RED_KERNELS(int, int, unsigned int)
FTI_RED_KERNELS(long, long, unsigned long)
FTI_RED_KERNELS(int32, int32_t, uint32_t)
FTI_RED_KERNELS(int64, int64_t, uint64_t)
FTI_RED_KERNELS(uint64, uint64_t, uint64_t)
FTI_RED_KERNELS3(float, float, float)
FTI_RED_KERNELS3(double, double, double)
FTI_RED_KERNELS3(int, int, unsigned int)
FTI_RED_KERNELS3(long, long, unsigned long)
FTI_RED_KERNELS3(int32, int32_t, uint32_t)
FTI_RED_KERNELS3(int64, int64_t, uint64_t)
FTI_RED_KERNELS3(uint64, uint64_t, uint64_t)

typedef void (*red_fn)(void *restrict, const void *restrict, size_t);

/* [dtype][op]; AVG reduces as SUM. */
#define FTI_RED_ROW(NAME) \
    {red_sum_##NAME, red_prod_##NAME, red_max_##NAME, red_min_##NAME, red_sum_##NAME}

static const red_fn red_table[FTI_DT_COUNT][FTI_OP_COUNT] = {
    [FTI_DT_FLOAT] = FTI_RED_ROW(float),   [FTI_DT_DOUBLE] = FTI_RED_ROW(double),
    [FTI_DT_INT] = FTI_RED_ROW(int),       [FTI_DT_LONG] = FTI_RED_ROW(long),
    [FTI_DT_INT32] = FTI_RED_ROW(int32),   [FTI_DT_INT64] = FTI_RED_ROW(int64),
    [FTI_DT_UINT64] = FTI_RED_ROW(uint64),
};

typedef void (*red3_fn)(void *restrict, const void *restrict, const void *restrict, size_t);

#define FTI_RED3_ROW(NAME) \
    {into_sum_##NAME, into_prod_##NAME, into_max_##NAME, into_min_##NAME, into_sum_##NAME}

static const red3_fn red3_table[FTI_DT_COUNT][FTI_OP_COUNT] = {
    [FTI_DT_FLOAT] = FTI_RED3_ROW(float),   [FTI_DT_DOUBLE] = FTI_RED3_ROW(double),
    [FTI_DT_INT] = FTI_RED3_ROW(int),       [FTI_DT_LONG] = FTI_RED3_ROW(long),
    [FTI_DT_INT32] = FTI_RED3_ROW(int32),   [FTI_DT_INT64] = FTI_RED3_ROW(int64),
    [FTI_DT_UINT64] = FTI_RED3_ROW(uint64),
};

size_t fti_dtype_size(enum fti_dtype dt)
{
    switch (dt) {
    case FTI_DT_FLOAT: return sizeof(float);
    case FTI_DT_DOUBLE: return sizeof(double);
    case FTI_DT_INT: return sizeof(int);
    case FTI_DT_LONG: return sizeof(long);
    case FTI_DT_INT32: return sizeof(int32_t);
    case FTI_DT_INT64: return sizeof(int64_t);
    case FTI_DT_UINT64: return sizeof(uint64_t);
    case FTI_DT_COUNT: break;
    }
    return 0;
}

const char *fti_dtype_name(enum fti_dtype dt)
{
    switch (dt) {
    case FTI_DT_FLOAT: return "float";
    case FTI_DT_DOUBLE: return "double";
    case FTI_DT_INT: return "int";
    case FTI_DT_LONG: return "long";
    case FTI_DT_INT32: return "int32";
    case FTI_DT_INT64: return "int64";
    case FTI_DT_UINT64: return "uint64";
    case FTI_DT_COUNT: break;
    }
    return "?";
}

const char *fti_op_name(enum fti_op op)
{
    switch (op) {
    case FTI_OP_SUM: return "sum";
    case FTI_OP_PROD: return "prod";
    case FTI_OP_MAX: return "max";
    case FTI_OP_MIN: return "min";
    case FTI_OP_AVG: return "avg";
    case FTI_OP_COUNT: break;
    }
    return "?";
}

int fti_reduce_check_args(const void *buf, size_t count, enum fti_dtype dt, enum fti_op op, int n)
{
    if (!fti_reduce_supported(dt, op))
        return FT_ERR_UNSUPPORTED;
    if ((count > 0 && buf == NULL) || n < 1 || count > SIZE_MAX / fti_dtype_size(dt) / (size_t)n)
        return FT_ERR_ARG;
    return FT_SUCCESS;
}

int fti_reduce_supported(enum fti_dtype dt, enum fti_op op)
{
    if ((unsigned)dt >= FTI_DT_COUNT || (unsigned)op >= FTI_OP_COUNT)
        return 0;
    if (op == FTI_OP_AVG)
        return dt == FTI_DT_FLOAT || dt == FTI_DT_DOUBLE;
    return 1;
}

void fti_reduce(void *inout, const void *in, size_t count, enum fti_dtype dt, enum fti_op op)
{
    if ((unsigned)dt >= FTI_DT_COUNT || (unsigned)op >= FTI_OP_COUNT || count == 0)
        return;
    red_table[dt][op](inout, in, count);
}

void fti_reduce_into(void *out, const void *a, const void *b, size_t count, enum fti_dtype dt,
                     enum fti_op op)
{
    if ((unsigned)dt >= FTI_DT_COUNT || (unsigned)op >= FTI_OP_COUNT || count == 0)
        return;
    red3_table[dt][op](out, a, b, count);
}

#define FTI_SCALE_LOOP(T)                                                    \
    do {                                                                     \
        T *restrict p_ = buf;                                                \
        const T d = (T)n;                                                    \
        size_t i_ = 0;                                                       \
        for (; i_ + FTI_RED_BLOCK <= count; i_ += FTI_RED_BLOCK) {           \
            T *restrict p = p_ + i_;                                         \
            for (size_t i = 0; i < FTI_RED_BLOCK; i++)                       \
                p[i] /= d;                                                   \
        }                                                                    \
        for (; i_ < count; i_++)                                             \
            p_[i_] /= d;                                                     \
    } while (0)

void fti_reduce_scale(void *buf, size_t count, enum fti_dtype dt, int n)
{
    if (n == 1 || n == 0)
        return;
    /* A true division (not a multiply by 1/n) rounds exactly like SUM/n. */
    if (dt == FTI_DT_FLOAT)
        FTI_SCALE_LOOP(float);
    else if (dt == FTI_DT_DOUBLE)
        FTI_SCALE_LOOP(double);
}

void fti_reduce_identity(void *buf, size_t count, enum fti_dtype dt, enum fti_op op)
{
#define FILL(T, v)                                                                                 \
    do {                                                                                           \
        T *p_ = buf;                                                                               \
        for (size_t i_ = 0; i_ < count; i_++)                                                      \
            p_[i_] = (v);                                                                          \
    } while (0)
    bool sum = op == FTI_OP_SUM || op == FTI_OP_AVG;
    switch (dt) {
    case FTI_DT_FLOAT:
        FILL(float, sum ? -0.0f : op == FTI_OP_PROD ? 1.0f : op == FTI_OP_MAX ? -INFINITY : INFINITY);
        break;
    case FTI_DT_DOUBLE:
        FILL(double, sum ? -0.0 : op == FTI_OP_PROD ? 1.0 : op == FTI_OP_MAX ? -INFINITY : INFINITY);
        break;
    case FTI_DT_INT:
        FILL(int, sum ? 0 : op == FTI_OP_PROD ? 1 : op == FTI_OP_MAX ? INT_MIN : INT_MAX);
        break;
    case FTI_DT_LONG:
        FILL(long, sum ? 0 : op == FTI_OP_PROD ? 1 : op == FTI_OP_MAX ? LONG_MIN : LONG_MAX);
        break;
    case FTI_DT_INT32:
        FILL(int32_t, sum ? 0 : op == FTI_OP_PROD ? 1 : op == FTI_OP_MAX ? INT32_MIN : INT32_MAX);
        break;
    case FTI_DT_INT64:
        FILL(int64_t, sum ? 0 : op == FTI_OP_PROD ? 1 : op == FTI_OP_MAX ? INT64_MIN : INT64_MAX);
        break;
    case FTI_DT_UINT64:
        FILL(uint64_t, sum ? 0 : op == FTI_OP_PROD ? 1 : op == FTI_OP_MAX ? 0 : UINT64_MAX);
        break;
    default:
        break;
    }
#undef FILL
}
