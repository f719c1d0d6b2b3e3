/*
 * mode/mode.h - the mode table (DESIGN section 2): how the job runs, as one
 * struct of operations, like the backend table of comm/comm.h.  Three
 * modes: A (one mpirun per replica group, mode_a.c), B (one mpirun split
 * into groups plus a lighthouse rank, mode_b.c) and the drop-in
 * (libftmpi_pmpi: every world rank a group of one, dropin.c).
 *
 * fti_mode_pick chooses A or B ONCE, in FT_Init's set-up (step_init.c);
 * the drop-in passes its own.  The step then calls the entries and reads
 * the properties below and never asks which mode runs.  Entries read the
 * configuration (const: nothing rewrites it after the load) and fill the
 * world (fti_world_t), which the step keeps; they know nothing of the
 * step.  They run on the application's thread, inside FT_Init /
 * FT_Finalize unless said.
 */
#ifndef FTI_MODE_H
#define FTI_MODE_H

#include <mpi.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/settings.h"
#include "base/sizes.h"
#include "comm/comm.h"
#include "comm/mpi_backend.h"
#include "lighthouse/lighthouse.h"

/* The world as modes B and the drop-in split it (a part of fti_world_t). */
typedef struct fti_modeb {
    int world_rank, world_size;
    int group_size;        /* FTMPI_GROUP_SIZE */
    int n_groups;          /* (world_size - 1) / group_size */
    int group_index;       /* this rank's group */
    int first_world_rank;  /* world rank of this group's rank 0 */
    MPI_Comm split;        /* this group's ranks (the application's group
                            * communicator, ftmpi_group_comm) */
    MPI_Comm bye;          /* mode B on ULFM: a dup of split for a lost group's
                            * goodbye (mode_b.h), else MPI_COMM_NULL */
    fti_mpi_ctx_h mpi;     /* what the `mpi` backend builds slices from */
    char lighthouse[FTI_ADDRESS_SIZE]; /* the lighthouse rank's address host:port */
} fti_modeb_t;

/* The world: what the mode makes of the configuration, which it only
 * reads.  The step keeps one (step.h) and reads the effective values here,
 * never a setting a mode changes.  Filled by the caller's defaults
 * (fti_world_defaults), then the mode's resolve and world entries. */
typedef struct fti_world {
    /* effective settings */
    char lighthouse[FTI_ADDRESS_SIZE]; /* FTMPI_LIGHTHOUSE, or the in-process
                                        * lighthouse's address (B, the drop-in) */
    char bind_host[FTI_HOST_SIZE];     /* FTMPI_BIND_HOST resolved to an address */
    bool init_sync;                    /* FTMPI_INIT_SYNC (the drop-in: off) */
    const struct fti_comm_backend *backend; /* FTMPI_BACKEND resolved (resolve) */
    /* communicators and members */
    MPI_Comm app_comm;     /* ftmpi_group_comm: A a dup of the world, B mb.split */
    fti_modeb_t mb;        /* mode B and the drop-in only */
    char replica_id[FTI_REPLICA_ID_SIZE]; /* this group's id (the step's set-up
                                           * fills it, from the mode's entry) */
    char member_data[16];  /* QuorumMember.data (B, the drop-in: a world rank) */
    size_t member_data_len;
    bool lost;             /* B: this group lost a rank */
} fti_world_t;

/* The defaults before the mode's entries: the effective settings as cfg
 * has them, bind_host the address FTMPI_BIND_HOST resolved to, no
 * communicators.  Pure. */
void fti_world_defaults(const fti_config_t *cfg, const char *bind_host, fti_world_t *w);

