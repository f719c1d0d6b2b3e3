/*
 * test_mode.c - the mode table (src/mode/mode.h) without an MPI job: which
 * mode FT_Init picks, what each mode's resolve makes of the settings (the
 * backend, the effective values in the world; the configuration itself
 * untouched), its errors (an unknown backend name refused in every mode,
 * the drop-in's included), and the pure entries.  No MPI_Init: resolve,
 * group_failure and the world's defaults make no MPI call.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "ftmpi.h"
#include "base/settings.h"
#include "mode/dropin.h"
#include "mode/mode.h"
#include "mode/mode_b.h"

/* NULL-terminated name, value pairs: the test's environment. */
static const char *lookup(const char *name, void *arg)
{
    const char *const *kv = arg;
    for (; kv[0] != NULL; kv += 2)
        if (strcmp(kv[0], name) == 0)
            return kv[1];
    return NULL;
}

static void load(fti_config_t *cfg, const char *const *kv)
{
    char err[256] = "";
    int rc = fti_config_load_from(cfg, lookup, (void *)kv, err, sizeof(err));
    if (rc != FT_SUCCESS)
        fail_msg("load: %s", err);
}

/* resolve of mode m on the settings kv; the configuration must not change. */
static int resolve(const struct fti_mode *m, const char *const *kv, fti_world_t *w)
{
    fti_config_t cfg, before;
    load(&cfg, kv);
    before = cfg;
    fti_world_defaults(&cfg, "127.0.0.1", w);
    int rc = m->resolve(&cfg, w);
    assert_memory_equal(&cfg, &before, sizeof(cfg));
    return rc;
}

static void test_pick(void **state)
{
    (void)state;
    fti_config_t cfg;
    load(&cfg, (const char *const[]){NULL});
    assert_ptr_equal(fti_mode_pick(&cfg), &fti_mode_a); /* A reports the missing lighthouse */
    load(&cfg, (const char *const[]){"FTMPI_LIGHTHOUSE", "h:1", NULL});
    assert_ptr_equal(fti_mode_pick(&cfg), &fti_mode_a);
    load(&cfg, (const char *const[]){"FTMPI_GROUP_SIZE", "2", NULL});
    assert_ptr_equal(fti_mode_pick(&cfg), &fti_mode_b);
    load(&cfg, (const char *const[]){"FTMPI_GROUP_SIZE", "2", "FTMPI_LIGHTHOUSE", "h:1", NULL});
    assert_ptr_equal(fti_mode_pick(&cfg), &fti_mode_a);
}

static void test_world_defaults(void **state)
{
    (void)state;
    fti_config_t cfg;
    fti_world_t w;
    load(&cfg, (const char *const[]){"FTMPI_LIGHTHOUSE", "lh:7", "FTMPI_INIT_SYNC", "1", NULL});
    fti_world_defaults(&cfg, "10.0.0.5", &w);
    assert_string_equal(w.lighthouse, "lh:7");
    assert_string_equal(w.bind_host, "10.0.0.5");
    assert_true(w.init_sync);
    assert_null(w.backend);
    assert_true(w.app_comm == MPI_COMM_NULL);
    assert_true(w.mb.split == MPI_COMM_NULL);
}

static void test_a_resolve(void **state)
{
    (void)state;
    fti_world_t w;
    assert_int_equal(resolve(&fti_mode_a, (const char *const[]){NULL}, &w), FT_ERR_CONFIG);
    assert_int_equal(resolve(&fti_mode_a, (const char *const[]){"FTMPI_LIGHTHOUSE", "h:1", NULL}, &w),
                     FT_SUCCESS);
    assert_ptr_equal(w.backend, &fti_backend_auto); /* auto in mode A: ucx or tcp per slice */
    /* mpi needs one world: mode B */
    assert_int_equal(resolve(&fti_mode_a,
                             (const char *const[]){"FTMPI_LIGHTHOUSE", "h:1", "FTMPI_BACKEND",
                                                   "mpi", NULL},
                             &w),
                     FT_ERR_CONFIG);
}

static void test_b_resolve(void **state)
{
    (void)state;
    fti_world_t w;
    assert_int_equal(resolve(&fti_mode_b, (const char *const[]){"FTMPI_GROUP_SIZE", "2", NULL}, &w),
                     FT_SUCCESS);
    assert_ptr_equal(w.backend, &fti_backend_mpi); /* auto in mode B */
    assert_int_equal(resolve(&fti_mode_b,
                             (const char *const[]){"FTMPI_GROUP_SIZE", "2", "FTMPI_BACKEND", "tcp",
                                                   NULL},
                             &w),
                     FT_SUCCESS);
    assert_ptr_equal(w.backend, &fti_backend_tcp);
}

