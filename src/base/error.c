/* error.c - FT_Error_string: a name for every FT_Error value. */
#include "ftmpi_errors.h"

FTMPI_EXPORT const char *FT_Error_string(int code)
{
    switch ((FT_Error)code) {
    case FT_SUCCESS: return "success";
    case FT_ERR_ARG: return "invalid argument";
    case FT_ERR_UNSUPPORTED: return "datatype, op or feature not supported";
    case FT_ERR_NOT_INITIALIZED: return "FT_Init has not been called";
    case FT_ERR_STATE: return "call out of order in the step protocol";
    case FT_ERR_CONFIG: return "bad configuration value";
    case FT_ERR_NOT_FOUND: return "not found";
    case FT_ERR_EXISTS: return "already exists";
    case FT_ERR_AUTH: return "authentication failed: the job secrets differ or one is missing";
    case FT_ERR_PROC_FAILED: return "a peer process or group failed";
    case FT_ERR_TIMEOUT: return "deadline passed";
    case FT_ERR_QUORUM: return "no quorum, or the quorum changed";
    case FT_ERR_ABORTED: return "an earlier collective of this step failed";
    case FT_ERR_BAD_MESSAGE: return "malformed, truncated or oversized message";
    case FT_ERR_CONNECT: return "could not connect to peer or lighthouse";
    case FT_ERR_CHECKSUM: return "healed state failed its checksum";
    case FT_ERR_GROUP_LOST: return "this rank's replica group lost a member";
    case FT_ERR_KILLED: return "the lighthouse asked this group to stop";
    case FT_ERR_NO_MEMORY: return "out of memory";
    case FT_ERR_SYSTEM: return "system call failed";
    case FT_ERR_MPI: return "MPI call failed";
    case FT_ERR_INTERNAL: return "internal error in libftmpi";
    }
    return "unknown error code";
}
