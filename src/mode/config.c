/* mode/config.c - what the modes share (see mode/mode.h): the world's
 * defaults, the backend's resolution, an in-process lighthouse's options.
 * Below every mode: it calls none of them. */
#include "mode/mode.h"

#include <stdio.h>
#include <string.h>

#include "ftmpi.h"
#include "base/log.h"
#include "base/net.h"
#include "base/util.h"

void fti_world_defaults(const fti_config_t *cfg, const char *bind_host, fti_world_t *w)
{
    memset(w, 0, sizeof(*w));
    fti_strlcpy(w->lighthouse, cfg->lighthouse, sizeof(w->lighthouse));
    fti_strlcpy(w->bind_host, bind_host, sizeof(w->bind_host));
    w->init_sync = cfg->init_sync != 0;
    w->app_comm = MPI_COMM_NULL;
    w->mb.split = MPI_COMM_NULL;
    w->mb.bye = MPI_COMM_NULL; /* b_release says goodbye on it when not null */
}

int fti_mode_backend(const fti_config_t *cfg, bool one_world,
                     const struct fti_comm_backend **backend_p)
{
    const struct fti_comm_backend *b = &fti_backend_auto; /* ucx or tcp, per slice */
    if (strcmp(cfg->backend, "auto") != 0)
        b = fti_comm_backend_find(cfg->backend);
    else if (one_world)
        b = &fti_backend_mpi;
    if (b == NULL) {
        char known[256] = "";
        size_t n = 0;
        char name[FTI_CFG_NAME_SIZE];
        for (int i = 0; fti_comm_backend_name_at(i, name, sizeof(name)) && n < sizeof(known); i++)
            n += (size_t)snprintf(known + n, sizeof(known) - n, " %s", name);
        FTI_ERROR("FTMPI_BACKEND=%s: no such backend in this build (auto or one of:%s)",
                  cfg->backend, known);
        return FT_ERR_CONFIG;
    }
    if (!one_world && (b->needs & FTI_COMM_NEEDS_WORLD)) {
        FTI_ERROR("FTMPI_BACKEND=%s needs mode B (one job: FTMPI_GROUP_SIZE set, "
                  "FTMPI_LIGHTHOUSE empty); mode A uses tcp",
                  b->name);
        return FT_ERR_CONFIG;
    }
    *backend_p = b;
    return FT_SUCCESS;
}

void fti_mode_lighthouse_opts(const fti_config_t *cfg, const char *bind_host,
                              fti_lighthouse_opts_t *o)
{
    fti_lighthouse_opts_default(o);
    (void)fti_addr_any_port(o->bind, sizeof(o->bind), bind_host); /* a host always fits */
    o->min_replicas = cfg->min_replicas;
    o->join_timeout_ms = cfg->lh_join_timeout_ms;
    o->heartbeat_timeout_ms = cfg->lh_heartbeat_timeout_ms;
    o->quorum_tick_ms = cfg->lh_tick_ms;
    o->max_frame = (size_t)cfg->max_frame_bytes;
    o->has_key = fti_config_key(cfg) != NULL;
    if (o->has_key)
        o->key = *fti_config_key(cfg);
}
