/*
 * proc_tree.h - ftmpi-run's command's process tree, found through /proc.
 *
 * The agent is a child subreaper (PR_SET_CHILD_SUBREAPER): whatever the
 * command leaves behind -- ranks that mpirun put in process groups of their
 * own, orphaned when mpirun is killed, say -- is re-parented to the agent
 * instead of init, so the agent's descendants are exactly what the command
 * started.  The agent signals them here before the next start.
 *
 * The agent's thread only.
 */
#ifndef FTI_PROC_TREE_H
#define FTI_PROC_TREE_H

#include <sys/types.h>

/* Sends sig (0: only counts) to every live (not zombie) descendant of
 * process self, found by one scan of /proc.  Returns how many there were. */
int fti_proc_signal_descendants(pid_t self, int sig);

#endif
