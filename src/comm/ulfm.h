/*
 * comm/ulfm.h - the MPI's process fault-tolerance extensions (ULFM:
 * MPIX_Comm_revoke, MPIX_Comm_shrink, MPIX_Comm_agree and the failed-process
 * query MPIX_Comm_failure_ack/_get_acked), where configure found all five
 * declared and linkable (HAVE_MPIX_ULFM: MPICH's mpi.h, Open MPI 5's
 * mpi-ext.h) and they are known to work.
 *
 * Declared is not working: MPICH 4.0.x declares all five, but its ch4 device
 * does not implement them (measured on Debian's 4.0.2, ch4:ucx:
 * MPIX_Comm_revoke fails an assertion in ch4_comm.c:66 and aborts the rank;
 * with MPIR_CVAR_ENABLE_FT=1 the first non-blocking request fails one in
 * ch4_request.h:16).  So MPICH-family libraries count from 4.2 on (untested
 * here: none is installed), Open MPI from 5 (its ULFM, which
 * `mpirun --with-ft ulfm` turns on at run time).
 *
 * Every call returns FT_ERR_UNSUPPORTED where fti_ulfm_usable() is false,
 * without touching MPI.
 */
#ifndef FTI_COMM_ULFM_H
#define FTI_COMM_ULFM_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Whether the calls below work with this build's MPI; if not and why is
 * not NULL, writes the reason into why (naming the MPI). */
bool fti_ulfm_usable(char *why, size_t len);

/* Whether the MPI runs with its fault tolerance on in this process (Open
 * MPI 5: only under mpirun --with-ft ulfm, its variable ompi_ftmpi_enabled;
 * another MPI whose calls work: always).  Read at run time: one build runs
 * under either launch line. */
bool fti_ulfm_active(void);

/* MPIX_Comm_iagree polled until deadline_ms (the step's clock,
 * base/util.h): *flag becomes the AND of every live member's *flag, the same
 * on all of them even when members die during the call.  FT_SUCCESS;
 * FT_ERR_PROC_FAILED when a member had failed (*flag not written: the
 * caller treats the group as failed); FT_ERR_TIMEOUT at the deadline (a
 * member neither answers nor is known dead: stopped, or far behind; the
 * request and its flag are left to MPI); FT_ERR_UNSUPPORTED without
 * MPIX_Comm_iagree. */
int fti_ulfm_agree_until(MPI_Comm comm, int *flag, int64_t deadline_ms);

/* MPIX_Comm_revoke(comm): every pending and later operation on comm, on
 * every member, completes with MPIX_ERR_REVOKED instead of waiting for a
 * dead one.  Local, non-blocking. */
int fti_ulfm_revoke(MPI_Comm comm);

/* MPIX_Comm_shrink: a new communicator of comm's live members (a
 * collective over them; works on a revoked comm).  *out on success. */
int fti_ulfm_shrink(MPI_Comm comm, MPI_Comm *out);

/* MPIX_Comm_agree: *flag becomes the AND of every live member's *flag, the
 * same on all of them even when members die during the call.  Returns
 * FT_SUCCESS, or FT_ERR_PROC_FAILED when a member had failed (the flag is
 * still agreed). */
int fti_ulfm_agree(MPI_Comm comm, int *flag);

/* How many of comm's members this process knows to have failed
 * (MPIX_Comm_failure_ack, then the size of MPIX_Comm_failure_get_acked).
 * *n_failed on success. */
int fti_ulfm_failed(MPI_Comm comm, int *n_failed);

/* Under ULFM (mode B, the drop-in): asks the launcher to end world rank w,
 * stopped or hung (why says how the caller knows), and reports it failed
 * to ULFM: Open MPI 5's PMIx job control (PMIX_JOB_CTRL_KILL: its mpirun
 * ends it on its node, SIGCONT, SIGTERM, SIGKILL), then
 * PMIX_ERR_PROC_TERM_WO_SYNC for it, as ULFM's own detector reports a
 * suspect (5.0 takes a process ended on request for no failure), after
 * which every MPI_Finalize, whose shrink of the world waits for every rank
 * not known dead, completes.  PMIx's calls are looked up in the process
 * (libmpi loaded PMIx): the library links no PMIx.  Logs what it did; a
 * rank MPI knows dead is ended again, which changes nothing.  Any thread:
 * PMIx calls only, no MPI.  Elsewhere (no PMIx header at build time, or
 * no PMIx client in the process) it logs that it cannot. */
void fti_ulfm_end_rank(int w, const char *why);

#endif
