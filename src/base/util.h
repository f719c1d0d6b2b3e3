/* util.h - small helpers shared by every part: clocks, deadlines, strings. */
#ifndef FTI_UTIL_H
#define FTI_UTIL_H

#include <stdbool.h>
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

/* Binary search for key in the n items of an array sorted by strcmp of
 * their keys; key_of(items, i) returns item i's key.  Returns key's index
 * with *found_p true, or where key would be inserted with *found_p false
 * (*found_p is always written). */
size_t fti_bsearch_str(const void *items, size_t n,
                       const char *(*key_of)(const void *items, size_t i), const char *key,
                       bool *found_p);

/* 64-bit checksum of a buffer (fast, word-wise; not cryptographic).
 * Equal buffers give equal sums; chaining: pass the previous sum as seed. */
uint64_t fti_checksum64(const void *buf, size_t len, uint64_t seed);

#define FTI_MIN(a, b) ((a) < (b) ? (a) : (b))
#define FTI_MAX(a, b) ((a) > (b) ? (a) : (b))
#define FTI_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
