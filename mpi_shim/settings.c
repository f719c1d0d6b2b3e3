/* settings.c - the drop-in's settings (see shim.h): FTMPI_SHIM_* read from
 * the FTMPI_* table the drop-in loaded, its failure modes by name. */
#include "mpi_shim/shim.h"

#include <stdio.h>
#include <strings.h>

#include "ftmpi.h"

const char *const fti_shim_on_failure_names[] = {"auto", "abort", "return", "continue", NULL};

int fti_shim_on_failure_parse(const char *name, int *mode_p, char *err, size_t errlen)
{
    for (int i = 0; fti_shim_on_failure_names[i]; i++) {
        if (strcasecmp(name, fti_shim_on_failure_names[i]) == 0) {
            *mode_p = i;
            return FT_SUCCESS;
        }
    }
    int n = snprintf(err, errlen, "FTMPI_SHIM_ON_FAILURE='%s': expected one of", name);
    for (int i = 0; fti_shim_on_failure_names[i] && n > 0 && (size_t)n < errlen; i++)
        n += snprintf(err + n, errlen - n, " %s", fti_shim_on_failure_names[i]);
    return FT_ERR_CONFIG;
}

int fti_shim_settings(const fti_config_t *cfg, struct fti_shim_cfg *out_p, char *err,
                      size_t errlen)
{
    struct fti_shim_cfg c = {
        .rescale = cfg->shim_rescale,
        .timeout_ms = cfg->timeout_ms,
        .success_after_loss = cfg->shim_success_after_loss,
    };
    int rc = fti_shim_on_failure_parse(cfg->shim_on_failure, &c.on_failure, err, errlen);
    if (rc == FT_SUCCESS)
        *out_p = c;
    return rc;
}
