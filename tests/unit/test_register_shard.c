/*
 * test_register_shard.c - the bound of FT_State_register_shard
 * (fti_ckpt_register_shard, src/state/ckpt_step.c): global_count elements
 * of the datatype must be a byte count (int64_t and size_t), since the
 * checkpoint metadata, the resharding plan and the heal compute byte
 * offsets and lengths as count * element size; a larger global array is
 * refused with FT_ERR_ARG and registers nothing, one at the bound is
 * accepted.  One MPI process (singleton MPI_Init: MPI_Type_size and the
 * group need it).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
#include <mpi.h>

#include "ftmpi_errors.h"
#include "group.h"
#include "base/log.h"
#include "base/settings.h"
#include "heal/heal.h"
#include "state/ckpt_step.h"

/* Built with ASan (check-asan): no leak check. A singleton MPI_Init leaves
 * the MPI library's own allocations until exit (Open MPI's op tables and
 * more, the same reports that the integration tests turn leak checks off
 * for on MPI ranks: tests/integration/common.sh). ASan reads this hook;
 * other builds never call it. */
const char *__asan_default_options(void);
__attribute__((visibility("default"))) const char *__asan_default_options(void)
{
    return "detect_leaks=0";
}

static fti_group_h g;

struct fixture {
    fti_ckpt_h c;
    fti_heal_h h;
};

static int setup(void **state)
{
    static struct fixture f;
    static fti_config_t cfg; /* zero: no FTMPI_CKPT_DIR */
    if (fti_ckpt_create(&cfg, g, "shard-test", NULL, &f.c) != FT_SUCCESS ||
        fti_heal_create(&f.h) != FT_SUCCESS)
        return -1;
    *state = &f;
    return 0;
}

static int teardown(void **state)
{
    struct fixture *f = *state;
    fti_ckpt_destroy(f->c);
    fti_heal_destroy(f->h);
    return 0;
}

/* 8-byte elements: INT64_MAX / 8 of them is the largest global array. */
static void test_bound_double(void **state)
{
    struct fixture *f = *state;
    double blk[4] = {1, 2, 3, 4};
    int64_t max = INT64_MAX / 8;
    assert_int_equal(fti_ckpt_register_shard(f->c, f->h, "big", blk, MPI_DOUBLE, max + 1, 0, 4),
                     FT_ERR_ARG);
    assert_int_equal(fti_ckpt_register_shard(f->c, f->h, "big", blk, MPI_DOUBLE, INT64_MAX, 0, 4),
                     FT_ERR_ARG);
    /* the refused calls registered nothing: the name is still free */
    assert_int_equal(fti_ckpt_register_shard(f->c, f->h, "big", blk, MPI_DOUBLE, max, max - 4, 4),
                     FT_SUCCESS);
}

/* An element size that does not divide INT64_MAX: 3 bytes. */
static void test_bound_odd_size(void **state)
{
    struct fixture *f = *state;
    unsigned char blk[6] = {0};
    MPI_Datatype t3;
    assert_int_equal(MPI_Type_contiguous(3, MPI_BYTE, &t3), MPI_SUCCESS);
    assert_int_equal(MPI_Type_commit(&t3), MPI_SUCCESS);
    int64_t max = INT64_MAX / 3;
    assert_int_equal(fti_ckpt_register_shard(f->c, f->h, "odd", blk, t3, max + 1, 0, 2),
                     FT_ERR_ARG);
    assert_int_equal(fti_ckpt_register_shard(f->c, f->h, "odd", blk, t3, max, 0, 2), FT_SUCCESS);
    MPI_Type_free(&t3);
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    fti_log_level = FTI_LOG_NONE;
    if (fti_group_create(MPI_COMM_WORLD, &g) != FT_SUCCESS)
        return 1;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_bound_double, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bound_odd_size, setup, teardown),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    fti_group_destroy(g);
    MPI_Finalize();
    return rc;
}
