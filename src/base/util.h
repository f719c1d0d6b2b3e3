/* util.h - small helpers shared by every part: clocks, deadlines, strings,
 * strict number parsing and JSON string escaping. */
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

/* ---- numbers from text (settings, flags) ---------------------------------
 *
 * Strict: the whole string is one decimal integer, an optional '-' and then
 * digits only (no blanks, no '+', no hex or octal, no trailing junk), within
 * [min, max].  Each returns FT_SUCCESS and sets *v_p, or FT_ERR_ARG with *v_p
 * untouched and, when err is not NULL, a one-line message into err (size
 * errlen) that quotes the value and says what was expected, e.g.
 *   '12x': not an integer; expected one in [1, 100]
 * Callers put the setting's or flag's name in front of it. */
int fti_parse_int64(const char *s, int64_t min, int64_t max, int64_t *v_p, char *err,
                    size_t errlen);

/* Same for a byte count: digits with an optional binary suffix k, m or g
 * (any case; times 2^10, 2^20, 2^30), which may be followed by 'i' and then
 * 'b' ("4k", "4K", "4kb", "4KiB", "3m", "1g"). */
int fti_parse_size(const char *s, int64_t min, int64_t max, int64_t *v_p, char *err,
                   size_t errlen);

/* ---- JSON ------------------------------------------------------------------ */

/* Writes s as a JSON string literal, quotes included, into dst of size cap
 * and returns the length of the whole literal (NUL not counted), as
 * snprintf does: it fit when the result is below cap.  dst is always
 * NUL-terminated when cap > 0; a literal that does not fit is cut before the
 * first piece that does not (never inside an escape).  dst may be NULL when
 * cap is 0 (to measure).  s NULL is written as "".
 *
 * '"' and '\' are escaped; control characters (below 0x20, and 0x7f)
 * become \b \f \n \r \t or \u00XX; valid UTF-8 is copied as it is;
 * every byte that is not part of valid UTF-8 (overlong forms, surrogates,
 * above U+10FFFF, cut sequences) becomes \ufffd, so the output is valid
 * JSON for any input. */
size_t fti_json_escape(char *dst, size_t cap, const char *s);

#define FTI_MIN(a, b) ((a) < (b) ? (a) : (b))
#define FTI_MAX(a, b) ((a) > (b) ? (a) : (b))
#define FTI_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

#endif
