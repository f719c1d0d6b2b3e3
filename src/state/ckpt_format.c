/* ckpt_format.c - the metadata file of a checkpoint (see ckpt_format.h). */
#include "state/ckpt_format.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ftmpi_errors.h"
#include "base/util.h"

uint64_t fti_ckpt_sum_update(uint64_t sum, const void *buf, size_t len)
{
    const unsigned char *p = buf;
    for (size_t off = 0; off < len; off += FTI_CKPT_SUM_BLOCK)
        sum = fti_checksum64(p + off, FTI_MIN(FTI_CKPT_SUM_BLOCK, len - off), sum);
    return sum;
}

uint64_t fti_ckpt_sum(const void *buf, size_t len)
{
    return fti_ckpt_sum_update(0, buf, len);
}

bool fti_ckpt_name_ok(const char *name)
{
    size_t n = name ? strlen(name) : 0;
    if (n == 0 || n >= FTI_CKPT_NAME_SIZE)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = name[i];
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              strchr("_.:+-", c) != NULL))
            return false;
    }
    return true;
}

/* ---- writing ------------------------------------------------------------ */

struct tbuf {
    char *p;
    size_t len, cap;
    bool oom;
};

static void tb_printf(struct tbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void tb_printf(struct tbuf *b, const char *fmt, ...)
{
    for (int tries = 0; tries < 2 && !b->oom; tries++) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(b->p ? b->p + b->len : NULL, b->p ? b->cap - b->len : 0, fmt, ap);
        va_end(ap);
        if (n < 0) {
            b->oom = true;
            return;
        }
        if (b->p && b->len + (size_t)n < b->cap) {
            b->len += (size_t)n;
            return;
        }
        size_t cap = FTI_MAX(b->cap * 2, b->len + (size_t)n + 256);
        char *q = realloc(b->p, cap);
        if (q == NULL) {
            b->oom = true;
            return;
        }
        b->p = q;
        b->cap = cap;
    }
}

int fti_ckpt_meta_format(const fti_ckpt_meta_t *m, char **text_p, size_t *len_p)
{
    struct tbuf b = {0};
    tb_printf(&b, "%s\nstep %" PRId64 "\ngroup_size %d\n", FTI_CKPT_MAGIC, m->step, m->group_size);
    for (int g = 0; g < m->group_size; g++)
        tb_printf(&b, "file %d %" PRIu64 "\n", g, m->file_bytes[g]);
    for (size_t i = 0; i < m->n_bufs; i++) {
        const fti_ckpt_buf_t *f = &m->bufs[i];
        tb_printf(&b, "buffer %s %s %s %zu %" PRId64 "\n", f->name,
                  f->kind == FTI_CKPT_SHARD ? "shard" : "replicated", f->type, f->elem, f->global);
        for (size_t s = 0; s < f->n_shards; s++) {
            const fti_ckpt_shard_t *h = &f->shards[s];
            tb_printf(&b, "shard %d %" PRId64 " %" PRId64 " %" PRIu64 " %016" PRIx64 "\n", h->rank,
                      h->start, h->end, h->offset, h->sum);
        }
    }
    uint64_t sum = fti_checksum64(b.p, b.len, 0);
    tb_printf(&b, "end %016" PRIx64 "\n", sum);
    if (b.oom) {
        free(b.p);
        return FT_ERR_NO_MEMORY;
    }
    *text_p = b.p;
    *len_p = b.len;
    return FT_SUCCESS;
}

/* ---- parsing ------------------------------------------------------------ */

struct parser {
    fti_ckpt_meta_t *m;
    size_t cap_bufs, cap_shards;
    int files_seen;
    char *err;
    size_t errlen;
    int lineno;
};

