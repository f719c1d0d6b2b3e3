/*
 * fuzz_common.h - what every harness of tests/fuzz shares.
 *
 * A harness defines LLVMFuzzerTestOneInput and fuzz_generated(emit), the
 * cases it builds itself (valid messages of every type it decodes and a few
 * nasty ones).  Built two ways (tests/fuzz/Makefile.inc):
 *   make fuzz          clang -fsanitize=fuzzer,address,undefined; libFuzzer's
 *                      main runs it on tests/fuzz/corpus/<name>/
 *   -DFTI_FUZZ_REPLAY  tests/fuzz/fuzz_<name>_replay in make check
 *                      (fuzz_replay.c): every file of the corpus, then the
 *                      generated cases; `--write-seeds DIR` writes the
 *                      generated cases as corpus files instead.
 * A failed check aborts (libFuzzer reports it as a crash).
 */
#ifndef FTI_FUZZ_COMMON_H
#define FTI_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(cond)                                                                                \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);               \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

typedef void (*fuzz_emit_fn)(const uint8_t *data, size_t len);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
void fuzz_generated(fuzz_emit_fn emit);

/* A cursor over an input, for harnesses that read several fields from it:
 * past the end, every read gives zeros / empty. */
typedef struct fuzz_in {
    const uint8_t *d;
    size_t n, pos;
} fuzz_in_t;

static inline uint8_t fz_u8(fuzz_in_t *in)
{
    return in->pos < in->n ? in->d[in->pos++] : 0;
}

static inline uint16_t fz_u16(fuzz_in_t *in)
{
    uint16_t hi = fz_u8(in);
    return (uint16_t)(hi << 8 | fz_u8(in));
}

/* The next piece: a 2-byte big-endian length, then that many bytes (fewer
 * at the end of the input). */
static inline const uint8_t *fz_piece(fuzz_in_t *in, size_t *len_p)
{
    size_t want = fz_u16(in);
    size_t left = in->n - in->pos;
    size_t len = want < left ? want : left;
    const uint8_t *p = in->d + in->pos;
    in->pos += len;
    *len_p = len;
    return p;
}

/* A builder of generated inputs in the same format. */
typedef struct fuzz_out {
    uint8_t d[1 << 16];
    size_t n;
} fuzz_out_t;

static inline void fo_u8(fuzz_out_t *o, uint8_t v)
{
    if (o->n < sizeof(o->d))
        o->d[o->n++] = v;
}

static inline void fo_bytes(fuzz_out_t *o, const void *p, size_t len)
{
    for (size_t i = 0; i < len; i++)
        fo_u8(o, ((const uint8_t *)p)[i]);
}

static inline void fo_piece(fuzz_out_t *o, const void *p, size_t len)
{
    fo_u8(o, (uint8_t)(len >> 8));
    fo_u8(o, (uint8_t)len);
    fo_bytes(o, p, len);
}

#endif
