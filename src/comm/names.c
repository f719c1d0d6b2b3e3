/*
 * comm/names.c - the names of comm.h's backend table (FTI_BACKENDS), with
 * no reference to the entries, so that MPI-free programs can check a name
 * (see comm.h).  An entry fti_backend_x is named x with '_' written '-';
 * test_backends checks that every entry's own name says the same.
 */
#include "comm/comm.h"

#include <ctype.h>
#include <stddef.h>

#define FTI_BACKEND_NAME(x) #x,
static const char *const raw[] = {FTI_BACKENDS(FTI_BACKEND_NAME) NULL};
#undef FTI_BACKEND_NAME

bool fti_comm_backend_name_at(int i, char *buf, size_t len)
{
    if (i < 0 || i >= (int)(sizeof(raw) / sizeof(raw[0])) - 1 || len == 0)
        return false;
    size_t k = 0;
    for (; raw[i][k] != '\0' && k + 1 < len; k++)
        buf[k] = raw[i][k] == '_' ? '-' : raw[i][k];
    buf[k] = '\0';
    return true;
}

bool fti_comm_backend_known(const char *name)
{
    for (int i = 0; name != NULL && raw[i] != NULL; i++) {
        size_t k = 0;
        for (; raw[i][k] != '\0' && name[k] != '\0'; k++) {
            char want = raw[i][k] == '_' ? '-' : raw[i][k];
            if (tolower((unsigned char)name[k]) != want)
                break;
        }
        if (raw[i][k] == '\0' && name[k] == '\0')
            return true;
    }
    return false;
}
