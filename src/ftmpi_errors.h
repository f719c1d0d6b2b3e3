/*
 * ftmpi_errors.h - the error codes of libftmpi and FT_Error_string, with no
 * MPI: the base layer, the lighthouse and the tools include this, not
 * ftmpi.h.  Installed; ftmpi.h includes it.
 */
#ifndef FTMPI_ERRORS_H
#define FTMPI_ERRORS_H

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define FTMPI_EXPORT __attribute__((visibility("default")))
#else
#define FTMPI_EXPORT
#endif

#define FTMPI_VERSION_MAJOR 0
#define FTMPI_VERSION_MINOR 1
#define FTMPI_VERSION_PATCH 0

/*
 * Error codes: one signed enum, FT_SUCCESS = 0, failures < 0, grouped by how
 * far the damage reaches.  FT_Error_string() names every value.
 */
typedef enum {
    FT_SUCCESS = 0,

    /* -1..-19: the caller's mistake; nothing else is affected */
    FT_ERR_ARG = -1,             /* invalid argument */
    FT_ERR_UNSUPPORTED = -2,     /* datatype, op or feature not supported */
    FT_ERR_NOT_INITIALIZED = -3, /* FT_Init has not run (or FT_Finalize has) */
    FT_ERR_STATE = -4,           /* call out of order (e.g. FT_Commit before FT_Quorum) */
    FT_ERR_CONFIG = -5,          /* a bad FTMPI_* value or flag */
    FT_ERR_NOT_FOUND = -6,       /* no such key, buffer or member */
    FT_ERR_EXISTS = -7,          /* name already registered */
    FT_ERR_AUTH = -8,            /* authentication failed: the job secrets
                                  * (FTMPI_TOKEN_FILE) differ or one is missing */

    /* -20..-39: a peer, the quorum or the network failed; the step fails,
     * the library recovers in the next FT_Quorum */
    FT_ERR_PROC_FAILED = -20,    /* a peer group died or closed its connection */
    FT_ERR_TIMEOUT = -21,        /* a deadline passed */
    FT_ERR_QUORUM = -22,         /* no quorum could be formed or it changed */
    FT_ERR_ABORTED = -23,        /* an earlier collective of this step failed (latched) */
    FT_ERR_BAD_MESSAGE = -24,    /* malformed, truncated or oversized message */
    FT_ERR_CONNECT = -25,        /* could not connect (peer or lighthouse down) */
    FT_ERR_CHECKSUM = -26,       /* healed state failed its checksum */
    FT_ERR_GROUP_LOST = -27,     /* this rank's own replica group lost a member (mode B),
                                  * or the rank did not learn its group's decision on a
                                  * commit or a heal in time (both modes): every later FT_
                                  * call returns it; call FT_Finalize and exit */
    FT_ERR_KILLED = -28,         /* the lighthouse asked this group to stop */
    FT_ERR_SDC = -29,            /* silent data corruption: the groups' states differ with
                                  * no majority and FTMPI_SDC_ON_TIE=stop: every later
                                  * FT_Quorum returns it; call FT_Finalize and exit */
    FT_ERR_NOT_LEADER = -30,     /* the lighthouse asked is a standby (etcd failover); its
                                  * message names the leader; clients move there */

    /* -40..-59: local system errors */
    FT_ERR_NO_MEMORY = -40,      /* allocation failed */
    FT_ERR_SYSTEM = -41,         /* a system call failed (see the log) */
    FT_ERR_MPI = -42,            /* an MPI call failed */
    FT_ERR_INTERNAL = -43        /* a bug in libftmpi */
} FT_Error;

/* Returns a static string naming the code; never NULL. */
FTMPI_EXPORT const char *FT_Error_string(int code);

#ifdef __cplusplus
}
#endif

#endif /* FTMPI_ERRORS_H */
