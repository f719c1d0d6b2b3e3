/*
 * test_bind_if.c - FTMPI_BIND_HOST by interface name or subnet
 * (src/base/bind_if.c): the matching on a fake node's interfaces, and the
 * real node's loopback through getifaddrs.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <string.h>

#include "ftmpi_errors.h"
#include "base/bind_if.h"
#include "base/net.h"

#define IP(a, b, c, d) (((uint32_t)(a) << 24) | ((uint32_t)(b) << 16) | ((uint32_t)(c) << 8) | (d))

/* A node as a cluster has it: loopback, Ethernet management, InfiniBand
 * fabric, a second fabric port that is down. */
static const fti_ifaddr_t node[] = {
    {"lo", IP(127, 0, 0, 1), true},
    {"eth0", IP(192, 168, 10, 7), true},
    {"ib0", IP(10, 78, 1, 7), true},
    {"ib1", IP(10, 79, 1, 7), false},
};
#define NODE_N (sizeof(node) / sizeof(node[0]))

static int match(const char *setting, char *host, size_t len, char *err, size_t errlen)
{
    return fti_bind_match(setting, node, NODE_N, host, len, err, errlen);
}

static void test_selector_or_host(void **st)
{
    (void)st;
    assert_true(fti_bind_is_selector("if:ib0"));
    assert_true(fti_bind_is_selector("10.78.1.0/24"));
    assert_true(fti_bind_is_selector("if:ib0,10.0.0.0/8"));
    assert_false(fti_bind_is_selector("hostname"));
    assert_false(fti_bind_is_selector("127.0.0.1"));
    assert_false(fti_bind_is_selector("node3.cluster"));
    assert_false(fti_bind_is_selector("::1"));
}

static void test_by_name(void **st)
{
    (void)st;
    char host[64], err[512];
    assert_int_equal(match("if:ib0", host, sizeof(host), err, sizeof(err)), FT_SUCCESS);
    assert_string_equal(host, "10.78.1.7");
    assert_int_equal(match("if:eth0", host, sizeof(host), err, sizeof(err)), FT_SUCCESS);
    assert_string_equal(host, "192.168.10.7");
}

static void test_by_subnet(void **st)
{
    (void)st;
    char host[64], err[512];
    assert_int_equal(match("10.78.1.0/24", host, sizeof(host), err, sizeof(err)), FT_SUCCESS);
    assert_string_equal(host, "10.78.1.7");
    /* host bits in the network are ignored, as a mask does */
    assert_int_equal(match("10.78.1.99/24", host, sizeof(host), err, sizeof(err)), FT_SUCCESS);
    assert_string_equal(host, "10.78.1.7");
    assert_int_equal(match("10.0.0.0/8", host, sizeof(host), err, sizeof(err)), FT_SUCCESS);
    assert_string_equal(host, "10.78.1.7"); /* ib1 is in it too, but down */
    assert_int_equal(match("192.168.10.7/32", host, sizeof(host), err, sizeof(err)), FT_SUCCESS);
    assert_string_equal(host, "192.168.10.7");
    assert_int_equal(match("0.0.0.0/0", host, sizeof(host), err, sizeof(err)), FT_SUCCESS);
    assert_string_equal(host, "127.0.0.1"); /* the first interface, in the node's order */
}

static void test_list_order(void **st)
{
    (void)st;
    char host[64], err[512];
    /* the first entry that matches wins, not the first interface */
    assert_int_equal(match("if:ib0,if:eth0", host, sizeof(host), err, sizeof(err)), FT_SUCCESS);
    assert_string_equal(host, "10.78.1.7");
    assert_int_equal(match("if:ib1,192.168.0.0/16", host, sizeof(host), err, sizeof(err)),
                     FT_SUCCESS);
    assert_string_equal(host, "192.168.10.7");
}

static void test_no_match(void **st)
{
    (void)st;
    char host[64] = "untouched", err[512] = "";
    assert_int_equal(match("if:ib1", host, sizeof(host), err, sizeof(err)), FT_ERR_CONFIG);
    assert_string_equal(host, "untouched");
    assert_non_null(strstr(err, "FTMPI_BIND_HOST=if:ib1"));
    assert_non_null(strstr(err, "ib1 10.79.1.7 (down)"));
    assert_non_null(strstr(err, "eth0 192.168.10.7"));
    assert_int_equal(match("if:mlx5_0,172.16.0.0/12", host, sizeof(host), err, sizeof(err)),
                     FT_ERR_CONFIG);
    assert_non_null(strstr(err, "FTMPI_BIND_HOST=if:mlx5_0,172.16.0.0/12: no interface"));
    assert_int_equal(fti_bind_match("if:lo", node, 0, host, sizeof(host), err, sizeof(err)),
                     FT_ERR_CONFIG);
    assert_non_null(strstr(err, "none with an IPv4 address"));
    assert_string_equal(host, "untouched");
}

static void test_malformed(void **st)
{
    (void)st;
    static const char *bad[] = {"if:",         "10.78.1.0/33", "10.78.1.0/-1", "10.78.1/24",
                                "10.78.1.0/",  "if:ib0,",      ",if:ib0",      "if:ib0,,if:eth0",
                                "ib0,if:eth0", "10.78.1.0/2x", "fe80::/64",    "if:eth0,10.78.1.0/99",
                                ""};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char host[64] = "untouched", err[512] = "";
        assert_int_equal(match(bad[i], host, sizeof(host), err, sizeof(err)), FT_ERR_CONFIG);
        assert_string_equal(host, "untouched");
        assert_non_null(strstr(err, bad[i]));
        assert_non_null(strstr(err, "neither if:NAME nor A.B.C.D/BITS"));
    }
}

static void test_too_small(void **st)
{
    (void)st;
    char host[8] = "", err[512];
    assert_int_equal(match("if:ib0", host, sizeof(host), err, sizeof(err)), FT_ERR_ARG);
}

/* The real node: loopback is up and 127.0.0.1 everywhere tests run. */
static void test_real_node(void **st)
{
    (void)st;
    char host[64], err[512];
    assert_int_equal(fti_bind_if_resolve("127.0.0.0/8", host, sizeof(host), err, sizeof(err)),
                     FT_SUCCESS);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(fti_bind_host_resolve("if:lo", host, sizeof(host)), FT_SUCCESS);
    assert_string_equal(host, "127.0.0.1");
    assert_int_equal(fti_bind_host_resolve("if:no-such-if0", host, sizeof(host)), FT_ERR_CONFIG);
    assert_int_equal(fti_bind_host_resolve("10.1.2.3", host, sizeof(host)), FT_SUCCESS);
    assert_string_equal(host, "10.1.2.3");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_selector_or_host), cmocka_unit_test(test_by_name),
        cmocka_unit_test(test_by_subnet),        cmocka_unit_test(test_list_order),
        cmocka_unit_test(test_no_match),         cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_too_small),        cmocka_unit_test(test_real_node),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
