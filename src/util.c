/* util.c - clocks, deadlines, strings, binary search, checksum (see util.h). */
#include "util.h"

#include <errno.h>
#include <string.h>
#include <time.h>

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

/* Four independent multiply-xorshift lanes over 8-byte words, so the loop
 * runs at memory speed; the tail (as zero-padded words, each step a
 * bijection so no byte is shifted out) and the length are folded in at the
 * end. */
uint64_t fti_checksum64(const void *buf, size_t len, uint64_t seed)
{
    const unsigned char *p = buf;
    const uint64_t k = 0x9E3779B97F4A7C15ULL;
    uint64_t h[4] = {seed ^ 0x243F6A8885A308D3ULL, seed ^ 0x13198A2E03707344ULL,
                     seed ^ 0xA4093822299F31D0ULL, seed ^ 0x082EFA98EC4E6C89ULL};
    size_t i = 0;
    for (; i + 32 <= len; i += 32) {
        for (int l = 0; l < 4; l++) {
            uint64_t w;
            memcpy(&w, p + i + 8 * l, 8);
            h[l] = (h[l] ^ w) * k;
            h[l] ^= h[l] >> 29;
        }
    }
    uint64_t t = 0;
    for (; i < len; i += 8) {
        uint64_t w = 0;
        memcpy(&w, p + i, len - i < 8 ? len - i : 8);
        t = (t ^ w) * k;
        t ^= t >> 29;
    }
    uint64_t r = (uint64_t)len * k;
    for (int l = 0; l < 4; l++)
        r = (r ^ h[l]) * k + (r >> 31);
    r = (r ^ t) * k;
    return r ^ (r >> 32);
}
