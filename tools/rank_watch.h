/*
 * rank_watch.h - ftmpi-run's watch on its group's ranks (FTMPI_AGENT_DIR).
 *
 * The agent makes a private folder and passes it to the command as
 * FTMPI_AGENT_DIR; every rank of the group keeps a mark there from FT_Init
 * (the drop-in: before MPI_Init) to FT_Finalize, named by its pid and host
 * (base/agent_mark.h).  A mark of this node (same host name and pid space)
 * whose process is gone (or a zombie) is a rank that died without
 * FT_Finalize: the group is broken, and the agent ends and restarts it at
 * once instead of waiting for mpirun to notice (about 2 s with Open MPI).
 * Ranks on other nodes are not watched, whether their marks reach the folder
 * (a shared file system, srun passing the environment) or not: their pids
 * mean nothing here.  Their deaths still reach the agent through the
 * command's own exit.  A mark without host (an older libftmpi) is not
 * watched either (logged once).
 *
 * The agent's thread only.  pid reuse within one poll period is ignored.
 */
#ifndef FTI_RANK_WATCH_H
#define FTI_RANK_WATCH_H

#include <sys/types.h>

/* Creates the folder (under $TMPDIR or /tmp) and sets FTMPI_AGENT_DIR in
 * this process's environment (the command inherits it).  0, or -1 after
 * a logged warning (then nothing is watched). */
int fti_rank_watch_create(void);

/* Forgets the marks of an earlier run (before each start). */
void fti_rank_watch_clear(void);

/* The ranks that died without FT_Finalize, seen in one look at the marks:
 * up to max pids written to pids, each logged as a warning ("world rank W
 * lost: rank pid P ended without FT_Finalize: " what_now) and its mark
 * removed (a later look names only ranks dead since); returns how many (0
 * when none).  Every one, not the first found: a launcher that ends the
 * others when one dies (MPICH's hydra) leaves several dead by the time the
 * agent looks, and which died first cannot be told from here. */
int fti_rank_watch_dead(pid_t *pids, int max, const char *what_now);

/* The drop-in's notes (base/agent_mark.h): a rank that ended the job
 * for a lost rank named the lost ones.  Logs the first note as a warning
 * (the lost world ranks first, before the ranks the job's end takes with
 * it), removes every note; from then on (until fti_rank_watch_clear)
 * fti_rank_watch_dead logs the ranks it finds dead at info level as ended
 * with the job, not as lost.  Returns how many notes it found. */
int fti_rank_watch_notes(void);

/* Removes the folder. */
void fti_rank_watch_destroy(void);

#endif
