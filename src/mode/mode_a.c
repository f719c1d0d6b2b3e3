/* mode/mode_a.c - mode A (DESIGN section 2): one mpirun per replica group,
 * the group is MPI_COMM_WORLD, the lighthouse a separate process named by
 * FTMPI_LIGHTHOUSE (see mode/mode.h). */
#include "mode/mode.h"

#include "step.h"
#include "ftmpi.h"
#include "base/log.h"

static int a_resolve(struct fti_step *s)
{
    if (s->cfg.lighthouse[0] == '\0') {
        FTI_ERROR("FTMPI_LIGHTHOUSE is not set: mode A needs the lighthouse address host:port "
                  "(mode B, one mpirun with a lighthouse rank, needs FTMPI_GROUP_SIZE instead)");
        return FT_ERR_CONFIG;
    }
    return fti_mode_backend(&s->cfg, false, &s->backend);
}

/* The application's communicator: a duplicate of the world. */
static int a_world(struct fti_step *s)
{
    if (MPI_Comm_dup(MPI_COMM_WORLD, &s->app_comm) != MPI_SUCCESS) {
        FTI_ERROR("FT_Init: MPI_Comm_dup of the world failed");
        s->app_comm = MPI_COMM_NULL;
        return FT_ERR_MPI;
    }
    return FT_SUCCESS;
}

static MPI_Comm a_group_comm(const struct fti_step *s)
{
    (void)s;
    return MPI_COMM_WORLD;
}

/* A rank that died ends its group's mpirun: the failure is the step's. */
static int a_group_failure(int rc)
{
    return rc;
}

static void a_release(struct fti_step *s, bool finalized)
{
    if (s->app_comm != MPI_COMM_NULL && !finalized)
        MPI_Comm_free(&s->app_comm);
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
