/*
 * bench_util.h - clocks and statistics shared by the benchmark programs of
 * tests/bench (header only; no library internals).
 */
#ifndef FTI_BENCH_UTIL_H
#define FTI_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <time.h>

/* Monotonic seconds. */
static inline double bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Wall-clock microseconds since the epoch: comparable across processes. */
static inline int64_t bench_wall_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static inline int bench_cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of v[0..n) (sorts v in place); 0 when n == 0. */
static inline double bench_median(double *v, size_t n)
{
    if (n == 0)
        return 0.0;
    qsort(v, n, sizeof(*v), bench_cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Parses a byte count with an optional k/m/g suffix (powers of 1024);
 * returns 0 and sets *v_p, or -1. */
static inline int bench_parse_bytes(const char *s, size_t *v_p)
{
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s)
        return -1;
    switch (*end) {
    case 'k': case 'K': v <<= 10; end++; break;
    case 'm': case 'M': v <<= 20; end++; break;
    case 'g': case 'G': v <<= 30; end++; break;
    default: break;
    }
    if (*end != '\0')
        return -1;
    *v_p = (size_t)v;
    return 0;
}

#endif
