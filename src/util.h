/* util.h - small helpers shared by every part: clocks, deadlines, strings. */
#ifndef FTI_UTIL_H
#define FTI_UTIL_H

#include <stddef.h>
#include <stdint.h>

/* Monotonic milliseconds / microseconds. */
int64_t fti_now_ms(void);
int64_t fti_now_us(void);
/* Wall-clock milliseconds since the epoch (for dashboards only). */
int64_t fti_wall_ms(void);

/* Milliseconds left until deadline_ms (monotonic), never below 0. */
int fti_ms_left(int64_t deadline_ms);

/* Sleeps ms milliseconds, restarting after signals. */
void fti_sleep_ms(int ms);

/* Copies src into dst of size n, always terminating; returns 0 or -1 if
 * src was truncated. */
int fti_strlcpy(char *dst, const char *src, size_t n);

/* 64-bit checksum of a buffer (fast, word-wise; not cryptographic).
 * Equal buffers give equal sums; chaining: pass the previous sum as seed. */
uint64_t fti_checksum64(const void *buf, size_t len, uint64_t seed);

#define FTI_MIN(a, b) ((a) < (b) ? (a) : (b))
#define FTI_MAX(a, b) ((a) > (b) ? (a) : (b))
#define FTI_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
