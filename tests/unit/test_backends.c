/*
 * test_backends.c - the backend table of comm/comm.h: every entry is
 * complete and found by its name, FTMPI_BACKEND's names resolve, and every
 * backend whose rendezvous needs no MPI world builds a slice of one,
 * reduces over it and destroys it through the table alone.
 *
 * Built with FTI_COMM_TEST_BACKENDS: the table here also holds the
 * test-only backends of comm.h (compiled into this program only).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "comm/comm.h"
#include "ftmpi_errors.h"
#include "base/util.h"

static void test_entries_complete(void **state)
{
    (void)state;
    int n = 0;
    for (const struct fti_comm_backend *b; (b = fti_comm_backend_at(n)) != NULL; n++) {
        assert_non_null(b->name);
        assert_true(b->name[0] != '\0');
        assert_non_null(b->create);
        assert_non_null(b->allreduce);
        assert_non_null(b->destroy);
        assert_ptr_equal(fti_comm_backend_find(b->name), b); /* names are unique */
        assert_int_equal(b->needs & ~(unsigned)(FTI_COMM_NEEDS_STORE | FTI_COMM_NEEDS_WORLD |
                                                FTI_COMM_NEEDS_CHILD | FTI_COMM_NEEDS_DEVICE),
                         0);
    }
    assert_true(n >= 2);
    assert_null(fti_comm_backend_at(-1));
    assert_null(fti_comm_backend_at(n));
}

/* The table's names without its entries (comm/names.c) are the entries'
 * own names, in order. */
static void test_names(void **state)
{
    (void)state;
    char name[32];
    int n = 0;
    for (const struct fti_comm_backend *b; (b = fti_comm_backend_at(n)) != NULL; n++) {
        assert_true(fti_comm_backend_name_at(n, name, sizeof(name)));
        assert_string_equal(name, b->name);
        assert_true(fti_comm_backend_known(b->name));
    }
    assert_false(fti_comm_backend_name_at(n, name, sizeof(name)));
    assert_false(fti_comm_backend_name_at(-1, name, sizeof(name)));
    assert_true(fti_comm_backend_name_at(0, name, 3)); /* cut, terminated */
    assert_int_equal(strlen(name), 2);
    assert_true(fti_comm_backend_known("TCP"));
    assert_true(fti_comm_backend_known("baby-tcp"));
    assert_false(fti_comm_backend_known("baby_tcp"));
    assert_false(fti_comm_backend_known("baby-tc"));
    assert_false(fti_comm_backend_known("tcpx"));
    assert_false(fti_comm_backend_known("auto"));
    assert_false(fti_comm_backend_known(""));
    assert_false(fti_comm_backend_known(NULL));
}

/* The names FTMPI_BACKEND takes and what their rendezvous needs. */
static void test_find(void **state)
{
    (void)state;
    assert_ptr_equal(fti_comm_backend_find("tcp"), &fti_backend_tcp);
    assert_ptr_equal(fti_comm_backend_find("MPI"), &fti_backend_mpi);
    assert_int_equal(fti_backend_tcp.needs, FTI_COMM_NEEDS_STORE);
    assert_int_equal(fti_backend_mpi.needs, FTI_COMM_NEEDS_WORLD);
    assert_ptr_equal(fti_comm_backend_find("baby-tcp"), &fti_backend_baby_tcp);
    assert_int_equal(fti_backend_baby_tcp.needs, FTI_COMM_NEEDS_STORE | FTI_COMM_NEEDS_CHILD);
    assert_null(fti_comm_backend_find("auto")); /* resolved before the table (mode/mode_b.c) */
    assert_null(fti_comm_backend_find("nccl9"));
    assert_null(fti_comm_backend_find(""));
    assert_null(fti_comm_backend_find(NULL));
}

/* A slice of one through the table: every reduction leaves the data as it
 * is (AVG divides by one). */
static void test_slice_of_one(void **state)
{
    (void)state;
    int tried = 0;
    for (int i = 0; fti_comm_backend_at(i) != NULL; i++) {
        const struct fti_comm_backend *b = fti_comm_backend_at(i);
        if (b->needs & FTI_COMM_NEEDS_WORLD)
            continue; /* needs MPI_Init and a job: the integration tests */
        if (b->needs & FTI_COMM_NEEDS_DEVICE)
            continue; /* needs a GPU: tests/gpu/ */
        fti_comm_rendezvous_t r = {.quorum_id = 7, .size = 1, .bind_host = "127.0.0.1"};
        char child[4096];
        if (b->needs & FTI_COMM_NEEDS_CHILD) {
            /* the ftmpi-baby of this build (make check exports top_builddir) */
            const char *tb = getenv("top_builddir");
            if (tb == NULL)
                continue;
            snprintf(child, sizeof(child), "%s/ftmpi-baby", tb);
            r.child_path = child;
        }
        fti_comm_h c = NULL;
        assert_int_equal(fti_comm_create(b, &r, fti_now_ms() + 2000, &c), FT_SUCCESS);
        assert_non_null(c);
        /* the communicator runs the entry's operations (tcp's ring ops
         * are shared with ring-only programs, so compare them) */
        assert_string_equal(c->ops->name, b->name);
        assert_ptr_equal(c->ops->allreduce, b->allreduce);
        assert_ptr_equal(c->ops->destroy, b->destroy);
        assert_int_equal(c->rank, 0);
        assert_int_equal(c->size, 1);
        float x[5] = {1.5f, -2.0f, 0.0f, 3.25f, 1e30f}, want[5];
        memcpy(want, x, sizeof(x));
        for (int op = 0; op < FTI_OP_COUNT; op++) {
            assert_int_equal(fti_comm_allreduce(c, x, 5, FTI_DT_FLOAT, (enum fti_op)op,
                                                fti_now_ms() + 2000),
                             FT_SUCCESS);
            assert_memory_equal(x, want, sizeof(x));
        }
        fti_comm_destroy(c);
        tried++;
    }
    assert_true(tried >= 1);
    fti_comm_destroy(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_entries_complete),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_find),
        cmocka_unit_test(test_slice_of_one),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
