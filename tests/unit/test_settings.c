/*
 * test_settings.c - the FTMPI_* table (src/base/settings.c): every default
 * parses, every type refuses its bad values with a message that names the
 * variable and the value, *cfg is untouched on error, and
 * fti_config_format's output parses back to the same configuration.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>

#include "ftmpi_config.h" /* FTMPI_TEST_HOOKS */
#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/settings.h"
#include "base/sizes.h"
#include "base/util.h"

/* A fake environment: up to 32 NAME=value pairs. */
typedef struct fake_env {
    const char *name[64];
    const char *value[64];
    int n;
} fake_env_t;

static const char *fake_get(const char *name, void *arg)
{
    fake_env_t *e = arg;
    for (int i = 0; i < e->n; i++)
        if (strcmp(e->name[i], name) == 0)
            return e->value[i];
    return NULL;
}

static int load1(fti_config_t *cfg, const char *name, const char *value, char *err, size_t len)
{
    fake_env_t e = {{name}, {value}, 1};
    return fti_config_load_from(cfg, fake_get, &e, err, len);
}

static const fti_config_field_t *field(const char *name)
{
    for (const fti_config_field_t *f = fti_config_table; f->name; f++)
        if (strcmp(f->name, name) == 0)
            return f;
    fail_msg("no field %s", name);
    return NULL;
}

static int64_t get_int(const fti_config_t *cfg, const fti_config_field_t *f)
{
    const char *p = (const char *)cfg + f->offset;
    if (f->size == sizeof(int64_t))
        return *(const int64_t *)p;
    return *(const int *)p;
}

/* The value is refused: FT_ERR_CONFIG, a message with the name and (the
 * start of) the value, and cfg byte for byte as it was. */
static void expect_refused(const char *name, const char *value)
{
    fti_config_t cfg, before;
    char err[512];
    memset(&cfg, 0xA5, sizeof(cfg));
    before = cfg;
    memset(err, 0, sizeof(err));
    int rc = load1(&cfg, name, value, err, sizeof(err));
    if (rc != FT_ERR_CONFIG)
        fail_msg("%s='%s' was accepted (rc %d)", name, value, rc);
    if (strstr(err, name) == NULL)
        fail_msg("message for %s='%s' lacks the name: %s", name, value, err);
    char quoted[48];
    snprintf(quoted, sizeof(quoted), "'%.30s", value);
    if (strstr(err, quoted) == NULL)
        fail_msg("message for %s='%s' lacks the value: %s", name, value, err);
    assert_memory_equal(&cfg, &before, sizeof(cfg));
}

static void expect_int(const char *name, const char *value, int64_t want)
{
    fti_config_t cfg;
    char err[256] = "";
    int rc = load1(&cfg, name, value, err, sizeof(err));
    if (rc != FT_SUCCESS)
        fail_msg("%s='%s' refused: %s", name, value, err);
    int64_t got = get_int(&cfg, field(name));
    if (got != want)
        fail_msg("%s='%s' gave %" PRId64 ", expected %" PRId64, name, value, got, want);
}

/* ---- the table ------------------------------------------------------------ */

static void test_table_is_sane(void **state)
{
    (void)state;
    int n = 0;
    for (const fti_config_field_t *f = fti_config_table; f->name; f++, n++) {
        assert_int_equal(strncmp(f->name, "FTMPI_", 6), 0);
        assert_non_null(f->dflt);
        assert_non_null(f->doc);
        assert_true(strlen(f->doc) > 10);
        assert_true(f->offset + f->size <= sizeof(fti_config_t));
        for (const fti_config_field_t *g = f + 1; g->name; g++) {
            assert_true(strcmp(f->name, g->name) != 0);
            assert_true(f->offset != g->offset);
        }
        switch (f->type) {
        case FTI_CFG_STRING:
            assert_true(f->size > 1);
            break;
        case FTI_CFG_INT: /* an int, or an int64_t where the range needs it */
            assert_true(f->size == sizeof(int) || f->size == sizeof(int64_t));
            assert_true(f->size == sizeof(int64_t) || f->max <= INT_MAX);
            assert_true(f->min <= f->max);
            break;
        case FTI_CFG_BOOL:
        case FTI_CFG_LOGLEVEL:
            assert_int_equal(f->size, sizeof(int));
            assert_true(f->min <= f->max);
            break;
        case FTI_CFG_BYTES:
            assert_int_equal(f->size, sizeof(int64_t));
            assert_true(f->min <= f->max);
            break;
        case FTI_CFG_NAME:
            assert_true(f->size > 1);
            assert_null(f->choices);
            break;
        case FTI_CFG_ENUM:
            assert_int_equal(f->size, sizeof(int));
            assert_non_null(f->choices);
            assert_non_null(f->choices[0]);
            break;
        default:
            fail_msg("%s: unknown type %d", f->name, f->type);
        }
    }
    assert_true(n >= 18);
}

