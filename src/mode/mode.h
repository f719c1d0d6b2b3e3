/*
 * mode/mode.h - the mode table (DESIGN section 2): how the job runs, as one
 * struct of operations, like the backend table of comm/comm.h.  Three
 * modes: A (one mpirun per replica group, mode_a.c), B (one mpirun split
 * into groups plus a lighthouse rank, mode_b.c) and the drop-in
 * (libftmpi_pmpi: every world rank a group of one, dropin.c).
 *
 * fti_mode_pick chooses one ONCE, in FT_Init's set-up (step_init.c); the
 * step then calls the entries and reads the properties below and never
 * asks which mode runs.  Entries take the step's state (step.h) and run on
 * the application's thread, inside FT_Init / FT_Finalize unless said.
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

struct fti_step;

/* The world as modes B and the drop-in see it (the step keeps one, `mb`). */
typedef struct fti_modeb {
    int world_rank, world_size;
    int group_size;        /* FTMPI_GROUP_SIZE */
    int n_groups;          /* (world_size - 1) / group_size */
    int group_index;       /* this rank's group */
    int first_world_rank;  /* world rank of this group's rank 0 */
    MPI_Comm split;        /* this group's ranks (the application's group
                            * communicator, ftmpi_group_comm) */
    fti_mpi_ctx_h mpi;     /* what the `mpi` backend builds slices from */
    char lighthouse[FTI_ADDRESS_SIZE]; /* the lighthouse rank's address host:port */
} fti_modeb_t;

struct fti_mode {
    const char *name; /* "A", "B", "drop-in" */
    /* The end of the configuration: the backend of the table (comm.h) into
     * s->backend, and whatever settings the mode fixes.  FT_ERR_CONFIG
     * (logged) when the settings do not make this mode. */
    int (*resolve)(struct fti_step *s);
    /* The job-wide part, collective over MPI_COMM_WORLD while every rank is
     * alive: s->app_comm, s->mb, s->cfg.lighthouse, s->member_data.  Mode
     * B's lighthouse rank does not return (mode_b.h). */
    int (*world)(struct fti_step *s);
    /* The communicator the replica group is made from (after world). */
    MPI_Comm (*group_comm)(const struct fti_step *s);
    /* The replica id when the mode names it; NULL: the step's default
     * (FTMPI_REPLICA_ID, or host-pid chosen by group rank 0). */
    void (*replica_id)(const struct fti_step *s, char *buf, size_t len);
    /* What a failed intra-group operation (the quorum's gather or
     * broadcast, the commit vote, a checkpoint round) means; decided here
     * and nowhere else.  A and the drop-in: the failure itself, latched
     * for the step.  B: nothing ends the group, so the group is lost:
     * FT_ERR_GROUP_LOST (the step then leaves, see ft.c).  Pure. */
    int (*group_failure)(int rc);
    /* The group was lost (fti_step_group_lost, once): what the mode does
     * with the communicators it made; NULL: nothing. */
    void (*group_lost)(struct fti_step *s);
    /* FT_Init's first log line; NULL: the step's generic one. */
    void (*log_start)(const struct fti_step *s);
    /* Frees what world made (also after it failed); finalized: MPI is. */
    void (*release)(struct fti_step *s, bool finalized);
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

extern const struct fti_mode fti_mode_a, fti_mode_b, fti_mode_dropin;

/* The mode, picked once from the configuration: the drop-in when
 * fti_shim_select ran in this process (mode/dropin.h); B when
 * FTMPI_LIGHTHOUSE is empty and FTMPI_GROUP_SIZE is set; A otherwise (its
 * resolve reports a missing FTMPI_LIGHTHOUSE).  Never NULL. */
const struct fti_mode *fti_mode_pick(const fti_config_t *cfg);

/* Modes A and B: the backend FTMPI_BACKEND names (auto: mpi when
 * one_world, tcp otherwise).  FT_ERR_CONFIG (logged) for an unknown name
 * (of a backend, or of FTMPI_SHIM_ON_FAILURE's failure modes, mode/dropin.h)
 * or a backend that needs one MPI world (FTI_COMM_NEEDS_WORLD) when not
 * one_world.  *backend_p set only on success. */
int fti_mode_backend(const fti_config_t *cfg, bool one_world,
                     const struct fti_comm_backend **backend_p);

#endif
