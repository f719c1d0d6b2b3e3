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

#include "base/agent_mark.h"
#include "base/log.h"

static char dir[PATH_MAX] = "";
static char host[FTI_AGENT_HOST_SIZE];     /* this node's, as marks carry it */
static char space[FTI_AGENT_SPACE_SIZE];   /* this agent's pid space (agent_mark.h) */
static int told_old;                       /* a mark without host was logged */
static int ended;                          /* a note said the job was ended (agent_mark.h) */

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
    fti_agent_host(host, sizeof(host));
    fti_agent_pid_space(space, sizeof(space));
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
    ended = 0;
    (void)each_mark(remove_mark);
    /* a mark a rank was writing when it died (agent_mark.c writes
     * .<pid>@<host>.tmp, then renames it) */
    DIR *d = dir[0] ? opendir(dir) : NULL;
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        size_t n = strlen(e->d_name);
        if ((e->d_name[0] == '.' && n > 5 && strcmp(e->d_name + n - 4, ".tmp") == 0) ||
            strncmp(e->d_name, FTI_AGENT_NOTE_PREFIX, strlen(FTI_AGENT_NOTE_PREFIX)) == 0)
            (void)remove_mark(e->d_name);
    }
    if (d != NULL)
        closedir(d);
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

/* Reads a mark's two lines: its world rank (-1 when none) into *wr and
 * whether its pid space is this agent's (a mark without one: yes).  0, or
 * -1 when the mark cannot be read (gone meanwhile: the rank left). */
static int read_mark(const char *name, int *wr, int *ours)
{
    char path[PATH_MAX + FTI_AGENT_HOST_SIZE + 32], buf[FTI_AGENT_SPACE_SIZE + 32];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    buf[n > 0 ? n : 0] = '\0';
    char *end, *nl = strchr(buf, '\n');
    long r = strtol(buf, &end, 10);
    *wr = end != buf && r >= 0 && r <= INT_MAX ? (int)r : -1;
    if (nl == NULL || nl[1] == '\0') {
        *ours = 0; /* not a whole mark (none is written in place): not judged */
        return 0;
    }
    if (strncmp(nl + 1, "-\n", 2) == 0 || space[0] == '-') {
        *ours = 1; /* no pid space known on one side: the host name decides */
        return 0;
    }
    size_t len = strlen(space);
    *ours = strncmp(nl + 1, space, len) == 0 && nl[1 + len] == '\n';
    return 0;
}

/* Whether the mark name is of a rank of this node whose process is gone:
 * then its pid in *pid and its world rank in *wr.  A mark of another node
 * (host name or pid space) is never judged: its pid means nothing here. */
static int dead_here(const char *name, pid_t *pid, int *wr)
{
    long p;
    const char *h;
    int ours;
    if (fti_agent_mark_parse(name, &p, &h) != 0) {
        if (!told_old)
            FTI_WARN("FTMPI_AGENT_DIR: mark '%s' names no host (a libftmpi older than this "
                     "ftmpi-run?): not watched; that rank's death ends the run through its "
                     "command only",
                     name);
        told_old = 1;
        return 0;
    }
    if (strcmp(h, host) != 0 || !gone((pid_t)p))
        return 0;
    if (read_mark(name, wr, &ours) != 0 || !ours)
        return 0;
    *pid = (pid_t)p;
    return 1;
}

int fti_rank_watch_dead(pid_t *pids, int max, const char *what_now)
{
    DIR *d = dir[0] ? opendir(dir) : NULL;
    struct dirent *e;
    int n = 0, wr = -1;
    pid_t pid;
    if (d == NULL)
        return 0;
    while (n < max && (e = readdir(d)) != NULL) {
        if (e->d_name[0] < '1' || e->d_name[0] > '9' || !dead_here(e->d_name, &pid, &wr))
            continue;
        if (ended && wr >= 0)
            FTI_INFO("world rank %d (rank pid %ld) ended with the job: %s", wr, (long)pid,
                     what_now);
        else if (ended)
            FTI_INFO("rank pid %ld ended with the job: %s", (long)pid, what_now);
        else if (wr >= 0)
            FTI_WARN("world rank %d lost: rank pid %ld ended without FT_Finalize: %s", wr,
                     (long)pid, what_now);
        else
            FTI_WARN("rank pid %ld ended without FT_Finalize: %s", (long)pid, what_now);
        (void)remove_mark(e->d_name);
        pids[n++] = pid;
    }
    closedir(d);
    return n;
}

int fti_rank_watch_notes(void)
{
    DIR *d = dir[0] ? opendir(dir) : NULL;
    struct dirent *e;
    int n = 0;
    size_t plen = strlen(FTI_AGENT_NOTE_PREFIX);
    if (d == NULL)
        return 0;
    while ((e = readdir(d)) != NULL) {
        char path[PATH_MAX + 300], text[1400];
        if (strncmp(e->d_name, FTI_AGENT_NOTE_PREFIX, plen) != 0)
            continue;
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
        ssize_t got = fd >= 0 ? read(fd, text, sizeof(text) - 1) : -1;
        if (fd >= 0)
            close(fd);
        text[got > 0 ? got : 0] = '\0';
        text[strcspn(text, "\n")] = '\0';
        for (char *c = text; *c; c++) /* a line of the log: printable only */
            if ((unsigned char)*c < ' ' || (unsigned char)*c > '~')
                *c = '?';
        if (!ended)
            FTI_WARN("%s (the drop-in's watchdog, %s)", text[0] ? text : "a rank lost", e->d_name);
        (void)unlink(path);
        ended = 1;
        n++;
    }
    closedir(d);
    return n;
}

void fti_rank_watch_destroy(void)
{
    if (dir[0] == '\0')
        return;
    fti_rank_watch_clear();
    (void)rmdir(dir);
    dir[0] = '\0';
}