/* Every default parses alone and together, and formats back to its own
 * text (the defaults are written in canonical form). */
static void test_defaults(void **state)
{
    (void)state;
    fti_config_t cfg;
    char err[256] = "", buf[300];
    fake_env_t none = {.n = 0};
    assert_int_equal(fti_config_load_from(&cfg, fake_get, &none, err, sizeof(err)), FT_SUCCESS);
    for (const fti_config_field_t *f = fti_config_table; f->name; f++) {
        fti_config_format(&cfg, f, buf, sizeof(buf));
        if (strcmp(buf, f->dflt) != 0)
            fail_msg("%s: default '%s' formats as '%s'", f->name, f->dflt, buf);
        fti_config_t one;
        assert_int_equal(load1(&one, f->name, f->dflt, err, sizeof(err)), FT_SUCCESS);
        assert_memory_equal(&one, &cfg, sizeof(cfg));
    }
    /* a few defaults the rest of the library relies on */
    assert_string_equal(cfg.backend, "auto");
    assert_int_equal(cfg.world_mode, FTI_WORLD_DYNAMIC);
    assert_int_equal(cfg.log_level, FTI_LOG_WARN);
    assert_int_equal(cfg.init_sync, 1);
    assert_string_equal(cfg.bind_host, "127.0.0.1");
    assert_string_equal(cfg.lighthouse, "");
    assert_true(cfg.max_frame_bytes >= 1024);
    assert_true(cfg.timeout_ms > 0);
}

/* ---- ints ----------------------------------------------------------------- */

static void test_int_values(void **state)
{
    (void)state;
    char buf[64];
    for (const fti_config_field_t *f = fti_config_table; f->name; f++) {
        if (f->type != FTI_CFG_INT)
            continue;
        snprintf(buf, sizeof(buf), "%" PRId64, f->min);
        expect_int(f->name, buf, f->min);
        snprintf(buf, sizeof(buf), "%" PRId64, f->max);
        expect_int(f->name, buf, f->max);
        snprintf(buf, sizeof(buf), "%" PRId64, f->min - 1);
        expect_refused(f->name, buf);
        snprintf(buf, sizeof(buf), "%" PRId64, f->max + 1);
        expect_refused(f->name, buf);
        const char *bad[] = {"",     "abc", "12abc", "10 ",  "1.5", "0x10", "1e3", "5k",
                             "99999999999999999999", "-99999999999999999999", "--1", "+"};
        for (size_t i = 0; i < FTI_ARRAY_SIZE(bad); i++)
            expect_refused(f->name, bad[i]);
    }
    expect_int("FTMPI_TIMEOUT_MS", "250", 250);
    expect_int("FTMPI_GROUP_SIZE", "0", 0);
    expect_refused("FTMPI_TIMEOUT_MS", "0");
    expect_refused("FTMPI_TIMEOUT_MS", "-5");
    expect_refused("FTMPI_MIN_REPLICAS", "0");
    expect_refused("FTMPI_TIMEOUT_MS", "4294967296"); /* would wrap an int */
    /* mode B's lighthouse rank */
    expect_int("FTMPI_LH_JOIN_TIMEOUT_MS", "0", 0);
    expect_int("FTMPI_LH_HEARTBEAT_TIMEOUT_MS", "750", 750);
    expect_int("FTMPI_LH_QUORUM_TICK_MS", "20", 20);
    expect_refused("FTMPI_LH_HEARTBEAT_TIMEOUT_MS", "0");
    expect_refused("FTMPI_LH_QUORUM_TICK_MS", "0");
}

