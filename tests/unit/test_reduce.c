/* test_reduce.c - the reduction kernels of comm/reduce.c against a plain
 * element-by-element reference, for every dtype and op, on lengths that
 * cover the kernels' blocks and their scalar tails. */
#include <limits.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "comm/reduce.h"

#define MAXN 200
static const size_t lengths[] = {0, 1, 3, 31, 32, 33, 64, 65, 127, 200};

/* Deterministic pseudo-random words. */
static uint64_t lcg(uint64_t *s)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s >> 17;
}

/* The reference: one element at a time, the obvious way.  Signed sums and
 * products wrap through the unsigned type, as the kernels document. */
#define REF_APPLY(T, U, a, b, op)                                            \
    ((op) == FTI_OP_SUM || (op) == FTI_OP_AVG ? (T)((U)(a) + (U)(b))         \
     : (op) == FTI_OP_PROD                  ? (T)((U)(a) * (U)(b))           \
     : (op) == FTI_OP_MAX                   ? ((a) > (b) ? (a) : (b))        \
                                            : ((a) < (b) ? (a) : (b)))

/* One dtype: fills inputs (some negative, some equal), runs the kernel and
 * the reference, compares bitwise.  The element beyond n must not change. */
#define DEFINE_CHECK(NAME, T, U, GEN)                                        \
    static void check_##NAME(enum fti_dtype dt, enum fti_op op)              \
    {                                                                        \
        T a[MAXN + 1], b[MAXN + 1], ref[MAXN + 1], out[MAXN + 1];            \
        uint64_t seed = 12345u + (uint64_t)op * 77u;                         \
        for (size_t li = 0; li < sizeof(lengths) / sizeof(lengths[0]); li++) { \
            size_t n = lengths[li];                                          \
            for (size_t i = 0; i <= MAXN; i++) {                             \
                a[i] = GEN;                                                  \
                b[i] = (i % 9 == 0) ? a[i] : GEN;                            \
            }                                                                \
            T guard = a[n];                                                  \
            for (size_t i = 0; i < n; i++)                                   \
                ref[i] = REF_APPLY(T, U, a[i], b[i], op);                    \
            memcpy(out, b, sizeof(out)); /* the three-operand form too */    \
            fti_reduce_into(out, a, b, n, dt, op);                           \
            assert_memory_equal(out, ref, n * sizeof(T));                    \
            assert_memory_equal(&out[n], &b[n], sizeof(T));                  \
            fti_reduce(a, b, n, dt, op);                                     \
            assert_memory_equal(a, ref, n * sizeof(T));                      \
            assert_memory_equal(&a[n], &guard, sizeof(T));                   \
        }                                                                    \
    }

/* Small values keep products of floats exact; integers use their range. */
DEFINE_CHECK(float, float, float, (float)((int)(lcg(&seed) % 17) - 8) * 0.5f)
DEFINE_CHECK(double, double, double, (double)((int)(lcg(&seed) % 2001) - 1000) / 8.0)
DEFINE_CHECK(int, int, unsigned int, (int)(unsigned int)lcg(&seed))
DEFINE_CHECK(long, long, unsigned long, (long)(unsigned long)(lcg(&seed) * 2654435761u))
DEFINE_CHECK(int32, int32_t, uint32_t, (int32_t)(uint32_t)lcg(&seed))
DEFINE_CHECK(int64, int64_t, uint64_t, (int64_t)(lcg(&seed) * 0x9E3779B97F4A7C15ULL))
DEFINE_CHECK(uint64, uint64_t, uint64_t, lcg(&seed) * 0x9E3779B97F4A7C15ULL)

static void test_all_kernels(void **state)
{
    (void)state;
    for (int op = 0; op < FTI_OP_COUNT; op++) {
        check_float(FTI_DT_FLOAT, (enum fti_op)op);
        check_double(FTI_DT_DOUBLE, (enum fti_op)op);
        if (op == FTI_OP_AVG)
            continue; /* unsupported for integers (see test_supported) */
        check_int(FTI_DT_INT, (enum fti_op)op);
        check_long(FTI_DT_LONG, (enum fti_op)op);
        check_int32(FTI_DT_INT32, (enum fti_op)op);
        check_int64(FTI_DT_INT64, (enum fti_op)op);
        check_uint64(FTI_DT_UINT64, (enum fti_op)op);
    }
}

