/*
 * test_util.c - src/base/util.c (checksum, clocks and deadlines, strings, binary
 * search, strict number parsing, JSON string escaping) and src/log.c (level
 * names, filtering, errno and %m across a log line).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/util.h"

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

/* Sums of a fixed pattern, pinned: durable checkpoints store them
 * (src/state/ckpt_format.c), so a faster or restructured implementation
 * must keep every one of them. */
static const struct {
    size_t len;
    uint64_t sum;
} pinned_sums[] = {
    {0, 0xafdfbddb1ebfc764ULL},     {1, 0x8e4c40de1810a84eULL},
    {7, 0x318b080a208ef0e4ULL},     {8, 0x39bdaf71caf45557ULL},
    {63, 0xe297948ee534a0aaULL},    {64, 0x1cc1946642b7d53bULL},
    {65, 0xe3900e07a23bc228ULL},    {127, 0x8ea4bf5b32171b2dULL},
    {128, 0xf49c55a8f5963277ULL},   {129, 0xce550110cde7f9c7ULL},
    {1000, 0x76a2c9f6e6f3e068ULL},  {4096, 0x744fd35524b36588ULL},
    {100003, 0x08d9e7d0e221c1acULL}, {3145728, 0xf9675c0ec0214dd8ULL},
};

static uint8_t *pinned_pattern(size_t n)
{
    uint8_t *b = malloc(n);
    assert_non_null(b);
    for (size_t i = 0; i < n; i++)
        b[i] = (uint8_t)(i * 131 + (i >> 9) * 7 + 3);
    return b;
}

static void test_checksum_pinned(void **state)
{
    (void)state;
    uint8_t *b = pinned_pattern((size_t)3 << 20);
    for (size_t k = 0; k < FTI_ARRAY_SIZE(pinned_sums); k++)
        assert_int_equal(fti_checksum64(b, pinned_sums[k].len, 0x1234567ULL), pinned_sums[k].sum);
    free(b);
}

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

/* ---- number parsing ------------------------------------------------------ */

/* s parses (as a size when size is set) within [min, max] to want. */
static void expect_num(bool size, const char *s, int64_t min, int64_t max, int64_t want)
{
    int64_t v = 12345;
    char err[128] = "";
    int rc = size ? fti_parse_size(s, min, max, &v, err, sizeof(err))
                  : fti_parse_int64(s, min, max, &v, err, sizeof(err));
    if (rc != FT_SUCCESS || v != want)
        fail_msg("'%s' gave rc %d, %" PRId64 " (%s), expected %" PRId64, s, rc, v, err, want);
}

/* s is refused, *v_p untouched, with a message that quotes s and says why
 * (what, e.g. "not an integer" or "out of range") and the range. */
static void expect_bad(bool size, const char *s, int64_t min, int64_t max, const char *what)
{
    int64_t v = 12345;
    char err[160], quoted[80], range[80];
    memset(err, 0, sizeof(err));
    int rc = size ? fti_parse_size(s, min, max, &v, err, sizeof(err))
                  : fti_parse_int64(s, min, max, &v, err, sizeof(err));
    if (rc != FT_ERR_ARG)
        fail_msg("'%s' was accepted as %" PRId64 " (rc %d)", s ? s : "(null)", v, rc);
    assert_int_equal(v, 12345);
    snprintf(quoted, sizeof(quoted), "'%.60s", s ? s : "");
    snprintf(range, sizeof(range), "[%" PRId64 ", %" PRId64 "]", min, max);
    if (strstr(err, quoted) == NULL || strstr(err, what) == NULL || strstr(err, range) == NULL)
        fail_msg("message for '%s' lacks %s, '%s' or %s: %s", s, quoted, what, range, err);
}

