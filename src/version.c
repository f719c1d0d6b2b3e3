/* version.c - ftmpi_version(). */
#include "ftmpi_config.h"
#include "ftmpi.h"

FTMPI_EXPORT const char *ftmpi_version(void)
{
    return PACKAGE_VERSION;
}
