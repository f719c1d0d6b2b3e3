/*
 * test_shim_settings.c - the drop-in's settings (mpi_shim/settings.c): the
 * failure modes by name, FTMPI_SHIM_* read from a loaded table, a bad
 * value refused with a message naming the setting and the known modes.
 * Pure: no MPI_Init.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ftmpi.h"
#include "base/settings.h"
#include "mpi_shim/shim.h"

static const char *lookup(const char *name, void *arg)
{
    const char *const *kv = arg;
    for (; kv[0] != NULL; kv += 2)
        if (strcmp(kv[0], name) == 0)
            return kv[1];
    return NULL;
}

static void test_parse(void **state)
{
    (void)state;
    char err[160] = "";
    int mode = -1;
    assert_int_equal(fti_shim_on_failure_parse("auto", &mode, err, sizeof(err)), FT_SUCCESS);
    assert_int_equal(mode, FTI_SHIM_AUTO);
    assert_int_equal(fti_shim_on_failure_parse("Continue", &mode, err, sizeof(err)), FT_SUCCESS);
    assert_int_equal(mode, FTI_SHIM_CONTINUE);
    mode = -1;
    assert_int_equal(fti_shim_on_failure_parse("retrun", &mode, err, sizeof(err)), FT_ERR_CONFIG);
    assert_int_equal(mode, -1); /* set only on success */
    assert_non_null(strstr(err, "FTMPI_SHIM_ON_FAILURE='retrun'"));
    assert_non_null(strstr(err, "abort return continue"));
}

static void test_settings(void **state)
{
    (void)state;
    const char *kv[] = {"FTMPI_SHIM_ON_FAILURE", "return", "FTMPI_SHIM_RESCALE", "1",
                        "FTMPI_TIMEOUT_MS", "1234", NULL};
    fti_config_t cfg;
    char err[160] = "";
    assert_int_equal(fti_config_load_from(&cfg, lookup, kv, err, sizeof(err)), FT_SUCCESS);
    struct fti_shim_cfg c = {0};
    assert_int_equal(fti_shim_settings(&cfg, &c, err, sizeof(err)), FT_SUCCESS);
    assert_int_equal(c.on_failure, FTI_SHIM_RETURN);
    assert_int_equal(c.rescale, 1);
    assert_int_equal(c.timeout_ms, 1234);
    const char *bad[] = {"FTMPI_SHIM_ON_FAILURE", "ignore", NULL};
    assert_int_equal(fti_config_load_from(&cfg, lookup, bad, err, sizeof(err)), FT_SUCCESS);
    c.on_failure = 99;
    assert_int_equal(fti_shim_settings(&cfg, &c, err, sizeof(err)), FT_ERR_CONFIG);
    assert_int_equal(c.on_failure, 99);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse),
        cmocka_unit_test(test_settings),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