/* A name that is no backend is an error in every mode (the drop-in ran
 * mpi for any name but tcp). */
static void test_unknown_backend(void **state)
{
    (void)state;
    const struct fti_mode *modes[] = {&fti_mode_a, &fti_mode_b, &fti_mode_dropin};
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        fti_world_t w;
        w.backend = NULL;
        int rc = resolve(modes[i],
                         (const char *const[]){"FTMPI_LIGHTHOUSE", "h:1", "FTMPI_GROUP_SIZE", "2",
                                               "FTMPI_BACKEND", "tpc", NULL},
                         &w);
        if (rc != FT_ERR_CONFIG)
            fail_msg("mode %s took FTMPI_BACKEND=tpc (%d)", modes[i]->name, rc);
        assert_null(w.backend);
    }
}

static void test_dropin_resolve(void **state)
{
    (void)state;
    fti_world_t w;
    assert_int_equal(resolve(&fti_mode_dropin, (const char *const[]){"FTMPI_INIT_SYNC", "1", NULL},
                             &w),
                     FT_SUCCESS);
    assert_ptr_equal(w.backend, &fti_backend_mpi);
    assert_false(w.init_sync); /* the world's effective value; cfg keeps the user's */
    assert_int_equal(resolve(&fti_mode_dropin, (const char *const[]){"FTMPI_BACKEND", "mpi", NULL},
                             &w),
                     FT_SUCCESS);
    assert_ptr_equal(w.backend, &fti_backend_mpi);
    assert_int_equal(resolve(&fti_mode_dropin, (const char *const[]){"FTMPI_BACKEND", "tcp", NULL},
                             &w),
                     FT_ERR_CONFIG);
}

static void test_group_failure(void **state)
{
    (void)state;
    assert_int_equal(fti_mode_a.group_failure(FT_ERR_TIMEOUT), FT_ERR_TIMEOUT);
    assert_int_equal(fti_mode_dropin.group_failure(FT_ERR_PROC_FAILED), FT_ERR_PROC_FAILED);
    assert_int_equal(fti_mode_b.group_failure(FT_ERR_TIMEOUT), FT_ERR_GROUP_LOST);
}

/* Every entry the step calls is there; the properties differ where the
 * modes do. */
static void test_table(void **state)
{
    (void)state;
    const struct fti_mode *modes[] = {&fti_mode_a, &fti_mode_b, &fti_mode_dropin};
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        const struct fti_mode *m = modes[i];
        assert_non_null(m->name);
        assert_non_null(m->resolve);
        assert_non_null(m->world);
        assert_non_null(m->group_comm);
        assert_non_null(m->group_failure);
        assert_non_null(m->release);
    }
    assert_true(fti_mode_b.every_rank_leaves && fti_mode_b.full_members);
    assert_false(fti_mode_a.every_rank_leaves || fti_mode_dropin.every_rank_leaves);
    assert_true(fti_mode_a.direct_heal_when_fresh);
    assert_false(fti_mode_b.auto_device);
    assert_null(fti_mode_a.replica_id);
    assert_non_null(fti_mode_b.replica_id);
    assert_non_null(fti_mode_dropin.replica_id);
}

static void test_replica_ids(void **state)
{
    (void)state;
    fti_config_t cfg;
    load(&cfg, (const char *const[]){NULL});
    fti_world_t w;
    fti_world_defaults(&cfg, "127.0.0.1", &w);
    char id[FTI_REPLICA_ID_SIZE];
    w.mb.group_index = 3;
    w.mb.n_groups = 12;
    fti_mode_b.replica_id(&cfg, &w, id, sizeof(id));
    assert_string_equal(id, "g03");
    load(&cfg, (const char *const[]){"FTMPI_REPLICA_ID", "job", NULL});
    fti_mode_b.replica_id(&cfg, &w, id, sizeof(id));
    assert_string_equal(id, "job-g03");
    w.mb.world_rank = 7;
    w.mb.world_size = 100;
    fti_mode_dropin.replica_id(&cfg, &w, id, sizeof(id));
    assert_string_equal(id, "r07");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pick),          cmocka_unit_test(test_world_defaults),
        cmocka_unit_test(test_a_resolve),     cmocka_unit_test(test_b_resolve),
        cmocka_unit_test(test_unknown_backend), cmocka_unit_test(test_dropin_resolve),
        cmocka_unit_test(test_group_failure), cmocka_unit_test(test_table),
        cmocka_unit_test(test_replica_ids),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