static void test_parse_int64(void **state)
{
    (void)state;
    const int64_t lo = INT64_MIN, hi = INT64_MAX;
    expect_num(false, "0", lo, hi, 0);
    expect_num(false, "-0", lo, hi, 0);
    expect_num(false, "007", lo, hi, 7);
    expect_num(false, "-5", lo, hi, -5);
    expect_num(false, "9223372036854775807", lo, hi, INT64_MAX);
    expect_num(false, "-9223372036854775808", lo, hi, INT64_MIN);
    expect_num(false, "1", 1, 10, 1);
    expect_num(false, "10", 1, 10, 10);
    /* range, overflow included */
    expect_bad(false, "0", 1, 10, "out of range");
    expect_bad(false, "11", 1, 10, "out of range");
    expect_bad(false, "-1", 0, 10, "out of range");
    expect_bad(false, "9223372036854775808", lo, hi, "out of range");
    expect_bad(false, "-9223372036854775809", lo, hi, "out of range");
    expect_bad(false, "99999999999999999999999999", lo, hi, "out of range");
    expect_bad(false, "4294967296", 0, INT32_MAX, "out of range");
    /* syntax: the whole string, decimal digits only */
    const char *junk[] = {"",    " 1",  "1 ",  "+1",  "0x10", "1e3", "1.5", "--1", "-",
                          "12abc", "5k", "1\n", "\t1", "1_000", "٣", "99999999999999999999x"};
    for (size_t i = 0; i < FTI_ARRAY_SIZE(junk); i++)
        expect_bad(false, junk[i], lo, hi, "not an integer");
    expect_bad(false, NULL, 0, 1, "not an integer");
    /* no message buffer is fine; a small one is cut and terminated */
    int64_t v = 3;
    assert_int_equal(fti_parse_int64("x", 0, 1, &v, NULL, 0), FT_ERR_ARG);
    char tiny[8];
    memset(tiny, 'z', sizeof(tiny));
    assert_int_equal(fti_parse_int64("x", 0, 1, &v, tiny, 5), FT_ERR_ARG);
    assert_int_equal(strlen(tiny), 4);
    assert_int_equal(tiny[5], 'z');
    assert_int_equal(v, 3);
    /* a long value is quoted in part, marked as cut */
    char longv[300], err[200];
    memset(longv, '7', sizeof(longv) - 1);
    longv[sizeof(longv) - 1] = '\0';
    assert_int_equal(fti_parse_int64(longv, 0, 1, &v, err, sizeof(err)), FT_ERR_ARG);
    assert_non_null(strstr(err, "7...'"));
    assert_true(strlen(err) < 150);
}

static void test_parse_size(void **state)
{
    (void)state;
    const int64_t hi = INT64_MAX;
    expect_num(true, "0", 0, hi, 0);
    expect_num(true, "4096", 0, hi, 4096);
    const char *four_k[] = {"4k", "4K", "4kb", "4KB", "4ki", "4KiB", "4kib"};
    for (size_t i = 0; i < FTI_ARRAY_SIZE(four_k); i++)
        expect_num(true, four_k[i], 0, hi, 4096);
    expect_num(true, "3m", 0, hi, INT64_C(3) << 20);
    expect_num(true, "3MiB", 0, hi, INT64_C(3) << 20);
    expect_num(true, "1g", 0, hi, INT64_C(1) << 30);
    expect_num(true, "2G", 0, hi, INT64_C(2) << 30);
    expect_num(true, "8589934591g", 0, hi, (INT64_C(8589934591)) << 30); /* 2^63 - 2^30 */
    expect_num(true, "-1k", -2048, 0, -1024);
    expect_num(true, "1k", 1024, 1024, 1024);
    /* range and overflow, of the digits or of the product */
    expect_bad(true, "1023", 1024, hi, "out of range");
    expect_bad(true, "3g", 1024, INT64_C(2) << 30, "out of range");
    expect_bad(true, "-1k", 0, hi, "out of range");
    expect_bad(true, "8589934592g", 0, hi, "out of range"); /* 2^63 */
    expect_bad(true, "9223372036854775807k", 0, hi, "out of range");
    expect_bad(true, "-9223372036854775807g", INT64_MIN, hi, "out of range");
    expect_bad(true, "99999999999999999999", 0, hi, "out of range");
    /* syntax */
    const char *junk[] = {"",    "k",     "4t",  "4kk", "4kbb", "1.5m", "4 k", "4k ",  " 4k",
                          "4bk", "4kib5", "4b",  "4B",  "4ik",  "0x1k", "+4k", "4k\n", "4\x01"};
    for (size_t i = 0; i < FTI_ARRAY_SIZE(junk); i++)
        expect_bad(true, junk[i], 0, hi, "not a byte count");
    /* the message names the suffixes */
    char err[160];
    int64_t v;
    assert_int_equal(fti_parse_size("4t", 0, 10, &v, err, sizeof(err)), FT_ERR_ARG);
    assert_non_null(strstr(err, "suffixes k, m, g"));
}

