/*
 * rank_watch.h - ftmpi-run's watch on its group's ranks (FTMPI_AGENT_DIR).
 *
 * The agent makes a private folder and passes it to the command as
 * FTMPI_AGENT_DIR; every rank of the group (libftmpi, on this node) keeps a
 * file named by its pid there from FT_Init to FT_Finalize.  A file whose
 * process is gone (or a zombie) is a rank that died without FT_Finalize:
 * the group is broken, and the agent ends and restarts it at once instead
 * of waiting for mpirun to notice (about 2 s with Open MPI).  Ranks on
 * other nodes (mpirun -x does not pass the folder there; it would not
 * exist) are not watched: their deaths still reach the agent through
 * mpirun's own exit.
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

/* The world rank a mark of pid holds (written by the rank at FT_Init), or -1
 * when the mark is missing or holds none. */
int fti_rank_watch_world_rank(pid_t pid);

/* Removes the folder. */
void fti_rank_watch_destroy(void);

#endif
