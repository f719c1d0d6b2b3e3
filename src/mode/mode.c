/* mode/mode.c - picking the mode (see mode/mode.h) and the backend
 * resolution modes A and B share. */
#include "mode/mode.h"

#include <stdio.h>
#include <string.h>

#include "ftmpi.h"
#include "mode/dropin.h"
#include "base/log.h"

const struct fti_mode *fti_mode_pick(const fti_config_t *cfg)
{
    if (fti_shim_selected())
        return &fti_mode_dropin;
    if (cfg->lighthouse[0] == '\0' && cfg->group_size > 0)
        return &fti_mode_b;
    return &fti_mode_a;
}

int fti_mode_backend(const fti_config_t *cfg, bool one_world,
                     const struct fti_comm_backend **backend_p)
{
    /* the drop-in's setting is checked in every mode, as the settings
     * table did when it held the names */
    char err[160];
    int on_failure = 0;
    if (fti_shim_on_failure_parse(cfg->shim_on_failure, &on_failure, err, sizeof(err)) !=
        FT_SUCCESS) {
        FTI_ERROR("%s", err);
        return FT_ERR_CONFIG;
    }
    const struct fti_comm_backend *b = &fti_backend_tcp;
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
