/* error.c - FT_Error_string: a name for every FT_Error value. */
#include "ftmpi_errors.h"
#include "base/error.h"

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
    case FT_ERR_SDC: return "silent data corruption: the groups' states differ with no majority";
    case FT_ERR_NOT_LEADER: return "the lighthouse is a standby, not the leader";
    case FT_ERR_NO_MEMORY: return "out of memory";
    case FT_ERR_SYSTEM: return "system call failed";
    case FT_ERR_MPI: return "MPI call failed";
    case FT_ERR_INTERNAL: return "internal error in libftmpi";
    }
    return "unknown error code";
}

const char *fti_error_name(int code)
{
    switch ((FT_Error)code) {
    case FT_SUCCESS: return "FT_SUCCESS";
    case FT_ERR_ARG: return "FT_ERR_ARG";
    case FT_ERR_UNSUPPORTED: return "FT_ERR_UNSUPPORTED";
    case FT_ERR_NOT_INITIALIZED: return "FT_ERR_NOT_INITIALIZED";
    case FT_ERR_STATE: return "FT_ERR_STATE";
    case FT_ERR_CONFIG: return "FT_ERR_CONFIG";
    case FT_ERR_NOT_FOUND: return "FT_ERR_NOT_FOUND";
    case FT_ERR_EXISTS: return "FT_ERR_EXISTS";
    case FT_ERR_AUTH: return "FT_ERR_AUTH";
    case FT_ERR_PROC_FAILED: return "FT_ERR_PROC_FAILED";
    case FT_ERR_TIMEOUT: return "FT_ERR_TIMEOUT";
    case FT_ERR_QUORUM: return "FT_ERR_QUORUM";
    case FT_ERR_ABORTED: return "FT_ERR_ABORTED";
    case FT_ERR_BAD_MESSAGE: return "FT_ERR_BAD_MESSAGE";
    case FT_ERR_CONNECT: return "FT_ERR_CONNECT";
    case FT_ERR_CHECKSUM: return "FT_ERR_CHECKSUM";
    case FT_ERR_GROUP_LOST: return "FT_ERR_GROUP_LOST";
    case FT_ERR_KILLED: return "FT_ERR_KILLED";
    case FT_ERR_SDC: return "FT_ERR_SDC";
    case FT_ERR_NOT_LEADER: return "FT_ERR_NOT_LEADER";
    case FT_ERR_NO_MEMORY: return "FT_ERR_NO_MEMORY";
    case FT_ERR_SYSTEM: return "FT_ERR_SYSTEM";
    case FT_ERR_MPI: return "FT_ERR_MPI";
    case FT_ERR_INTERNAL: return "FT_ERR_INTERNAL";
    }
    return "FT_ERR_UNKNOWN";
}
