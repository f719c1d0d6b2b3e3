/* util.c - clocks, deadlines, strings, binary search, checksum, number
 * parsing and JSON escaping (see util.h). */
#include "base/util.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "ftmpi_errors.h"

int64_t fti_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t fti_now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int64_t fti_wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int fti_ms_left(int64_t deadline_ms)
{
    int64_t now = fti_now_ms();
    if (deadline_ms <= now) /* compared first: deadline - now may overflow */
        return 0;
    int64_t left = deadline_ms - now;
    if (left > 0x7fffffff)
        return 0x7fffffff;
    return (int)left;
}

void fti_sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

int fti_strlcpy(char *dst, const char *src, size_t n)
{
    size_t len = strlen(src);
    if (n == 0)
        return -1;
    if (len >= n) {
        memcpy(dst, src, n - 1);
        dst[n - 1] = '\0';
        return -1;
    }
    memcpy(dst, src, len + 1);
    return 0;
}

size_t fti_bsearch_str(const void *items, size_t n,
                       const char *(*key_of)(const void *items, size_t i), const char *key,
                       bool *found_p)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(key_of(items, mid), key);
        if (c == 0) {
            *found_p = true;
            return mid;
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found_p = false;
    return lo;
}

/* One multiply-xorshift step: for a fixed h it is a bijection of w, and
 * for a fixed w a bijection of h (odd multiplier, xorshift), so a change
 * in one word always changes the lane it feeds, and the lane stays
 * different through every later step. */
#define CS_K 0x9E3779B97F4A7C15ULL
#define CS_MIX(h, w) ((h) = ((h) ^ (w)) * CS_K, (h) ^= (h) >> 29)
/* one 64-byte block: a word into each of the 8 lanes h0..h7 */
#define CS_MIX8(w)                                                                         \
    do {                                                                                   \
        CS_MIX(h0, (w)[0]);                                                                \
        CS_MIX(h1, (w)[1]);                                                                \
        CS_MIX(h2, (w)[2]);                                                                \
        CS_MIX(h3, (w)[3]);                                                                \
        CS_MIX(h4, (w)[4]);                                                                \
        CS_MIX(h5, (w)[5]);                                                                \
        CS_MIX(h6, (w)[6]);                                                                \
        CS_MIX(h7, (w)[7]);                                                                \
    } while (0)

/* Eight independent lanes over 64-byte blocks (word l of a block feeds
 * lane l), in scalars the compiler keeps in registers, so the loop runs
 * near memory speed (6-9 GB/s from memory here, 20 GB/s from cache:
 * 3-4x the former four lanes in an array); the tail (as zero-padded words, each step
 * a bijection so no byte is shifted out) and the length are folded in at
 * the end with the same bijective step, so any single changed word (any
 * flipped bit) always changes the result. */
uint64_t fti_checksum64(const void *buf, size_t len, uint64_t seed)
{
    const unsigned char *p = buf;
    uint64_t h0 = seed ^ 0x243F6A8885A308D3ULL, h1 = seed ^ 0x13198A2E03707344ULL;
    uint64_t h2 = seed ^ 0xA4093822299F31D0ULL, h3 = seed ^ 0x082EFA98EC4E6C89ULL;
    uint64_t h4 = seed ^ 0x452821E638D01377ULL, h5 = seed ^ 0xBE5466CF34E90C6CULL;
    uint64_t h6 = seed ^ 0xC0AC29B7C97C50DDULL, h7 = seed ^ 0x3F84D5B5B5470917ULL;
    size_t i = 0;
    /* two blocks a turn, and a prefetch well ahead: from memory (buffers
     * larger than the caches) this runs about 1.5x the plain loop here */
    for (; i + 128 <= len; i += 128) {
#if defined(__GNUC__)
        __builtin_prefetch(p + i + 1024);
        __builtin_prefetch(p + i + 1024 + 64);
#endif
        uint64_t w[16];
        memcpy(w, p + i, 128);
        CS_MIX8(w);
        CS_MIX8(w + 8);
    }
    for (; i + 64 <= len; i += 64) {
        uint64_t w[8];
        memcpy(w, p + i, 64);
        CS_MIX8(w);
    }
    uint64_t t = 0;
    for (; i < len; i += 8) {
        uint64_t w = 0;
        memcpy(&w, p + i, len - i < 8 ? len - i : 8);
        CS_MIX(t, w);
    }
    uint64_t r = (uint64_t)len * CS_K;
    CS_MIX(r, h0);
    CS_MIX(r, h1);
    CS_MIX(r, h2);
    CS_MIX(r, h3);
    CS_MIX(r, h4);
    CS_MIX(r, h5);
    CS_MIX(r, h6);
    CS_MIX(r, h7);
    CS_MIX(r, t);
    return r ^ (r >> 32);
}

