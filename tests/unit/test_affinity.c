/*
 * test_affinity.c - GPU, cores, NUMA node and NICs chosen by
 * src/comm/affinity.c on the topologies of tests/affinity/ (hwloc XML with
 * fake GPUs and NICs): two packages of 2 GPUs + 1 NIC each (the NIC under
 * another host bridge: the package fallback), 8 GPUs + 4 NICs behind PCIe
 * switches (the same switch first), and a node without a GPU.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "comm/affinity.h"
#include "ftmpi_errors.h"
#include "base/log.h"

static char xml_2pkg[512], xml_8gpu[512], xml_nogpu[512];

static fti_affinity_t pick(const char *xml, int rank, const char *cv)
{
    fti_affinity_t a;
    assert_int_equal(fti_affinity_pick(xml, rank, cv, &a), FT_SUCCESS);
    return a;
}

static void test_two_packages(void **state)
{
    (void)state;
    fti_affinity_t a = pick(xml_2pkg, 0, NULL);
    assert_int_equal(a.ngpus, 4);
    assert_int_equal(a.gpu, 0);
    assert_string_equal(a.gpu_name, "cuda0"); /* cuda0 over nvml0, same device */
    assert_string_equal(a.gpu_busid, "0000:01:00.0");
    assert_string_equal(a.cpus, "0-3");
    assert_int_equal(a.numa, 0);
    assert_int_equal(a.nnics, 2);
    assert_string_equal(a.nic[0].ib, "mlx5_0");
    assert_string_equal(a.nic[0].net, "ib0");
    assert_int_equal(a.nic[0].cls, FTI_NIC_PACKAGE); /* another host bridge, same package */
    assert_int_equal(a.nic[1].cls, FTI_NIC_FAR);
    assert_non_null(strstr(a.why, "nearest in its package"));

    a = pick(xml_2pkg, 3, NULL);
    assert_int_equal(a.gpu, 3);
    assert_string_equal(a.cpus, "4-7");
    assert_int_equal(a.numa, 1);
    assert_string_equal(a.nic[0].ib, "mlx5_1");

    a = pick(xml_2pkg, 5, NULL); /* more local ranks than GPUs: round robin */
    assert_int_equal(a.gpu, 1);
    assert_string_equal(a.cpus, "0-3");

    a = pick(xml_2pkg, 0, "2,3"); /* CUDA_VISIBLE_DEVICES maps local rank 0 to GPU 2 */
    assert_int_equal(a.gpu, 2);
    assert_string_equal(a.cpus, "4-7");
    assert_string_equal(a.nic[0].ib, "mlx5_1");
    a = pick(xml_2pkg, 1, "3,0");
    assert_int_equal(a.gpu, 0);

    a = pick(xml_2pkg, 1, "GPU-8f6c2a1e"); /* UUIDs: every GPU in index order */
    assert_int_equal(a.gpu, 1);
    assert_non_null(strstr(a.why, "not a list of indices"));

    a = pick(xml_2pkg, 0, ""); /* nothing visible */
    assert_int_equal(a.gpu, -1);
    assert_string_equal(a.cpus, "");
}

static void test_eight_gpus_switches(void **state)
{
    (void)state;
    fti_affinity_t a = pick(xml_8gpu, 3, NULL);
    assert_int_equal(a.ngpus, 8);
    assert_int_equal(a.gpu, 3);
    assert_string_equal(a.cpus, "0-7");
    assert_int_equal(a.numa, 0);
    assert_int_equal(a.nnics, 4);
    assert_string_equal(a.nic[0].ib, "mlx5_1"); /* behind the same PCIe switch */
    assert_int_equal(a.nic[0].cls, FTI_NIC_HOST_BRIDGE);
    assert_int_equal(a.nic[0].hops, 2);
    assert_string_equal(a.nic[1].ib, "mlx5_0"); /* the other switch of the host bridge */
    assert_int_equal(a.nic[1].cls, FTI_NIC_HOST_BRIDGE);
    assert_int_equal(a.nic[1].hops, 4);
    assert_int_equal(a.nic[2].cls, FTI_NIC_FAR);

    a = pick(xml_8gpu, 6, NULL);
    assert_int_equal(a.gpu, 6);
    assert_string_equal(a.cpus, "8-15");
    assert_int_equal(a.numa, 1);
    assert_string_equal(a.nic[0].ib, "mlx5_3");

    char env[2][FTI_REASON_SIZE];
    unsetenv("NCCL_IB_HCA");
    unsetenv("NCCL_SOCKET_IFNAME");
    assert_int_equal(fti_affinity_env(&a, env), 2);
    assert_string_equal(env[0], "NCCL_IB_HCA==mlx5_3"); /* the nearest only, exact name */
    assert_string_equal(env[1], "NCCL_SOCKET_IFNAME==ib3");
    setenv("NCCL_IB_HCA", "mlx5_9", 1); /* the user's choice stands */
    assert_int_equal(fti_affinity_env(&a, env), 1);
    assert_string_equal(env[0], "NCCL_SOCKET_IFNAME==ib3");
    unsetenv("NCCL_IB_HCA");
}

static void test_no_gpu(void **state)
{
    (void)state;
    fti_affinity_t a = pick(xml_nogpu, 0, NULL);
    char env[2][FTI_REASON_SIZE];
    assert_int_equal(a.ngpus, 0);
    assert_int_equal(a.gpu, -1);
    assert_string_equal(a.cpus, ""); /* the rank's binding is kept */
    assert_int_equal(fti_affinity_env(&a, env), 0);
    assert_non_null(strstr(a.why, "no GPU"));
}

static void test_report_and_errors(void **state)
{
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    assert_int_equal(fti_affinity_report(f, xml_8gpu, 8, NULL), FT_SUCCESS);
    fclose(f);
    assert_non_null(strstr(text, "local rank 0: GPU cuda0 (0000:12:00.0), cores 0-7, NUMA node 0, "
                                 "NICs mlx5_0/ib0 (same PCI host bridge, 2 hops)"));
    assert_non_null(strstr(text, "local rank 7: GPU cuda7"));
    assert_non_null(strstr(text, "why: local rank 7 -> GPU 7"));
    free(text);
    fti_affinity_t a;
    assert_int_equal(fti_affinity_pick("/nonexistent/topology.xml", 0, NULL, &a), FT_ERR_SYSTEM);
    assert_int_equal(fti_affinity_pick(xml_8gpu, -1, NULL, &a), FT_ERR_ARG);
}

int main(int argc, char **argv)
{
    /* test_affinity --report XML NLOCAL [CUDA_VISIBLE_DEVICES]: the
     * ftmpi-info --topology text for a topology file */
    if (argc >= 4 && !strcmp(argv[1], "--report"))
        return fti_affinity_report(stdout, argv[2], atoi(argv[3]), argc > 4 ? argv[4] : NULL)
                   ? 1 : 0;
    const char *top = getenv("top_srcdir");
    if (top == NULL)
        top = ".";
    snprintf(xml_2pkg, sizeof(xml_2pkg), "%s/tests/affinity/2pkg.xml", top);
    snprintf(xml_8gpu, sizeof(xml_8gpu), "%s/tests/affinity/8gpu.xml", top);
    snprintf(xml_nogpu, sizeof(xml_nogpu), "%s/tests/affinity/nogpu.xml", top);
    fti_log_init("test_affinity", FTI_LOG_NONE);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_two_packages),
        cmocka_unit_test(test_eight_gpus_switches),
        cmocka_unit_test(test_no_gpu),
        cmocka_unit_test(test_report_and_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
