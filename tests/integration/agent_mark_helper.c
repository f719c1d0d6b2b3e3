/*
 * agent_mark_helper.c - a stand-in for a rank's side of ftmpi-run's watch
 * (base/agent_mark.h) in test_rank_watch_nodes.sh: makes this process's mark
 * in DIR holding RANK and exits, leaving it (a rank that died without
 * FT_Finalize) or, with "leave", removing it first (a rank that left).
 *
 *     agent_mark_helper DIR RANK [leave]
 *
 * Prints the mark's name ("<pid>@<host>") on stdout.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/agent_mark.h"

int main(int argc, char **argv)
{
    char host[FTI_AGENT_HOST_SIZE];
    if (argc < 3) {
        fprintf(stderr, "usage: %s DIR RANK [leave]\n", argv[0]);
        return 2;
    }
    fti_agent_mark(argv[1], atoi(argv[2]));
    fti_agent_host(host, sizeof(host));
    printf("%ld@%s\n", (long)getpid(), host);
    if (argc > 3 && strcmp(argv[3], "leave") == 0)
        fti_agent_unmark(argv[1]);
    return 0;
}