/* ---- byte counts ---------------------------------------------------------- */

static void test_bytes_values(void **state)
{
    (void)state;
    const char *n = "FTMPI_CHUNK_BYTES";
    expect_int(n, "4096", 4096);
    expect_int(n, "4k", 4096);
    expect_int(n, "4K", 4096);
    expect_int(n, "4kb", 4096);
    expect_int(n, "4KiB", 4096);
    expect_int(n, "3m", 3 << 20);
    expect_int(n, "3MB", 3 << 20);
    expect_int(n, "1g", 1 << 30);
    expect_int(n, "1G", 1 << 30);
    expect_int("FTMPI_MAX_FRAME_BYTES", "2g", INT64_C(2) << 30);
    expect_int("FTMPI_MAX_FRAME_BYTES", "1k", 1024);
    const char *bad[] = {"",    "k",   "4t",  "4kk", "4kbb", "1.5m", "-1k", "4 k",  "4k ",
                         "4bk", "4kib5", "2g",  "1023", "3k",  "0",    "0x1k", "99999999999g",
                         "9223372036854775807k", "-9223372036854775807g"};
    for (size_t i = 0; i < FTI_ARRAY_SIZE(bad); i++)
        expect_refused(n, bad[i]);
    expect_refused("FTMPI_MAX_FRAME_BYTES", "1023");
    expect_refused("FTMPI_MAX_FRAME_BYTES", "3g");
}

/* ---- bools, enums, log levels -------------------------------------------- */

static void test_bool_values(void **state)
{
    (void)state;
    const char *n = "FTMPI_INIT_SYNC";
    const char *yes[] = {"1", "true", "TRUE", "yes", "Yes", "on", "ON"};
    const char *no[] = {"0", "false", "False", "no", "NO", "off", "Off"};
    for (size_t i = 0; i < FTI_ARRAY_SIZE(yes); i++)
        expect_int(n, yes[i], 1);
    for (size_t i = 0; i < FTI_ARRAY_SIZE(no); i++)
        expect_int(n, no[i], 0);
    const char *bad[] = {"", "2", "-1", "maybe", "truex", "y", "n", " 1", "1 ", "00"};
    for (size_t i = 0; i < FTI_ARRAY_SIZE(bad); i++)
        expect_refused(n, bad[i]);
}

static void test_enum_values(void **state)
{
    (void)state;
    expect_int("FTMPI_WORLD_SIZE_MODE", "fixed_with_spares", FTI_WORLD_FIXED_WITH_SPARES);
    expect_int("FTMPI_WORLD_SIZE_MODE", "dynamic", FTI_WORLD_DYNAMIC);
    expect_refused("FTMPI_WORLD_SIZE_MODE", "fixed");
    /* the message lists the choices */
    fti_config_t cfg;
    char err[256] = "";
    assert_int_equal(load1(&cfg, "FTMPI_WORLD_SIZE_MODE", "fixed", err, sizeof(err)),
                     FT_ERR_CONFIG);
    assert_non_null(strstr(err, "dynamic fixed_with_spares"));
    /* a short message buffer is cut, never overrun */
    char tiny[12];
    memset(tiny, 'x', sizeof(tiny));
    assert_int_equal(load1(&cfg, "FTMPI_WORLD_SIZE_MODE", "fixed", tiny, 8), FT_ERR_CONFIG);
    assert_int_equal(strlen(tiny), 7);
    assert_int_equal(tiny[8], 'x');
    /* no message buffer at all is fine */
    assert_int_equal(load1(&cfg, "FTMPI_WORLD_SIZE_MODE", "fixed", NULL, 0), FT_ERR_CONFIG);
}

