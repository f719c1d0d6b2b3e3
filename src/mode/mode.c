/* mode/mode.c - picking FT_Init's mode (see mode/mode.h). */
#include "mode/mode.h"

const struct fti_mode *fti_mode_pick(const fti_config_t *cfg)
{
    if (cfg->lighthouse[0] == '\0' && cfg->group_size > 0)
        return &fti_mode_b;
    return &fti_mode_a;
}
