/*
 * mode/mode_b.h - mode B (DESIGN section 2): one mpirun, MPI_COMM_WORLD split
 * into replica groups of FTMPI_GROUP_SIZE consecutive ranks, and the last
 * world rank running the lighthouse in-process.
 *
 *   mpirun --enable-recovery -np 9 -x FTMPI_GROUP_SIZE=2 ./app
 *       world ranks 0-1: group g0, 2-3: g1, 4-5: g2, 6-7: g3, 8: lighthouse
 *
 * fti_modeb_init (bind_host: FTMPI_BIND_HOST resolved) is FT_Init's only part that spans groups: blocking
 * collectives over MPI_COMM_WORLD, while every rank is alive.  After it,
 * nothing the library does involves a rank outside its group except the
 * slices (comm/mpi_backend.h or the tcp ring) and the lighthouse's RPCs.
 *
 * On the lighthouse rank fti_modeb_init does not return: it serves until
 * every group has finalized (LIGHTHOUSE_FINALIZE) or is gone (no heartbeat
 * for twice FTMPI_LH_HEARTBEAT_TIMEOUT_MS), then calls MPI_Finalize and
 * exit(0): the one exit in the library, asked for by the design (the
 * application on that rank never runs).
 *
 * Threads: the application thread, in FT_Init.
 */
#ifndef FTI_MODEB_H
#define FTI_MODEB_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>

#include "comm/comm.h"
#include "mode/mode.h"
#include "comm/mpi_backend.h"
#include "base/settings.h"
#include "base/sizes.h"

/* fti_modeb_t, the world as mode B splits it: mode/mode.h. */

/* The replica id of group k of n: "g<k>", zero-padded to the width of
 * n - 1 so ids sort by k; "<prefix>-g<k>" with a prefix (FTMPI_REPLICA_ID).
 * Pure. */
void fti_modeb_replica_id(const char *prefix, int k, int n, char *buf, size_t len);

/* Collective over MPI_COMM_WORLD (see above).  On a group rank: fills *mb
 * (release with fti_modeb_release).  On the lighthouse rank: serves and
 * ends the process; returns only when the lighthouse could not start (its
 * error, also returned on every other rank).  FT_ERR_CONFIG when the world
 * size does not fit (logged once, by world rank 0). */
int fti_modeb_init(const fti_config_t *cfg, const char *bind_host, fti_modeb_t *mb);

/* Mode B on ULFM (mode_b_ulfm.c), groups of 2 ranks and more.  A stopped
 * rank is not dead to ULFM (its failure detector is off by default), and
 * every MPI_Finalize under ULFM first agrees with every rank not known
 * dead: one stopped rank held the whole job in MPI_Finalize for good.  The
 * library's deadlines decide instead: every group rank says goodbye to
 * its partners in FT_Finalize (its group lost or not: an application that
 * finds a partner gone by itself leaves without telling the library) and
 * waits for theirs; a partner that says none within wait_ms and that MPI
 * does not know failed is ended through the launcher (PMIx job control,
 * PMIX_JOB_CTRL_KILL: Open MPI 5's mpirun ends it on its node, SIGCONT,
 * SIGTERM, SIGKILL) and reported failed to ULFM, after which every
 * MPI_Finalize completes.  A live
 * partner says goodbye as soon as it reaches FT_Finalize (in a lost group
 * it learns the loss at its next group operation: the group's communicator
 * is revoked); one later than wait_ms is ended too.
 *
 * fti_modeb_bye_create: collective over the group (in fti_modeb_init):
 * mb->bye, a dup of mb->split, under ULFM only (else MPI_COMM_NULL).
 * fti_modeb_bye: the goodbye, once, in FT_Finalize before MPI_Finalize;
 * logs each partner ended and how; frees mb->bye (left to MPI after a
 * partner was ended).
 * Application thread. */
int fti_modeb_bye_create(fti_modeb_t *mb);
void fti_modeb_bye(fti_modeb_t *mb, int wait_ms);

/* Frees the split and the slice context.  lost: the group lost a rank;
 * its communicator is left to MPI. */
void fti_modeb_release(fti_modeb_t *mb, int lost);

#endif
