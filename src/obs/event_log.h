/*
 * event_log.h - the optional JSON-lines event log (FTMPI_EVENT_LOG): one
 * line per quorum, heal and commit, with the wall-clock time in ms and the
 * replica id, for tooling (the demo's timeline).  Lines are appended with
 * one write() on an O_APPEND descriptor, so the ranks and groups of a run
 * can share one file.
 *
 * Every line is an object with "ts_ms", "event", "replica_id",
 * "group_rank" and "step", then the event's own fields:
 *   quorum: quorum_id, members (replica ids), replica_rank, size,
 *           quorum_ms, changed, heal, error
 *   heal:   bytes, heal_ms, source, max_step, error
 *   commit: committed, error, participants
 *   collective_failed: quorum_id, peer (the failed peer's replica id, null
 *           when unknown), peer_replica_rank (-1 unknown), peer_address
 *           (its slice listener, null unknown), error
 *   checkpoint: what (published, loaded, dropped, write_failed), bytes, error
 *   recovery: a recovery that ended (recovery.h; "step" = the step committed
 *           at its end): seq, kind (survivor, restart), failed_step,
 *           start_ms, end_ms (wall), detect_ms (-1 unknown), quorum_ms,
 *           slice_ms, heal_ms, heal_bytes, steps_lost, restart_ms (the
 *           agent's restart to FT_Init, -1 survivor), error_name, peer
 *           (null unknown): the numbers the lighthouse's /metrics gets
 *   flight: one entry of the flight recorder (flight.h): dump (the
 *           process's dump number), reason (error, sigusr1), seq, op
 *           (quorum, allreduce, commit), bytes, quorum_id, start_ms,
 *           end_ms (-1: still running), result (FT_* name or "running")
 *   flight_dump: a dump begins (before its "flight" lines): dump, reason,
 *           records (how many follow; 0: no call yet, so a rank that made
 *           none still shows in ftmpi-flight); "step" is its last call's
 *           step, -1 without one
 * ("error" is the FT_Error code, 0 on success, "error_name" its enum name
 * such as "FT_ERR_PROC_FAILED"; members: the quorum's replica ids, from a
 * compact reply up to 64 of them; "step" is the step the
 * event belongs to, before a commit advances it).
 *
 * Threads: one thread at a time per log (the application thread), except
 * the flight recorder's lines, which its dump thread may write at any time
 * (each line is one write()).
 */
#ifndef FTI_EVENT_LOG_H
#define FTI_EVENT_LOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct fti_event_log *fti_event_log_h;
struct fti_recovery_rec;

/* Opens (creates, appends to) path.  Release with fti_event_log_close. */
int fti_event_log_open(const char *path, const char *replica_id, int group_rank,
                       fti_event_log_h *log_p);
void fti_event_log_close(fti_event_log_h log);

/* Each is a no-op when log is NULL. */
void fti_event_quorum(fti_event_log_h log, int64_t step, int64_t quorum_id,
                      const char *const *members, size_t n_members, int replica_rank, int size,
                      int64_t quorum_ms, bool changed, bool heal, int error);
void fti_event_heal(fti_event_log_h log, int64_t step, int64_t max_step, uint64_t bytes,
                    int64_t heal_ms, const char *source, int error);
void fti_event_commit(fti_event_log_h log, int64_t step, bool committed, int participants,
                      int error);
/* An FT_Allreduce over the slice of quorum_id failed (error): the peer
 * whose connection broke, as far as known (peer_replica_rank -1, peer_id
 * and peer_address NULL when not). */
void fti_event_collective_failed(fti_event_log_h log, int64_t step, int64_t quorum_id,
                                 int peer_replica_rank, const char *peer_id,
                                 const char *peer_address, int error);

/* A checkpoint of `step` was published, loaded, dropped by the group, or
 * this rank's write failed (state/ckpt_step.c). */
void fti_event_checkpoint(fti_event_log_h log, int64_t step, const char *what, uint64_t bytes,
                          int error);

/* A recovery ended (recovery.h). */
void fti_event_recovery(fti_event_log_h log, const struct fti_recovery_rec *r);

/* One flight-recorder entry (flight.h). */
void fti_event_flight(fti_event_log_h log, int64_t step, uint64_t dump, const char *reason,
                      uint64_t seq, const char *op, uint64_t bytes, int64_t quorum_id,
                      int64_t start_ms, int64_t end_ms, const char *result);

/* A flight-recorder dump of `records` entries begins (flight.h). */
void fti_event_flight_dump(fti_event_log_h log, int64_t step, uint64_t dump, const char *reason,
                           size_t records);

#endif
