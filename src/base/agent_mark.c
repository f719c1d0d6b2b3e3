/*
 * agent_mark.c - see agent_mark.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "base/agent_mark.h"

#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>

#include "base/log.h"
#include "base/sizes.h"

static void mark_path(const char *dir, char *buf, size_t len)
{
    snprintf(buf, len, "%s/%ld", dir, (long)getpid());
}

void fti_agent_mark(const char *dir, int world_rank)
{
    char path[FTI_PATH_SIZE + 32];
    if (dir[0] == '\0')
        return;
    mark_path(dir, path, sizeof(path));
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        FTI_WARN("FTMPI_AGENT_DIR: cannot create %s: %m (ftmpi-run will notice this rank's "
                 "death only through its command)",
                 path);
        return;
    }
    /* the world rank, so that the agent's line names the lost rank */
    char line[32];
    int n = snprintf(line, sizeof(line), "%d\n", world_rank);
    if (n > 0 && write(fd, line, (size_t)n) != n)
        FTI_WARN("FTMPI_AGENT_DIR: cannot write %s: %m", path);
    close(fd);
}

void fti_agent_unmark(const char *dir)
{
    char path[FTI_PATH_SIZE + 32];
    if (dir[0] == '\0')
        return;
    mark_path(dir, path, sizeof(path));
    (void)unlink(path);
}
