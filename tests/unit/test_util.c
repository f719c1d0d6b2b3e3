/*
 * test_util.c - src/base/util.c (checksum, clocks and deadlines, strings, binary
 * search) and src/log.c (level names, filtering, errno and %m across a log
 * line).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "util.h"

/* Deterministic bytes (xorshift64*), so a failure can be reproduced. */
static uint64_t rng_state = 0x2545F4914F6CDD1DULL;
static uint64_t rng_next(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545F4914F6CDD1DULL;
}
static void fill_random(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        p[i] = (uint8_t)(rng_next() >> 56);
}

/* ---- checksum ----------------------------------------------------------- */

static void test_checksum_equal_buffers(void **state)
{
    (void)state;
    /* equal contents at different addresses and alignments give equal sums */
    uint8_t *a = malloc(5000), *b = malloc(5000 + 8);
    assert_non_null(a);
    assert_non_null(b);
    fill_random(a, 5000);
    for (size_t off = 0; off < 8; off++) {
        memcpy(b + off, a, 5000);
        for (size_t len = 0; len <= 5000; len += (len < 100 ? 1 : 97)) {
            assert_true(fti_checksum64(a, len, 0) == fti_checksum64(b + off, len, 0));
            assert_true(fti_checksum64(a, len, 77) == fti_checksum64(b + off, len, 77));
        }
    }
    /* the same call twice gives the same sum */
    assert_true(fti_checksum64(a, 4999, 5) == fti_checksum64(a, 4999, 5));
    free(a);
    free(b);
}

/* Every single-bit flip at every position of a buffer of len bytes changes
 * the sum (with several seeds and contents). */
static void check_all_flips(uint8_t *buf, size_t len, uint64_t seed)
{
    uint64_t base = fti_checksum64(buf, len, seed);
    for (size_t i = 0; i < len; i++) {
        for (int bit = 0; bit < 8; bit++) {
            buf[i] ^= (uint8_t)(1u << bit);
            uint64_t s = fti_checksum64(buf, len, seed);
            buf[i] ^= (uint8_t)(1u << bit);
            if (s == base)
                fail_msg("checksum unchanged by flipping bit %d of byte %zu (len %zu, seed %llu)",
                         bit, i, len, (unsigned long long)seed);
        }
    }
    assert_true(fti_checksum64(buf, len, seed) == base);
}

static void test_checksum_bit_flips_small(void **state)
{
    (void)state;
    uint8_t buf[200];
    /* a 128-byte turn, a 64-byte block and a tail: every lane, every path and tail length */
    for (size_t len = 0; len <= 200; len++) {
        memset(buf, 0, sizeof(buf));
        check_all_flips(buf, len, 0);
        memset(buf, 0xff, sizeof(buf));
        check_all_flips(buf, len, 1);
        fill_random(buf, sizeof(buf));
        check_all_flips(buf, len, 0);
        check_all_flips(buf, len, 0xdeadbeefULL);
    }
}

static void test_checksum_bit_flips_large(void **state)
{
    (void)state;
    const size_t lens[] = {4096, 4097, 65536 + 31, (1u << 20) + 3};
    for (size_t k = 0; k < FTI_ARRAY_SIZE(lens); k++) {
        size_t len = lens[k];
        uint8_t *buf = malloc(len);
        assert_non_null(buf);
        fill_random(buf, len);
        uint64_t base = fti_checksum64(buf, len, 0);
        /* first and last bytes, the word and lane boundaries, and random spots */
        size_t pos[64];
        size_t n = 0;
        pos[n++] = 0;
        pos[n++] = 7;
        pos[n++] = 8;
        pos[n++] = 31;
        pos[n++] = 32;
        pos[n++] = 56; /* the last lane of the first 64-byte block */
        pos[n++] = 63;
        pos[n++] = 64;
        pos[n++] = len / 2;
        pos[n++] = len - 65;
        pos[n++] = len - 64;
        pos[n++] = len - 33;
        pos[n++] = len - 32;
        pos[n++] = len - 9;
        pos[n++] = len - 8;
        pos[n++] = len - 1;
        while (n < FTI_ARRAY_SIZE(pos))
            pos[n++] = (size_t)(rng_next() % len);
        for (size_t i = 0; i < n; i++) {
            for (int bit = 0; bit < 8; bit++) {
                buf[pos[i]] ^= (uint8_t)(1u << bit);
                uint64_t s = fti_checksum64(buf, len, 0);
                buf[pos[i]] ^= (uint8_t)(1u << bit);
                if (s == base)
                    fail_msg("checksum unchanged by bit %d of byte %zu of %zu", bit, pos[i], len);
            }
        }
        /* a zero tail of another length is not the same buffer */
        memset(buf, 0, len);
        assert_true(fti_checksum64(buf, len, 0) != fti_checksum64(buf, len - 1, 0));
        free(buf);
    }
}

