/*
 * test_dtype.c - the MPI datatypes and ops FT_Allreduce accepts
 * (src/dtype.c).  MPI handles are compared, never used: no MPI_Init.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "dtype.h"
#include "ftmpi.h"

/* A stand-in for ftmpi_op_avg: any op handle other than the built-in ones
 * the mapping knows. */
#define FAKE_AVG MPI_BAND

static void test_supported_types(void **state)
{
    (void)state;
    static const struct {
        MPI_Datatype mpi;
        enum fti_dtype dt;
    } map[] = {
        {MPI_FLOAT, FTI_DT_FLOAT},   {MPI_DOUBLE, FTI_DT_DOUBLE}, {MPI_INT, FTI_DT_INT},
        {MPI_LONG, FTI_DT_LONG},     {MPI_INT32_T, FTI_DT_INT32}, {MPI_INT64_T, FTI_DT_INT64},
        {MPI_UINT64_T, FTI_DT_UINT64},
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++) {
        enum fti_dtype dt = FTI_DT_COUNT;
        assert_int_equal(fti_dtype_from_mpi(map[i].mpi, &dt), FT_SUCCESS);
        assert_int_equal(dt, map[i].dt);
    }
}

static void test_refused_types(void **state)
{
    (void)state;
    MPI_Datatype bad[] = {MPI_CHAR, MPI_BYTE, MPI_SHORT, MPI_UNSIGNED, MPI_LONG_DOUBLE,
                          MPI_FLOAT_INT, MPI_DATATYPE_NULL};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        enum fti_dtype dt = FTI_DT_COUNT;
        assert_int_equal(fti_dtype_from_mpi(bad[i], &dt), FT_ERR_UNSUPPORTED);
        assert_int_equal(dt, FTI_DT_COUNT); /* untouched on failure */
    }
}

static void test_ops(void **state)
{
    (void)state;
    enum fti_op op = FTI_OP_COUNT;
    assert_int_equal(fti_op_from_mpi(MPI_SUM, FAKE_AVG, &op), FT_SUCCESS);
    assert_int_equal(op, FTI_OP_SUM);
    assert_int_equal(fti_op_from_mpi(MPI_PROD, FAKE_AVG, &op), FT_SUCCESS);
    assert_int_equal(op, FTI_OP_PROD);
    assert_int_equal(fti_op_from_mpi(MPI_MAX, FAKE_AVG, &op), FT_SUCCESS);
    assert_int_equal(op, FTI_OP_MAX);
    assert_int_equal(fti_op_from_mpi(MPI_MIN, FAKE_AVG, &op), FT_SUCCESS);
    assert_int_equal(op, FTI_OP_MIN);
    assert_int_equal(fti_op_from_mpi(FAKE_AVG, FAKE_AVG, &op), FT_SUCCESS);
    assert_int_equal(op, FTI_OP_AVG);

    op = FTI_OP_COUNT;
    /* the avg handle before FT_Init (MPI_OP_NULL) matches nothing */
    assert_int_equal(fti_op_from_mpi(FAKE_AVG, MPI_OP_NULL, &op), FT_ERR_UNSUPPORTED);
    assert_int_equal(fti_op_from_mpi(MPI_OP_NULL, MPI_OP_NULL, &op), FT_ERR_UNSUPPORTED);
    assert_int_equal(fti_op_from_mpi(MPI_LAND, FAKE_AVG, &op), FT_ERR_UNSUPPORTED);
    assert_int_equal(fti_op_from_mpi(MPI_MAXLOC, FAKE_AVG, &op), FT_ERR_UNSUPPORTED);
    assert_int_equal(op, FTI_OP_COUNT);
}

static void test_pairs(void **state)
{
    (void)state;
    enum fti_dtype dt;
    enum fti_op op;
    /* AVG only for floating point */
    assert_int_equal(fti_reduction_from_mpi(MPI_FLOAT, FAKE_AVG, FAKE_AVG, &dt, &op), FT_SUCCESS);
    assert_int_equal(dt, FTI_DT_FLOAT);
    assert_int_equal(op, FTI_OP_AVG);
    assert_int_equal(fti_reduction_from_mpi(MPI_DOUBLE, FAKE_AVG, FAKE_AVG, &dt, &op),
                     FT_SUCCESS);
    assert_int_equal(fti_reduction_from_mpi(MPI_INT, FAKE_AVG, FAKE_AVG, &dt, &op),
                     FT_ERR_UNSUPPORTED);
    assert_int_equal(fti_reduction_from_mpi(MPI_INT64_T, FAKE_AVG, FAKE_AVG, &dt, &op),
                     FT_ERR_UNSUPPORTED);
    /* integers with the arithmetic ops */
    assert_int_equal(fti_reduction_from_mpi(MPI_INT64_T, MPI_MAX, FAKE_AVG, &dt, &op),
                     FT_SUCCESS);
    assert_int_equal(dt, FTI_DT_INT64);
    assert_int_equal(op, FTI_OP_MAX);
    /* MPI_CHAR / MPI_BYTE refused for every op, as MPI does */
    MPI_Op ops[] = {MPI_SUM, MPI_PROD, MPI_MAX, MPI_MIN, FAKE_AVG};
    for (size_t i = 0; i < sizeof(ops) / sizeof(ops[0]); i++) {
        assert_int_equal(fti_reduction_from_mpi(MPI_CHAR, ops[i], FAKE_AVG, &dt, &op),
                         FT_ERR_UNSUPPORTED);
        assert_int_equal(fti_reduction_from_mpi(MPI_BYTE, ops[i], FAKE_AVG, &dt, &op),
                         FT_ERR_UNSUPPORTED);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_supported_types),
        cmocka_unit_test(test_refused_types),
        cmocka_unit_test(test_ops),
        cmocka_unit_test(test_pairs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
