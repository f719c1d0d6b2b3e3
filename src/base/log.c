/* log.c - line-oriented logging to stderr (see log.h). */
#include "base/log.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "base/sizes.h"

_Atomic int fti_log_level = FTI_LOG_WARN;
struct fti_log_ctx fti_log_ctx = {-1, -1, -1};

/* The strings of the context, under ctx_mu. */
static pthread_mutex_t ctx_mu = PTHREAD_MUTEX_INITIALIZER;
static char ctx_component[FTI_LOG_COMPONENT_SIZE] = "ftmpi";
static char ctx_replica_id[FTI_REPLICA_ID_SIZE];

static const char *const level_names[] = {"none", "error", "warn", "info", "debug", "trace"};

void fti_log_init(const char *component, int level)
{
    pthread_mutex_lock(&ctx_mu);
    snprintf(ctx_component, sizeof(ctx_component), "%s", component);
    ctx_replica_id[0] = '\0';
    pthread_mutex_unlock(&ctx_mu);
    fti_log_ctx.group_rank = -1;
    fti_log_ctx.step = -1;
    fti_log_ctx.quorum_id = -1;
    if (level >= FTI_LOG_NONE && level <= FTI_LOG_TRACE)
        fti_log_level = level;
}

void fti_log_set_replica_id(const char *id)
{
    pthread_mutex_lock(&ctx_mu);
    snprintf(ctx_replica_id, sizeof(ctx_replica_id), "%s", id ? id : "");
    pthread_mutex_unlock(&ctx_mu);
}

void fti_log_get_replica_id(char *buf, size_t len)
{
    if (len == 0)
        return;
    pthread_mutex_lock(&ctx_mu);
    snprintf(buf, len, "%s", ctx_replica_id);
    pthread_mutex_unlock(&ctx_mu);
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

/* "[hh:mm:ss.mmm component level r=.. gr=.. step=.. q=.." into head. */
static void format_head(char *head, size_t size, int level)
{
    char component[FTI_LOG_COMPONENT_SIZE], replica_id[FTI_REPLICA_ID_SIZE];
    struct timespec ts;
    struct tm tm;
    int group_rank = fti_log_ctx.group_rank;
    int64_t step = fti_log_ctx.step, quorum_id = fti_log_ctx.quorum_id;

    pthread_mutex_lock(&ctx_mu);
    memcpy(component, ctx_component, sizeof(component));
    memcpy(replica_id, ctx_replica_id, sizeof(replica_id));
    pthread_mutex_unlock(&ctx_mu);
    clock_gettime(CLOCK_REALTIME, &ts);
    localtime_r(&ts.tv_sec, &tm);

    int n = snprintf(head, size, "[%02d:%02d:%02d.%03ld %s %s", tm.tm_hour, tm.tm_min, tm.tm_sec,
                     ts.tv_nsec / 1000000, component, fti_log_level_name(level));
    if (replica_id[0] && n > 0 && (size_t)n < size)
        n += snprintf(head + n, size - n, " r=%s", replica_id);
    if (group_rank >= 0 && n > 0 && (size_t)n < size)
        n += snprintf(head + n, size - n, " gr=%d", group_rank);
    if (step >= 0 && n > 0 && (size_t)n < size)
        n += snprintf(head + n, size - n, " step=%lld", (long long)step);
    if (quorum_id >= 0 && n > 0 && (size_t)n < size)
        n += snprintf(head + n, size - n, " q=%lld", (long long)quorum_id);
}

void fti_log_emit(int level, const char *file, int line, const char *fmt, ...)
{
    int saved_errno = errno; /* keep errno for %m */
    char msg[1024], head[256];
    va_list ap;

    format_head(head, sizeof(head), level);
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    errno = saved_errno;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    /* one write per line so lines of concurrent processes do not interleave */
    fprintf(stderr, "%s %s:%d] %s\n", head, base, line, msg);
    errno = saved_errno;
}