static void test_checksum_length_and_seed(void **state)
{
    (void)state;
    uint8_t zeros[80] = {0};
    /* zero buffers of different lengths differ (the length is folded in) */
    for (size_t a = 0; a < sizeof(zeros); a++)
        for (size_t b = a + 1; b <= sizeof(zeros); b++)
            assert_true(fti_checksum64(zeros, a, 0) != fti_checksum64(zeros, b, 0));
    /* the seed matters, also for an empty buffer (NULL is fine at length 0) */
    assert_true(fti_checksum64(NULL, 0, 0) != fti_checksum64(NULL, 0, 1));
    assert_true(fti_checksum64(zeros, 40, 0) != fti_checksum64(zeros, 40, 1));
    assert_true(fti_checksum64(zeros, 40, 1) != fti_checksum64(zeros, 40, 1ULL << 63));
}

static void test_checksum_chaining(void **state)
{
    (void)state;
    uint8_t a[300], b[77];
    fill_random(a, sizeof(a));
    fill_random(b, sizeof(b));
    uint64_t chain = fti_checksum64(b, sizeof(b), fti_checksum64(a, sizeof(a), 0));
    /* deterministic */
    assert_true(chain == fti_checksum64(b, sizeof(b), fti_checksum64(a, sizeof(a), 0)));
    /* order matters */
    assert_true(chain != fti_checksum64(a, sizeof(a), fti_checksum64(b, sizeof(b), 0)));
    /* the first piece's content reaches the final sum */
    for (size_t i = 0; i < sizeof(a); i += 13) {
        a[i] ^= 0x10;
        assert_true(chain != fti_checksum64(b, sizeof(b), fti_checksum64(a, sizeof(a), 0)));
        a[i] ^= 0x10;
    }
    /* and so does the first seed */
    assert_true(chain != fti_checksum64(b, sizeof(b), fti_checksum64(a, sizeof(a), 1)));
    /* the chained sum is not simply the sum of the second piece */
    assert_true(chain != fti_checksum64(b, sizeof(b), 0));
}

/* ---- clocks and deadlines ---------------------------------------------- */

static void test_ms_left_clamps(void **state)
{
    (void)state;
    int64_t now = fti_now_ms();
    assert_int_equal(fti_ms_left(now - 1), 0);
    assert_int_equal(fti_ms_left(now - 1000000), 0);
    assert_int_equal(fti_ms_left(0), 0);
    assert_int_equal(fti_ms_left(INT64_MIN), 0);
    assert_int_equal(fti_ms_left(-1), 0);
    assert_int_equal(fti_ms_left(INT64_MAX), 0x7fffffff);
    assert_int_equal(fti_ms_left(now + ((int64_t)1 << 40)), 0x7fffffff);
    int left = fti_ms_left(now + 5000);
    assert_true(left > 4000 && left <= 5000);
    left = fti_ms_left(now + 0x7fffffff);
    assert_true(left > 0x7fffffff - 1000 && left <= 0x7fffffff);
}

static void test_clocks(void **state)
{
    (void)state;
    int64_t t0 = fti_now_ms(), u0 = fti_now_us();
    fti_sleep_ms(30);
    int64_t t1 = fti_now_ms(), u1 = fti_now_us();
    assert_true(t1 - t0 >= 29);
    assert_true(t1 - t0 < 2000);
    assert_true(u1 - u0 >= 29000);
    assert_true(fti_wall_ms() > INT64_C(1500000000000)); /* after 2017 */
    fti_sleep_ms(0);                                     /* returns */
    fti_sleep_ms(-5);                                    /* returns */
}

/* ---- strings ------------------------------------------------------------ */

static void test_strlcpy(void **state)
{
    (void)state;
    char buf[6];
    memset(buf, 'x', sizeof(buf));
    assert_int_equal(fti_strlcpy(buf, "hello", sizeof(buf)), 0);
    assert_string_equal(buf, "hello");
    assert_int_equal(fti_strlcpy(buf, "hello!", sizeof(buf)), -1);
    assert_string_equal(buf, "hello");
    assert_int_equal(fti_strlcpy(buf, "", sizeof(buf)), 0);
    assert_string_equal(buf, "");
    buf[0] = 'q';
    assert_int_equal(fti_strlcpy(buf, "abc", 0), -1);
    assert_int_equal(buf[0], 'q'); /* nothing written */
    assert_int_equal(fti_strlcpy(buf, "abc", 1), -1);
    assert_string_equal(buf, "");
}

static const char *name_key(const void *names, size_t i)
{
    return ((const char *const *)names)[i];
}

/* Found keys give their index; missing ones their insertion point. */
static void test_bsearch_str(void **state)
{
    (void)state;
    const char *names[] = {"b", "d", "dd", "f"};
    const struct {
        const char *key;
        size_t at;
        bool found;
    } cases[] = {{"b", 0, true},  {"d", 1, true},  {"dd", 2, true}, {"f", 3, true},
                 {"a", 0, false}, {"c", 1, false}, {"de", 3, false}, {"g", 4, false}};
    for (size_t i = 0; i < FTI_ARRAY_SIZE(cases); i++) {
        bool found = !cases[i].found;
        assert_int_equal(fti_bsearch_str(names, 4, name_key, cases[i].key, &found), cases[i].at);
        assert_true(found == cases[i].found);
    }
    bool found = true;
    assert_int_equal(fti_bsearch_str(names, 0, name_key, "b", &found), 0);
    assert_false(found);
}

