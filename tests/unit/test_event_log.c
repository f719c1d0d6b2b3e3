/*
 * test_event_log.c - the JSON-lines event log (src/obs/event_log.c): the lines
 * written for quorum, heal and commit events, strings escaped through
 * fti_json_escape (tested itself in test_util.c), long lines whole.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "obs/event_log.h"
#include "ftmpi.h"

static char *read_all(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    static char buf[65536];
    size_t n = fread(buf, 1, sizeof(buf) - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

/* Creates a file from the mkstemp template path (the test unlinks it). */
static void make_file(char *path)
{
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
}

static void test_lines(void **state)
{
    (void)state;
    char path[] = "/tmp/test_event_log.XXXXXX";
    make_file(path);

    fti_event_log_h log = NULL;
    assert_int_equal(fti_event_log_open(path, "g\"0", 2, &log), FT_SUCCESS);
    const char *members[] = {"g0", "g1"};
    fti_event_quorum(log, 7, 3, members, 2, 1, 2, 12, true, false, 0);
    fti_event_heal(log, 0, 7, 4096, 5, "127.0.0.1:5000", 0);
    fti_event_commit(log, 7, false, 2, FT_ERR_TIMEOUT);
    fti_event_collective_failed(log, 7, 3, 1, "g1", "127.0.0.1:6000", FT_ERR_PROC_FAILED);
    fti_event_collective_failed(log, 7, 3, -1, NULL, NULL, FT_ERR_TIMEOUT);
    fti_event_quorum(NULL, 7, 3, members, 2, 1, 2, 12, true, false, 0); /* no-op */
    fti_event_log_close(log);

    char *text = read_all(path);
    unlink(path);
    /* five lines, one per event */
    int lines = 0;
    for (char *p = text; *p; p++)
        lines += *p == '\n';
    assert_int_equal(lines, 5);
    char *l1 = text, *l2 = strchr(l1, '\n') + 1, *l3 = strchr(l2, '\n') + 1;
    char *l4 = strchr(l3, '\n') + 1, *l5 = strchr(l4, '\n') + 1;
    assert_non_null(strstr(l4, "\"event\":\"collective_failed\""));
    assert_non_null(strstr(l4, "\"quorum_id\":3,\"peer\":\"g1\",\"peer_replica_rank\":1,"
                               "\"peer_address\":\"127.0.0.1:6000\",\"error\":-20,"
                               "\"error_name\":\"FT_ERR_PROC_FAILED\"}\n"));
    assert_non_null(strstr(l5, "\"peer\":null,\"peer_replica_rank\":-1,\"peer_address\":null,"));
    assert_true(strncmp(l1, "{\"ts_ms\":", 9) == 0);
    assert_non_null(strstr(l1, "\"event\":\"quorum\",\"replica_id\":\"g\\\"0\",\"group_rank\":2,"
                               "\"step\":7,\"quorum_id\":3,\"members\":[\"g0\",\"g1\"],"
                               "\"replica_rank\":1,\"size\":2,\"quorum_ms\":12,"
                               "\"changed\":true,\"heal\":false,\"error\":0,\"error_name\":\"FT_SUCCESS\"}\n"));
    assert_non_null(strstr(l2, "\"event\":\"heal\""));
    assert_non_null(strstr(l2, "\"max_step\":7,\"bytes\":4096,\"heal_ms\":5,"
                               "\"source\":\"127.0.0.1:5000\",\"error\":0,\"error_name\":\"FT_SUCCESS\"}"));
    assert_non_null(strstr(l3, "\"event\":\"commit\""));
    assert_non_null(strstr(l3, "\"committed\":false,\"participants\":2,\"error\":-21,\"error_name\":\"FT_ERR_TIMEOUT\"}"));
}

/* Escapes reach the file, and a line far longer than any fixed buffer (a
 * quorum of many members with long ids) is written whole, as one line. */
static void test_escapes_and_long_line(void **state)
{
    (void)state;
    char path[] = "/tmp/test_event_log.XXXXXX";
    make_file(path);

    enum { N = 100 };
    static char ids[N][64];
    const char *members[N];
    for (int i = 0; i < N; i++) {
        memset(ids[i], 'm', sizeof(ids[i]) - 1);
        snprintf(ids[i], sizeof(ids[i]), "%03d", i); /* ends at 3 characters */
        ids[i][3] = 'm';
        members[i] = ids[i];
    }
    fti_event_log_h log = NULL;
    assert_int_equal(fti_event_log_open(path, "g\\1", 0, &log), FT_SUCCESS);
    fti_event_quorum(log, 1, 2, members, N, 0, N, 3, false, false, 0);
    fti_event_heal(log, 1, 2, 0, 0, "h\xc3\xa9\n\x01\xff", 0);
    fti_event_log_close(log);

    char *text = read_all(path);
    unlink(path);
    char *l2 = strchr(text, '\n');
    assert_non_null(l2);
    *l2++ = '\0';
    assert_true(strlen(text) > (size_t)N * 63);
    assert_non_null(strstr(text, "\"replica_id\":\"g\\\\1\""));
    assert_non_null(strstr(text, "\"099mmmm"));
    assert_non_null(strstr(text, "\"],\"replica_rank\":0,\"size\":100,"));
    assert_non_null(strstr(text, "\"error\":0,\"error_name\":\"FT_SUCCESS\"}"));
    /* UTF-8 as it is, control characters and a stray byte escaped */
    assert_non_null(strstr(l2, "\"source\":\"h\xc3\xa9\\n\\u0001\\ufffd\""));
}

static void test_open_fails(void **state)
{
    (void)state;
    fti_event_log_h log = NULL;
    assert_int_equal(fti_event_log_open("/nonexistent-dir/x/events.jsonl", "g0", 0, &log),
                     FT_ERR_CONFIG);
    assert_null(log);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lines),
        cmocka_unit_test(test_escapes_and_long_line),
        cmocka_unit_test(test_open_fails),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