/* ---- numbers from text --------------------------------------------------- */

/* how much of a refused value a message quotes */
#define PARSE_QUOTE_MAX 64

enum parse_result { PARSE_OK, PARSE_SYNTAX, PARSE_RANGE };

/* Reads [-]digits at *pp into *v_p and moves *pp past them.  Every digit
 * is read even past an overflow, so that trailing junk is still a syntax
 * error; a value beyond int64_t is PARSE_RANGE. */
static enum parse_result parse_decimal(const char **pp, int64_t *v_p)
{
    const char *p = *pp;
    bool neg = *p == '-';
    if (neg)
        p++;
    if (*p < '0' || *p > '9')
        return PARSE_SYNTAX;
    uint64_t limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX, mag = 0;
    bool over = false;
    for (; *p >= '0' && *p <= '9'; p++) {
        unsigned d = (unsigned)(*p - '0');
        if (mag > (limit - d) / 10)
            over = true;
        else
            mag = mag * 10 + d;
    }
    *pp = p;
    if (over)
        return PARSE_RANGE;
    *v_p = !neg ? (int64_t)mag : mag == limit ? INT64_MIN : -(int64_t)mag;
    return PARSE_OK;
}

/* The binary multiplier of the size suffix at *pp (1 when there is none),
 * moving *pp past it; 0 for a letter that is no suffix. */
static int64_t parse_suffix(const char **pp)
{
    const char *p = *pp;
    int64_t mul;
    switch (*p) {
    case '\0': return 1;
    case 'k': case 'K': mul = INT64_C(1) << 10; break;
    case 'm': case 'M': mul = INT64_C(1) << 20; break;
    case 'g': case 'G': mul = INT64_C(1) << 30; break;
    default: return 0;
    }
    p++;
    if (*p == 'i' || *p == 'I')
        p++;
    if (*p == 'b' || *p == 'B')
        p++;
    *pp = p;
    return mul;
}

static enum parse_result parse_number(const char *s, bool size, int64_t *v_p)
{
    const char *p = s;
    int64_t v = 0, mul = 1;
    enum parse_result r = parse_decimal(&p, &v);
    if (r == PARSE_SYNTAX)
        return r;
    if (size && (mul = parse_suffix(&p)) == 0)
        return PARSE_SYNTAX;
    if (*p != '\0')
        return PARSE_SYNTAX;
    if (r == PARSE_RANGE || v > INT64_MAX / mul || v < INT64_MIN / mul)
        return PARSE_RANGE;
    *v_p = v * mul;
    return PARSE_OK;
}

static int parse_checked(const char *s, bool size, int64_t min, int64_t max, int64_t *v_p,
                         char *err, size_t errlen)
{
    int64_t v = 0;
    enum parse_result r = s != NULL ? parse_number(s, size, &v) : PARSE_SYNTAX;
    if (r == PARSE_OK && (v < min || v > max))
        r = PARSE_RANGE;
    if (r == PARSE_OK) {
        *v_p = v;
        return FT_SUCCESS;
    }
    if (err != NULL && errlen > 0) {
        const char *what = size ? "a byte count" : "an integer";
        s = s != NULL ? s : "";
        snprintf(err, errlen, "'%.*s%s': %s%s; expected %s in [%" PRId64 ", %" PRId64 "]%s",
                 PARSE_QUOTE_MAX, s, strlen(s) > PARSE_QUOTE_MAX ? "..." : "",
                 r == PARSE_RANGE ? "out of range" : "not ", r == PARSE_RANGE ? "" : what,
                 r == PARSE_RANGE ? what : "one", min, max, size ? " (suffixes k, m, g)" : "");
    }
    return FT_ERR_ARG;
}

int fti_parse_int64(const char *s, int64_t min, int64_t max, int64_t *v_p, char *err,
                    size_t errlen)
{
    return parse_checked(s, false, min, max, v_p, err, errlen);
}

