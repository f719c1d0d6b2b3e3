/*
 * step.h - the process-global state behind the FT_ calls (DESIGN sections
 * 2 and 4-8) and the step's parts that ft.c, the API facade, calls:
 * setting up and tearing down (step_init.c), the quorum round
 * (step_round.c) and its parts, the slice and healing (step_quorum.c).
 *
 * One replica group = the ranks of the group communicator (mode A:
 * MPI_COMM_WORLD; mode B: its split into groups of FTMPI_GROUP_SIZE ranks;
 * the drop-in: MPI_COMM_SELF; the mode table, mode/mode.h, says which).  Group rank 0 is the manager
 * (control/manager.h).
 *
 * Threads: every FT_ call runs on the application's thread (ftmpi.h); the
 * progress thread (progress.h, started by FT_Init when allowed) runs the
 * step's jobs.  The state needs no lock because the two never use the same
 * part at once: while an FT_QUORUM_ASYNC quorum is in flight the progress
 * thread owns all of it (every FT_ call that reads it waits for the quorum
 * first); while reductions are in flight it owns `slice` alone (the
 * application thread drains them before it touches the slice: FT_Quorum,
 * FT_Commit, a latched FT_Iallreduce, FT_Finalize).  The other background
 * threads (rank server, heartbeats) keep their own state.
 */
#ifndef FTI_STEP_H
#define FTI_STEP_H

#include <mpi.h>
#include <stdbool.h>
#include <stdint.h>

#include "comm/comm.h"
#include "obs/event_log.h"
#include "group.h"
#include "heal/heal.h"
#include "control/manager.h"
#include "state/ckpt_step.h"
#include "mode/mode.h"
#include "obs/obs_step.h"
#include "step/step_sdc.h"
#include "step/progress.h"
#include "control/rank_server.h"
#include "control/results.h"
#include "base/settings.h"
#include "base/sizes.h"

struct fti_step {
    bool initialized;
    const fti_config_t *cfg;        /* the settings as loaded, read-only (what a mode
                                     * makes of them: world) */
    fti_group_h group;
    int group_rank, group_size;
    char my_addr[FTI_ADDRESS_SIZE]; /* this rank's RPC server */
    fti_heal_h heal;
    const fti_heal_rma_t *heal_rma; /* FTMPI_HEAL_TRANSPORT: NULL = tcp (step_init.c) */
    fti_rank_server_h server;
    fti_manager_h manager;          /* group rank 0 only */
    fti_event_log_h elog;           /* NULL when FTMPI_EVENT_LOG is empty */
    fti_ckpt_h ckpt;                /* durable checkpoints (state/ckpt_step.h) */

    int64_t step;                   /* committed steps */
    bool in_step;                   /* between FT_Quorum and FT_Commit */
    int latched;                    /* first error of the step */
    bool have_quorum;               /* res holds a quorum (the last one received) */
    bool quorum_ok;                 /* this step's FT_Quorum got one */
    fti_quorum_result_t res;
    int64_t slice_quorum_id;        /* quorum the slice was built for, -1 none */
    fti_comm_h slice;
    int64_t commit_failures;        /* failed commits since the last quorum */
    int64_t heals, heal_bytes;      /* healed steps and bytes (reported to the lighthouse) */
    int64_t replaced;               /* FT_Quorum calls that wrote the registered buffers: a
                                     * heal installed (a same-step SDC heal too), a direct
                                     * heal cut part-way, a checkpoint loaded (FT_Heal_count) */
    bool fresh;                     /* no step committed or healed by this process yet: the
                                     * registered state is what its start made (or a durable
                                     * checkpoint loaded), which a restart makes again */
    bool killed;                    /* a MANAGER_KILL reached the group */
    fti_members_t prev_members;     /* the previous quorum's (full replies) */
    fti_members_t members;          /* the last quorum's, replica-rank order: ids (and
                                     * manager addresses: full replies); n 0 = unknown
                                     * (a compact reply that names no members) */

    const struct fti_mode *mode;    /* how the job runs (mode/mode.h), chosen once by
                                     * fti_step_setup; NULL until resolved */
    fti_world_t world;              /* what the mode made: communicators, replica id,
                                     * lighthouse, backend, effective settings */