struct fti_mode {
    const char *name; /* "A", "B", "drop-in" */
    /* The end of the configuration: the backend of the table (comm.h) into
     * w->backend, and the effective values of whatever settings the mode
     * fixes.  FT_ERR_CONFIG (logged) when the settings do not make this
     * mode.  No MPI call: the mode table's unit test runs it. */
    int (*resolve)(const fti_config_t *cfg, fti_world_t *w);
    /* The job-wide part, collective over MPI_COMM_WORLD while every rank is
     * alive: w->app_comm, w->mb, w->lighthouse, w->member_data.  Mode B's
     * lighthouse rank does not return (mode_b.h). */
    int (*world)(const fti_config_t *cfg, fti_world_t *w);
    /* The communicator the replica group is made from (after world). */
    MPI_Comm (*group_comm)(const fti_world_t *w);
    /* The replica id when the mode names it; NULL: the step's default
     * (FTMPI_REPLICA_ID, or host-pid chosen by group rank 0). */
    void (*replica_id)(const fti_config_t *cfg, const fti_world_t *w, char *buf, size_t len);
    /* What a failed intra-group operation (the quorum's gather or
     * broadcast, the commit vote, a checkpoint round) means; decided here
     * and nowhere else.  A and the drop-in: the failure itself, latched
     * for the step.  B: nothing ends the group, so the group is lost:
     * FT_ERR_GROUP_LOST (the step then leaves, see ft.c).  Pure. */
    int (*group_failure)(int rc);
    /* The group was lost (the step's fti_step_group_lost, once): what the
     * mode does with the communicators it made; NULL: nothing. */
    void (*group_lost)(fti_world_t *w);
    /* FT_Init's first log line (this rank's place in its group, its
     * server's address); NULL: the step's generic one. */
    void (*log_start)(const fti_world_t *w, int group_rank, int group_size, const char *server);
    /* Frees what world made (also after it failed); finalized: MPI is. */
    void (*release)(const fti_config_t *cfg, fti_world_t *w, bool finalized);
    /* Every rank, not only the manager, tells the lighthouse that its
     * group leaves (the manager may be the rank that died). */
    bool every_rank_leaves;
    /* The quorum replies must list every member (slices or results built
     * from world ranks): no compact replies. */
    bool full_members;
    /* FTMPI_BACKEND=auto may reduce device memory with nccl (device.c). */
    bool auto_device;
    /* The commit vote's window grows by FTMPI_HEAL_TIMEOUT_MS in a step
     * that heals (a group's ranks may heal at different speeds). */
    bool vote_waits_for_heal;
    /* Extra time the quorum broadcast gives group rank 0 (ms). */
    int quorum_bcast_slack_ms;
    /* FTMPI_HEAL_INSTALL=auto installs directly into a fresh process's
     * state (a restart makes it again). */
    bool direct_heal_when_fresh;
};

/* The modes of FT_Init (mode.c picks one of them); the drop-in's,
 * fti_mode_dropin, is chosen by the drop-in itself (mode/dropin.h). */
extern const struct fti_mode fti_mode_a, fti_mode_b;

/* The mode of FT_Init, picked once from the configuration: B when
 * FTMPI_LIGHTHOUSE is empty and FTMPI_GROUP_SIZE is set; A otherwise (its
 * resolve reports a missing FTMPI_LIGHTHOUSE).  Never NULL, never the
 * drop-in's (the drop-in passes its mode to the step's set-up). */
const struct fti_mode *fti_mode_pick(const fti_config_t *cfg);

/* ---- config.c: what the modes share ------------------------------------- */

/* The backend FTMPI_BACKEND names (auto: mpi when one_world, tcp
 * otherwise).  FT_ERR_CONFIG (logged, naming the value and the known
 * names) for an unknown name, in every mode, or a backend that needs one
 * MPI world (FTI_COMM_NEEDS_WORLD) when not one_world.  *backend_p set
 * only on success. */
int fti_mode_backend(const fti_config_t *cfg, bool one_world,
                     const struct fti_comm_backend **backend_p);

/* The options of an in-process lighthouse from the FTMPI_* settings: bind
 * host (bind_host, resolved) on an ephemeral port, min replicas and the
 * FTMPI_LH_* timeouts (mode B's lighthouse rank and the drop-in's
 * lighthouse thread). */
void fti_mode_lighthouse_opts(const fti_config_t *cfg, const char *bind_host,
                              fti_lighthouse_opts_t *o);

#endif
