/*
 * log.h - the one set of logging macros.  Each checks the level before it
 * formats anything.  Every line carries the component, replica id, group
 * rank, step and quorum id of fti_log_ctx.  Errors are logged once, where
 * they are first detected; system errors use %m (errno is preserved).
 */
#ifndef FTI_LOG_H
#define FTI_LOG_H

#include <stdint.h>

enum fti_log_level {
    FTI_LOG_NONE = 0,
    FTI_LOG_ERROR = 1,
    FTI_LOG_WARN = 2,
    FTI_LOG_INFO = 3,
    FTI_LOG_DEBUG = 4,
    FTI_LOG_TRACE = 5
};

/* Context printed on every line; written by the owning thread of the step
 * (the application thread), read racily by others (fine for logs). */
struct fti_log_ctx {
    char component[16];  /* "ftmpi", "lighthouse", "agent", ... */
    char replica_id[64];
    int group_rank;      /* -1 when not applicable */
    int64_t step;        /* -1 when not applicable */
    int64_t quorum_id;   /* -1 when not applicable */
};

extern int fti_log_level;
extern struct fti_log_ctx fti_log_ctx;

/* Sets the component name and resets the context fields. */
void fti_log_init(const char *component, int level);
/* Parses "error|warn|info|debug|trace|none" or 0..5; returns -1 if bad. */
int fti_log_level_parse(const char *s);
const char *fti_log_level_name(int level);

void fti_log_emit(int level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define FTI_LOG(_lvl, ...)                                                   \
    do {                                                                     \
        if ((_lvl) <= fti_log_level)                                         \
            fti_log_emit((_lvl), __FILE__, __LINE__, __VA_ARGS__);           \
    } while (0)

#define FTI_ERROR(...) FTI_LOG(FTI_LOG_ERROR, __VA_ARGS__)
#define FTI_WARN(...)  FTI_LOG(FTI_LOG_WARN, __VA_ARGS__)
#define FTI_INFO(...)  FTI_LOG(FTI_LOG_INFO, __VA_ARGS__)
#define FTI_DEBUG(...) FTI_LOG(FTI_LOG_DEBUG, __VA_ARGS__)
#define FTI_TRACE(...) FTI_LOG(FTI_LOG_TRACE, __VA_ARGS__)

#endif
