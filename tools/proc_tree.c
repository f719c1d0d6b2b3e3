/* proc_tree.c - ftmpi-run's view of its command's process tree through
 * /proc (proc_tree.h). */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "proc_tree.h"

struct proc_ent {
    pid_t pid;
    pid_t ppid;
    char state;
    char mark; /* a descendant of the agent */
};

static int proc_cmp(const void *x, const void *y)
{
    const struct proc_ent *a = x, *b = y;
    return (a->pid > b->pid) - (a->pid < b->pid);
}

/* Reads pid, ppid and state of every process into *list_p, sorted by pid
 * (release with free()).  Returns the count, or -1 when /proc is unreadable. */
static int proc_scan(struct proc_ent **list_p)
{
    DIR *d = opendir("/proc");
    struct dirent *e;
    struct proc_ent *list = NULL;
    int n = 0, cap = 0;

    if (d == NULL)
        return -1;
    while ((e = readdir(d)) != NULL) {
        char path[300], buf[512];
        long ppid;
        char state;
        if (e->d_name[0] < '1' || e->d_name[0] > '9')
            continue;
        snprintf(path, sizeof(path), "/proc/%s/stat", e->d_name);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue; /* gone meanwhile */
        ssize_t r = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (r <= 0)
            continue;
        buf[r] = '\0';
        /* "pid (comm) state ppid ...": comm may hold spaces and ')' */
        char *p = strrchr(buf, ')');
        if (p == NULL || sscanf(p + 1, " %c %ld", &state, &ppid) != 2)
            continue;
        if (n == cap) {
            int ncap = cap ? 2 * cap : 256;
            struct proc_ent *nl = realloc(list, (size_t)ncap * sizeof(*nl));
            if (nl == NULL)
                break;
            list = nl;
            cap = ncap;
        }
        list[n].pid = (pid_t)atol(e->d_name);
        list[n].ppid = (pid_t)ppid;
        list[n].state = state;
        list[n].mark = 0;
        n++;
    }
    closedir(d);
    if (n > 0)
        qsort(list, (size_t)n, sizeof(*list), proc_cmp);
    *list_p = list;
    return n;
}

/* Sends sig (0: only counts) to every live descendant of process self.
 * Returns how many there were. */
int fti_proc_signal_descendants(pid_t self, int sig)
{
    struct proc_ent *list = NULL;
    int n = proc_scan(&list), count = 0, changed = 1;

    /* mark down the tree: one pass per level */
    while (changed) {
        changed = 0;
        for (int i = 0; i < n; i++) {
            if (list[i].mark)
                continue;
            struct proc_ent key = {.pid = list[i].ppid};
            struct proc_ent *parent = bsearch(&key, list, (size_t)n, sizeof(*list), proc_cmp);
            if (list[i].ppid == self || (parent != NULL && parent->mark)) {
                list[i].mark = 1;
                changed = 1;
            }
        }
    }
    for (int i = 0; i < n; i++) {
        if (!list[i].mark || list[i].state == 'Z' || list[i].state == 'X')
            continue;
        if (sig == 0 || kill(list[i].pid, sig) == 0)
            count++;
    }
    free(list);
    return count;
}
