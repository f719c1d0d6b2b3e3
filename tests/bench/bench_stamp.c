/*
 * bench_stamp.c - time stamps for the benchmark drivers (POSIX sh has no
 * sub-second clock).
 *
 *   bench_stamp          copies stdin to stdout, each line prefixed with the
 *                        wall-clock microseconds at which it was read
 *   bench_stamp --now    prints the wall-clock microseconds
 *
 * Lines are flushed one by one, so a pipe into a file stays current.
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "bench_util.h"

int main(int argc, char **argv)
{
    char line[8192];
    if (argc > 1 && !strcmp(argv[1], "--now")) {
        printf("%" PRId64 "\n", bench_wall_us());
        return 0;
    }
    if (argc > 1) {
        fprintf(stderr, "usage: bench_stamp [--now]\n");
        return 2;
    }
    while (fgets(line, sizeof(line), stdin) != NULL) {
        printf("%" PRId64 " %s", bench_wall_us(), line);
        if (strchr(line, '\n') == NULL)
            putchar('\n');
        fflush(stdout);
    }
    return 0;
}
