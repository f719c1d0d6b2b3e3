/*
 * node_init.c - PID 1 of a node of the harness (tests/nodes/nodes_lib.sh):
 * runs its command as a child and reaps every process of the node's pid
 * namespace until that command ends, then exits with its status (which
 * ends the namespace: the kernel kills what is left).  An init that does
 * not reap would keep a killed rank's orphans as zombies for the node's
 * whole life.  SIGKILL to it from outside is the loss of the whole node.
 *
 *     node_init command [args...]
 */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: %s command [args...]\n", argv[0]);
        return 2;
    }
    pid_t child = fork();
    if (child < 0) {
        perror("node_init: fork");
        return 1;
    }
    if (child == 0) {
        execvp(argv[1], argv + 1);
        perror("node_init: exec");
        _exit(127);
    }
    for (;;) {
        int st;
        pid_t p = waitpid(-1, &st, 0);
        if (p < 0 && errno == EINTR)
            continue;
        if (p < 0)
            return 1;
        if (p == child)
            return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
    }
}
