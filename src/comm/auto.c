/*
 * comm/auto.c - FTMPI_BACKEND=auto in mode A (DESIGN section 5): the
 * entry fti_backend_auto, which picks ucx for a slice when every member of
 * it offers ucx, and tcp otherwise, then builds that backend's slice (the
 * communicator it returns is that backend's: its allreduce, failed_peer
 * and destroy run with no step between).
 *
 * How a member says what it offers: through the quorum's store, the
 * channel the ucx worker addresses and the tcp ring's listeners already
 * travel (authenticated with the job's key; every member of the quorum
 * publishes there, so a member's answer is in every slice's rendezvous).
 * Each rank publishes "ucx <label>" when its build has UCX, FTMPI_UCX is 1
 * and UCX loads with a context, else "tcp <label>: <why>", under
 * /ftmpi/<quorum>/<group rank>/auto/<replica rank>, and reads every other
 * member's key: every rank of a slice reads the same answers, so all pick
 * the same backend.  (QuorumMember.data is the application's -- mode B's
 * world rank -- and mode A's compact replies do not carry the others'.)
 * A build without UCX runs this file too, offering tcp, so that builds
 * with and without UCX can share a job.
 * The choice is logged at info level when it is first made and whenever it
 * changes, with the transports in use.
 */
#include "comm/comm.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "base/rpc.h"
#include "base/sizes.h"
#include "base/util.h"
#include "control/store.h"
#include "comm/slice.h"
#ifdef FTMPI_HAVE_UCX
#include "comm/ucx.h"
#endif

#define AUTO_VAL_SIZE 256

static void auto_key(char *buf, size_t len, const fti_comm_rendezvous_t *r, int replica_rank)
{
    snprintf(buf, len, "/ftmpi/%" PRId64 "/%d/auto/%d", r->quorum_id, r->group_rank,
             replica_rank);
}

/* What this rank offers: "ucx <label>" or "tcp <label>: <why>" into val. */
static void offer(const fti_comm_rendezvous_t *r, char *val, size_t len)
{
    char host[FTI_ADDRESS_SIZE / 2] = "localhost";
    (void)gethostname(host, sizeof(host) - 1);
    const char *why = "built without UCX";
#ifdef FTMPI_HAVE_UCX
    char no[128];
    if (!r->offer_ucx)
        why = "FTMPI_UCX=0";
    else if (fti_ucx_available(r->timeout_ms, no, sizeof(no)) != FT_SUCCESS)
        why = no;
    else
        why = NULL;
#endif
    if (why == NULL)
        snprintf(val, len, "ucx %s pid %ld", host, (long)getpid());
    else
        snprintf(val, len, "tcp %s pid %ld: %s", host, (long)getpid(), why);
}

/* Publishes this rank's offer and reads every other member's; *ucx_p says
 * whether all offer ucx, and when not, why into why (the first that does
 * not, as it said). */
