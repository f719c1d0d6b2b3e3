/*
 * test_launcher.c - FT_Init's launcher check (src/comm/launcher.c): which
 * worlds contradict the launcher's size variables, and what the message
 * names.  Pure: no MPI_Init.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <mpi.h>

#include "comm/ulfm.h"
#include "ftmpi.h"
#include "comm/launcher.h"

#define LIB "MPICH 4.0.2"
#define RUN "/usr/bin/mpiexec.hydra"

static bool mismatch(int ws, const char *ompi, const char *pmi, char *msg, size_t len)
{
    return fti_launcher_mismatch(ws, ompi, pmi, NULL, LIB, RUN, msg, len);
}

static bool mismatch_slurm(int ws, const char *ompi, const char *pmi, const char *tasks, char *msg,
                           size_t len)
{
    return fti_launcher_mismatch(ws, ompi, pmi, tasks, LIB, RUN, msg, len);
}

static void test_consistent(void **state)
{
    (void)state;
    char msg[512] = "";
    assert_false(mismatch(1, NULL, NULL, msg, sizeof(msg)));   /* no launcher: singleton */
    assert_false(mismatch(1, "1", NULL, msg, sizeof(msg)));    /* mpirun -np 1 */
    assert_false(mismatch(1, NULL, "1", msg, sizeof(msg)));    /* hydra -np 1 */
    assert_false(mismatch(2, "2", NULL, msg, sizeof(msg)));    /* a world of 2 */
    assert_false(mismatch(4, NULL, "4", msg, sizeof(msg)));
    assert_false(mismatch(3, "5", "7", msg, sizeof(msg)));     /* only singletons are judged */
    assert_false(mismatch(1, "", "x", msg, sizeof(msg)));      /* not sizes */
    assert_false(mismatch(1, "-2", "2z", msg, sizeof(msg)));
    assert_string_equal(msg, "");
}

static void test_singleton_of_open_mpi(void **state)
{
    (void)state;
    char msg[768];
    assert_true(mismatch(1, "2", NULL, msg, sizeof(msg)));
    assert_non_null(strstr(msg, "OMPI_COMM_WORLD_SIZE=2"));
    assert_non_null(strstr(msg, "Open MPI's mpirun"));
    assert_non_null(strstr(msg, LIB));
    assert_non_null(strstr(msg, RUN));
}

static void test_singleton_of_pmi(void **state)
{
    (void)state;
    char msg[768];
    assert_true(mismatch(1, NULL, "3", msg, sizeof(msg)));
    assert_non_null(strstr(msg, "PMI_SIZE=3"));
    /* OMPI_COMM_WORLD_SIZE=1 says nothing; PMI_SIZE still counts */
    assert_true(mismatch(1, "1", "2", msg, sizeof(msg)));
    assert_non_null(strstr(msg, "PMI_SIZE=2"));
}

/* srun whose --mpi= plugin the MPI does not speak (MPICH under pmix):
 * only SLURM_STEP_NUM_TASKS says how many were started */
static void test_singleton_of_srun(void **state)
{
    (void)state;
    char msg[768] = "";
    assert_true(mismatch_slurm(1, NULL, NULL, "2", msg, sizeof(msg)));
    assert_non_null(strstr(msg, "SLURM_STEP_NUM_TASKS=2"));
    assert_non_null(strstr(msg, "--mpi="));
    assert_non_null(strstr(msg, LIB));
    msg[0] = '\0';
    assert_false(mismatch_slurm(1, NULL, NULL, "1", msg, sizeof(msg))); /* srun -n 1 */
    assert_false(mismatch_slurm(2, NULL, NULL, "2", msg, sizeof(msg))); /* the plugin works */
    /* an MPI launcher inside a step (srun -n 2 mpirun -np 1 ...): its own
     * variable says 1, the step's task count is not this world's */
    assert_false(mismatch_slurm(1, "1", NULL, "2", msg, sizeof(msg)));
    assert_false(mismatch_slurm(1, NULL, "1", "4", msg, sizeof(msg)));
    assert_string_equal(msg, "");
    /* a PMI size wins over the step's count */
    assert_true(mismatch_slurm(1, NULL, "3", "2", msg, sizeof(msg)));
    assert_non_null(strstr(msg, "PMI_SIZE=3"));
}

static void test_short_buffer(void **state)
{
    (void)state;
    char msg[16];
    assert_true(mismatch(1, "2", NULL, msg, sizeof(msg)));
    assert_int_equal(strlen(msg), sizeof(msg) - 1);
}

/* Mode B's recovery check, for this build's MPI (world rank 1: logs
 * nothing): Open MPI 4.x starts (mpirun --enable-recovery is its part);
 * an MPI with working ULFM calls starts; any other refuses with
 * FT_ERR_UNSUPPORTED unless told to run without recovery. */
static void test_modeb_recovery(void **state)
{
    (void)state;
    char why[256] = "";
    bool ulfm = fti_ulfm_usable(why, sizeof(why));
#if defined(OPEN_MPI) && OMPI_MAJOR_VERSION < 5
    assert_int_equal(fti_launcher_modeb_check(1, false), FT_SUCCESS);
#else
    assert_int_equal(fti_launcher_modeb_check(1, false), ulfm ? FT_SUCCESS : FT_ERR_UNSUPPORTED);
#endif
    assert_int_equal(fti_launcher_modeb_check(1, true), FT_SUCCESS);
#if defined(MPICH_NUMVERSION) && MPICH_NUMVERSION < 40200000
    /* MPICH 4.0's ch4 declares the calls and aborts in them: never used */
    assert_false(ulfm);
    assert_non_null(strstr(why, "MPIX_Comm_revoke"));
    assert_int_equal(fti_ulfm_revoke(MPI_COMM_WORLD), FT_ERR_UNSUPPORTED);
#endif
    if (!ulfm)
        assert_true(strlen(why) > 10);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_consistent),
        cmocka_unit_test(test_singleton_of_open_mpi),
        cmocka_unit_test(test_singleton_of_pmi),
        cmocka_unit_test(test_singleton_of_srun),
        cmocka_unit_test(test_short_buffer),
        cmocka_unit_test(test_modeb_recovery),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