/* ---- JSON escaping --------------------------------------------------------- */

/* s escapes to want, and the returned length is want's. */
static void expect_json(const char *s, const char *want)
{
    char out[256];
    memset(out, 'z', sizeof(out));
    size_t n = fti_json_escape(out, sizeof(out), s);
    if (strcmp(out, want) != 0 || n != strlen(want))
        fail_msg("escape of '%s' gave %s (%zu), expected %s", s ? s : "(null)", out, n, want);
    assert_int_equal(fti_json_escape(NULL, 0, s), n); /* measuring gives the same */
}

static void test_json_escape(void **state)
{
    (void)state;
    expect_json("", "\"\"");
    expect_json(NULL, "\"\"");
    expect_json("g0", "\"g0\"");
    expect_json("a\"b\\c/d", "\"a\\\"b\\\\c/d\"");
    expect_json("\b\f\n\r\t", "\"\\b\\f\\n\\r\\t\"");
    expect_json("\x01\x1f\x7f", "\"\\u0001\\u001f\\u007f\"");
    expect_json(" ~", "\" ~\"");
    /* valid UTF-8, 2, 3 and 4 bytes, and the edges of its ranges, as it is */
    const char *utf8[] = {"\xc3\xa9", "\xc2\x80", "\xdf\xbf", "\xe2\x82\xac", "\xe0\xa0\x80",
                          "\xed\x9f\xbf", "\xee\x80\x80", "\xef\xbf\xbf", "\xf0\x9f\x98\x80",
                          "\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf", "caf\xc3\xa9 \xe2\x9c\x93"};
    for (size_t i = 0; i < FTI_ARRAY_SIZE(utf8); i++) {
        char want[64];
        snprintf(want, sizeof(want), "\"%s\"", utf8[i]);
        expect_json(utf8[i], want);
    }
    /* invalid UTF-8: each byte that is not part of a valid sequence */
    expect_json("\x80", "\"\\ufffd\"");
    expect_json("\xff\xfe", "\"\\ufffd\\ufffd\"");
    expect_json("\xc0\x80", "\"\\ufffd\\ufffd\"");         /* overlong NUL */
    expect_json("\xc1\xbf", "\"\\ufffd\\ufffd\"");         /* overlong */
    expect_json("\xe0\x80\xaf", "\"\\ufffd\\ufffd\\ufffd\""); /* overlong '/' */
    expect_json("\xed\xa0\x80", "\"\\ufffd\\ufffd\\ufffd\""); /* surrogate */
    expect_json("\xf4\x90\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\""); /* > U+10FFFF */
    expect_json("\xf5\x80\x80\x80", "\"\\ufffd\\ufffd\\ufffd\\ufffd\"");
    expect_json("a\xe2\x82", "\"a\\ufffd\\ufffd\"");       /* cut at the end */
    expect_json("\xe2\x82" "A", "\"\\ufffd\\ufffdA\"");    /* cut by ASCII */
    expect_json("\xc3\"", "\"\\ufffd\\\"\"");              /* cut by a quote */
    expect_json("\xc3\xa9\xa9", "\"\xc3\xa9\\ufffd\"");    /* one continuation too many */
}

/* A literal that does not fit is cut before the first piece that does not,
 * terminated, and the return value says how much was needed. */
