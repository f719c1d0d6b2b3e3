/* event_log.c - JSON-lines event log (see event_log.h). */
#include "event_log.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftmpi.h"
#include "log.h"
#include "util.h"

struct fti_event_log {
    int fd;
    char path[256];
    char replica_id[64];
    int group_rank;
    int failed; /* a write failed: warned once */
};

/* A growing string; oom set when an allocation failed. */
struct sbuf {
    char *p;
    size_t len, cap;
    int oom;
};

static void sb_reserve(struct sbuf *b, size_t more)
{
    if (b->oom || b->len + more + 1 <= b->cap)
        return;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more + 1)
        cap *= 2;
    char *p = realloc(b->p, cap);
    if (p == NULL) {
        b->oom = 1;
        return;
    }
    b->p = p;
    b->cap = cap;
}

static void sb_add(struct sbuf *b, const char *s, size_t n)
{
    sb_reserve(b, n);
    if (b->oom)
        return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

static void sb_printf(struct sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void sb_printf(struct sbuf *b, const char *fmt, ...)
{
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    sb_add(b, tmp, (size_t)n < sizeof(tmp) ? (size_t)n : sizeof(tmp) - 1);
}

static void sb_json_string(struct sbuf *b, const char *s)
{
    static const char hex[] = "0123456789abcdef";
    sb_add(b, "\"", 1);
    for (const unsigned char *c = (const unsigned char *)(s ? s : ""); *c; c++) {
        char esc[8];
        switch (*c) {
        case '"': sb_add(b, "\\\"", 2); break;
        case '\\': sb_add(b, "\\\\", 2); break;
        case '\n': sb_add(b, "\\n", 2); break;
        case '\r': sb_add(b, "\\r", 2); break;
        case '\t': sb_add(b, "\\t", 2); break;
        default:
            if (*c < 0x20) {
                memcpy(esc, "\\u00", 4);
                esc[4] = hex[*c >> 4];
                esc[5] = hex[*c & 0xf];
                sb_add(b, esc, 6);
            } else {
                sb_add(b, (const char *)c, 1);
            }
        }
    }
    sb_add(b, "\"", 1);
}

int fti_json_append_string(char *buf, size_t len, const char *s)
{
    struct sbuf b = {0};
    size_t used = strnlen(buf, len);
    sb_json_string(&b, s);
    if (b.oom || used + b.len + 1 > len) {
        free(b.p);
        return -1;
    }
    memcpy(buf + used, b.p, b.len + 1);
    free(b.p);
    return 0;
}

int fti_event_log_open(const char *path, const char *replica_id, int group_rank,
                       fti_event_log_h *log_p)
{
    struct fti_event_log *l = calloc(1, sizeof(*l));
    if (l == NULL)
        return FT_ERR_NO_MEMORY;
    l->fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (l->fd < 0) {
        FTI_ERROR("FTMPI_EVENT_LOG='%s': cannot open it: %m", path);
        free(l);
        return FT_ERR_CONFIG;
    }
    fti_strlcpy(l->path, path, sizeof(l->path));
    fti_strlcpy(l->replica_id, replica_id, sizeof(l->replica_id));
    l->group_rank = group_rank;
    *log_p = l;
    return FT_SUCCESS;
}

void fti_event_log_close(fti_event_log_h l)
{
    if (l == NULL)
        return;
    close(l->fd);
    free(l);
}

static void line_begin(struct fti_event_log *l, struct sbuf *b, const char *event, int64_t step)
{
    sb_printf(b, "{\"ts_ms\":%" PRId64 ",\"event\":", fti_wall_ms());
    sb_json_string(b, event);
    sb_add(b, ",\"replica_id\":", 14);
    sb_json_string(b, l->replica_id);
    sb_printf(b, ",\"group_rank\":%d,\"step\":%" PRId64, l->group_rank, step);
}

static void line_end(struct fti_event_log *l, struct sbuf *b)
{
    sb_add(b, "}\n", 2);
    if (!b->oom) {
        ssize_t n;
        do
            n = write(l->fd, b->p, b->len);
        while (n < 0 && errno == EINTR);
        if ((n < 0 || (size_t)n != b->len) && !l->failed) {
            l->failed = 1;
            FTI_WARN("event log %s: write failed: %m", l->path);
        }
    }
    free(b->p);
}

void fti_event_quorum(fti_event_log_h l, int64_t step, int64_t quorum_id,
                      const char *const *members, size_t n_members, int replica_rank, int size,
                      int64_t quorum_ms, bool changed, bool heal, int error)
{
    struct sbuf b = {0};
    if (l == NULL)
        return;
    line_begin(l, &b, "quorum", step);
    sb_printf(&b, ",\"quorum_id\":%" PRId64 ",\"members\":[", quorum_id);
    for (size_t i = 0; i < n_members; i++) {
        if (i > 0)
            sb_add(&b, ",", 1);
        sb_json_string(&b, members[i]);
    }
    sb_printf(&b, "],\"replica_rank\":%d,\"size\":%d,\"quorum_ms\":%" PRId64
                  ",\"changed\":%s,\"heal\":%s,\"error\":%d",
              replica_rank, size, quorum_ms, changed ? "true" : "false", heal ? "true" : "false",
              error);
    line_end(l, &b);
}

void fti_event_heal(fti_event_log_h l, int64_t step, int64_t max_step, uint64_t bytes,
                    int64_t heal_ms, const char *source, int error)
{
    struct sbuf b = {0};
    if (l == NULL)
        return;
    line_begin(l, &b, "heal", step);
    sb_printf(&b, ",\"max_step\":%" PRId64 ",\"bytes\":%" PRIu64 ",\"heal_ms\":%" PRId64
                  ",\"source\":",
              max_step, bytes, heal_ms);
    sb_json_string(&b, source);
    sb_printf(&b, ",\"error\":%d", error);
    line_end(l, &b);
}

void fti_event_commit(fti_event_log_h l, int64_t step, bool committed, int participants,
                      int error)
{
    struct sbuf b = {0};
    if (l == NULL)
        return;
    line_begin(l, &b, "commit", step);
    sb_printf(&b, ",\"committed\":%s,\"participants\":%d,\"error\":%d",
              committed ? "true" : "false", participants, error);
    line_end(l, &b);
}
