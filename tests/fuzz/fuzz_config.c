/*
 * fuzz_config.c - the FTMPI_* settings and the parsers under them.
 *
 * Input byte 0 picks the target, the rest feeds it:
 *   0  fti_parse_int64 (8+8 bytes of bounds, then the text)
 *   1  fti_parse_size (same)
 *   2  fti_json_escape: the output must be one valid JSON string
 *   3  fti_config_load_from: every FTMPI_* variable gets the next piece of
 *      the input (a 2-byte length then bytes; an empty piece = unset),
 *      FTMPI_TOKEN_FILE names a file holding the piece (the token reader
 *      and the key derivation run on it)
 * A parse that succeeds gives a value within its bounds; a refused one
 * leaves the output untouched and says why.
 */
#include "fuzz_common.h"

#include <stdbool.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/auth.h"
#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/settings.h"
#include "base/util.h"

static char *cstr(const uint8_t *p, size_t n)
{
    char *s = malloc(n + 1);
    CHECK(s != NULL);
    memcpy(s, p, n);
    s[n] = '\0';
    return s;
}

static void parse_number(fuzz_in_t *in, bool size)
{
    int64_t lo = 0, hi = 0, v = 12345, w;
    for (int i = 0; i < 8; i++)
        lo = (int64_t)((uint64_t)lo << 8 | fz_u8(in));
    for (int i = 0; i < 8; i++)
        hi = (int64_t)((uint64_t)hi << 8 | fz_u8(in));
    char *s = cstr(in->d + in->pos, in->n - in->pos);
    char err[256] = "";
    int rc = (size ? fti_parse_size : fti_parse_int64)(s, lo, hi, &v, err, sizeof(err));
    if (rc == FT_SUCCESS) {
        CHECK(v >= lo && v <= hi);
        /* the same text parses the same way again */
        CHECK((size ? fti_parse_size : fti_parse_int64)(s, lo, hi, &w, NULL, 0) == FT_SUCCESS);
        CHECK(w == v);
    } else {
        CHECK(v == 12345);
        CHECK(err[0] != '\0');
        CHECK(memchr(err, 0, sizeof(err)) != NULL);
    }
    free(s);
}

/* Valid UTF-8 with no control byte, quotes and backslashes escaped. */
static void check_json(const char *j, size_t n)
{
    const unsigned char *p = (const unsigned char *)j;
    CHECK(n >= 2 && p[0] == '"' && p[n - 1] == '"');
    for (size_t i = 1; i + 1 < n;) {
        unsigned c = p[i];
        CHECK(c >= 0x20 && c != 0x7f);
        if (c == '\\') {
            CHECK(i + 2 < n);
            CHECK(strchr("\"\\/bfnrtu", p[i + 1]) != NULL);
            i += p[i + 1] == 'u' ? 6 : 2;
            continue;
        }
        CHECK(c != '"');
        size_t k = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        CHECK(k > 0 && i + k < n);
        for (size_t m = 1; m < k; m++)
            CHECK((p[i + m] & 0xc0) == 0x80);
        if (k == 2)
            CHECK(c >= 0xc2);
        if (k == 3) {
            unsigned cp = (c & 0xf) << 12 | (p[i + 1] & 0x3fu) << 6 | (p[i + 2] & 0x3fu);
            CHECK(cp >= 0x800 && (cp < 0xd800 || cp > 0xdfff));
        }
        if (k == 4) {
            unsigned cp = (c & 7) << 18 | (p[i + 1] & 0x3fu) << 12 | (p[i + 2] & 0x3fu) << 6;
            CHECK(cp >= 0x10000 && cp <= 0x10ffff);
        }
        i += k;
    }
}

static void json(fuzz_in_t *in)
{
    char *s = cstr(in->d + in->pos, in->n - in->pos);
    size_t cap = 6 * strlen(s) + 3;
    char *out = malloc(cap);
    CHECK(out != NULL);
    size_t n = fti_json_escape(out, cap, s);
    CHECK(n < cap && out[n] == '\0' && strlen(out) == n);
    check_json(out, n);
    /* a short buffer: cut, still terminated, same length reported */
    char small[16];
    CHECK(fti_json_escape(small, sizeof(small), s) == n);
    CHECK(memchr(small, 0, sizeof(small)) != NULL);
    free(out);
    free(s);
}

struct env {
    char *val[128];
    char token_path[64];
};

static const char *env_get(const char *name, void *arg)
{
    struct env *e = arg;
    int i = 0;
    for (const fti_config_field_t *f = fti_config_table; f->name; f++, i++)
        if (strcmp(f->name, name) == 0)
            return i < 128 ? e->val[i] : NULL;
    return NULL;
}

