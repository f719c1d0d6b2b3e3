/*
 * test_log.c - the log context under threads (src/base/log.c): writers set
 * the replica id and the numbers while loggers print lines; every line's
 * prefix must hold values some writer set, never a mix of two (a torn
 * read of the replica id would print part of one id and part of another).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "base/sizes.h"

#define N_LOGGERS 3
#define N_LINES 4000
#define STEP_MULT 1000003 /* steps written are multiples of this */

static atomic_int stop;
static char id_a[FTI_REPLICA_ID_SIZE], id_b[FTI_REPLICA_ID_SIZE];

static void *writer(void *arg)
{
    (void)arg;
    for (int64_t i = 0; !atomic_load(&stop); i++) {
        fti_log_set_replica_id(i % 2 ? id_a : id_b);
        fti_log_ctx.step = (i % 1000) * STEP_MULT;
        fti_log_ctx.quorum_id = (i % 1000) * STEP_MULT;
        fti_log_ctx.group_rank = (int)(i % 7);
    }
    return NULL;
}

static void *logger(void *arg)
{
    int id = (int)(intptr_t)arg;
    for (int i = 0; i < N_LINES; i++)
        FTI_INFO("logger %d line %d", id, i);
    return NULL;
}

/* Checks one line: "... r=<id_a|id_b> gr=<0..6> step=<k*M> q=<k*M> ...". */
static void check_line(const char *line)
{
    const char *r = strstr(line, " r=");
    assert_non_null(r);
    r += 3;
    size_t n = strcspn(r, " ");
    int is_a = n == strlen(id_a) && strncmp(r, id_a, n) == 0;
    int is_b = n == strlen(id_b) && strncmp(r, id_b, n) == 0;
    if (!is_a && !is_b)
        fail_msg("torn replica id in: %s", line);
    long long step = -1, q = -1;
    int gr = -1;
    const char *p = strstr(line, " gr=");
    assert_non_null(p);
    assert_int_equal(sscanf(p, " gr=%d step=%lld q=%lld", &gr, &step, &q), 3);
    assert_true(gr >= 0 && gr < 7);
    assert_int_equal(step % STEP_MULT, 0);
    assert_int_equal(q % STEP_MULT, 0);
}

static void test_ctx_under_threads(void **state)
{
    (void)state;
    memset(id_a, 'a', sizeof(id_a) - 1); /* the longest id there is */
    snprintf(id_b, sizeof(id_b), "b");
    char path[] = "/tmp/test_log_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    unlink(path);
    fflush(stderr);
    int saved = dup(2);
    assert_true(saved >= 0 && dup2(fd, 2) == 2);

    fti_log_init("threads", FTI_LOG_INFO);
    fti_log_set_replica_id(id_b);
    fti_log_ctx.step = 0;
    fti_log_ctx.quorum_id = 0;
    fti_log_ctx.group_rank = 0;
    pthread_t w, l[N_LOGGERS];
    assert_int_equal(pthread_create(&w, NULL, writer, NULL), 0);
    for (int i = 0; i < N_LOGGERS; i++)
        assert_int_equal(pthread_create(&l[i], NULL, logger, (void *)(intptr_t)i), 0);
    for (int i = 0; i < N_LOGGERS; i++)
        pthread_join(l[i], NULL);
    atomic_store(&stop, 1);
    pthread_join(w, NULL);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    fti_log_init("ftmpi", FTI_LOG_WARN);

    FILE *fp = fdopen(fd, "r");
    assert_non_null(fp);
    rewind(fp);
    char line[512];
    int lines = 0;
    while (fgets(line, sizeof(line), fp)) {
        assert_non_null(strchr(line, '\n')); /* whole lines, none cut by another */
        check_line(line);
        lines++;
    }
    fclose(fp);
    assert_int_equal(lines, N_LOGGERS * N_LINES);
}

/* The level check is one relaxed load; setting the level from another
 * thread takes effect. */
static void *set_level(void *arg)
{
    fti_log_level = (int)(intptr_t)arg;
    return NULL;
}

static void test_level_across_threads(void **state)
{
    (void)state;
    pthread_t t;
    assert_int_equal(pthread_create(&t, NULL, set_level, (void *)(intptr_t)FTI_LOG_NONE), 0);
    pthread_join(t, NULL);
    assert_int_equal(fti_log_level, FTI_LOG_NONE);
    fti_log_init("ftmpi", FTI_LOG_WARN);
    assert_int_equal(fti_log_level, FTI_LOG_WARN);
    char rid[4] = "x";
    fti_log_set_replica_id("a-long-id");
    fti_log_get_replica_id(rid, sizeof(rid));
    assert_string_equal(rid, "a-l"); /* cut, terminated */
    fti_log_set_replica_id(NULL);
    fti_log_get_replica_id(rid, sizeof(rid));
    assert_string_equal(rid, "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ctx_under_threads),
        cmocka_unit_test(test_level_across_threads),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