/* FTMPI_BACKEND is a name: the settings lower-case it and refuse what is no
 * name; whether a backend of that name exists is the backend table's
 * business (FT_Init: mode/mode_b.c; test_backends, test_e2e_bad_config.sh). */
static void test_name_values(void **state)
{
    (void)state;
    const struct { const char *in, *want; } good[] = {
        {"auto", "auto"}, {"tcp", "tcp"}, {"MPI", "mpi"}, {"Baby-TCP", "baby-tcp"},
        {"nccl9", "nccl9"}, {"a_b", "a_b"}, {"x234567890123456789012345678901", NULL}};
    for (size_t i = 0; i < FTI_ARRAY_SIZE(good); i++) {
        fti_config_t cfg;
        char err[256] = "";
        if (load1(&cfg, "FTMPI_BACKEND", good[i].in, err, sizeof(err)) != FT_SUCCESS)
            fail_msg("FTMPI_BACKEND='%s' refused: %s", good[i].in, err);
        assert_string_equal(cfg.backend, good[i].want ? good[i].want : good[i].in);
    }
    const char *bad[] = {"", "tcp ", " tcp", "a b", "x/y", "ucx!", "tc\tp",
                         "x2345678901234567890123456789012"};
    for (size_t i = 0; i < FTI_ARRAY_SIZE(bad); i++)
        expect_refused("FTMPI_BACKEND", bad[i]);
}

static void test_loglevel_values(void **state)
{
    (void)state;
    const char *n = "FTMPI_LOG_LEVEL";
    expect_int(n, "none", FTI_LOG_NONE);
    expect_int(n, "error", FTI_LOG_ERROR);
    expect_int(n, "warn", FTI_LOG_WARN);
    expect_int(n, "warning", FTI_LOG_WARN);
    expect_int(n, "INFO", FTI_LOG_INFO);
    expect_int(n, "debug", FTI_LOG_DEBUG);
    expect_int(n, "trace", FTI_LOG_TRACE);
    expect_int(n, "0", 0);
    expect_int(n, "5", 5);
    const char *bad[] = {"", "6", "-1", "10", "verbose", "warn ", "dbg"};
    for (size_t i = 0; i < FTI_ARRAY_SIZE(bad); i++)
        expect_refused(n, bad[i]);
}

/* ---- strings -------------------------------------------------------------- */

static void test_string_values(void **state)
{
    (void)state;
    for (const fti_config_field_t *f = fti_config_table; f->name; f++) {
        if (f->type != FTI_CFG_STRING)
            continue;
        char *s = malloc(f->size + 1);
        assert_non_null(s);
        memset(s, 'h', f->size);
        s[f->size - 1] = '\0'; /* the longest that fits */
        fti_config_t cfg;
        char err[256] = "";
        assert_int_equal(load1(&cfg, f->name, s, err, sizeof(err)), FT_SUCCESS);
        assert_string_equal((const char *)&cfg + f->offset, s);
        s[f->size - 1] = 'h'; /* one too many */
        s[f->size] = '\0';
        expect_refused(f->name, s);
        /* the empty string is a valid value */
        assert_int_equal(load1(&cfg, f->name, "", err, sizeof(err)), FT_SUCCESS);
        assert_string_equal((const char *)&cfg + f->offset, "");
        free(s);
    }
}

/* The string settings have the sizes every layer agrees on (sizes.h), so a
 * value the parser takes is one the lighthouse client, the manager and the
 * servers take too: FTMPI_LIGHTHOUSE used to take 255 characters that the
 * client then refused.  A longer value is refused here, naming the variable,
 * the value and the limit. */