static int perr(struct parser *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int perr(struct parser *p, const char *fmt, ...)
{
    int n = snprintf(p->err, p->errlen, "line %d: ", p->lineno);
    va_list ap;
    va_start(ap, fmt);
    if (n >= 0 && (size_t)n < p->errlen)
        vsnprintf(p->err + n, p->errlen - (size_t)n, fmt, ap);
    va_end(ap);
    return FT_ERR_BAD_MESSAGE;
}

static int parse_buffer(struct parser *p, const char *line)
{
    fti_ckpt_meta_t *m = p->m;
    char name[FTI_CKPT_NAME_SIZE], kind[16], type[FTI_CKPT_TYPE_SIZE];
    size_t elem;
    int64_t global;
    int used = 0;
    if (sscanf(line, "buffer %63s %15s %15s %zu %" SCNd64 "%n", name, kind, type, &elem, &global,
               &used) != 5 || line[used] != '\0')
        return perr(p, "bad buffer line");
    if (!fti_ckpt_name_ok(name) || elem == 0 || elem > 4096 || global < 0)
        return perr(p, "bad buffer '%s'", name);
    if ((uint64_t)global > (uint64_t)INT64_MAX / elem)
        return perr(p, "buffer '%s': %" PRId64 " elements of %zu bytes overflow", name, global,
                    elem);
    if (fti_ckpt_meta_find(m, name) != NULL)
        return perr(p, "buffer '%s' twice", name);
    if (m->n_bufs == p->cap_bufs) {
        size_t cap = p->cap_bufs ? 2 * p->cap_bufs : 8;
        fti_ckpt_buf_t *nb = realloc(m->bufs, cap * sizeof(*nb));
        if (nb == NULL)
            return FT_ERR_NO_MEMORY;
        m->bufs = nb;
        p->cap_bufs = cap;
    }
    fti_ckpt_buf_t *b = &m->bufs[m->n_bufs++];
    memset(b, 0, sizeof(*b));
    fti_strlcpy(b->name, name, sizeof(b->name));
    fti_strlcpy(b->type, type, sizeof(b->type));
    if (strcmp(kind, "shard") == 0)
        b->kind = FTI_CKPT_SHARD;
    else if (strcmp(kind, "replicated") == 0)
        b->kind = FTI_CKPT_REPLICATED;
    else
        return perr(p, "bad kind '%s'", kind);
    b->elem = elem;
    b->global = global;
    p->cap_shards = 0;
    return FT_SUCCESS;
}

static int parse_shard(struct parser *p, const char *line)
{
    fti_ckpt_meta_t *m = p->m;
    fti_ckpt_shard_t h;
    int used = 0;
    if (m->n_bufs == 0)
        return perr(p, "shard before any buffer");
    if (sscanf(line, "shard %d %" SCNd64 " %" SCNd64 " %" SCNu64 " %" SCNx64 "%n", &h.rank,
               &h.start, &h.end, &h.offset, &h.sum, &used) != 5 || line[used] != '\0')
        return perr(p, "bad shard line");
    fti_ckpt_buf_t *b = &m->bufs[m->n_bufs - 1];
    int64_t at = b->n_shards ? b->shards[b->n_shards - 1].end : 0;
    if (h.rank < 0 || h.rank >= m->group_size || h.start != at || h.end < h.start ||
        h.end > b->global)
        return perr(p, "shard [%" PRId64 ", %" PRId64 ") of '%s' does not follow on", h.start,
                    h.end, b->name);
    uint64_t bytes = (uint64_t)(h.end - h.start) * b->elem;
    if (h.offset > m->file_bytes[h.rank] || bytes > m->file_bytes[h.rank] - h.offset)
        return perr(p, "shard of '%s' lies beyond rank-%d.bin", b->name, h.rank);
    if (b->n_shards == p->cap_shards) {
        size_t cap = p->cap_shards ? 2 * p->cap_shards : 4;
        fti_ckpt_shard_t *ns = realloc(b->shards, cap * sizeof(*ns));
        if (ns == NULL)
            return FT_ERR_NO_MEMORY;
        b->shards = ns;
        p->cap_shards = cap;
    }
    b->shards[b->n_shards++] = h;
    return FT_SUCCESS;
}

static int parse_header(struct parser *p, const char *line)
{
    fti_ckpt_meta_t *m = p->m;
    int used = 0, g;
    uint64_t bytes;
    if (p->lineno == 1)
        return strcmp(line, FTI_CKPT_MAGIC) == 0 ? FT_SUCCESS : perr(p, "not a checkpoint");
    if (p->lineno == 2)
        return sscanf(line, "step %" SCNd64 "%n", &m->step, &used) == 1 && line[used] == '\0' &&
                       m->step >= 0
                   ? FT_SUCCESS
                   : perr(p, "bad step line");
    if (p->lineno == 3) {
        if (sscanf(line, "group_size %d%n", &m->group_size, &used) != 1 || line[used] != '\0' ||
            m->group_size < 1 || m->group_size > (1 << 20))
            return perr(p, "bad group_size line");
        m->file_bytes = calloc((size_t)m->group_size, sizeof(*m->file_bytes));
        return m->file_bytes ? FT_SUCCESS : FT_ERR_NO_MEMORY;
    }
    if (sscanf(line, "file %d %" SCNu64 "%n", &g, &bytes, &used) != 2 || line[used] != '\0' ||
        g != p->files_seen)
        return perr(p, "bad file line");
    m->file_bytes[p->files_seen++] = bytes;
    return FT_SUCCESS;
}

static int parse_line(struct parser *p, const char *line)
{
    if (p->lineno <= 3 || (p->files_seen < p->m->group_size && strncmp(line, "file ", 5) == 0))
        return parse_header(p, line);
    if (p->files_seen < p->m->group_size)
        return perr(p, "%d file lines missing", p->m->group_size - p->files_seen);
    if (strncmp(line, "buffer ", 7) == 0)
        return parse_buffer(p, line);
    if (strncmp(line, "shard ", 6) == 0)
        return parse_shard(p, line);
    return perr(p, "unknown record");
}

/* Every buffer is covered up to its end. */
static int check_complete(struct parser *p)
{
    for (size_t i = 0; i < p->m->n_bufs; i++) {
        const fti_ckpt_buf_t *b = &p->m->bufs[i];
        int64_t end = b->n_shards ? b->shards[b->n_shards - 1].end : 0;
        if (end != b->global)
            return perr(p, "buffer '%s' covered up to %" PRId64 " of %" PRId64, b->name, end,
                        b->global);
    }
    return FT_SUCCESS;
}

int fti_ckpt_meta_parse(const char *text, size_t len, fti_ckpt_meta_t *m, char *err, size_t errlen)
{
    struct parser p = {.m = m, .err = err, .errlen = errlen};
    char line[512];
    memset(m, 0, sizeof(*m));
    size_t at = 0;
    int rc = FT_SUCCESS;
    while (rc == FT_SUCCESS) {
        const char *nl = memchr(text + at, '\n', len - at);
        p.lineno++;
        if (nl == NULL) {
            rc = perr(&p, "no end line (torn file)");
            break;
        }
        size_t n = (size_t)(nl - (text + at));
        if (n >= sizeof(line)) {
            rc = perr(&p, "line too long");
            break;
        }
        memcpy(line, text + at, n);
        line[n] = '\0';
        if (strncmp(line, "end ", 4) == 0 && p.lineno > 3) {
            uint64_t want = 0;
            int used = 0;
            if (sscanf(line, "end %" SCNx64 "%n", &want, &used) != 1 || line[used] != '\0' ||
                nl + 1 != text + len)
                rc = perr(&p, "bad end line");
            else if (fti_checksum64(text, at, 0) != want)
                rc = perr(&p, "metadata checksum mismatch");
            else
                rc = check_complete(&p);
            break;
        }
        rc = parse_line(&p, line);
        at += n + 1;
    }
    if (rc != FT_SUCCESS)
        fti_ckpt_meta_free(m);
    return rc;
}

void fti_ckpt_meta_free(fti_ckpt_meta_t *m)
{
    if (m == NULL)
        return;
    for (size_t i = 0; i < m->n_bufs; i++)
        free(m->bufs[i].shards);
    free(m->bufs);
    free(m->file_bytes);
    memset(m, 0, sizeof(*m));
}

const fti_ckpt_buf_t *fti_ckpt_meta_find(const fti_ckpt_meta_t *m, const char *name)
{
    for (size_t i = 0; i < m->n_bufs; i++)
        if (strcmp(m->bufs[i].name, name) == 0)
            return &m->bufs[i];
    return NULL;
}

uint64_t fti_ckpt_meta_bytes(const fti_ckpt_meta_t *m)
{
    uint64_t t = 0;
    for (int g = 0; g < m->group_size; g++)
        t += m->file_bytes[g];
    return t;
}