    /* asynchronous progress (ft.c, progress.h) */
    fti_progress_h progress;        /* threaded when async_allreduce */
    bool async_allreduce;           /* reductions run on the progress thread */
    bool async_quorum;              /* FT_QUORUM_ASYNC runs there too */
    int64_t epoch;                  /* FT_Quorum calls: a request's step */

    fti_obs_step_t obs;             /* counters, recoveries, flight recorder (obs_step.h) */
    fti_sdc_step_t sdc;             /* the SDC check (step_sdc.h) */
};

/* ---- step_init.c ---------------------------------------------------------- */

/* FT_Init's work on a zeroed state (mode, cfg: fti_init's, ft_init.h):
 * configuration agreed on by every world rank, mode B's split (on the lighthouse rank it does not return) or
 * mode A's duplicate of the world, the group, the replica id, the rank
 * server, the manager, FT_AVG.  On failure the caller runs
 * fti_step_teardown. */
int fti_step_setup(struct fti_step *s, const struct fti_mode *mode, const fti_config_t *cfg);

/* Frees whatever fti_step_setup created (also after it failed). */
void fti_step_teardown(struct fti_step *s);

/* FTMPI_AGENT_DIR (ftmpi-run): creates <dir>/<pid>@<host> while the rank runs
 * between FT_Init and FT_Finalize (mark), removes it (unmark), so the
 * agent tells a rank that died from one that finished.  No-ops without
 * the setting; failures are logged once and ignored. */
void fti_step_agent_mark(const struct fti_step *s);
void fti_step_agent_unmark(const struct fti_step *s);

/* Tells the lighthouse that this group leaves (LIGHTHOUSE_FINALIZE): the
 * manager through its client, any other rank (mode B: its manager may be
 * the rank that died) through a client of its own. */
void fti_step_leave(struct fti_step *s);

/* Mode B: the group is gone as a whole (the mode's group_failure said so):
 * the first call logs why, marks the group lost and leaves.  Returns
 * FT_ERR_GROUP_LOST. */
int fti_step_group_lost(struct fti_step *s, int why);

/* ---- step_round.c --------------------------------------------------------- */

/* FT_Quorum's round and everything it brings (the quorum's results, a
 * durable checkpoint at a fresh start, the SDC verdict, the slice, the
 * heal); its error is latched for the step.  *survived_p: whether the
 * quorum counts as a failure the job survived.  On the progress thread for
 * FT_QUORUM_ASYNC, which then owns s until the application waits for it. */
int fti_step_quorum_round(struct fti_step *s, int flags, bool *survived_p);

/* The log lines' step and quorum (base/log.h) from s. */
void fti_step_log_ctx(const struct fti_step *s);

/* ---- step_quorum.c -------------------------------------------------------- */

/* The group's quorum exchange (every rank runs it in every FT_Quorum, in
 * the same order): the ranks' asks gathered to group rank 0, its manager
 * round, the broadcast of the response or of the status it ended with.
 * On success *resp_p has a quorum (free with
 * ftmpi__lighthouse_quorum_response__free_unpacked). */
int fti_step_exchange(struct fti_step *s, int flags, Ftmpi__LighthouseQuorumResponse **resp_p);

/* This rank's results of the response (compact, or computed from the
 * members), spares applied.  FT_ERR_QUORUM (logged) when the quorum has no
 * place for this group. */
int fti_step_results(const struct fti_step *s, const Ftmpi__LighthouseQuorumResponse *resp,
                     fti_quorum_result_t *res_p);

/* Whether the quorum just received (results res) counts as a failure the
 * job survived; remembers what the next quorum is compared with, and its
 * members (s->members). */
bool fti_step_count_failure(struct fti_step *s, const Ftmpi__LighthouseQuorumResponse *resp,
                            const fti_quorum_result_t *res);

/* An FT_Allreduce over the slice failed with rc (the backend logged it at
 * debug level only): logs the one error line, naming the failed peer (its
 * replica id from s->members, its address) when the backend knows it
 * (fti_comm_failed_peer), and writes the event log's collective_failed
 * line.  Call before the slice is destroyed. */
void fti_step_collective_failed(struct fti_step *s, int rc);

/* Builds the slice of s->res through the backend's rendezvous; the old one
 * is destroyed first.  Failures are logged where they are seen. */
int fti_step_rebuild_slice(struct fti_step *s, const Ftmpi__Quorum *q);

/* Heals this rank from its source (s->res). */
int fti_step_heal(struct fti_step *s);

#endif