static void config(fuzz_in_t *in)
{
    struct env e;
    memset(&e, 0, sizeof(e));
    int i = 0;
    for (const fti_config_field_t *f = fti_config_table; f->name && i < 128; f++, i++) {
        size_t len;
        const uint8_t *p = fz_piece(in, &len);
        if (len == 0)
            continue;
        if (strcmp(f->name, "FTMPI_TOKEN_FILE") == 0) {
            snprintf(e.token_path, sizeof(e.token_path), "/tmp/fuzz_config_token.%d",
                     (int)getpid());
            FILE *t = fopen(e.token_path, "wb");
            CHECK(t != NULL);
            CHECK(fwrite(p, 1, len, t) == len);
            fclose(t);
            chmod(e.token_path, 0600);
            e.val[i] = strdup(e.token_path);
        } else {
            e.val[i] = cstr(p, len);
        }
    }
    fti_config_t cfg, cfg2;
    char err[512] = "";
    memset(&cfg, 0x5a, sizeof(cfg));
    int rc = fti_config_load_from(&cfg, env_get, &e, err, sizeof(err));
    if (rc == FT_SUCCESS) {
        CHECK(fti_config_load_from(&cfg2, env_get, &e, err, sizeof(err)) == FT_SUCCESS);
        CHECK(memcmp(&cfg, &cfg2, sizeof(cfg)) == 0);
        for (const fti_config_field_t *f = fti_config_table; f->name; f++) {
            char buf[FTI_PATH_SIZE + 64];
            fti_config_format(&cfg, f, buf, sizeof(buf));
            CHECK(memchr(buf, 0, sizeof(buf)) != NULL);
        }
        CHECK(cfg.min_replicas >= 0 && cfg.timeout_ms >= 0);
        CHECK(memchr(cfg.lighthouse, 0, sizeof(cfg.lighthouse)) != NULL);
        CHECK(memchr(cfg.token_file, 0, sizeof(cfg.token_file)) != NULL);
        char aerr[512] = "";
        fti_auth_key_t key;
        rc = fti_auth_load_key(cfg.token_file, &key, aerr, sizeof(aerr));
        CHECK(rc == FT_SUCCESS || (rc == FT_ERR_CONFIG && aerr[0] != '\0') ||
              (rc == FT_ERR_ARG && cfg.token_file[0] == '\0'));
    } else {
        CHECK(rc == FT_ERR_CONFIG && err[0] != '\0');
        CHECK(memchr(err, 0, sizeof(err)) != NULL);
    }
    if (e.token_path[0])
        unlink(e.token_path);
    for (i = 0; i < 128; i++)
        free(e.val[i]);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_in_t in = {data, size, 0};
    fti_log_level = FTI_LOG_NONE;
    switch (fz_u8(&in) % 4) {
    case 0: parse_number(&in, false); break;
    case 1: parse_number(&in, true); break;
    case 2: json(&in); break;
    default: config(&in); break;
    }
    return 0;
}

static void emit_num(fuzz_emit_fn emit, uint8_t t, int64_t lo, int64_t hi, const char *s)
{
    fuzz_out_t o;
    o.n = 0;
    fo_u8(&o, t);
    for (int i = 7; i >= 0; i--)
        fo_u8(&o, (uint8_t)((uint64_t)lo >> (8 * i)));
    for (int i = 7; i >= 0; i--)
        fo_u8(&o, (uint8_t)((uint64_t)hi >> (8 * i)));
    fo_bytes(&o, s, strlen(s));
    emit(o.d, o.n);
}

static void emit_config(fuzz_emit_fn emit, const char *name, const char *val)
{
    fuzz_out_t o;
    o.n = 0;
    fo_u8(&o, 3);
    for (const fti_config_field_t *f = fti_config_table; f->name; f++)
        fo_piece(&o, strcmp(f->name, name) == 0 ? val : "", strcmp(f->name, name) == 0 ? strlen(val) : 0);
    emit(o.d, o.n);
}

void fuzz_generated(fuzz_emit_fn emit)
{
    static const char *nums[] = {"0", "-1", "42", " 7", "7 ", "+3", "9223372036854775807",
                                 "9223372036854775808", "-9223372036854775808", "12x", "",
                                 "4k", "4KiB", "3m", "1g", "8589934592g", "0x10", "1e3", "--1"};
    for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
        emit_num(emit, 0, INT64_MIN, INT64_MAX, nums[i]);
        emit_num(emit, 1, 0, INT64_MAX, nums[i]);
        emit_num(emit, 1, 1, 100, nums[i]);
    }
    static const char *js[] = {"plain", "a\"b\\c", "\x01\x1f\x7f", "\xc3\xa9t\xc3\xa9",
                               "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xc0\xaf", "\xed\xa0\x80",
                               "\xf4\x90\x80\x80", "\xe2\x82", "\xff\xfe"};
    for (size_t i = 0; i < sizeof(js) / sizeof(js[0]); i++) {
        fuzz_out_t o;
        o.n = 0;
        fo_u8(&o, 2);
        fo_bytes(&o, js[i], strlen(js[i]));
        emit(o.d, o.n);
    }
    int k = 0;
    for (const fti_config_field_t *f = fti_config_table; f->name; f++, k++) {
        emit_config(emit, f->name, f->dflt && f->dflt[0] ? f->dflt : "x");
        emit_config(emit, f->name, k % 2 ? "-5" : "yes");
    }
    emit_config(emit, "FTMPI_TOKEN_FILE", "  s3cret\n");
    emit_config(emit, "FTMPI_TOKEN_FILE", "\n\n");
    emit_config(emit, "FTMPI_LOG_LEVEL", "debug");
    emit_config(emit, "FTMPI_CHUNK_BYTES", "4MiB");
}
