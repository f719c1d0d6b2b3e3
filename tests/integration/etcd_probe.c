/*
 * tests/integration/etcd_probe.c - lighthouse/etcd.h against a real etcd
 * (test_etcd_client.sh starts one), and small etcd reads for the
 * failover tests.
 *
 *   etcd_probe built                 exit 0 when the build has etcd support
 *   etcd_probe client URLS           the client's checks; exit 0 when all pass
 *   etcd_probe get URLS KEY          print KEY's value (exit 3 when absent);
 *                                    https with ETCD_PROBE_CA, _CERT and _KEY
 *                                    (files) from the environment
 *   etcd_probe auth URLS USER PASSWORD
 *                                    with etcd's authentication on: USER
 *                                    (read-write on /ftmpi/) works, no user
 *                                    and a wrong password get FT_ERR_AUTH
 *   etcd_probe relay HOST:PORT       a TCP relay to HOST:PORT on 127.0.0.1:0
 *                                    (prints "relay listening on 127.0.0.1:N"; a
 *                                    process per connection, in the relay's
 *                                    process group): SIGSTOP of the group cuts
 *                                    whoever talks to etcd through it
 */
#include "ftmpi_config.h"

#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "ftmpi_errors.h"
#include "base/util.h"
#include "lighthouse/etcd.h"

#ifndef FTMPI_HAVE_ETCD
int main(int argc, char **argv)
{
    (void)argc;
    (void)argv;
    fprintf(stderr, "etcd_probe: built without etcd support\n");
    return 77;
}
#else

static int failures;

