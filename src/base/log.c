/* log.c - line-oriented logging to stderr (see log.h). */
#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

int fti_log_level = FTI_LOG_WARN;
struct fti_log_ctx fti_log_ctx = {"ftmpi", "", -1, -1, -1};

static const char *const level_names[] = {"none", "error", "warn", "info", "debug", "trace"};

void fti_log_init(const char *component, int level)
{
    snprintf(fti_log_ctx.component, sizeof(fti_log_ctx.component), "%s", component);
    fti_log_ctx.replica_id[0] = '\0';
    fti_log_ctx.group_rank = -1;
    fti_log_ctx.step = -1;
    fti_log_ctx.quorum_id = -1;
    if (level >= FTI_LOG_NONE && level <= FTI_LOG_TRACE)
        fti_log_level = level;
}

int fti_log_level_parse(const char *s)
{
    if (s == NULL || *s == '\0')
        return -1;
    for (int i = 0; i <= FTI_LOG_TRACE; i++)
        if (strcasecmp(s, level_names[i]) == 0)
            return i;
    if (strcasecmp(s, "warning") == 0)
        return FTI_LOG_WARN;
    if (s[0] >= '0' && s[0] <= '5' && s[1] == '\0')
        return s[0] - '0';
    return -1;
}

const char *fti_log_level_name(int level)
{
    if (level < FTI_LOG_NONE || level > FTI_LOG_TRACE)
        return "?";
    return level_names[level];
}

void fti_log_emit(int level, const char *file, int line, const char *fmt, ...)
{
    int saved_errno = errno; /* keep errno for %m */
    char msg[1024], head[256];
    struct timespec ts;
    struct tm tm;
    va_list ap;

    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;

    int n = snprintf(head, sizeof(head), "[%02d:%02d:%02d.%03ld %s %s", tm.tm_hour, tm.tm_min,
                     tm.tm_sec, ts.tv_nsec / 1000000, fti_log_ctx.component,
                     fti_log_level_name(level));
    if (fti_log_ctx.replica_id[0] && n > 0 && (size_t)n < sizeof(head))
        n += snprintf(head + n, sizeof(head) - n, " r=%s", fti_log_ctx.replica_id);
    if (fti_log_ctx.group_rank >= 0 && n > 0 && (size_t)n < sizeof(head))
        n += snprintf(head + n, sizeof(head) - n, " gr=%d", fti_log_ctx.group_rank);
    if (fti_log_ctx.step >= 0 && n > 0 && (size_t)n < sizeof(head))
        n += snprintf(head + n, sizeof(head) - n, " step=%lld", (long long)fti_log_ctx.step);
    if (fti_log_ctx.quorum_id >= 0 && n > 0 && (size_t)n < sizeof(head))
        n += snprintf(head + n, sizeof(head) - n, " q=%lld", (long long)fti_log_ctx.quorum_id);

    errno = saved_errno;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* one write per line so lines of concurrent processes do not interleave */
    fprintf(stderr, "%s %s:%d] %s\n", head, base, line, msg);
    errno = saved_errno;
}
