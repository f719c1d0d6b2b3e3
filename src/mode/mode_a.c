/* mode/mode_a.c - mode A (DESIGN section 2): one mpirun per replica group,
 * the group is MPI_COMM_WORLD, the lighthouse a separate process named by
 * FTMPI_LIGHTHOUSE (see mode/mode.h). */
#include "mode/mode.h"

#include "ftmpi.h"
#include "base/log.h"

static int a_resolve(const fti_config_t *cfg, fti_world_t *w)
{
    if (cfg->lighthouse[0] == '\0') {
        FTI_ERROR("FTMPI_LIGHTHOUSE is not set: mode A needs the lighthouse address host:port "
                  "(mode B, one mpirun with a lighthouse rank, needs FTMPI_GROUP_SIZE instead)");
        return FT_ERR_CONFIG;
    }
    return fti_mode_backend(cfg, false, &w->backend);
}

/* The application's communicator: a duplicate of the world. */
static int a_world(const fti_config_t *cfg, fti_world_t *w)
{
    (void)cfg;
    if (MPI_Comm_dup(MPI_COMM_WORLD, &w->app_comm) != MPI_SUCCESS) {
        FTI_ERROR("FT_Init: MPI_Comm_dup of the world failed");
        w->app_comm = MPI_COMM_NULL;
        return FT_ERR_MPI;
    }
    return FT_SUCCESS;
}

static MPI_Comm a_group_comm(const fti_world_t *w)
{
    (void)w;
    return MPI_COMM_WORLD;
}

/* A rank that died ends its group's mpirun: the failure is the step's. */
static int a_group_failure(int rc)
{
    return rc;
}

static void a_release(const fti_config_t *cfg, fti_world_t *w, bool finalized)
{
    (void)cfg;
    if (w->app_comm != MPI_COMM_NULL && !finalized)
        MPI_Comm_free(&w->app_comm);
}

const struct fti_mode fti_mode_a = {
    .name = "A",
    .resolve = a_resolve,
    .world = a_world,
    .group_comm = a_group_comm,
    .replica_id = NULL,
    .group_failure = a_group_failure,
    .log_start = NULL,
    .release = a_release,
    .every_rank_leaves = false,
    .full_members = false,
    .auto_device = true,
    .vote_waits_for_heal = false,
    .quorum_bcast_slack_ms = 0,
    .direct_heal_when_fresh = true,
};
