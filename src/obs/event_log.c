/* event_log.c - JSON-lines event log (see event_log.h). */
#include "obs/event_log.h"
#include "base/error.h"
#include "control/obs_report.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/sizes.h"
#include "base/util.h"

struct fti_event_log {
    int fd;
    char path[FTI_PATH_SIZE];
    char replica_id[FTI_REPLICA_ID_SIZE];
    int group_rank;
    int failed; /* a write failed: warned once */
};

#define SB_INITIAL_CAP 256 /* bytes; a line of a few members fits */

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
    size_t cap = b->cap ? b->cap : SB_INITIAL_CAP;
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
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    sb_reserve(b, (size_t)n);
    if (b->oom)
        return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

/* Appends s as a JSON string literal (fti_json_escape). */
static void sb_json_string(struct sbuf *b, const char *s)
{
    size_t n = fti_json_escape(NULL, 0, s);
    sb_reserve(b, n);
    if (b->oom)
        return;
    b->len += fti_json_escape(b->p + b->len, n + 1, s);
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
                  ",\"changed\":%s,\"heal\":%s,\"error\":%d,\"error_name\":\"%s\"",
              replica_rank, size, quorum_ms, changed ? "true" : "false", heal ? "true" : "false",
              error, fti_error_name(error));
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
    sb_printf(&b, ",\"error\":%d,\"error_name\":\"%s\"", error, fti_error_name(error));
    line_end(l, &b);
}

void fti_event_commit(fti_event_log_h l, int64_t step, bool committed, int participants,
                      int error)
{
    struct sbuf b = {0};
    if (l == NULL)
        return;
    line_begin(l, &b, "commit", step);
    sb_printf(&b, ",\"committed\":%s,\"participants\":%d,\"error\":%d,\"error_name\":\"%s\"",
              committed ? "true" : "false", participants, error, fti_error_name(error));
    line_end(l, &b);
}

/* Appends ",\"name\":" and s as a JSON string, or null when s is NULL. */
static void sb_field_or_null(struct sbuf *b, const char *name, const char *s)
{
    sb_printf(b, ",\"%s\":", name);
    if (s != NULL)
        sb_json_string(b, s);
    else
        sb_add(b, "null", 4);
}

void fti_event_collective_failed(fti_event_log_h l, int64_t step, int64_t quorum_id,
                                 int peer_replica_rank, const char *peer_id,
                                 const char *peer_address, int error)
{
    struct sbuf b = {0};
    if (l == NULL)
        return;
    line_begin(l, &b, "collective_failed", step);
    sb_printf(&b, ",\"quorum_id\":%" PRId64, quorum_id);
    sb_field_or_null(&b, "peer", peer_id);
    sb_printf(&b, ",\"peer_replica_rank\":%d", peer_replica_rank);
    sb_field_or_null(&b, "peer_address", peer_address);
    sb_printf(&b, ",\"error\":%d,\"error_name\":\"%s\"", error, fti_error_name(error));
    line_end(l, &b);
}

void fti_event_checkpoint(fti_event_log_h l, int64_t step, const char *what, uint64_t bytes,
                          int error)
{
    struct sbuf b = {0};
    if (l == NULL)
        return;
    line_begin(l, &b, "checkpoint", step);
    sb_printf(&b, ",\"what\":");
    sb_json_string(&b, what);
    sb_printf(&b, ",\"bytes\":%" PRIu64 ",\"error\":%d,\"error_name\":\"%s\"", bytes, error,
              fti_error_name(error));
    line_end(l, &b);
}

void fti_event_recovery(fti_event_log_h l, const fti_recovery_rec_t *r)
{
    struct sbuf b = {0};
    if (l == NULL || r == NULL)
        return;
    line_begin(l, &b, "recovery", r->resumed_step);
    sb_printf(&b, ",\"seq\":%" PRIu64 ",\"kind\":\"%s\",\"failed_step\":%" PRId64
                  ",\"start_ms\":%" PRId64 ",\"end_ms\":%" PRId64 ",\"detect_ms\":%" PRId64
                  ",\"quorum_ms\":%" PRId64 ",\"slice_ms\":%" PRId64 ",\"heal_ms\":%" PRId64
                  ",\"heal_bytes\":%" PRId64 ",\"steps_lost\":%" PRId64 ",\"restart_ms\":%" PRId64
                  ",\"error_name\":",
              r->seq, r->kind == FTI_RECOVERY_RESTART ? "restart" : "survivor", r->failed_step, r->start_ms, r->end_ms,
              r->detect_ms, r->quorum_ms, r->slice_ms, r->heal_ms, r->heal_bytes, r->steps_lost,
              r->restart_ms);
    sb_json_string(&b, r->error);
    sb_field_or_null(&b, "peer", r->peer[0] ? r->peer : NULL);
    line_end(l, &b);
}

void fti_event_flight(fti_event_log_h l, int64_t step, uint64_t dump, const char *reason,
                      uint64_t seq, const char *op, uint64_t bytes, int64_t quorum_id,
                      int64_t start_ms, int64_t end_ms, const char *result)
{
    struct sbuf b = {0};
    if (l == NULL)
        return;
    line_begin(l, &b, "flight", step);
    sb_printf(&b, ",\"dump\":%" PRIu64 ",\"reason\":\"%s\",\"seq\":%" PRIu64 ",\"op\":\"%s\""
                  ",\"bytes\":%" PRIu64 ",\"quorum_id\":%" PRId64 ",\"start_ms\":%" PRId64
                  ",\"end_ms\":%" PRId64 ",\"result\":\"%s\"",
              dump, reason, seq, op, bytes, quorum_id, start_ms, end_ms, result);
    line_end(l, &b);
}

void fti_event_flight_dump(fti_event_log_h l, int64_t step, uint64_t dump, const char *reason,
                           size_t records)
{
    struct sbuf b = {0};
    if (l == NULL)
        return;
    line_begin(l, &b, "flight_dump", step);
    sb_printf(&b, ",\"dump\":%" PRIu64 ",\"reason\":\"%s\",\"records\":%zu", dump, reason,
              records);
    line_end(l, &b);
}
