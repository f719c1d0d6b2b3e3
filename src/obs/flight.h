/*
 * flight.h - the flight recorder (issue 26, DESIGN section 11): each rank
 * keeps its last N calls (FT_Quorum, FT_Allreduce, FT_Commit: operation,
 * bytes, quorum id, step, start, end, result) in a fixed ring
 * (FTMPI_FLIGHT_RECORDS entries, allocated once), and writes the ring to
 * the event log (lines "flight", see event_log.h) on the first FT_ERR_* of
 * a step and on SIGUSR1.  A call still running has end -1: after a
 * SIGUSR1 to a hung job, the ranks' rings side by side (ftmpi-flight) show
 * who waits where.
 *
 * SIGUSR1: installed only when its disposition is the default one (a
 * program's own handler is left alone).  The handler only writes a byte
 * to a pipe (async-signal-safe); a thread of the recorder reads it and
 * dumps, so a dump also comes from a rank whose other threads are stuck.
 *
 * Threads: fti_flight_begin/end from any thread (a mutex guards the ring);
 * the dump thread reads it under the same mutex.
 */
#ifndef FTI_FLIGHT_H
#define FTI_FLIGHT_H

#include <stdint.h>

#include "obs/event_log.h"

typedef struct fti_flight *fti_flight_h;

enum { FTI_FLIGHT_QUORUM, FTI_FLIGHT_ALLREDUCE, FTI_FLIGHT_COMMIT };

/* "quorum", "allreduce", "commit". */
const char *fti_flight_op_name(int op);

/* A recorder of n entries (n >= 1) dumping into elog (NULL: into the log
 * at warn level).  Installs the SIGUSR1 handler and starts the dump
 * thread.  Release with fti_flight_destroy. */
int fti_flight_create(size_t n, fti_event_log_h elog, fti_flight_h *f_p);
void fti_flight_destroy(fti_flight_h f);

/* A call starts: returns its slot's sequence number for fti_flight_end
 * (0 when f is NULL). */
uint64_t fti_flight_begin(fti_flight_h f, int op, uint64_t bytes, int64_t quorum_id,
                          int64_t step);
/* The call of seq ended with result (an FT_ERR_* code or 0); nothing if
 * its slot was reused meanwhile. */
void fti_flight_end(fti_flight_h f, uint64_t seq, int result);

/* Writes a "flight_dump" header (the number of records, 0 before any
 * call) and the ring, oldest first, with reason ("error", "sigusr1"). */
void fti_flight_dump(fti_flight_h f, const char *reason);

#endif