static int agree(const fti_comm_rendezvous_t *r, int64_t deadline_ms, bool *ucx_p, char *why,
                 size_t wlen)
{
    char key[96], mine[AUTO_VAL_SIZE];
    offer(r, mine, sizeof(mine));
    bool all = strncmp(mine, "ucx ", 4) == 0;
    if (!all)
        snprintf(why, wlen, "replica rank %d (%s)", r->replica_rank, mine + 4);
    if (r->size < 2) {
        *ucx_p = all;
        return FT_SUCCESS;
    }
    if (r->store_address == NULL || r->store_address[0] == '\0')
        return FT_ERR_ARG;
    fti_slice_note(r->quorum_id);
    fti_rpc_client_h store = NULL;
    int rc = fti_rpc_client_create(r->store_address, r->key, r->connect_timeout_ms,
                                   FTI_STORE_MAX_FRAME, &store);
    if (rc != FT_SUCCESS) {
        FTI_WARN("auto: cannot reach the store %s: %s", r->store_address, FT_Error_string(rc));
        return rc;
    }
    auto_key(key, sizeof(key), r, r->replica_rank);
    rc = fti_store_set(store, key, mine, strlen(mine), FTI_MAX(1, fti_ms_left(deadline_ms)));
    for (int k = 1; rc == FT_SUCCESS && k < r->size; k++) {
        int i = (r->replica_rank + k) % r->size;
        char *val = NULL;
        size_t len = 0;
        auto_key(key, sizeof(key), r, i);
        rc = fti_store_get(store, key, FTI_MAX(1, fti_ms_left(deadline_ms)), (void **)&val, &len);
        if (rc != FT_SUCCESS)
            break;
        bool ucx = len > 4 && memcmp(val, "ucx ", 4) == 0;
        if (!ucx && all)
            snprintf(why, wlen, "replica rank %d (%.*s)", i,
                     (int)FTI_MIN(len > 4 ? len - 4 : 0, (size_t)AUTO_VAL_SIZE), val + 4);
        all = all && ucx;
        free(val);
    }
    fti_rpc_client_destroy(store);
    if (rc != FT_SUCCESS) {
        FTI_WARN("auto: the members' offers in the store %s (quorum %" PRId64 "): %s",
                 r->store_address, r->quorum_id, FT_Error_string(rc));
        return rc;
    }
    *ucx_p = all;
    return FT_SUCCESS;
}

/* Logs the choice when it is the first or differs from the last one. */
static void log_choice(const fti_comm_rendezvous_t *r, bool ucx, const char *why)
{
    static atomic_int last; /* 0 none yet, 1 tcp, 2 ucx */
    int now = ucx ? 2 : 1;
    if (atomic_exchange(&last, now) == now)
        return;
#ifdef FTMPI_HAVE_UCX
    if (ucx) {
        char ver[64], tls[512];
        if (fti_ucx_describe(ver, sizeof(ver), tls, sizeof(tls)) != FT_SUCCESS)
            tls[0] = ver[0] = '\0';
        FTI_INFO("FTMPI_BACKEND=auto: ucx from quorum %" PRId64 " on (every member offers it; "
                 "UCX %s, transports %s)",
                 r->quorum_id, ver, tls);
        return;
    }
#endif
    FTI_INFO("FTMPI_BACKEND=auto: tcp from quorum %" PRId64 " on (transport: TCP sockets to "
             "every member; ucx not taken: %s)",
             r->quorum_id, why);
}

static int auto_create(const fti_comm_rendezvous_t *r, int64_t deadline_ms, fti_comm_h *comm_p)
{
    if (r->size < 1 || r->replica_rank < 0 || r->replica_rank >= r->size)
        return FT_ERR_ARG;
    bool ucx = false;
    char why[AUTO_VAL_SIZE + 64] = "";
    int rc = agree(r, deadline_ms, &ucx, why, sizeof(why));
    if (rc != FT_SUCCESS)
        return fti_slice_error(rc);
    log_choice(r, ucx, why);
    const struct fti_comm_backend *b = &fti_backend_tcp;
#ifdef FTMPI_HAVE_UCX
    if (ucx)
        b = &fti_backend_ucx;
#endif
    return b->create(r, deadline_ms, comm_p);
}

/* Never called: a slice is the chosen backend's communicator. */
static int auto_allreduce(fti_comm_h comm, void *buf, size_t count, enum fti_dtype dt,
                          enum fti_op op, int64_t deadline_ms)
{
    (void)comm, (void)buf, (void)count, (void)dt, (void)op, (void)deadline_ms;
    return FT_ERR_INTERNAL;
}

static void auto_destroy(fti_comm_h comm)
{
    (void)comm;
}

const struct fti_comm_backend fti_backend_auto = {
    .name = "auto",
    .needs = FTI_COMM_NEEDS_STORE,
    .create = auto_create,
    .allreduce = auto_allreduce,
    .destroy = auto_destroy,
};
