/*
 * lighthouse/leader.h - several lighthouses of one job, one leader elected
 * through etcd (ftmpi-lighthouse --etcd; DESIGN section 6, "Standby
 * lighthouses").  Built with --with-etcd; without it fti_lh_leader_start
 * returns FT_ERR_UNSUPPORTED.
 *
 * Election: each lighthouse grants itself an etcd lease of ttl_s seconds
 * and tries to create PREFIX/leader (value: its RPC "host:port") in a
 * transaction that holds only while the key is absent; the one that
 * created it leads while it keeps its lease alive (every ttl/3) and while
 * its local lease deadline (the time of the last keepalive sent plus the
 * TTL etcd answered) has not passed: a process stopped beyond its lease
 * leads no more when it wakes, before it speaks to etcd again.  The others
 * read the key every ttl/4, name its value as the leader (FT_ERR_NOT_LEADER
 * replies, lighthouse.h) and campaign when it is gone (the leader's lease
 * expired or was revoked: a stopped lighthouse revokes it).
 *
 * Fencing: before a quorum with a new id is sent the leader writes
 * PREFIX/quorum_id (the id) and PREFIX/last_quorum (JSON: the id and its
 * members with step, incarnation and addresses; who heals from whom is a
 * pure function of them, control/results.h) in one transaction that holds
 * only while PREFIX/leader still has the create revision of its own
 * election: a deposed or frozen leader's write fails, it steps down and
 * sends nothing.  A new leader reads PREFIX/quorum_id first and issues
 * ids above it (the gate's id floor): ids only grow, none twice.  The
 * groups killed from the dashboard go to PREFIX/killed the same way
 * (gate save/load, server_gate.c: "INCARNATION ID" lines), written at the
 * leader's next call after a change, read by a new leader; the open SDC
 * verdicts (PREFIX/sdc, server_gate.c: groups judged a minority that must
 * heal from the majority at their step, lighthouse/sdc.h rule 2) the same
 * way, so a group judged corrupt stays so across a failover; and the job's
 * name and quorum settings (PREFIX/settings), which a new leader compares
 * with its own.
 *
 * Members: each lighthouse keeps PREFIX/lighthouses/<its advertised
 * address> (value: the address) on a lease of its own, kept alive by the
 * election thread (after the leader's keepalive, never before it), and
 * reads the list back (at most FTI_LH_MEMBERS_MAX) for the dashboard,
 * /status.json "lighthouses" and /metrics ftmpi_lighthouse_members_info
 * (gate->members); a lighthouse gone leaves the list within its TTL.
 *
 * Threads: a thread of its own runs the election; the gate's calls
 * (fti_lh_leader_gate) run on the lighthouse's loop thread.
 */
#ifndef FTI_LH_LEADER_H
#define FTI_LH_LEADER_H

#include <stdint.h>

#include "base/sizes.h"
#include "lighthouse/etcd.h"
#include "lighthouse/lighthouse.h"

#define FTI_LH_ETCD_TTL_S 2 /* default lease TTL, seconds */
#define FTI_LH_ETCD_PREFIX "/ftmpi/ftmpi"

typedef struct fti_lh_leader_opts {
    char endpoints[FTI_ETCD_ENDPOINTS_SIZE]; /* "URL[,URL...]" */
    char prefix[FTI_PATH_SIZE];     /* the job's keys, e.g. "/ftmpi/JOB" */
    int64_t ttl_s;                  /* the lease, >= 1 (default FTI_LH_ETCD_TTL_S) */
    fti_etcd_auth_t auth;
    char advertise[FTI_ADDRESS_SIZE]; /* this lighthouse's RPC "host:port" */
} fti_lh_leader_opts_t;

typedef struct fti_lh_leader *fti_lh_leader_h;

/* Checks o (FT_ERR_ARG with why; FT_ERR_UNSUPPORTED in a build without
 * etcd) and makes the handle: a standby that knows no leader until
 * fti_lh_leader_begin.  Release with fti_lh_leader_stop. */
int fti_lh_leader_create(const fti_lh_leader_opts_t *o, fti_lh_leader_h *l_p, char *why,
                         size_t why_len);
/* Starts the election thread, advertising "host:port" (o->advertise when
 * set, else this one). */
int fti_lh_leader_begin(fti_lh_leader_h l, const char *advertise);
/* Stops the thread; a leader revokes its lease, so a standby takes over
 * at once.  NULL-safe. */
void fti_lh_leader_stop(fti_lh_leader_h l);

/* The gate to put in fti_lighthouse_opts_t (valid until stop). */
const fti_lh_gate_t *fti_lh_leader_gate(fti_lh_leader_h l);

/* Whether it leads now, and the leader's "host:port" ("" = none known).
 * Any thread. */
bool fti_lh_leader_status(fti_lh_leader_h l, char *leader, size_t len);

#endif
