/* rank_watch.c - ftmpi-run's watch on its group's ranks (see rank_watch.h). */
#include "rank_watch.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"

static char dir[PATH_MAX] = "";

int fti_rank_watch_create(void)
{
    const char *tmp = getenv("TMPDIR"); /* not an FTMPI_ setting: where temp files go */
    snprintf(dir, sizeof(dir), "%s/ftmpi-run.XXXXXX", tmp && tmp[0] ? tmp : "/tmp");
    if (mkdtemp(dir) == NULL) {
        FTI_WARN("cannot create a folder for the ranks' marks (%s): %m; a rank's death is "
                 "noticed only when the command ends",
                 dir);
        dir[0] = '\0';
        return -1;
    }
    if (setenv("FTMPI_AGENT_DIR", dir, 1) != 0) {
        FTI_WARN("setenv(FTMPI_AGENT_DIR): %m");
        fti_rank_watch_destroy();
        return -1;
    }
    return 0;
}

/* Calls f(name) for each mark; stops at the first nonzero return. */
static long each_mark(long (*f)(const char *name))
{
    DIR *d = dir[0] ? opendir(dir) : NULL;
    struct dirent *e;
    long r = 0;
    if (d == NULL)
        return 0;
    while (r == 0 && (e = readdir(d)) != NULL)
        if (e->d_name[0] >= '1' && e->d_name[0] <= '9')
            r = f(e->d_name);
    closedir(d);
    return r;
}

static long remove_mark(const char *name)
{
    char path[PATH_MAX + 32];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    (void)unlink(path);
    return 0;
}

void fti_rank_watch_clear(void)
{
    (void)each_mark(remove_mark);
}

/* Whether pid is gone or a zombie. */
static int gone(pid_t pid)
{
    char path[64], buf[512];
    if (kill(pid, 0) != 0 && errno == ESRCH)
        return 1;
    snprintf(path, sizeof(path), "/proc/%ld/stat", (long)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return errno == ENOENT;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *p = strrchr(buf, ')'); /* "pid (comm) state ..." */
    return p != NULL && (p[2] == 'Z' || p[2] == 'X');
}

static void warn_dead(pid_t pid, const char *what_now)
{
    int wr = fti_rank_watch_world_rank(pid);
    if (wr >= 0)
        FTI_WARN("world rank %d lost: rank pid %ld ended without FT_Finalize: %s", wr, (long)pid,
                 what_now);
    else
        FTI_WARN("rank pid %ld ended without FT_Finalize: %s", (long)pid, what_now);
}

int fti_rank_watch_dead(pid_t *pids, int max, const char *what_now)
{
    DIR *d = dir[0] ? opendir(dir) : NULL;
    struct dirent *e;
    int n = 0;
    if (d == NULL)
        return 0;
    while (n < max && (e = readdir(d)) != NULL) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        long pid = strtol(e->d_name, NULL, 10);
        if (pid > 0 && pid <= INT_MAX && gone((pid_t)pid)) {
            warn_dead((pid_t)pid, what_now);
            (void)remove_mark(e->d_name);
            pids[n++] = (pid_t)pid;
        }
    }
    closedir(d);
    return n;
}

int fti_rank_watch_world_rank(pid_t pid)
{
    char path[PATH_MAX + 32], buf[32];
    snprintf(path, sizeof(path), "%s/%ld", dir, (long)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = '\0';
    char *end;
    long r = strtol(buf, &end, 10);
    return end != buf && r >= 0 && r <= INT_MAX ? (int)r : -1;
}

void fti_rank_watch_destroy(void)
{
    if (dir[0] == '\0')
        return;
    fti_rank_watch_clear();
    (void)rmdir(dir);
    dir[0] = '\0';
}