int fti_parse_size(const char *s, int64_t min, int64_t max, int64_t *v_p, char *err,
                   size_t errlen)
{
    return parse_checked(s, true, min, max, v_p, err, errlen);
}

/* ---- JSON ------------------------------------------------------------------ */

/* Length of the valid UTF-8 sequence (2 to 4 bytes) that starts at p, or 0
 * when the bytes there are not one (RFC 3629's table: no overlong forms, no
 * surrogates, nothing above U+10FFFF).  p is NUL-terminated, and NUL is no
 * continuation byte, so this never reads past the end. */
static size_t utf8_len(const unsigned char *p)
{
    unsigned char lo = 0x80, hi = 0xBF;
    size_t n;
    if (p[0] >= 0xC2 && p[0] <= 0xDF)
        n = 2;
    else if (p[0] >= 0xE0 && p[0] <= 0xEF)
        n = 3;
    else if (p[0] >= 0xF0 && p[0] <= 0xF4)
        n = 4;
    else
        return 0;
    if (p[0] == 0xE0)
        lo = 0xA0; /* overlong below U+0800 */
    else if (p[0] == 0xED)
        hi = 0x9F; /* U+D800..U+DFFF, surrogates */
    else if (p[0] == 0xF0)
        lo = 0x90; /* overlong below U+10000 */
    else if (p[0] == 0xF4)
        hi = 0x8F; /* above U+10FFFF */
    if (p[1] < lo || p[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (p[i] < 0x80 || p[i] > 0xBF)
            return 0;
    return n;
}

/* How many bytes at p go into a JSON string as they are: 1 for printable
 * ASCII other than '"' and '\\', the sequence's length for valid UTF-8, 0
 * for what needs an escape (and for the NUL at the end). */
static size_t plain_len(const unsigned char *p)
{
    if (*p >= 0x80)
        return utf8_len(p);
    return *p >= 0x20 && *p != '"' && *p != '\\' && *p != 0x7f;
}

/* Output of fti_json_escape: pieces are copied while they fit, whole. */
struct json_out {
    char *dst;
    size_t cap, len;
    bool full;
};

static void json_put(struct json_out *o, const char *piece, size_t n)
{
    if (!o->full && o->len + n < o->cap) {
        memcpy(o->dst + o->len, piece, n);
        o->dst[o->len + n] = '\0';
    } else {
        o->full = true;
    }
    o->len += n;
}

/* The escape of control character c (below 0x20, or 0x7f) into esc[7]. */
static size_t json_control(unsigned char c, char *esc)
{
    static const char hex[] = "0123456789abcdef";
    const char *s = NULL;
    switch (c) {
    case '\b': s = "\\b"; break;
    case '\f': s = "\\f"; break;
    case '\n': s = "\\n"; break;
    case '\r': s = "\\r"; break;
    case '\t': s = "\\t"; break;
    }
    if (s != NULL) {
        memcpy(esc, s, 3);
        return 2;
    }
    memcpy(esc, "\\u00", 4);
    esc[4] = hex[c >> 4];
    esc[5] = hex[c & 0xf];
    esc[6] = '\0';
    return 6;
}

size_t fti_json_escape(char *dst, size_t cap, const char *s)
{
    struct json_out o = {dst, cap, 0, false};
    const unsigned char *p = (const unsigned char *)(s != NULL ? s : "");
    char esc[7];
    if (cap > 0)
        dst[0] = '\0';
    json_put(&o, "\"", 1);
    while (*p) {
        /* the longest run copied as it is: printable ASCII and valid UTF-8 */
        const unsigned char *run = p;
        for (size_t n; (n = plain_len(p)) > 0;)
            p += n;
        if (p > run)
            json_put(&o, (const char *)run, (size_t)(p - run));
        if (*p == '\0')
            break;
        if (*p == '"' || *p == '\\') {
            esc[0] = '\\';
            esc[1] = (char)*p;
            json_put(&o, esc, 2);
        } else if (*p < 0x20 || *p == 0x7f) {
            json_put(&o, esc, json_control(*p, esc));
        } else {
            json_put(&o, "\\ufffd", 6); /* a byte of invalid UTF-8 */
        }
        p++;
    }
    json_put(&o, "\"", 1);
    return o.len;
}
