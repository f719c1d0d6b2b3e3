/*
 * agent_mark.h - the rank's side of ftmpi-run's watch on its ranks
 * (tools/rank_watch.h): a file in FTMPI_AGENT_DIR, from the moment the rank
 * may be waited for until it leaves cleanly, named "<pid>@<host>" (the
 * rank's pid and its node's host name) and holding two lines: the rank's
 * world rank (-1: not known yet) and its pid space, "<boot id>:<dev>:<ino>"
 * of the kernel's boot id and /proc/self/ns/pid ("-" when not readable).
 * A file whose process is gone is a rank that died: the agent ends and
 * restarts the job -- but only for a mark of its own node (same host name
 * and same pid space): a pid means nothing on another node, and the folder
 * may be shared by several (a cluster file system, srun's environment).
 */
#ifndef FTI_AGENT_MARK_H
#define FTI_AGENT_MARK_H

#include <limits.h>
#include <stddef.h>

/* a host name as in a mark's name (HOST_NAME_MAX, its NUL) */
#define FTI_AGENT_HOST_SIZE (HOST_NAME_MAX + 1)
/* a pid space: 36-byte boot id, two numbers, separators */
#define FTI_AGENT_SPACE_SIZE 96

/* Creates (or rewrites) dir/<pid>@<host> with world_rank (-1: not known
 * yet) and the pid space; dir "" is no agent.  A failure is logged (warn;
 * info when the folder is not there: a rank on another node than its agent,
 * whose folder is on that node's own disk): the agent then notices this
 * rank's death only through its command's exit. */
void fti_agent_mark(const char *dir, int world_rank);

/* Removes this process's mark: from now on its end is no death. */
void fti_agent_unmark(const char *dir);

/* The note the drop-in's watchdog leaves in the folder when it ends the
 * job for a lost rank (mpi_shim/watch.c): "lost.<pid>" (no mark: a mark's
 * name begins with a digit), one line of text naming the lost world ranks
 * and why, written before any rank ends; the agent names them first and
 * takes the ranks that end afterwards for the job's end, not for losses
 * (tools/rank_watch.h). */
#define FTI_AGENT_NOTE_PREFIX "lost."

/* This node's host name as marks carry it (gethostname, a '/' made '_'). */
void fti_agent_host(char *buf, size_t len);

/* This process's pid space ("<boot id>:<dev>:<ino>", "-" when unknown). */
void fti_agent_pid_space(char *buf, size_t len);

/* Splits a mark's name: its pid and a pointer to its host in name.  0, or
 * -1 for a name that is no mark of this format (an older library's bare
 * "<pid>" included). */
int fti_agent_mark_parse(const char *name, long *pid, const char **host);

#endif
