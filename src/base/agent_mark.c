/*
 * agent_mark.c - see agent_mark.h.
 */
#define _POSIX_C_SOURCE 200809L
#include "base/agent_mark.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/log.h"
#include "base/sizes.h"

void fti_agent_host(char *buf, size_t len)
{
    if (gethostname(buf, len) != 0 || buf[0] == '\0')
        snprintf(buf, len, "-");
    buf[len - 1] = '\0';
    for (char *p = buf; *p; p++)
        if (*p == '/')
            *p = '_'; /* a file name's part */
}

void fti_agent_pid_space(char *buf, size_t len)
{
    char boot[64] = "";
    struct stat st;
    int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, boot, sizeof(boot) - 1) : -1;
    if (fd >= 0)
        close(fd);
    boot[n > 0 ? n : 0] = '\0';
    boot[strcspn(boot, "\n")] = '\0';
    if (boot[0] == '\0' || stat("/proc/self/ns/pid", &st) != 0)
        snprintf(buf, len, "-");
    else
        snprintf(buf, len, "%s:%lu:%lu", boot, (unsigned long)st.st_dev, (unsigned long)st.st_ino);
}

int fti_agent_mark_parse(const char *name, long *pid, const char **host)
{
    char *end;
    if (name[0] < '1' || name[0] > '9')
        return -1;
    errno = 0;
    long p = strtol(name, &end, 10);
    if (errno != 0 || p <= 0 || p > INT_MAX || end[0] != '@' || end[1] == '\0')
        return -1;
    *pid = p;
    *host = end + 1;
    return 0;
}

/* dir/<pid>@<host>, or with tmp dir/.<pid>@<host>.tmp: the mark is written
 * there and renamed, so that an agent never reads a mark half written (an
 * empty one looked like a mark of no known pid space) */
static void mark_path(const char *dir, char *buf, size_t len, int tmp)
{
    char host[FTI_AGENT_HOST_SIZE];
    fti_agent_host(host, sizeof(host));
    snprintf(buf, len, "%s/%s%ld@%s%s", dir, tmp ? "." : "", (long)getpid(), host,
             tmp ? ".tmp" : "");
}

void fti_agent_mark(const char *dir, int world_rank)
{
    char path[FTI_PATH_SIZE + FTI_AGENT_HOST_SIZE + 32], tmp[sizeof(path)];
    if (dir[0] == '\0')
        return;
    mark_path(dir, path, sizeof(path), 0);
    mark_path(dir, tmp, sizeof(tmp), 1);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        /* ENOENT: most often a rank on another node than its agent (the
         * folder is on the agent's node; srun passes the whole environment) */
        FTI_LOG(errno == ENOENT ? FTI_LOG_INFO : FTI_LOG_WARN,
                "FTMPI_AGENT_DIR: cannot create %s: %m (ftmpi-run will notice this rank's "
                "death only through its command)",
                path);
        return;
    }
    /* the world rank, so that the agent's line names the lost rank; the pid
     * space, so that only an agent that can judge the pid does */
    char space[FTI_AGENT_SPACE_SIZE], line[FTI_AGENT_SPACE_SIZE + 32];
    fti_agent_pid_space(space, sizeof(space));
    int n = snprintf(line, sizeof(line), "%d\n%s\n", world_rank, space);
    int ok = n > 0 && (size_t)n < sizeof(line) && write(fd, line, (size_t)n) == n;
    if (!ok)
        FTI_WARN("FTMPI_AGENT_DIR: cannot write %s: %m", tmp);
    close(fd);
    if (ok && rename(tmp, path) != 0)
        FTI_WARN("FTMPI_AGENT_DIR: cannot rename %s to %s: %m", tmp, path);
    if (!ok)
        (void)unlink(tmp);
}

void fti_agent_unmark(const char *dir)
{
    char path[FTI_PATH_SIZE + FTI_AGENT_HOST_SIZE + 32];
    if (dir[0] == '\0')
        return;
    mark_path(dir, path, sizeof(path), 0);
    (void)unlink(path);
}