static void test_integer_wraps(void **state)
{
    (void)state;
    int32_t a[2] = {INT32_MAX, INT32_MIN}, b[2] = {1, -1};
    fti_reduce(a, b, 2, FTI_DT_INT32, FTI_OP_SUM);
    assert_int_equal(a[0], INT32_MIN);
    assert_int_equal(a[1], INT32_MAX);
    uint64_t u[1] = {UINT64_MAX}, v[1] = {2};
    fti_reduce(u, v, 1, FTI_DT_UINT64, FTI_OP_SUM);
    assert_true(u[0] == 1);
    /* unsigned MAX must not compare as signed */
    uint64_t m[1] = {1}, w[1] = {UINT64_MAX};
    fti_reduce(m, w, 1, FTI_DT_UINT64, FTI_OP_MAX);
    assert_true(m[0] == UINT64_MAX);
}

static void test_scale(void **state)
{
    (void)state;
    float f[70], fr[70];
    double d[70], dr[70];
    for (int i = 0; i < 70; i++) {
        f[i] = (float)i * 1.37f - 20.0f;
        fr[i] = f[i] / 3.0f;
        d[i] = (double)i * 1.37 - 20.0;
        dr[i] = d[i] / 3.0;
    }
    fti_reduce_scale(f, 70, FTI_DT_FLOAT, 3);
    fti_reduce_scale(d, 70, FTI_DT_DOUBLE, 3);
    assert_memory_equal(f, fr, sizeof(f));
    assert_memory_equal(d, dr, sizeof(d));
    /* n = 1: unchanged; integer types are never scaled */
    fti_reduce_scale(f, 70, FTI_DT_FLOAT, 1);
    assert_memory_equal(f, fr, sizeof(f));
    int k[3] = {9, 6, 3};
    fti_reduce_scale(k, 3, FTI_DT_INT, 3);
    assert_int_equal(k[0], 9);
    assert_int_equal(k[2], 3);
}

static void test_supported(void **state)
{
    (void)state;
    for (int dt = 0; dt < FTI_DT_COUNT; dt++) {
        for (int op = 0; op < FTI_OP_COUNT; op++) {
            int want = op != FTI_OP_AVG || dt == FTI_DT_FLOAT || dt == FTI_DT_DOUBLE;
            assert_int_equal(fti_reduce_supported((enum fti_dtype)dt, (enum fti_op)op), want);
        }
    }
    assert_false(fti_reduce_supported(FTI_DT_COUNT, FTI_OP_SUM));
    assert_false(fti_reduce_supported(FTI_DT_FLOAT, FTI_OP_COUNT));
    assert_false(fti_reduce_supported((enum fti_dtype)-1, FTI_OP_SUM));
}

static void test_sizes_and_names(void **state)
{
    (void)state;
    assert_int_equal(fti_dtype_size(FTI_DT_FLOAT), 4);
    assert_int_equal(fti_dtype_size(FTI_DT_DOUBLE), 8);
    assert_int_equal(fti_dtype_size(FTI_DT_INT), sizeof(int));
    assert_int_equal(fti_dtype_size(FTI_DT_LONG), sizeof(long));
    assert_int_equal(fti_dtype_size(FTI_DT_INT32), 4);
    assert_int_equal(fti_dtype_size(FTI_DT_INT64), 8);
    assert_int_equal(fti_dtype_size(FTI_DT_UINT64), 8);
    assert_int_equal(fti_dtype_size(FTI_DT_COUNT), 0);
    assert_string_equal(fti_dtype_name(FTI_DT_UINT64), "uint64");
    assert_string_equal(fti_op_name(FTI_OP_AVG), "avg");
    assert_string_equal(fti_op_name(FTI_OP_COUNT), "?");
}

/* The identity of every supported (dtype, op): x op identity == x, bit
 * for bit, for ordinary values, the extremes and (sums) both zeros. */
