/*
 * ft_init.h - FT_Init with a chosen mode, for the drop-in (mpi_shim/):
 * the library's one internal entry besides the public API.
 */
#ifndef FTI_FT_INIT_H
#define FTI_FT_INIT_H

#include "base/settings.h"
#include "mode/mode.h"

/* FT_Init (ftmpi.h) in mode (NULL: the one FTMPI_* picks, fti_mode_pick)
 * with the settings cfg (NULL: FT_Init loads the table).  cfg, when
 * given, is the caller's loaded table, read-only, and must stay valid
 * until FT_Finalize: the settings are loaded once per process.  FT_Init
 * is fti_init(NULL, NULL). */
int fti_init(const struct fti_mode *mode, const fti_config_t *cfg);

#endif