static void test_string_sizes(void **state)
{
    (void)state;
    const struct {
        const char *name;
        size_t size;
    } want[] = {{"FTMPI_LIGHTHOUSE", FTI_ADDRESS_SIZE},
                {"FTMPI_REPLICA_ID", FTI_REPLICA_ID_SIZE},
                {"FTMPI_BIND_HOST", FTI_HOST_SIZE},
                {"FTMPI_EVENT_LOG", FTI_PATH_SIZE}};
    for (size_t i = 0; i < FTI_ARRAY_SIZE(want); i++) {
        const fti_config_field_t *f = field(want[i].name);
        assert_int_equal(f->size, want[i].size);
        /* size - 1 characters fit, size do not, and the message says so */
        char *v = malloc(want[i].size + 1), err[256] = "", limit[32];
        assert_non_null(v);
        memset(v, 'a', want[i].size);
        v[want[i].size - 1] = '\0';
        fti_config_t cfg;
        assert_int_equal(load1(&cfg, want[i].name, v, err, sizeof(err)), FT_SUCCESS);
        v[want[i].size - 1] = 'a';
        v[want[i].size] = '\0';
        expect_refused(want[i].name, v);
        assert_int_equal(load1(&cfg, want[i].name, v, err, sizeof(err)), FT_ERR_CONFIG);
        snprintf(limit, sizeof(limit), "at most %zu", want[i].size - 1);
        if (strstr(err, limit) == NULL)
            fail_msg("%s: message lacks '%s': %s", want[i].name, limit, err);
        free(v);
    }
    /* an address of 200 characters: accepted before, refused now */
    char addr[201];
    memset(addr, 'h', sizeof(addr) - 1);
    memcpy(addr + sizeof(addr) - 7, ":29510", 7);
    expect_refused("FTMPI_LIGHTHOUSE", addr);
}

/* A later bad variable leaves cfg alone even after earlier good ones. */
static void test_untouched_on_error(void **state)
{
    (void)state;
    fake_env_t e = {{"FTMPI_LIGHTHOUSE", "FTMPI_TIMEOUT_MS", "FTMPI_RESTART_COUNT"},
                    {"h:1", "7", "-3"}, 3};
    fti_config_t cfg, before;
    char err[256] = "";
    memset(&cfg, 0x5A, sizeof(cfg));
    before = cfg;
    assert_int_equal(fti_config_load_from(&cfg, fake_get, &e, err, sizeof(err)), FT_ERR_CONFIG);
    assert_memory_equal(&cfg, &before, sizeof(cfg));
    assert_non_null(strstr(err, "FTMPI_RESTART_COUNT='-3'"));
    e.value[2] = "2";
    assert_int_equal(fti_config_load_from(&cfg, fake_get, &e, err, sizeof(err)), FT_SUCCESS);
    assert_string_equal(cfg.lighthouse, "h:1");
    assert_int_equal(cfg.timeout_ms, 7);
    assert_int_equal(cfg.restart_count, 2);
}

/* The real environment goes through the same parser. */
static void test_environment(void **state)
{
    (void)state;
    fti_config_t cfg;
    char err[256] = "";
    setenv("FTMPI_HEARTBEAT_MS", "123", 1);
    setenv("FTMPI_BACKEND", "tcp", 1);
    assert_int_equal(fti_config_load(&cfg, err, sizeof(err)), FT_SUCCESS);
    assert_int_equal(cfg.heartbeat_ms, 123);
    assert_string_equal(cfg.backend, "tcp");
    setenv("FTMPI_HEARTBEAT_MS", "12x", 1);
    assert_int_equal(fti_config_load(&cfg, err, sizeof(err)), FT_ERR_CONFIG);
    assert_non_null(strstr(err, "FTMPI_HEARTBEAT_MS='12x'"));
    unsetenv("FTMPI_HEARTBEAT_MS");
    unsetenv("FTMPI_BACKEND");
}

/* ---- format round trip ---------------------------------------------------- */

/* Sets every field to a non-default value, formats each, loads the
 * formatted text and expects the same configuration back. */