static void test_json_escape_cut(void **state)
{
    (void)state;
    const char *s = "ab\ncd";           /* "ab\ncd" is 9 bytes quoted */
    const char *full = "\"ab\\ncd\"";
    size_t need = strlen(full);
    for (size_t cap = 0; cap <= need + 2; cap++) {
        char out[32];
        memset(out, 'z', sizeof(out));
        assert_int_equal(fti_json_escape(cap ? out : NULL, cap, s), need);
        if (cap == 0)
            continue;
        assert_true(strlen(out) < cap);
        assert_int_equal(out[cap], 'z'); /* nothing beyond cap */
        assert_true(strncmp(out, full, strlen(out)) == 0); /* a prefix */
        if (cap > need)
            assert_string_equal(out, full);
        else /* never half an escape: a cut before "\\n" keeps "ab" */
            assert_true(strcmp(out, "\"ab\\") != 0 && out[strlen(out) ? strlen(out) - 1 : 0] != '\\');
    }
    /* once a piece does not fit, nothing after it is written either */
    char out[4];
    assert_int_equal(fti_json_escape(out, sizeof(out), "\xe2\x82\xac" "a"), 6);
    assert_string_equal(out, "\"");
}

/* Next code point of valid UTF-8 at *p (decoded arithmetically, apart from
 * the table of util.c), or -1. */
static long utf8_next(const unsigned char **p)
{
    const unsigned char *s = *p;
    int n = s[0] < 0x80 ? 1 : (s[0] >> 5) == 6 ? 2 : (s[0] >> 4) == 14 ? 3 : (s[0] >> 3) == 30 ? 4 : 0;
    if (n == 0)
        return -1;
    long cp = n == 1 ? s[0] : s[0] & (0x7f >> n);
    for (int i = 1; i < n; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return -1;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    static const long min_cp[] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[n] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return -1;
    *p = s + n;
    return cp;
}

/* Random bytes always give a valid JSON string literal: quoted, no raw
 * control character, only known escapes, valid UTF-8 throughout. */
static void test_json_escape_random(void **state)
{
    (void)state;
    static char in[200], out[200 * 6 + 3];
    for (int round = 0; round < 3000; round++) {
        size_t len = (size_t)(rng_next() % (sizeof(in) - 1));
        for (size_t i = 0; i < len; i++) {
            uint64_t r = rng_next();
            /* bias towards the interesting bytes */
            in[i] = (char)(r % 4 == 0 ? (r >> 8) % 0x20 : r % 4 == 1 ? 0x80 + (r >> 8) % 0x80
                                                                     : (r >> 8) % 0x100);
            if (in[i] == '\0')
                in[i] = 'x';
        }
        in[len] = '\0';
        size_t n = fti_json_escape(out, sizeof(out), in);
        assert_true(n < sizeof(out));
        assert_int_equal(strlen(out), n);
        assert_true(n >= 2 && out[0] == '"' && out[n - 1] == '"');
        const unsigned char *p = (const unsigned char *)out + 1, *end = p + n - 2;
        while (p < end) {
            if (*p == '\\') {
                assert_non_null(strchr("\"\\bfnrtu", p[1]));
                p += p[1] == 'u' ? 6 : 2;
                continue;
            }
            assert_true(*p >= 0x20 && *p != '"' && *p != 0x7f);
            if (utf8_next(&p) < 0)
                fail_msg("round %d: invalid UTF-8 at offset %td of %s", round,
                         (const char *)p - out, out);
        }
        assert_true(p == end);
    }
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
        cmocka_unit_test(test_checksum_pinned),
        cmocka_unit_test(test_checksum_equal_buffers),
        cmocka_unit_test(test_checksum_bit_flips_small),
        cmocka_unit_test(test_checksum_bit_flips_large),
        cmocka_unit_test(test_checksum_length_and_seed),
        cmocka_unit_test(test_checksum_chaining),
        cmocka_unit_test(test_ms_left_clamps),
        cmocka_unit_test(test_clocks),
        cmocka_unit_test(test_strlcpy),
        cmocka_unit_test(test_bsearch_str),
        cmocka_unit_test(test_parse_int64),
        cmocka_unit_test(test_parse_size),
        cmocka_unit_test(test_json_escape),
        cmocka_unit_test(test_json_escape_cut),
        cmocka_unit_test(test_json_escape_random),
        cmocka_unit_test(test_log_levels),
        cmocka_unit_test(test_log_lines),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