/* ---- log ---------------------------------------------------------------- */

static void test_log_levels(void **state)
{
    (void)state;
    const char *names[] = {"none", "error", "warn", "info", "debug", "trace"};
    for (int i = 0; i < 6; i++) {
        char up[16], digit[2] = {(char)('0' + i), 0};
        assert_int_equal(fti_log_level_parse(names[i]), i);
        for (size_t k = 0; k <= strlen(names[i]); k++)
            up[k] = (char)(names[i][k] >= 'a' && names[i][k] <= 'z' ? names[i][k] - 32
                                                                    : names[i][k]);
        assert_int_equal(fti_log_level_parse(up), i);
        assert_int_equal(fti_log_level_parse(digit), i);
        assert_string_equal(fti_log_level_name(i), names[i]);
        assert_int_equal(fti_log_level_parse(fti_log_level_name(i)), i);
    }
    assert_int_equal(fti_log_level_parse("warning"), FTI_LOG_WARN);
    const char *bad[] = {"", "6", "-1", "10", "05", "verbose", "warnx", " warn", "info "};
    for (size_t i = 0; i < FTI_ARRAY_SIZE(bad); i++)
        assert_int_equal(fti_log_level_parse(bad[i]), -1);
    assert_int_equal(fti_log_level_parse(NULL), -1);
    assert_string_equal(fti_log_level_name(-1), "?");
    assert_string_equal(fti_log_level_name(6), "?");
}

/* Runs fn with stderr sent to a temporary file; returns what was written. */
static char *capture_stderr(void (*fn)(void))
{
    static char out[8192];
    char path[] = "/tmp/test_util_log.XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    fflush(stderr);
    int saved = dup(2);
    assert_true(saved >= 0);
    assert_true(dup2(fd, 2) == 2);
    fn();
    fflush(stderr);
    assert_true(dup2(saved, 2) == 2);
    close(saved);
    ssize_t n = pread(fd, out, sizeof(out) - 1, 0);
    assert_true(n >= 0);
    out[n] = '\0';
    close(fd);
    return out;
}

static int errno_after_log;

static void log_some_lines(void)
{
    fti_log_init("tester", FTI_LOG_INFO);
    FTI_DEBUG("hidden debug line %d", 1);
    FTI_INFO("visible info line %d", 2);
    fti_log_ctx.group_rank = 3;
    fti_log_ctx.step = 41;
    fti_log_ctx.quorum_id = 7;
    fti_log_set_replica_id("g5");
    errno = ENOENT;
    FTI_WARN("open failed: %m");
    errno_after_log = errno;
    /* a message longer than the line buffer is cut, not overflowed */
    char big[3000];
    memset(big, 'z', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    FTI_ERROR("long %s", big);
    fti_log_init("ftmpi", FTI_LOG_WARN);
}

static void test_log_lines(void **state)
{
    (void)state;
    const char *out = capture_stderr(log_some_lines);
    assert_null(strstr(out, "hidden debug line"));
    assert_non_null(strstr(out, "visible info line 2"));
    assert_non_null(strstr(out, "tester info"));
    assert_non_null(strstr(out, strerror(ENOENT)));
    assert_non_null(strstr(out, "r=g5 gr=3 step=41 q=7"));
    assert_non_null(strstr(out, "test_util.c:"));
    assert_non_null(strstr(out, "long zzzz"));
    assert_int_equal(errno_after_log, ENOENT);
    /* three lines, each ending in a newline */
    int lines = 0;
    for (const char *p = out; *p; p++)
        lines += *p == '\n';
    assert_int_equal(lines, 3);
    /* fti_log_init reset the context */
    assert_int_equal(fti_log_ctx.group_rank, -1);
    assert_int_equal(fti_log_ctx.step, -1);
    char rid[8] = "x";
    fti_log_get_replica_id(rid, sizeof(rid));
    assert_string_equal(rid, "");
    assert_int_equal(fti_log_level, FTI_LOG_WARN);
    /* an out-of-range level leaves the level alone */
    fti_log_init("x", 99);
    assert_int_equal(fti_log_level, FTI_LOG_WARN);
    fti_log_init("ftmpi", FTI_LOG_WARN);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_checksum_equal_buffers),
        cmocka_unit_test(test_checksum_bit_flips_small),
        cmocka_unit_test(test_checksum_bit_flips_large),
        cmocka_unit_test(test_checksum_length_and_seed),
        cmocka_unit_test(test_checksum_chaining),
        cmocka_unit_test(test_ms_left_clamps),
        cmocka_unit_test(test_clocks),
        cmocka_unit_test(test_strlcpy),
        cmocka_unit_test(test_bsearch_str),
        cmocka_unit_test(test_log_levels),
        cmocka_unit_test(test_log_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
