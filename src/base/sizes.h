/*
 * sizes.h - the fixed sizes every layer agrees on.  Each is a buffer size,
 * terminating NUL included, so a value may be one byte shorter.  A setting or
 * a message field that does not fit is refused where it enters (settings
 * parser, flag parser, request decoder) with a message naming it, never
 * truncated further down.
 */
#ifndef FTI_SIZES_H
#define FTI_SIZES_H

/* a replica group's id (FTMPI_REPLICA_ID, ftmpi-run --replica-id) */
#define FTI_REPLICA_ID_SIZE 64

/* "host:port" or "[v6]:port" of any server (lighthouse, manager, store,
 * heal, tcp ring); FTMPI_LIGHTHOUSE and --bind included */
#define FTI_ADDRESS_SIZE 128

/* a host name or literal address alone (FTMPI_BIND_HOST) */
#define FTI_HOST_SIZE 64

/* a file path taken from a setting or flag (FTMPI_EVENT_LOG, --token-file) */
#define FTI_PATH_SIZE 256

/* a one-line human-readable reason carried in a reply or a log line */
#define FTI_REASON_SIZE 256

/* a bearer token of the lighthouse dashboard (--token-file) */
#define FTI_TOKEN_SIZE 256

#endif /* FTI_SIZES_H */