static void test_format_round_trip(void **state)
{
    (void)state;
    fake_env_t e = {.n = 0};
    char vals[64][300];
    for (const fti_config_field_t *f = fti_config_table; f->name; f++) {
        const char *v = NULL;
        switch (f->type) {
        case FTI_CFG_STRING: v = "[::1]:4242"; break;
        case FTI_CFG_NAME: v = "baby-tcp"; break;
        case FTI_CFG_INT: v = f->max > 1000 ? "777" : "1"; break;
        case FTI_CFG_BYTES: v = "8m"; break;
        case FTI_CFG_BOOL: v = "off"; break;
        case FTI_CFG_ENUM: v = f->choices[1] ? f->choices[1] : f->choices[0]; break;
        case FTI_CFG_LOGLEVEL: v = "DEBUG"; break;
        }
        assert_true(e.n < 64);
        e.name[e.n] = f->name;
        e.value[e.n++] = v;
    }
    fti_config_t a, b;
    char err[256] = "";
    assert_int_equal(fti_config_load_from(&a, fake_get, &e, err, sizeof(err)), FT_SUCCESS);
    int i = 0;
    for (const fti_config_field_t *f = fti_config_table; f->name; f++, i++) {
        fti_config_format(&a, f, vals[i], sizeof(vals[i]));
        e.value[i] = vals[i];
    }
    assert_int_equal(fti_config_load_from(&b, fake_get, &e, err, sizeof(err)), FT_SUCCESS);
    assert_memory_equal(&a, &b, sizeof(a));
    assert_int_equal(a.chunk_bytes, 8 << 20);
    assert_int_equal(a.log_level, FTI_LOG_DEBUG);
    assert_int_equal(a.init_sync, 0);
    assert_string_equal(vals[0], "[::1]:4242");

    /* every choice of every enum and every log level round-trips */
    char buf[64];
    for (const fti_config_field_t *f = fti_config_table; f->name; f++) {
        int n = f->type == FTI_CFG_ENUM ? 0 : f->type == FTI_CFG_LOGLEVEL ? 6 : -1;
        if (f->type == FTI_CFG_ENUM)
            while (f->choices[n])
                n++;
        for (int k = 0; k < n; k++) {
            fti_config_t c;
            *(int *)((char *)&a + f->offset) = k;
            fti_config_format(&a, f, buf, sizeof(buf));
            assert_int_equal(load1(&c, f->name, buf, err, sizeof(err)), FT_SUCCESS);
            assert_int_equal(get_int(&c, f), k);
        }
    }
    /* a short output buffer is cut and terminated */
    char small[4];
    fti_config_format(&a, field("FTMPI_LIGHTHOUSE"), small, sizeof(small));
    assert_string_equal(small, "[::");
}

/* the nearest known name of a misspelling; script names are known */
static void test_nearest(void **state)
{
    (void)state;
    assert_string_equal(fti_config_nearest("FTMPI_LOG_LEVL"), "FTMPI_LOG_LEVEL");
    assert_string_equal(fti_config_nearest("FTMPI_TIMEOUT"), "FTMPI_TIMEOUT_MS");
    assert_string_equal(fti_config_nearest("FTMPI_LIGTHOUSE"), "FTMPI_LIGHTHOUSE");
    assert_string_equal(fti_config_nearest("FTMPI_LOG_LEVEL"), "FTMPI_LOG_LEVEL");
    assert_true(fti_config_known("FTMPI_LOG_LEVEL"));
    assert_true(fti_config_known("FTMPI_BIN"));
#ifdef FTMPI_TEST_HOOKS
    assert_true(fti_config_known("FTMPI_TEST_HEAL_CORRUPT"));
#else /* a production build knows no test hook */
    assert_false(fti_config_known("FTMPI_TEST_HEAL_CORRUPT"));
#endif
    assert_false(fti_config_known("FTMPI_LOG_LEVL"));
    assert_false(fti_config_known("FTMPI_"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table_is_sane),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_int_values),
        cmocka_unit_test(test_bytes_values),
        cmocka_unit_test(test_bool_values),
        cmocka_unit_test(test_name_values),
        cmocka_unit_test(test_enum_values),
        cmocka_unit_test(test_loglevel_values),
        cmocka_unit_test(test_string_values),
        cmocka_unit_test(test_string_sizes),
        cmocka_unit_test(test_untouched_on_error),
        cmocka_unit_test(test_environment),
        cmocka_unit_test(test_format_round_trip),
        cmocka_unit_test(test_nearest),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
