/* lighthouse_client.c - blocking lighthouse client (see lighthouse_client.h). */
#include "control/lighthouse_client.h"
#include "control/obs_report.h"
#include "control/message.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "ftmpi_errors.h"
#include "base/log.h"
#include "control/results.h"
#include "base/rpc.h"
#include "base/util.h"

#define LH_MAX_REPLY (64u << 20) /* a quorum of 10,000+ groups fits */

struct fti_lighthouse_client {
    fti_rpc_client_h rpc;
    uint64_t incarnation; /* nonzero, drawn at create */
    bool want_ids;        /* fti_lighthouse_client_want_ids */
};

/* The highest quorum id any client of this process received (0 = none). */
static _Atomic int64_t max_quorum_id;

static void note_quorum_id(int64_t id)
{
    int64_t cur = atomic_load(&max_quorum_id);
    while (id > cur && !atomic_compare_exchange_weak(&max_quorum_id, &cur, id))
        ;
}

int64_t fti_lighthouse_max_quorum_id(void)
{
    return atomic_load(&max_quorum_id);
}

/* A random nonzero 64-bit number; without getrandom (old kernel, no
 * entropy yet) the clock, the pid and the address of c mixed. */
static uint64_t draw_incarnation(const void *c)
{
    uint64_t x = 0;
    if (getrandom(&x, sizeof(x), GRND_NONBLOCK) != (ssize_t)sizeof(x)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        x = ((uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec) ^
            ((uint64_t)getpid() << 32) ^ (uint64_t)(uintptr_t)c;
        x ^= x >> 33; /* splitmix64's finaliser spreads the bits */
        x *= 0xff51afd7ed558ccdull;
        x ^= x >> 33;
    }
    return x ? x : 1;
}

int fti_lighthouse_client_create(const char *addr, const fti_auth_key_t *key,
                                 int connect_timeout_ms, fti_lighthouse_client_h *client_p)
{
    struct fti_lighthouse_client *c = calloc(1, sizeof(*c));
    if (c == NULL)
        return FT_ERR_NO_MEMORY;
    int rc = fti_rpc_client_create(addr, key, connect_timeout_ms, LH_MAX_REPLY, &c->rpc);
    if (rc != FT_SUCCESS) {
        free(c);
        return rc;
    }
    c->incarnation = draw_incarnation(c);
    *client_p = c;
    return FT_SUCCESS;
}

void fti_lighthouse_client_want_ids(fti_lighthouse_client_h c, bool want)
{
    c->want_ids = want;
}

uint64_t fti_lighthouse_client_incarnation(fti_lighthouse_client_h c)
{
    return c->incarnation;
}

void fti_lighthouse_client_last_error(fti_lighthouse_client_h c, char *buf, size_t len)
{
    fti_rpc_client_last_error(c->rpc, buf, len);
}

void fti_lighthouse_client_destroy(fti_lighthouse_client_h c)
{
    if (c == NULL)
        return;
    fti_rpc_client_destroy(c->rpc);
    free(c);
}

int fti_lighthouse_quorum_resp(fti_lighthouse_client_h c, const Ftmpi__QuorumMember *me,
                               bool compact, bool init_sync, int timeout_ms,
                               Ftmpi__LighthouseQuorumResponse **resp_p)
{
    Ftmpi__LighthouseQuorumRequest req = FTMPI__LIGHTHOUSE_QUORUM_REQUEST__INIT;
    Ftmpi__LighthouseQuorumResponse *resp = NULL;
    Ftmpi__QuorumMember mine = *me; /* shallow: adds this process's fields */
    if (mine.incarnation == 0)
        mine.incarnation = c->incarnation;
    req.requester = &mine;
    req.compact = compact;
    req.init_sync = init_sync;
    req.max_quorum_id = fti_lighthouse_max_quorum_id();
    req.want_member_ids = c->want_ids;
    int rc = fti_rpc_call_msg(c->rpc, FTMPI__METHOD__LIGHTHOUSE_QUORUM, &req.base,
                              &ftmpi__lighthouse_quorum_response__descriptor, timeout_ms,
                              (ProtobufCMessage **)&resp);
    if (rc != FT_SUCCESS)
        return rc;
    if (resp->quorum == NULL || fti_quorum_check(resp->quorum) != FT_SUCCESS) {
        FTI_WARN("lighthouse %s: quorum reply without a well-formed quorum",
                 fti_rpc_client_address(c->rpc));
        ftmpi__lighthouse_quorum_response__free_unpacked(resp, NULL);
        return FT_ERR_BAD_MESSAGE;
    }
    note_quorum_id(resp->quorum->quorum_id);
    *resp_p = resp;
    return FT_SUCCESS;
}

int fti_lighthouse_quorum(fti_lighthouse_client_h c, const Ftmpi__QuorumMember *me,
                          int timeout_ms, Ftmpi__Quorum **quorum_p)
{
    Ftmpi__LighthouseQuorumResponse *resp = NULL;
    int rc = fti_lighthouse_quorum_resp(c, me, false, false, timeout_ms, &resp);
    if (rc != FT_SUCCESS)
        return rc;
    /* hand the quorum over without copying: detach it from the response */
    Ftmpi__Quorum *q = resp->quorum;
    resp->quorum = NULL;
    ftmpi__lighthouse_quorum_response__free_unpacked(resp, NULL);
    *quorum_p = q;
    return FT_SUCCESS;
}

/* Calls method with req and drops its (empty) reply, of type rdesc. */
static int call_no_reply(fti_lighthouse_client_h c, uint16_t method, const ProtobufCMessage *req,
                         const ProtobufCMessageDescriptor *rdesc, int timeout_ms)
{
    ProtobufCMessage *resp = NULL;
    int rc = fti_rpc_call_msg(c->rpc, method, req, rdesc, timeout_ms, &resp);
    if (rc == FT_SUCCESS)
        protobuf_c_message_free_unpacked(resp, NULL);
    return rc;
}

int fti_lighthouse_heartbeat(fti_lighthouse_client_h c, const char *replica_id, int timeout_ms)
{
    return fti_lighthouse_heartbeat_report(c, replica_id, NULL, timeout_ms);
}

int fti_lighthouse_heartbeat_report(fti_lighthouse_client_h c, const char *replica_id,
                                    const fti_lighthouse_report_t *rep, int timeout_ms)
{
    Ftmpi__LighthouseHeartbeatRequest req = FTMPI__LIGHTHOUSE_HEARTBEAT_REQUEST__INIT;
    req.replica_id = (char *)replica_id;
    req.max_quorum_id = fti_lighthouse_max_quorum_id();
    if (rep) {
        req.incarnation = rep->incarnation;
        req.restarts = rep->restarts;
        req.heals = rep->heals;
        req.heal_bytes = rep->heal_bytes;
        req.last_failure = (char *)rep->last_failure;
        if (rep->obs)
            fti_obs_batch_apply(rep->obs, &req);
    }
    return call_no_reply(c, FTMPI__METHOD__LIGHTHOUSE_HEARTBEAT, &req.base,
                         &ftmpi__lighthouse_heartbeat_response__descriptor, timeout_ms);
}

int fti_lighthouse_finalize(fti_lighthouse_client_h c, const char *replica_id, int timeout_ms)
{
    Ftmpi__LighthouseFinalizeRequest req = FTMPI__LIGHTHOUSE_FINALIZE_REQUEST__INIT;
    req.replica_id = (char *)replica_id;
    return call_no_reply(c, FTMPI__METHOD__LIGHTHOUSE_FINALIZE, &req.base,
                         &ftmpi__lighthouse_finalize_response__descriptor, timeout_ms);
}
