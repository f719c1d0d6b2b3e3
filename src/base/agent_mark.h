/*
 * agent_mark.h - the rank's side of ftmpi-run's watch on its ranks
 * (tools/rank_watch.h): a file named by the rank's pid in FTMPI_AGENT_DIR,
 * holding its world rank, from the moment the rank may be waited for until
 * it leaves cleanly.  A file whose process is gone is a rank that died:
 * the agent ends and restarts the job.
 */
#ifndef FTI_AGENT_MARK_H
#define FTI_AGENT_MARK_H

/* Creates (or rewrites) dir/<pid> with world_rank (-1: not known yet);
 * dir "" is no agent.  A failure is logged (warn): the agent then notices
 * this rank's death only through its command's exit. */
void fti_agent_mark(const char *dir, int world_rank);

/* Removes dir/<pid>: from now on this rank's end is no death. */
void fti_agent_unmark(const char *dir);

#endif
