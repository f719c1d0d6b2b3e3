/*
 * test_nccl_shrink.c - fti_nccl_shrink's arguments against the stub
 * libnccl of NCCL 2.28.3 (stub_nccl.c built with -DSTUB_NCCL_SHRINK, found
 * first through LD_LIBRARY_PATH: run by tests/unit/test_nccl_shrink.sh).
 * Real NCCL 2.28.3 refuses a shrink by nobody with ncclInvalidArgument (the
 * H200 kit run of 2026-11-26); fti_nccl_shrink must answer an empty exclude
 * list itself with FT_ERR_ARG and make no NCCL call, and still shrink by a
 * real list.  No GPU: the few CUDA runtime calls of a communicator's
 * handle (device, stream, event) are faked in this program, which
 * interposes them on libcudart.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include "comm/nccl_comm.h"
#include "ftmpi_errors.h"
#include "base/util.h"

/* ---- the CUDA runtime of a machine with one device, no kernels --------- */
static char handles[64];
static int n_handles;

cudaError_t cudaGetDevice(int *device)
{
    *device = 0;
    return cudaSuccess;
}
cudaError_t cudaSetDevice(int device)
{
    return device == 0 ? cudaSuccess : cudaErrorInvalidDevice;
}
cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags)
{
    (void)flags;
    *s = (cudaStream_t)(void *)&handles[n_handles++ % (int)sizeof(handles)];
    return cudaSuccess;
}
cudaError_t cudaEventCreateWithFlags(cudaEvent_t *e, unsigned int flags)
{
    (void)flags;
    *e = (cudaEvent_t)(void *)&handles[n_handles++ % (int)sizeof(handles)];
    return cudaSuccess;
}
cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    (void)s;
    return cudaSuccess;
}
cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    (void)e;
    return cudaSuccess;
}
cudaError_t cudaFree(void *p)
{
    (void)p;
    return cudaSuccess;
}
cudaError_t cudaGetLastError(void)
{
    return cudaSuccess;
}
const char *cudaGetErrorString(cudaError_t e)
{
    (void)e;
    return "fake CUDA runtime (test_nccl_shrink)";
}

/* ---- the stub's counters ------------------------------------------------- */
static int *shrinks, *last_count;

static int setup(void **state)
{
    (void)state;
    shrinks = dlsym(RTLD_DEFAULT, "stub_nccl_shrinks");
    last_count = dlsym(RTLD_DEFAULT, "stub_nccl_last_count");
    if (shrinks == NULL || last_count == NULL || fti_nccl_runtime_version() != 22803) {
        print_error("not the stub libnccl of 2.28.3 (version %d): run test_nccl_shrink.sh\n",
                    fti_nccl_runtime_version());
        return -1;
    }
    return 0;
}

static fti_nccl_h comm_of(int rank, int size)
{
    unsigned char id[FTI_NCCL_ID_BYTES];
    fti_nccl_h n = NULL;
    assert_int_equal(fti_nccl_unique_id(id), FT_SUCCESS);
    assert_int_equal(fti_nccl_init(id, rank, size, 0, fti_now_ms() + 60000, &n), FT_SUCCESS);
    assert_non_null(n);
    return n;
}

static void test_version(void **state)
{
    (void)state;
    assert_true(fti_nccl_can_shrink());
    assert_false(fti_nccl_can_revoke());
}

/* the kit's failure: a shrink by nobody reached NCCL, which refused it */
static void test_empty_list_no_call(void **state)
{
    (void)state;
    fti_nccl_h old = comm_of(0, 1), s = NULL;
    int none[1] = {-1};
    int before = *shrinks;
    assert_int_equal(fti_nccl_shrink(old, none, 0, fti_now_ms() + 60000, &s), FT_ERR_ARG);
    assert_null(s);
    assert_int_equal(fti_nccl_shrink(old, NULL, 0, fti_now_ms() + 60000, &s), FT_ERR_ARG);
    assert_null(s);
    assert_int_equal(*shrinks, before); /* NCCL never asked */
    assert_true(fti_nccl_ok(old));      /* and the communicator kept */
    fti_nccl_free(old);

    old = comm_of(2, 4);
    assert_int_equal(fti_nccl_shrink(old, none, 0, fti_now_ms() + 60000, &s), FT_ERR_ARG);
    assert_int_equal(fti_nccl_shrink(old, NULL, -1, fti_now_ms() + 60000, &s), FT_ERR_ARG);
    assert_null(s);
    assert_int_equal(*shrinks, before);
    assert_true(fti_nccl_ok(old));
    fti_nccl_free(old);
}

/* what the callers do: a list of old ranks that left */
static void test_real_list(void **state)
{
    (void)state;
    fti_nccl_h old = comm_of(2, 4), s = NULL;
    int gone[2] = {0, 3};
    int before = *shrinks;
    assert_int_equal(fti_nccl_shrink(old, gone, 2, fti_now_ms() + 60000, &s), FT_SUCCESS);
    assert_int_equal(*shrinks, before + 1);
    assert_int_equal(*last_count, 2);
    assert_non_null(s);
    assert_int_equal(fti_nccl_size(s), 2);
    assert_int_equal(fti_nccl_rank(s), 1); /* old rank 2, one lower rank gone */
    fti_nccl_free(s);
    fti_nccl_free(old);
}

/* lists NCCL must not see either: this rank itself, out of range, unsorted */
static void test_bad_lists(void **state)
{
    (void)state;
    fti_nccl_h old = comm_of(1, 3), s = NULL;
    int self[1] = {1}, out[1] = {3}, unsorted[2] = {2, 0}, all[3] = {0, 1, 2};
    int before = *shrinks;
    assert_int_equal(fti_nccl_shrink(old, self, 1, fti_now_ms() + 60000, &s), FT_ERR_ARG);
    assert_int_equal(fti_nccl_shrink(old, out, 1, fti_now_ms() + 60000, &s), FT_ERR_ARG);
    assert_int_equal(fti_nccl_shrink(old, unsorted, 2, fti_now_ms() + 60000, &s), FT_ERR_ARG);
    assert_int_equal(fti_nccl_shrink(old, all, 3, fti_now_ms() + 60000, &s), FT_ERR_ARG);
    assert_null(s);
    assert_int_equal(*shrinks, before);
    fti_nccl_free(old);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_version),
        cmocka_unit_test(test_empty_list_no_call),
        cmocka_unit_test(test_real_list),
        cmocka_unit_test(test_bad_lists),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