#define DEFINE_IDENTITY(NAME, T, ...)                                        \
    static void identity_##NAME(enum fti_dtype dt)                           \
    {                                                                        \
        const T xs[] = {__VA_ARGS__};                                        \
        const size_t n = sizeof(xs) / sizeof(xs[0]);                         \
        for (int op = 0; op < FTI_OP_COUNT; op++) {                          \
            if (!fti_reduce_supported(dt, (enum fti_op)op))                  \
                continue;                                                    \
            T id[sizeof(xs) / sizeof(xs[0]) + 1], x[sizeof(xs) / sizeof(xs[0])]; \
            memset(id, 0x5a, sizeof(id));                                    \
            T guard = id[n];                                                 \
            fti_reduce_identity(id, n, dt, (enum fti_op)op);                 \
            assert_memory_equal(&id[n], &guard, sizeof(T));                  \
            memcpy(x, xs, sizeof(xs));                                       \
            fti_reduce(x, id, n, dt, (enum fti_op)op);                       \
            assert_memory_equal(x, xs, sizeof(xs));                          \
            memcpy(x, id, sizeof(xs)); /* the other order too */             \
            fti_reduce(x, xs, n, dt, (enum fti_op)op);                       \
            assert_memory_equal(x, xs, sizeof(xs));                          \
        }                                                                    \
    }

DEFINE_IDENTITY(float, float, 0.0f, -0.0f, 1.5f, -2.25f, 3.4e38f, -3.4e38f, INFINITY, -INFINITY)
DEFINE_IDENTITY(double, double, 0.0, -0.0, 1.5, -2.25, 1e308, -1e308, INFINITY, -INFINITY)
DEFINE_IDENTITY(int, int, 0, 1, -1, 12345, INT_MAX, INT_MIN)
DEFINE_IDENTITY(long, long, 0, 1, -1, 12345, LONG_MAX, LONG_MIN)
DEFINE_IDENTITY(int32, int32_t, 0, 1, -1, 12345, INT32_MAX, INT32_MIN)
DEFINE_IDENTITY(int64, int64_t, 0, 1, -1, 12345, INT64_MAX, INT64_MIN)
DEFINE_IDENTITY(uint64, uint64_t, 0, 1, 12345, UINT64_MAX)

static void test_identity(void **state)
{
    (void)state;
    identity_float(FTI_DT_FLOAT);
    identity_double(FTI_DT_DOUBLE);
    identity_int(FTI_DT_INT);
    identity_long(FTI_DT_LONG);
    identity_int32(FTI_DT_INT32);
    identity_int64(FTI_DT_INT64);
    identity_uint64(FTI_DT_UINT64);
}

/* The values themselves: a floating-point sum's identity is -0.0 (+0.0
 * would turn a -0.0 into +0.0), AVG's is SUM's, MAX's and MIN's the
 * extremes. */
static void test_identity_values(void **state)
{
    (void)state;
    float f[2];
    fti_reduce_identity(f, 2, FTI_DT_FLOAT, FTI_OP_SUM);
    assert_true(f[0] == 0.0f && signbit(f[0]) && signbit(f[1]));
    fti_reduce_identity(f, 1, FTI_DT_FLOAT, FTI_OP_AVG);
    assert_true(f[0] == 0.0f && signbit(f[0]));
    double d;
    fti_reduce_identity(&d, 1, FTI_DT_DOUBLE, FTI_OP_MAX);
    assert_true(isinf(d) && d < 0);
    fti_reduce_identity(&d, 1, FTI_DT_DOUBLE, FTI_OP_PROD);
    assert_true(d == 1.0);
    int i;
    fti_reduce_identity(&i, 1, FTI_DT_INT, FTI_OP_MIN);
    assert_int_equal(i, INT_MAX);
    uint64_t u = 7;
    fti_reduce_identity(&u, 1, FTI_DT_UINT64, FTI_OP_MAX);
    assert_true(u == 0);
    fti_reduce_identity(&u, 1, FTI_DT_UINT64, FTI_OP_MIN);
    assert_true(u == UINT64_MAX);
    long l = 5;
    fti_reduce_identity(&l, 1, FTI_DT_COUNT, FTI_OP_SUM); /* unknown: untouched */
    assert_int_equal(l, 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all_kernels),  cmocka_unit_test(test_integer_wraps),
        cmocka_unit_test(test_scale),        cmocka_unit_test(test_supported),
        cmocka_unit_test(test_sizes_and_names), cmocka_unit_test(test_identity),
        cmocka_unit_test(test_identity_values),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