#define CHECK(cond, ...)                                                                       \
    do {                                                                                       \
        if (!(cond)) {                                                                         \
            fprintf(stderr, "FAIL line %d: %s: ", __LINE__, #cond);                            \
            fprintf(stderr, __VA_ARGS__);                                                      \
            fprintf(stderr, "\n");                                                             \
            failures++;                                                                        \
        }                                                                                      \
    } while (0)

static const char *err_of(fti_etcd_h e)
{
    static char buf[FTI_REASON_SIZE];
    fti_etcd_last_error(e, buf, sizeof(buf));
    return buf;
}

/* create-if-absent of key with lease: whether it was created; rev_p its
 * revision. */
static int create_key(fti_etcd_h e, const char *key, const char *val, int64_t lease, bool *ok_p,
                      int64_t *rev_p)
{
    fti_etcd_cmp_t c = {key, FTI_ETCD_CREATE_REV, 0};
    fti_etcd_put_t p = {key, val, strlen(val), lease};
    return fti_etcd_txn(e, &c, 1, &p, 1, ok_p, rev_p);
}

static void check_leases(fti_etcd_h e)
{
    int64_t lease = 0, ttl = 0, rev = 0, rev2 = 0;
    bool ok = false;
    fti_etcd_kv_t kv = {0};
    int rc = fti_etcd_get(e, "/t/absent", &kv);
    CHECK(rc == FT_ERR_NOT_FOUND, "get of an absent key: %s (%s)", FT_Error_string(rc), err_of(e));
    rc = fti_etcd_lease_grant(e, 2, &lease, &ttl);
    CHECK(rc == FT_SUCCESS && lease != 0 && ttl >= 2, "lease grant: %s (%s)", FT_Error_string(rc),
          err_of(e));
    /* compare-create: the first txn creates, the second finds it there */
    rc = create_key(e, "/t/leader", "me:1", lease, &ok, &rev);
    CHECK(rc == FT_SUCCESS && ok && rev > 0, "create-if-absent: %s ok=%d", FT_Error_string(rc), ok);
    rc = create_key(e, "/t/leader", "other:2", 0, &ok, NULL);
    CHECK(rc == FT_SUCCESS && !ok, "second create-if-absent must fail: %s ok=%d",
          FT_Error_string(rc), ok);
    rc = fti_etcd_get(e, "/t/leader", &kv);
    CHECK(rc == FT_SUCCESS && kv.value && strcmp(kv.value, "me:1") == 0 && kv.create_rev == rev &&
              kv.lease == lease,
          "get: %s value %s create_rev %" PRId64 " (want %" PRId64 ")", FT_Error_string(rc),
          kv.value ? kv.value : "(none)", kv.create_rev, rev);
    fti_etcd_kv_clear(&kv);
    /* fenced writes: guarded by the create revision, then by the mod one */
    fti_etcd_cmp_t g = {"/t/leader", FTI_ETCD_CREATE_REV, rev};
    fti_etcd_put_t p = {"/t/counter", "41", 2, 0};
    rc = fti_etcd_txn(e, &g, 1, &p, 1, &ok, &rev2);
    CHECK(rc == FT_SUCCESS && ok && rev2 > rev, "guarded write: %s ok=%d", FT_Error_string(rc), ok);
    g.rev = rev - 1;
    p.value = "99";
    rc = fti_etcd_txn(e, &g, 1, &p, 1, &ok, NULL);
    CHECK(rc == FT_SUCCESS && !ok, "write with a stale guard must fail: ok=%d", ok);
    fti_etcd_cmp_t m = {"/t/counter", FTI_ETCD_MOD_REV, rev2};
    p.value = "42";
    rc = fti_etcd_txn(e, &m, 1, &p, 1, &ok, NULL);
    CHECK(rc == FT_SUCCESS && ok, "compare-mod-revision write: %s ok=%d", FT_Error_string(rc), ok);
    rc = fti_etcd_txn(e, &m, 1, &p, 1, &ok, NULL);
    CHECK(rc == FT_SUCCESS && !ok, "compare with the old mod revision must fail: ok=%d", ok);
    rc = fti_etcd_get(e, "/t/counter", &kv);
    CHECK(rc == FT_SUCCESS && strcmp(kv.value, "42") == 0, "counter: %s", kv.value);
    fti_etcd_kv_clear(&kv);
    /* keepalive, revoke: the key goes with its lease */
    ttl = 0;
    rc = fti_etcd_lease_keepalive(e, lease, &ttl);
    CHECK(rc == FT_SUCCESS && ttl >= 1, "keepalive: %s ttl %" PRId64, FT_Error_string(rc), ttl);
    rc = fti_etcd_lease_revoke(e, lease);
    CHECK(rc == FT_SUCCESS, "revoke: %s (%s)", FT_Error_string(rc), err_of(e));
    rc = fti_etcd_get(e, "/t/leader", &kv);
    CHECK(rc == FT_ERR_NOT_FOUND, "the key of a revoked lease: %s", FT_Error_string(rc));
    fti_etcd_kv_clear(&kv);
    rc = fti_etcd_lease_keepalive(e, lease, &ttl);
    CHECK(rc == FT_ERR_NOT_FOUND, "keepalive of a revoked lease: %s", FT_Error_string(rc));
    rc = fti_etcd_lease_revoke(e, lease);
    CHECK(rc == FT_ERR_NOT_FOUND, "revoke twice: %s", FT_Error_string(rc));
}

/* A lease left alone expires and takes its key: waits on etcd's progress
 * (the key's absence), up to 60 s. */
static void check_expiry(fti_etcd_h e)
{
    int64_t lease = 0, ttl = 0;
    bool ok = false;
    fti_etcd_kv_t kv = {0};
    int rc = fti_etcd_lease_grant(e, 1, &lease, &ttl);
    CHECK(rc == FT_SUCCESS, "lease grant: %s", FT_Error_string(rc));
    rc = create_key(e, "/t/short", "x", lease, &ok, NULL);
    CHECK(rc == FT_SUCCESS && ok, "create: %s", FT_Error_string(rc));
    int64_t deadline = fti_now_ms() + 60000;
    while ((rc = fti_etcd_get(e, "/t/short", &kv)) == FT_SUCCESS && fti_now_ms() < deadline) {
        fti_etcd_kv_clear(&kv);
        fti_sleep_ms(100);
    }
    fti_etcd_kv_clear(&kv);
    CHECK(rc == FT_ERR_NOT_FOUND, "the key of an expired lease: %s", FT_Error_string(rc));
    rc = fti_etcd_lease_keepalive(e, lease, &ttl);
    CHECK(rc == FT_ERR_NOT_FOUND, "keepalive of an expired lease: %s", FT_Error_string(rc));
}

/* Values are bytes: NULs and every byte value survive base64. */
static void check_binary(fti_etcd_h e)
{
    char v[256];
    bool ok = false;
    fti_etcd_kv_t kv = {0};
    for (int i = 0; i < 256; i++)
        v[i] = (char)i;
    fti_etcd_put_t p = {"/t/bin", v, sizeof(v), 0};
    int rc = fti_etcd_txn(e, NULL, 0, &p, 1, &ok, NULL);
    CHECK(rc == FT_SUCCESS && ok, "put: %s", FT_Error_string(rc));
    rc = fti_etcd_get(e, "/t/bin", &kv);
    CHECK(rc == FT_SUCCESS && kv.len == sizeof(v) && memcmp(kv.value, v, sizeof(v)) == 0,
          "binary value back: %s len %zu", FT_Error_string(rc), kv.len);
    fti_etcd_kv_clear(&kv);
}

static int run_client(const char *urls)
{
    fti_etcd_h e = NULL, bad = NULL;
    char why[FTI_REASON_SIZE] = "";
    int rc = fti_etcd_create("127.0.0.1:2379", NULL, 1000, &bad, why, sizeof(why));
    CHECK(rc == FT_ERR_ARG && strstr(why, "127.0.0.1:2379"), "a URL without http://: %s (%s)",
          FT_Error_string(rc), why);
    /* nothing listens on port 1: the call fails cleanly, naming it */
    rc = fti_etcd_create("http://127.0.0.1:1", NULL, 2000, &bad, why, sizeof(why));
    CHECK(rc == FT_SUCCESS, "create: %s", FT_Error_string(rc));
    if (rc == FT_SUCCESS) {
        fti_etcd_kv_t kv = {0};
        rc = fti_etcd_get(bad, "/t/x", &kv);
        CHECK(rc == FT_ERR_CONNECT && strstr(err_of(bad), "127.0.0.1:1"),
              "an etcd that is not there: %s (%s)", FT_Error_string(rc), err_of(bad));
        fti_etcd_destroy(bad);
    }
    /* the dead endpoint first: the call moves on to the live one */
    char list[FTI_ETCD_ENDPOINTS_SIZE];
    snprintf(list, sizeof(list), "http://127.0.0.1:1,%s", urls);
    rc = fti_etcd_create(list, NULL, 5000, &e, why, sizeof(why));
    CHECK(rc == FT_SUCCESS, "create %s: %s (%s)", list, FT_Error_string(rc), why);
    if (rc != FT_SUCCESS)
        return 1;
    check_leases(e);
    check_binary(e);
    check_expiry(e);
    fti_etcd_destroy(e);
    if (failures == 0)
        printf("etcd client: all checks passed\n");
    return failures ? 1 : 0;
}

/* One lease and one guarded write as user/password; FT_SUCCESS or why not. */
static int auth_try(const char *urls, const char *user, const char *pw)
{
    fti_etcd_auth_t a;
    fti_etcd_h e = NULL;
    int64_t lease = 0, ttl = 0;
    bool ok = false;
    memset(&a, 0, sizeof(a));
    snprintf(a.user, sizeof(a.user), "%s", user);
    snprintf(a.password, sizeof(a.password), "%s", pw);
    int rc = fti_etcd_create(urls, user[0] ? &a : NULL, 5000, &e, NULL, 0);
    if (rc == FT_SUCCESS)
        rc = fti_etcd_lease_grant(e, 2, &lease, &ttl);
    if (rc == FT_SUCCESS) {
        fti_etcd_cmp_t c = {"/ftmpi/auth", FTI_ETCD_CREATE_REV, 0};
        fti_etcd_put_t p = {"/ftmpi/auth", "x", 1, lease};
        rc = fti_etcd_txn(e, &c, 1, &p, 1, &ok, NULL);
        if (rc == FT_SUCCESS && !ok)
            rc = FT_ERR_INTERNAL;
        (void)fti_etcd_lease_revoke(e, lease);
    }
    if (rc != FT_SUCCESS && e)
        fprintf(stderr, "etcd_probe: as '%s': %s (%s)\n", user, FT_Error_string(rc), err_of(e));
    fti_etcd_destroy(e);
    return rc;
}

static int run_auth(const char *urls, const char *user, const char *pw)
{
    int rc = auth_try(urls, user, pw);
    CHECK(rc == FT_SUCCESS, "as %s: %s", user, FT_Error_string(rc));
    rc = auth_try(urls, "", "");
    CHECK(rc == FT_ERR_AUTH, "without a user: %s", FT_Error_string(rc));
    rc = auth_try(urls, user, "wrong-password");
    CHECK(rc == FT_ERR_AUTH, "a wrong password: %s", FT_Error_string(rc));
    if (failures == 0)
        printf("etcd client with authentication: all checks passed\n");
    return failures ? 1 : 0;
}

static int run_get(const char *urls, const char *key)
{
    fti_etcd_h e = NULL;
    fti_etcd_kv_t kv = {0};
    fti_etcd_auth_t a;
    char why[FTI_REASON_SIZE] = "";
    const char *ca = getenv("ETCD_PROBE_CA"), *cert = getenv("ETCD_PROBE_CERT"),
               *key_file = getenv("ETCD_PROBE_KEY");
    memset(&a, 0, sizeof(a));
    snprintf(a.ca, sizeof(a.ca), "%s", ca ? ca : "");
    snprintf(a.cert, sizeof(a.cert), "%s", cert ? cert : "");
    snprintf(a.key, sizeof(a.key), "%s", key_file ? key_file : "");
    if (fti_etcd_create(urls, &a, 5000, &e, why, sizeof(why)) != FT_SUCCESS) {
        fprintf(stderr, "etcd_probe: %s\n", why);
        return 2;
    }
    int rc = fti_etcd_get(e, key, &kv);
    if (rc == FT_SUCCESS)
        printf("%s\n", kv.value);
    else if (rc != FT_ERR_NOT_FOUND)
        fprintf(stderr, "etcd_probe: get %s: %s (%s)\n", key, FT_Error_string(rc), err_of(e));
    fti_etcd_kv_clear(&kv);
    fti_etcd_destroy(e);
    return rc == FT_SUCCESS ? 0 : rc == FT_ERR_NOT_FOUND ? 3 : 2;
}

/* Copies bytes both ways between a and b until one side closes. */
static void pump(int a, int b)
{
    char buf[16384];
    struct pollfd p[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
    for (;;) {
        if (poll(p, 2, -1) < 0)
            return;
        for (int i = 0; i < 2; i++) {
            if (!(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            ssize_t n = read(p[i].fd, buf, sizeof(buf));
            if (n <= 0 || write(p[1 - i].fd, buf, (size_t)n) != n)
                return;
        }
    }
}

static int run_relay(const char *target)
{
    char host[64];
    int port = 0;
    if (sscanf(target, "%63[^:]:%d", host, &port) != 2)
        return 2;
    struct sockaddr_in to = {0}, me = {0};
    to.sin_family = me.sin_family = AF_INET;
    to.sin_port = htons((uint16_t)port);
    inet_pton(AF_INET, host, &to.sin_addr);
    inet_pton(AF_INET, "127.0.0.1", &me.sin_addr);
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    socklen_t ml = sizeof(me);
    if (ls < 0 || bind(ls, (struct sockaddr *)&me, sizeof(me)) != 0 || listen(ls, 64) != 0 ||
        getsockname(ls, (struct sockaddr *)&me, &ml) != 0) {
        perror("etcd_probe relay");
        return 2;
    }
    signal(SIGCHLD, SIG_IGN); /* no zombies */
    printf("relay listening on 127.0.0.1:%d\n", ntohs(me.sin_port));
    fflush(stdout);
    for (;;) {
        int c = accept(ls, NULL, NULL);
        if (c < 0)
            continue;
        if (fork() == 0) {
            int t = socket(AF_INET, SOCK_STREAM, 0);
            if (t >= 0 && connect(t, (struct sockaddr *)&to, sizeof(to)) == 0)
                pump(c, t);
            _exit(0);
        }
        close(c);
    }
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "relay") == 0)
        return run_relay(argv[2]);
    if (argc == 2 && strcmp(argv[1], "built") == 0)
        return 0;
    if (argc == 3 && strcmp(argv[1], "client") == 0)
        return run_client(argv[2]);
    if (argc == 5 && strcmp(argv[1], "auth") == 0)
        return run_auth(argv[2], argv[3], argv[4]);
    if (argc == 4 && strcmp(argv[1], "get") == 0)
        return run_get(argv[2], argv[3]);
    fprintf(stderr, "usage: etcd_probe built | client URLS | get URLS KEY\n");
    return 2;
}
#endif
