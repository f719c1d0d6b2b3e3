/*
 * log.h - the one set of logging macros.  Each checks the level before it
 * formats anything.  Every line carries the component, replica id, group
 * rank, step and quorum id of the log context.  Errors are logged once,
 * where they are first detected; system errors use %m (errno is preserved).
 *
 * Threads: the level and the numbers of fti_log_ctx are atomics (a plain
 * assignment is an atomic store; the macros load the level relaxed, so the
 * check stays one load), and the strings (component, replica id) are set
 * and read under a lock in log.c; any thread may set any of them while
 * others log.
 */
#ifndef FTI_LOG_H
#define FTI_LOG_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

enum fti_log_level {
    FTI_LOG_NONE = 0,
    FTI_LOG_ERROR = 1,
    FTI_LOG_WARN = 2,
    FTI_LOG_INFO = 3,
    FTI_LOG_DEBUG = 4,
    FTI_LOG_TRACE = 5
};

/* Component names longer than this are cut. */
#define FTI_LOG_COMPONENT_SIZE 16

/* Numbers printed on every line when >= 0 (-1: not applicable). */
struct fti_log_ctx {
    _Atomic int group_rank;
    _Atomic int64_t step;
    _Atomic int64_t quorum_id;
};

extern _Atomic int fti_log_level;
extern struct fti_log_ctx fti_log_ctx;

/* Sets the component name ("ftmpi", "lighthouse", ...) and the level (when
 * valid), and resets the replica id and the numbers. */
void fti_log_init(const char *component, int level);
/* Sets the replica id printed on every line ("" for none; cut to
 * FTI_REPLICA_ID_SIZE - 1 bytes). */
void fti_log_set_replica_id(const char *id);
/* Copies the replica id into buf (len bytes, cut, always terminated). */
void fti_log_get_replica_id(char *buf, size_t len);
/* Parses "error|warn|info|debug|trace|none" or 0..5; returns -1 if bad. */
int fti_log_level_parse(const char *s);
const char *fti_log_level_name(int level);

void fti_log_emit(int level, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#define FTI_LOG(_lvl, ...)                                                                 \
    do {                                                                                   \
        if ((_lvl) <= atomic_load_explicit(&fti_log_level, memory_order_relaxed))          \
            fti_log_emit((_lvl), __FILE__, __LINE__, __VA_ARGS__);                         \
    } while (0)

#define FTI_ERROR(...) FTI_LOG(FTI_LOG_ERROR, __VA_ARGS__)
#define FTI_WARN(...)  FTI_LOG(FTI_LOG_WARN, __VA_ARGS__)
#define FTI_INFO(...)  FTI_LOG(FTI_LOG_INFO, __VA_ARGS__)
#define FTI_DEBUG(...) FTI_LOG(FTI_LOG_DEBUG, __VA_ARGS__)
#define FTI_TRACE(...) FTI_LOG(FTI_LOG_TRACE, __VA_ARGS__)

#endif
